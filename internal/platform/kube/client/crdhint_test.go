package client

import "testing"

// TestCRDHint: a kind the cluster does not serve names what installs it,
// from the mesh descriptors' API groups.
func TestCRDHint(t *testing.T) {
	for _, tt := range []struct{ group, want string }{
		// Istio's groups: security, networking, …
		{"security.istio.io", ": is Istio installed?"},
		{"networking.istio.io", ": is Istio installed?"},
		// Linkerd's policy group.
		{"policy.linkerd.io", ": is Linkerd installed?"},
		// The Gateway API, which waypoints need.
		{"gateway.networking.k8s.io", ": are the Gateway API CRDs installed (Istio ambient's waypoints need them)?"},
		// Kubernetes' own groups: no hint.
		{"apps", ""},
		// A group that only ends like a mesh's name is not that mesh's.
		{"notistio.example", ""},
	} {
		if got := crdHint(tt.group); got != tt.want {
			t.Errorf("crdHint(%q) = %q, want %q", tt.group, got, tt.want)
		}
	}
}
