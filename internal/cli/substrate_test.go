package cli

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/bench"
	"github.com/meshbench/meshbench/internal/mesh/envoy"
	"github.com/meshbench/meshbench/internal/mesh/istio"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/proxy"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/release"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/mesh/ztunnel"
	"github.com/meshbench/meshbench/internal/platform/kube/labapi"
	"github.com/meshbench/meshbench/internal/platform/netlab"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/sys/netns"
	"github.com/meshbench/meshbench/internal/testkit/schemas"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestChooseSubstrate: what each --substrate gives for the modes asked,
// on this machine (the netns rows need root: skipped without it, failed
// under make test).
func TestChooseSubstrate(t *testing.T) {
	none, sidecar, ambient, waypoint, faces := topology.DefaultOptions(), topology.DefaultOptions(), topology.DefaultOptions(), topology.DefaultOptions(), topology.DefaultOptions()
	sidecar.Mode, ambient.Mode, waypoint.Mode = topology.ModeSidecar, topology.ModeAmbient, topology.ModeWaypoint
	faces.Mode, faces.App = topology.ModeWaypoint, topology.AppFaces
	linkerd, linkerdFaces, linkerdTCP := topology.DefaultOptions(), topology.DefaultOptions(), topology.DefaultOptions()
	linkerd.Mode, linkerdFaces.Mode, linkerdTCP.Mode = topology.ModeLinkerd, topology.ModeLinkerd, topology.ModeLinkerd
	linkerdFaces.App, linkerdTCP.Protocol = topology.AppFaces, topology.ProtocolTCP
	linkerdGateway := linkerd
	linkerdGateway.Gateway = true
	root := os.Geteuid() == 0
	tests := []struct {
		name       string
		choice     string
		opts       []topology.Options
		needRoot   bool
		wantNetns  bool
		wantUsage  string // a usage error containing this
		wantReason string // auto fell back, saying this
	}{
		// loopback is asked: always loopback, no reason given
		{"loopback", "loopback", []topology.Options{none, ambient}, false, false, "", ""},
		// an unknown name is bad input
		{"unknown", "docker", []topology.Options{none}, false, false, `--substrate "docker": allowed: auto, netns, loopback`, ""},
		// netns asked for an app/mode pair it does not run yet: bad input, before anything starts
		{"netns faces", "netns", []topology.Options{none, faces}, false, false, "app faces with mesh waypoint (gateway false): the netns substrate runs faces without waypoint or gateway so far", ""},
		// auto with an app/mode pair netns does not run: the whole plan on loopback, said why
		{"auto faces", "auto", []topology.Options{none, sidecar, ambient, faces}, false, false, "", "app faces"},
		// auto, root, modes it runs: netns for all
		{"auto none sidecar ambient waypoint", "auto", []topology.Options{none, sidecar, ambient, waypoint}, true, true, "", ""},
		// netns asked and possible
		{"netns none", "netns", []topology.Options{none}, true, true, "", ""},
		// linkerd on loopback: refused, never imitated
		{"loopback linkerd", "loopback", []topology.Options{none, linkerd}, false, false, "--mesh linkerd: runs only on the netns substrate", ""},
		// auto with linkerd where netns cannot run the plan (a gateway): refused, no fall-back
		{"auto linkerd gateway", "auto", []topology.Options{none, linkerdGateway}, false, false,
			"--mesh linkerd: runs only on the netns substrate, which cannot run this here (", ""},
		// faces on netns, linkerd beside the Envoy modes
		{"auto faces linkerd", "auto", []topology.Options{none, linkerdFaces}, true, true, "", ""},
		// linkerd at L4: not wired, said before anything starts
		{"netns linkerd tcp", "netns", []topology.Options{linkerdTCP}, false, false, "mesh linkerd with protocol tcp", ""},
		// auto, root, linkerd beside the Envoy modes: netns for all (needs the proxy binary)
		{"auto none sidecar linkerd", "auto", []topology.Options{none, sidecar, linkerd}, true, true, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.needRoot && !root {
				testutil.SkipOrFail(t, "needs root to make network namespaces")
			}
			sub, reason, err := bench.ChooseSubstrate(tc.choice, "", "", tc.opts)
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
// user (nobody). Where the kernel allows unprivileged user namespaces (this
// machine), meshbench re-executes itself as root of one of its own and the
// run works: mode ambient with the real ztunnels, every request answered,
// mTLS verified; mode sidecar is refused at once (exit 2: the sidecars'
// gid 1337 cannot be mapped) and makes no results directory, as is mode
// linkerd under auto (one line, exit 2: it needs netns). Where they
// are not allowed, the run is refused at once (exit 2) saying namespaces
// need root.
func TestSubstrateNetnsNotRoot(t *testing.T) {
	testutil.RequireRoot(t, "needs root to switch to an unprivileged user")
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		testutil.SkipOrFail(t, "no setpriv (util-linux) to run as nobody")
	}
	zt, err := ztunnel.Find("", ".")
	if err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	// A directory and a copy of meshbench nobody may use (the test
	// build's directory is root's own).
	dir, err := os.MkdirTemp("", "meshbench-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
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
	nobody := func(args ...string) (string, int) {
		cmd := exec.Command(setpriv, append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", bin}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(out), ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	n, _ := os.ReadFile("/proc/sys/user/max_user_namespaces")
	if strings.TrimSpace(string(n)) == "0" {
		out, code := nobody("run", "--substrate", "netns", "--mesh", "none", "--out", dir+"/never-made")
		if code != ExitUsage || !strings.Contains(out, "--substrate netns: network namespaces need root here") {
			t.Errorf("without user namespaces: exit %d, output:\n%s", code, out)
		}
		return
	}
	out, code := nobody("run", "--substrate", "netns", "--mesh", "ambient", "--policies", "4", "--rate", "100",
		"--duration", "2s", "--warmup", "1s", "--drain", "500ms", "--ztunnel", zt, "--out", dir+"/ambient")
	if code != 0 || !strings.Contains(out, "substrate netns (Istio's ztunnel") || !strings.Contains(out, "200:200") ||
		!strings.Contains(out, "mTLS verified: all") {
		t.Errorf("ambient as nobody: exit %d, output:\n%s", code, out)
	}
	out, code = nobody("run", "--substrate", "netns", "--mesh", "sidecar", "--out", dir+"/never-made")
	if code != ExitUsage || !strings.Contains(out, "the sidecars' 1337") {
		t.Errorf("sidecar as nobody: exit %d, output:\n%s", code, out)
	}
	// Not root and auto: linkerd runs only on netns, which auto does not
	// enter without root: refused in one line, nothing made.
	out, code = nobody("run", "--mesh", "linkerd", "--out", dir+"/never-made")
	if code != ExitUsage || strings.Count(strings.TrimSpace(out), "\n") != 0 || !strings.Contains(out, "--mesh linkerd: runs only on the netns substrate, which cannot run this here (") || !strings.Contains(out, "network namespaces need root here") {
		t.Errorf("linkerd as nobody: exit %d, output:\n%s", code, out)
	}
	if _, err := os.Stat(dir + "/never-made"); err == nil {
		t.Error("a results directory was made for the refused run")
	}
}

// TestRunWaypointNetnsCLI: `meshbench run --substrate netns --mesh
// waypoint --policies 4` end to end, the real ztunnels and a real Envoy
// waypoint: exit 0, every request answered, the header naming the netns
// substrate and ztunnel, the waypoint's Envoy stats with its TLS
// handshakes and RBAC allows, the node ztunnels' mTLS verified, the
// waypoint sampled as the data plane; nothing of the lab left.
func TestRunWaypointNetnsCLI(t *testing.T) {
	testutil.RequireRoot(t, "needs root to make network namespaces")
	zt, err := ztunnel.Find("", ".")
	if err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	wd, _ := os.Getwd()
	eb, err := envoy.Find(envoy.FindOptions{ProjectDir: filepath.Join(wd, "..", "..")})
	if err != nil {
		testutil.SkipOrFail(t, fmt.Sprintf("%v (make envoy installs it)", err))
	}
	out := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(testutil.BuildMeshbench(t), "run", "--substrate", "netns", "--mesh", "waypoint", "--policies", "4",
		"--replicas", "2", "--rate", "100", "--duration", "3s", "--warmup", "1s", "--drain", "500ms", "--sample-interval", "500ms",
		"--ztunnel", zt, "--envoy", eb.Path, "--out", out)
	cmd.Dir = t.TempDir()
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, b)
	}
	s := string(b)
	for _, want := range []string{"mesh waypoint", "substrate netns (Istio's ztunnel", "Status Codes  [code:count]                      200:300",
		"mTLS verified: all", "\n  waypoint "} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	m, err := results.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	var wp bool
	for _, p := range m.Processes {
		wp = wp || (p.Name == "waypoint" && p.Component == "waypoint" && p.Category == "data-plane")
	}
	if !wp {
		t.Errorf("no waypoint among the sampled data plane: %+v", m.Processes)
	}
	n, _ := m.Options["netns"].(map[string]any)
	prefix, _ := n["prefix"].(string)
	sn, _ := n["subnet"].(string)
	if _, err := netip.ParsePrefix(sn); err != nil || prefix == "" {
		t.Fatalf("manifest netns %v", m.Options["netns"])
	}
	if busy, err := netns.NamesInUse(prefix); err != nil || busy {
		t.Errorf("after the run, names %s* are still in use (err %v)", prefix, err)
	}
}

// TestBenchControlPlaneAuto: `meshbench bench --control-plane auto` on
// the netns substrate with Istio's build absent (an empty
// $MESHBENCH_ISTIO_BIN) and Linkerd's present: the sidecar cell runs on
// meshbench's own configs, the linkerd cell on Linkerd's real controllers
// (a lab API server and the three controllers start), the first line
// says which and why, and each cell's manifest records what ran and
// what was asked; nothing of the labs left.
func TestBenchControlPlaneAuto(t *testing.T) {
	testutil.RequireRoot(t, "needs root to make network namespaces")
	wd, _ := os.Getwd()
	repo := filepath.Join(wd, "..", "..")
	eb, err := envoy.Find(envoy.FindOptions{ProjectDir: repo})
	if err != nil {
		testutil.SkipOrFail(t, fmt.Sprintf("%v (make envoy installs it)", err))
	}
	lp, err := proxy.Find("", repo)
	if err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	if _, err := release.Open(release.DefaultDir()); err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	if _, _, err := labapi.Check(); err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	out := filepath.Join(t.TempDir(), "plan")
	cmd := exec.Command(testutil.BuildMeshbench(t), "bench", "--substrate", "netns", "--control-plane", "auto", "--mesh", "sidecar,linkerd",
		"--rate", "50", "--repetitions", "1", "--duration", "1s", "--warmup", "200ms", "--drain", "200ms",
		"--envoy", eb.Path, "--linkerd-proxy", lp, "--out", out)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), istio.EnvBuild+"="+t.TempDir())
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, b)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	for _, want := range []string{"meshbench bench: on the netns substrate", "in Istio's modes istiod is not run", "configured and certified by Linkerd's real controllers",
		"; control plane auto: sidecar: meshbench's own configs, not istiod's (no Istio build in ", "; linkerd: Linkerd's real controllers (installed here)"} {
		if !strings.Contains(first, want) {
			t.Errorf("first line lacks %q:\n%s", want, first)
		}
	}
	pm, err := results.ReadPlanManifest(out)
	if err != nil || !pm.Complete || len(pm.Order) != 2 {
		t.Fatalf("plan manifest %+v %v", pm, err)
	}
	// plan.yaml (control_plane: auto) and the manifests match their schemas.
	checkSchemas(t, out, "plan-manifest.v1.schema.json", "run-manifest.v1.schema.json", schemas.PlanFileSchema)
	var prefixes []string
	for _, id := range pm.Order {
		m, err := results.ReadManifest(results.CellDir(out, id))
		if err != nil {
			t.Fatal(err)
		}
		cp, _ := m.Options["control_plane"].(map[string]any)
		choice, _ := m.Options["control_plane_choice"].(map[string]any)
		want := bench.ControlPlaneLab
		if strings.HasPrefix(id, string(topology.ModeLinkerd)+"-") {
			want = bench.ControlPlaneLinkerd
		}
		if cp["name"] != want || choice["asked"] != bench.ControlPlaneAuto || !strings.Contains(fmt.Sprint(choice["why"]), "no Istio build in") {
			t.Errorf("cell %s: control_plane %v, control_plane_choice %v; want %s, asked auto", id, cp, choice, want)
		}
		if n, ok := m.Options["netns"].(map[string]any); ok {
			prefixes = append(prefixes, fmt.Sprint(n["prefix"]))
		}
	}
	for _, prefix := range prefixes {
		if busy, err := netns.NamesInUse(prefix); err != nil || busy {
			t.Errorf("after the plan, names %s* are still in use (err %v)", prefix, err)
		}
	}
}
