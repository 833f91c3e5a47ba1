package cli

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/platform/netlab"
	"github.com/meshbench/meshbench/internal/testutil"
)

// TestChooseSubstrate: what each --substrate gives for the modes asked,
// on this machine (the netns rows need root: skipped without it, failed
// under make test).
func TestChooseSubstrate(t *testing.T) {
	none, sidecar, ambient, waypoint := mesh.DefaultOptions(), mesh.DefaultOptions(), mesh.DefaultOptions(), mesh.DefaultOptions()
	sidecar.Mode, ambient.Mode, waypoint.Mode = mesh.ModeSidecar, mesh.ModeAmbient, mesh.ModeWaypoint
	linkerd, linkerdFaces, linkerdTCP := mesh.DefaultOptions(), mesh.DefaultOptions(), mesh.DefaultOptions()
	linkerd.Mode, linkerdFaces.Mode, linkerdTCP.Mode = mesh.ModeLinkerd, mesh.ModeLinkerd, mesh.ModeLinkerd
	linkerdFaces.App, linkerdTCP.Protocol = mesh.AppFaces, mesh.ProtocolTCP
	linkerdGateway := linkerd
	linkerdGateway.Gateway = true
	root := os.Geteuid() == 0
	tests := []struct {
		name       string
		choice     string
		opts       []mesh.Options
		needRoot   bool
		wantNetns  bool
		wantUsage  string // a usage error containing this
		wantReason string // auto fell back, saying this
	}{
		// loopback is asked: always loopback, no reason given
		{"loopback", "loopback", []mesh.Options{none, ambient}, false, false, "", ""},
		// an unknown name is bad input
		{"unknown", "docker", []mesh.Options{none}, false, false, `--substrate "docker": allowed: auto, netns, loopback`, ""},
		// netns asked for a mode it does not run yet: bad input, before anything starts
		{"netns waypoint", "netns", []mesh.Options{none, waypoint}, false, false, "mesh waypoint: the netns substrate runs modes none, sidecar and ambient so far", ""},
		// auto with a mode netns does not run: the whole plan on loopback, said why
		{"auto waypoint", "auto", []mesh.Options{none, sidecar, ambient, waypoint}, false, false, "", "mesh waypoint"},
		// auto, root, modes it runs: netns for all
		{"auto none sidecar ambient", "auto", []mesh.Options{none, sidecar, ambient}, true, true, "", ""},
		// netns asked and possible
		{"netns none", "netns", []mesh.Options{none}, true, true, "", ""},
		// linkerd on loopback: refused, never imitated
		{"loopback linkerd", "loopback", []mesh.Options{none, linkerd}, false, false, "--mesh linkerd: runs only on the netns substrate", ""},
		// auto with linkerd where netns cannot run the plan (a gateway): refused, no fall-back
		{"auto linkerd gateway", "auto", []mesh.Options{none, linkerdGateway}, false, false,
			"--mesh linkerd: runs only on the netns substrate, which cannot run this here (", ""},
		// faces on netns, linkerd beside the Envoy modes
		{"auto faces linkerd", "auto", []mesh.Options{none, linkerdFaces}, true, true, "", ""},
		// linkerd at L4: not wired, said before anything starts
		{"netns linkerd tcp", "netns", []mesh.Options{linkerdTCP}, false, false, "mesh linkerd with protocol tcp", ""},
		// auto, root, linkerd beside the Envoy modes: netns for all (needs the proxy binary)
		{"auto none sidecar linkerd", "auto", []mesh.Options{none, sidecar, linkerd}, true, true, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.needRoot && !root {
				testutil.SkipOrFail(t, "needs root to make network namespaces")
			}
			sub, reason, err := chooseSubstrate(tc.choice, "", "", tc.opts)
			var ue *UsageError
			switch {
			case tc.wantUsage != "":
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.wantUsage) {
					t.Fatalf("err %v, want a usage error with %q", err, tc.wantUsage)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if got := sub != nil; got != tc.wantNetns {
				t.Errorf("netns chosen %v, want %v (reason %q)", got, tc.wantNetns, reason)
			}
			if sub != nil && sub.Name() != netlab.SubstrateName {
				t.Errorf("substrate %s", sub.Name())
			}
			if !strings.Contains(reason, tc.wantReason) || (tc.wantReason == "" && reason != "") {
				t.Errorf("reason %q, want %q", reason, tc.wantReason)
			}
		})
	}
}

// TestSubstrateNetnsNotRoot: `run --substrate netns` as an unprivileged
// user fails at once (exit 1) saying namespaces need root; nothing runs.
func TestSubstrateNetnsNotRoot(t *testing.T) {
	testutil.RequireRoot(t, "needs root to switch to an unprivileged user")
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		testutil.SkipOrFail(t, "no setpriv (util-linux) to run as nobody")
	}
	// A copy nobody may run (the test build's directory is root's own).
	dir, err := os.MkdirTemp("", "meshbench-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(testutil.BuildMeshbench(t))
	if err != nil {
		t.Fatal(err)
	}
	bin := dir + "/meshbench"
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	out := dir + "/never-made"
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin,
		"run", "--substrate", "netns", "--mesh", "none", "--out", out)
	cmd.Dir = dir
	b, err = cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != ExitFailure || !strings.Contains(string(b), "--substrate netns: network namespaces need root here") {
		t.Errorf("exit %v, output:\n%s", err, b)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a results directory was made")
	}
}
