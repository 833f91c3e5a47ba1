package cli

import (
	"strings"
	"testing"
)

// TestMeshUninstallBadInput: `mesh uninstall` checks its flags before it
// connects anywhere: one line naming the flag and what is allowed, exit 2.
// (The uninstall itself runs against real nodes in internal/e2e's
// TestIstioOnRealNodes and TestLinkerdOnRealNodes.)
func TestMeshUninstallBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		// Which mesh is required: the command removes what it names.
		{"no mesh", nil, "--mesh: required, one or more of sidecar, ambient, waypoint, linkerd"},
		// none has nothing installed.
		{"none", []string{"--mesh", "none"}, `--mesh "none": allowed: sidecar, ambient, waypoint, linkerd`},
		// A typo.
		{"unknown mesh", []string{"--mesh", "sidecars"}, `--mesh "sidecars": allowed`},
		// The lab starts and stops its own processes: nothing to uninstall.
		{"platform local", []string{"--platform", "local", "--mesh", "sidecar"}, `--platform "local": allowed: kube`},
		{"timeout 0", []string{"--mesh", "ambient", "--timeout", "0s"}, "--timeout 0s: allowed: a positive duration"},
		// A directory that is no Istio build.
		{"istio build missing", []string{"--mesh", "ambient", "--istio-build", t.TempDir()}, "--istio-build: "},
		// A directory that is no Linkerd build.
		{"linkerd build missing", []string{"--mesh", "linkerd", "--linkerd-build", t.TempDir()}, "--linkerd-build: no Linkerd build in"},
	} {
		inv := runCLI(t, nil, append([]string{"mesh", "uninstall"}, tc.args...)...)
		if inv.code != 2 || !strings.Contains(inv.stderr, tc.want) || strings.Count(strings.TrimSpace(inv.stderr), "\n") != 0 {
			t.Errorf("%s: exit %d, stderr %q; want 2 and one line with %q", tc.name, inv.code, inv.stderr, tc.want)
		}
	}
}
