package kube

import "testing"

// TestIsAmbient: the modes whose cells are checked from ztunnel's counters.
func TestIsAmbient(t *testing.T) {
	for _, tc := range []struct {
		mode string
		want bool
	}{
		{"ambient", true},  // ztunnel on every node
		{"waypoint", true}, // ztunnel plus a waypoint: the HBONE legs are ztunnel's
		{"sidecar", false}, // checked from the sidecars' own counters instead
		{"none", false},    // no mesh
		{"linkerd", false}, // no ztunnel
		{"unknown", false}, // not a mode
	} {
		if got := isAmbient(tc.mode); got != tc.want {
			t.Errorf("isAmbient(%q) = %v, want %v", tc.mode, got, tc.want)
		}
	}
}
