package cli

import (
	"path/filepath"
	"regexp"
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
	// The table's columns are as wide as its longest name ("control
	// plane linkerd", the row of --control-plane linkerd).
	row := func(out, check, status, detail string) bool {
		return regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(check) + ` +` + status + ` +` + regexp.QuoteMeta(detail)).MatchString(out)
	}
	ok := runCLI(t, nil, "doctor", "--platform", "local", "--mesh", "linkerd", "--linkerd-proxy", bin)
	if ok.code != 0 || !row(ok.stdout, "netns substrate", "ok", "") || !row(ok.stdout, "mesh linkerd", "ok", "can run here: linkerd2-proxy ") ||
		!row(ok.stdout, "control plane linkerd", "(ok|warn)", "") {
		t.Errorf("doctor with the proxy: exit %d\n%s%s", ok.code, ok.stdout, ok.stderr)
	}
	missing := runCLI(t, nil, "doctor", "--platform", "local", "--mesh", "linkerd", "--linkerd-proxy", filepath.Join(t.TempDir(), "none"))
	if missing.code != ExitFailure || !row(missing.stdout, "mesh linkerd", "FAIL", "linkerd2-proxy: ") {
		t.Errorf("doctor without the proxy: exit %d\n%s%s", missing.code, missing.stdout, missing.stderr)
	}
	bad := runCLI(t, nil, "doctor", "--platform", "local", "--mesh", "istio")
	if bad.code != ExitUsage || !strings.Contains(bad.stderr, `--mesh "istio": allowed: none, sidecar, ambient, waypoint, linkerd`) {
		t.Errorf("doctor with an unknown mode: exit %d\n%s", bad.code, bad.stderr)
	}
}
