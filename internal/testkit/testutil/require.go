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

// RequireRoot calls SkipOrFail with msg unless the test runs as root.
func RequireRoot(t testing.TB, msg string) {
	t.Helper()
	if os.Geteuid() != 0 {
		SkipOrFail(t, msg)
	}
}
