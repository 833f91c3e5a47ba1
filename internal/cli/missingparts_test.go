package cli

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/mesh/envoy"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// bareRun runs the meshbench binary as a new user would on a machine
// missing things: from an empty directory (no .tools, no ../shared), with
// an empty PATH (no iptables, nft, envoy or anything else), no HOME
// caches and no MESHBENCH_* variables. It returns stdout, stderr and the
// exit code.
func bareRun(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	bin := filepath.Join(dir, "bin", "meshbench")
	if _, err := os.Stat(bin); err != nil {
		b, err := os.ReadFile(testutil.BuildMeshbench(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	empty := filepath.Join(dir, "empty-path")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + empty, "HOME=" + dir, "TERM=dumb"}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return stdout.String(), stderr.String(), ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), 0
}

// TestMissingPartRefused: a command that lacks a part its cells need is
// refused before it makes anything: exit 2, one line naming the part and
// how to get it, no results directory. Every part: no Envoy (run and
// bench), no ztunnel and no linkerd2-proxy where the netns substrate is
// asked for or is the only one that runs the mesh. (Not root: see
// TestSubstrateNetnsNotRoot.)
func TestMissingPartRefused(t *testing.T) {
	root := os.Geteuid() == 0
	for _, tc := range []struct {
		name     string
		needRoot bool
		args     []string
		want     string
	}{
		{"no Envoy, run", false, []string{"run", "--mesh", "sidecar", "--substrate", "loopback"}, "envoy not found"},
		{"no Envoy, bench", false, []string{"bench", "--mesh", "none,sidecar", "--substrate", "loopback", "--rate", "10", "--repetitions", "1", "--duration", "1s"}, "envoy not found"},
		{"no ztunnel, netns asked", true, []string{"run", "--mesh", "ambient", "--substrate", "netns"}, "--substrate netns: no ztunnel binary: run make ztunnel"},
		{"no ztunnel, bench netns asked", true, []string{"bench", "--mesh", "none,ambient", "--substrate", "netns", "--rate", "10", "--repetitions", "1"}, "--substrate netns: no ztunnel binary"},
		{"no linkerd2-proxy", true, []string{"run", "--mesh", "linkerd"}, "--mesh linkerd: runs only on the netns substrate, which cannot run this here (no linkerd2-proxy binary: run make linkerd-proxy"},
		{"no linkerd2-proxy, bench", true, []string{"bench", "--mesh", "none,linkerd", "--rate", "10", "--repetitions", "1"}, "no linkerd2-proxy binary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.needRoot && !root {
				testutil.SkipOrFail(t, "needs root: without it these meshes are refused for that reason first")
			}
			dir := t.TempDir()
			out := filepath.Join(dir, "results-never-made")
			_, stderr, code := bareRun(t, dir, append(tc.args, "--out", out)...)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if code != ExitUsage || len(lines) != 1 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr (%d lines):\n%s\nwant exit 2 and one line with %q", code, len(lines), stderr, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was made", out)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 2 { // bin/ and empty-path/
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				t.Errorf("left in its directory: %v", names)
			}
		})
	}
}

// TestMissingPartFallsBack: where a missing part only narrows what is
// real, auto falls back as bench does and says so first: PATH without
// iptables (or nft) runs mode sidecar on the netns substrate all the same
// (the capture goes in over netlink: the dead end of issue 26), and
// without ztunnel mode ambient runs on loopback with Envoy standing in,
// said on stderr and in the header.
func TestMissingPartFallsBack(t *testing.T) {
	testutil.RequireRoot(t, "needs root for the netns substrate")
	wd, _ := os.Getwd()
	eb, err := envoy.Find(envoy.FindOptions{ProjectDir: filepath.Join(wd, "..", "..")})
	if err != nil {
		testutil.SkipOrFail(t, err.Error()+" (make envoy installs it)")
	}
	short := []string{"--duration", "1s", "--warmup", "500ms", "--drain", "0s", "--rate", "20", "--envoy", eb.Path}
	dir := t.TempDir()
	stdout, stderr, code := bareRun(t, dir, append([]string{"run", "--mesh", "sidecar", "--out", filepath.Join(dir, "sidecar")}, short...)...)
	if code != 0 || !strings.Contains(stdout, "meshbench run: mesh sidecar") || !strings.Contains(stdout, "substrate netns") {
		t.Errorf("sidecar without iptables on PATH: exit %d\n%s\n%s", code, stdout, stderr)
	}
	stdout, stderr, code = bareRun(t, dir, append([]string{"run", "--mesh", "ambient", "--out", filepath.Join(dir, "ambient")}, short...)...)
	if code != 0 || !strings.Contains(stderr, "substrate: loopback, the network namespaces cannot run this here (no ztunnel binary") ||
		!strings.Contains(stdout, "mesh ambient (Envoy stand-in for ztunnel)") {
		t.Errorf("ambient without ztunnel: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// TestAddressTakenRefused: an address the loopback lab needs is taken
// (another lab, another program): run refuses in one line, exit 2,
// before it makes its results directory.
func TestAddressTakenRefused(t *testing.T) {
	wd, _ := os.Getwd()
	eb, err := envoy.Find(envoy.FindOptions{ProjectDir: filepath.Join(wd, "..", "..")})
	if err != nil {
		testutil.SkipOrFail(t, err.Error()+" (make envoy installs it)")
	}
	// The client sidecar's outbound listener, with the lab moved to
	// 127.77.x.y (--loopback-net) away from other labs.
	ln, err := net.Listen("tcp", "127.77.1.10:15001")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	out := filepath.Join(dir, "never-made")
	_, stderr, code := bareRun(t, dir, "run", "--mesh", "sidecar", "--substrate", "loopback", "--loopback-net", "77", "--envoy", eb.Path, "--out", out)
	if code != ExitUsage || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "127.77.1.10:15001") || !strings.Contains(stderr, "already in use") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s was made", out)
	}
}
