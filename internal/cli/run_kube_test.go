package cli

import (
	"strings"
	"testing"
)

// The CLI's run --platform kube with the kubelet's counters on real pods
// is checked by internal/e2e (TestRunNoneOnRealNodes): kwok runs no
// container, so no load Job can complete here.

// TestRunKubeMetricsSourceFlag: a wrong --metrics-source is one line and
// exit 2, before any cluster is contacted.
func TestRunKubeMetricsSourceFlag(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--platform", "kube", "--metrics-source", "prometheus"},
		{"run", "--platform", "kube", "--kubelet-interval", "0s"},
		{"doctor", "--metrics-source", "cadvisor"},
	} {
		inv := runCLI(t, nil, args...)
		if inv.code != 2 || !strings.Contains(inv.stderr, "allowed: auto, kubelet, metrics-api") && !strings.Contains(inv.stderr, "must be > 0") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and what is allowed", args, inv.code, inv.stderr)
		}
	}
}
