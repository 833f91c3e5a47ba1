package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/mesh/linkerd/proxy"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestDoctorLocal: `doctor --platform local` says whether mesh linkerd can
// run here — ok with the real proxy found and namespaces possible (root),
// FAIL (exit 1) when the proxy asked for is missing — and refuses a mode
// the lab does not know (exit 2).
func TestDoctorLocal(t *testing.T) {
	testutil.RequireRoot(t, "doctor local: the netns check needs root to make a namespace")
	bin, err := proxy.Find("", filepath.Join("..", ".."))
	if err != nil {
		testutil.SkipOrFail(t, "doctor local: "+err.Error())
	}
	ok := runCLI(t, nil, "doctor", "--platform", "local", "--mesh", "linkerd", "--linkerd-proxy", bin)
	if ok.code != 0 || !strings.Contains(ok.stdout, "netns substrate  ok") || !strings.Contains(ok.stdout, "mesh linkerd     ok      can run here: linkerd2-proxy ") {
		t.Errorf("doctor with the proxy: exit %d\n%s%s", ok.code, ok.stdout, ok.stderr)
	}
	missing := runCLI(t, nil, "doctor", "--platform", "local", "--mesh", "linkerd", "--linkerd-proxy", filepath.Join(t.TempDir(), "none"))
	if missing.code != ExitFailure || !strings.Contains(missing.stdout, "mesh linkerd     FAIL    linkerd2-proxy: ") {
		t.Errorf("doctor without the proxy: exit %d\n%s%s", missing.code, missing.stdout, missing.stderr)
	}
	bad := runCLI(t, nil, "doctor", "--platform", "local", "--mesh", "istio")
	if bad.code != ExitUsage || !strings.Contains(bad.stderr, `--mesh "istio": allowed: none, sidecar, ambient, waypoint, linkerd`) {
		t.Errorf("doctor with an unknown mode: exit %d\n%s", bad.code, bad.stderr)
	}
}
