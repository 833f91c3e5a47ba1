package testutil

import (
	"os"
	"testing"
)

// RequireEnv, when "1" (as `make test` sets it), turns a missing
// prerequisite of a real-part test (root, namespaces, a binary) into a
// failure instead of a skip, so CI can never pass by skipping.
const RequireEnv = "MESHBENCH_REQUIRE_K8S"

// SkipOrFail skips t with msg, or fails it when RequireEnv is "1".
func SkipOrFail(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv(RequireEnv) == "1" {
		t.Fatal(msg + " (" + RequireEnv + "=1, so this fails instead of skipping)")
	}
	t.Skip(msg)
}

// RealPart marks t as a test of real parts beyond meshbench's own
// processes on loopback (Envoy, ztunnel, linkerd2-proxy, the load
// generators, a Kubernetes control plane or nodes, Istio's build,
// network namespaces): under -short (`make check`, the lane for every
// change) it skips t, saying what it needs; `make test` runs it.
func RealPart(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs " + what + ": a real part, not under -short (make check); make test runs it")
	}
}

// RequireRoot calls SkipOrFail with msg unless the test runs as root.
// Root is asked for to make namespaces, mounts and capture rules, so
// under -short t is skipped first (RealPart).
func RequireRoot(t testing.TB, msg string) {
	t.Helper()
	RealPart(t, "root: "+msg)
	if os.Geteuid() != 0 {
		SkipOrFail(t, msg)
	}
}
