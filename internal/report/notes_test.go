package report

import (
	"slices"
	"testing"
)

// TestMethodNotesSource: a cluster plan's method notes name the source
// its cells' CPU and memory came from, once per source.
func TestMethodNotesSource(t *testing.T) {
	for _, tc := range []struct {
		platform string
		sources  []string
		want     []string // sampling notes, in order
	}{
		// The local lab: /proc, whatever the cells say.
		{"local", nil, []string{noteSamplingLocal}},
		// Cells from before the choice existed used metrics.k8s.io.
		{"kube", []string{"", ""}, []string{noteSamplingKube}},
		// Every cell on the kubelet's counters.
		{"kube", []string{"kubelet", "kubelet"}, []string{noteSamplingKubelet}},
		// A plan resumed on another cluster: both, in cell order.
		{"kube", []string{"kubelet", "metrics-api", "kubelet"}, []string{noteSamplingKubelet, noteSamplingKube}},
		// No finished cell yet: the cluster default's note.
		{"kube", nil, []string{noteSamplingKube}},
	} {
		notes := MethodNotesFor(tc.platform, tc.sources...)
		var got []string
		for _, n := range notes {
			if n == noteSamplingLocal || n == noteSamplingKube || n == noteSamplingKubelet {
				got = append(got, n)
			}
		}
		if !slices.Equal(got, tc.want) || len(notes) != 7+len(tc.want) {
			t.Errorf("%s %q: sampling notes %q (of %d notes), want %q", tc.platform, tc.sources, got, len(notes), tc.want)
		}
	}
}
