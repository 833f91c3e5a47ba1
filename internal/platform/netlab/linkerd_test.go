package netlab

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/controlplane"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/proxy"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform"
	"github.com/meshbench/meshbench/internal/platform/local"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// linkerdProxy is the real linkerd2-proxy (make linkerd-proxy, or the
// shared build when its sha256 matches); skipped without it (failed under
// make test).
func linkerdProxy(t *testing.T) string {
	t.Helper()
	testutil.RequireRoot(t, "netlab: needs root to make network namespaces")
	bin, err := proxy.Find("", ".")
	if err != nil {
		testutil.SkipOrFail(t, "netlab: "+err.Error())
	}
	return bin
}

// linkerdOf is the manifest's linkerd entry.
func linkerdOf(t *testing.T, m *results.RunManifest) map[string]any {
	t.Helper()
	l, ok := m.Options["linkerd"].(map[string]any)
	if !ok {
		t.Fatalf("manifest options have no linkerd entry: %v", m.Options)
	}
	return l
}

// checkLinkerdGone adds to checkGone: the proxies' identity directory is
// removed.
func checkLinkerdGone(t *testing.T, m *results.RunManifest) {
	t.Helper()
	prefix, _ := netnsOf(t, m)
	checkGone(t, m, prefix)
	if dir, _ := linkerdOf(t, m)["identity_dir"].(string); dir == "" {
		t.Error("manifest has no linkerd identity_dir")
	} else if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the proxies' identity directory %s is left (%v)", dir, err)
	}
}

// TestLinkerdRun runs whole cells (local.Run) of mode linkerd on the netns
// substrate with the real linkerd2-proxy beside the client and every
// server pod and the lab's control plane in its own process: every
// request answered, the cell valid with mTLS verified from the proxies'
// own counters (every request over mTLS both ways, no plaintext), the
// proxies sampled as data-plane sidecars and the control plane apart as
// control plane, the proxy's sha256 in the manifest; with --policies 4
// the server proxies get the four ALLOW rules and still let the client
// through (refusing a foreign identity is internal/mesh/linkerd's test).
// After the run no process, namespace, link or identity file is left.
func TestLinkerdRun(t *testing.T) {
	bin := linkerdProxy(t)
	mb := testutil.BuildMeshbench(t)
	sum, err := proxy.FileSHA256(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		policies int
		replicas int
	}{
		{"one replica", 0, 1},             // client proxy → server proxy, all-authenticated
		{"policies 4 two replicas", 4, 2}, // the seed's four ALLOW rules by client identity, on both servers
	} {
		t.Run(tc.name, func(t *testing.T) {
			mo := topology.DefaultOptions()
			mo.Mode, mo.Policies, mo.Replicas = topology.ModeLinkerd, tc.policies, tc.replicas
			out := filepath.Join(t.TempDir(), "run")
			// 1000 rps for 3 s: each proxy carries 3000+ requests, tens
			// of ms of CPU (≈0.13 vCPU per 1000 rps measured here), far
			// above one 10-ms tick on a fast machine too.
			res, _ := runCell(t, local.Options{Settings: platform.Settings{Mesh: mo, Load: loadgen.OpenLoopPerSecond(1000), Duration: 3 * time.Second},
				OutDir: out, Meshbench: mb, Substrate: &Substrate{LinkerdProxy: bin, Meshbench: mb}}, checkLinkerdGone)
			lr := res.Load
			wantAllOK(t, lr, 3000)
			if !res.Manifest.Valid {
				t.Errorf("cell invalid: %v", res.Manifest.Invalid)
			}
			d := res.Manifest.Derived
			// Both proxies count every request: at least twice the load's.
			if d["linkerd_mtls_requests"] < 2*float64(lr.Completed) || d["linkerd_plaintext_requests"] != 0 || d["linkerd_denied_requests"] != 0 {
				t.Errorf("derived mTLS %v plaintext %v denied %v, want ≥ %d, 0, 0", d["linkerd_mtls_requests"],
					d["linkerd_plaintext_requests"], d["linkerd_denied_requests"], 2*lr.Completed)
			}
			if res.MeshCheck == nil || !strings.Contains(strings.Join(res.MeshCheck.Lines, "\n"), "mTLS verified") {
				t.Errorf("no mTLS verdict: %+v", res.MeshCheck)
			}
			proxies, control := 0, 0
			for _, p := range res.Manifest.Processes {
				switch {
				case strings.HasSuffix(p.Name, "-linkerd-proxy"):
					proxies++
					if p.Category != sample.CategoryDataPlane || !strings.HasSuffix(p.Component, " sidecar") {
						t.Errorf("proxy %s: category %s component %q, want data-plane, a sidecar", p.Name, p.Category, p.Component)
					}
				case p.Name == ControlPlaneName:
					control++
					if p.Category != sample.CategoryControlPlane {
						t.Errorf("control plane category %s", p.Category)
					}
				}
			}
			if proxies != 1+tc.replicas || control != 1 {
				t.Errorf("%d proxies and %d control planes sampled, want %d and 1", proxies, control, 1+tc.replicas)
			}
			dp := res.Summary.Category(sample.CategoryDataPlane)
			cp := res.Summary.Category(sample.CategoryControlPlane)
			if dp == nil || dp.CPUMillicores.Avg <= 0 || cp == nil || cp.RSSBytes.Avg <= 0 {
				t.Errorf("data plane %+v, control plane %+v: want the proxies' CPU and the control plane's memory measured", dp, cp)
			}
			p, _ := linkerdOf(t, res.Manifest)["proxy"].(map[string]any)
			if p["sha256"] != sum || p["release"] == "" {
				t.Errorf("manifest proxy %v, want sha256 %s and a release", p, sum)
			}
		})
	}
}

// TestLinkerdInterrupt is Ctrl-C on a real `meshbench run --mesh linkerd`
// in its measured window: exit 130, the manifest written, and no proxy,
// control plane, namespace, link or identity file left.
func TestLinkerdInterrupt(t *testing.T) {
	bin := linkerdProxy(t)
	m := interruptRun(t, "--linkerd-proxy", bin, "--mesh", "linkerd", "--rate", "100")
	checkLinkerdGone(t, m)
}

// TestLinkerdBench runs a real `meshbench bench` plan of none, sidecar,
// linkerd and ambient at two rates on the netns substrate (one lab per
// topology, kept up across its rates): every cell valid, each linkerd
// cell's mTLS counted from the proxies' counters over that cell only
// (deltas on a kept-up lab, not the sum of both cells), the comparison
// printed with linkerd beside the Istio modes, and nothing left.
func TestLinkerdBench(t *testing.T) {
	bin := linkerdProxy(t)
	zt := requirements(t)
	findEnvoy(t)
	mb := testutil.BuildMeshbench(t)
	wd, _ := os.Getwd()
	out := filepath.Join(t.TempDir(), "bench")
	cmd := exec.Command(mb, "bench", "--substrate", "netns", "--ztunnel", zt, "--linkerd-proxy", bin,
		"--mesh", "none,sidecar,linkerd,ambient", "--rate", "100,200",
		"--repetitions", "1", "--duration", "2s", "--warmup", "1s", "--drain", "500ms", "--sample-interval", "500ms", "--out", out)
	cmd.Dir = filepath.Join(wd, "..", "..", "..") // the project: .tools/envoy
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, b)
	}
	pm, err := results.ReadPlanManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(pm.Labs) != 4 {
		t.Errorf("want one lab per topology (4), got %d", len(pm.Labs))
	}
	linkerdCells := 0
	for id, st := range pm.Cells {
		if st.State != results.CellDone || !st.Valid {
			t.Errorf("cell %s: %s valid %v %v %s", id, st.State, st.Valid, st.Invalid, st.Error)
			continue
		}
		m, err := results.ReadManifest(results.CellDir(out, id))
		if err != nil {
			t.Fatal(err)
		}
		prefix, _ := netnsOf(t, m)
		checkGone(t, m, prefix)
		if !strings.HasPrefix(id, "linkerd") {
			continue
		}
		linkerdCells++
		checkLinkerdGone(t, m)
		// The cell's own requests: its load (warm-up and window, 3 s at
		// its rate) through two proxies, plus the few of its preflight —
		// never the sum of both cells' (at 200 rps that would be ≥ 1800).
		var lr results.LoadResult
		if err := readJSON(filepath.Join(results.CellDir(out, id), results.LoadFile), &lr); err != nil {
			t.Fatal(err)
		}
		got, sent := m.Derived["linkerd_mtls_requests"], float64(lr.Completed)
		if got < 2*sent || got > 2*(sent*1.5+50) || m.Derived["linkerd_plaintext_requests"] != 0 {
			t.Errorf("cell %s: %v mTLS requests through the proxies for %v measured, want about twice the cell's own", id, got, sent)
		}
	}
	if linkerdCells != 2 {
		t.Errorf("%d linkerd cells, want 2", linkerdCells)
	}
	text := string(b)
	for _, want := range []string{"linkerd", "sidecar", "ambient"} {
		if !strings.Contains(text, want) {
			t.Errorf("bench output names no %s:\n%s", want, text)
		}
	}
}

// TestSubstrateFaces runs the faces app on the netns substrate in every
// mode it takes there: face answers 200 only when its HTTP call to smiley
// and its gRPC call to color both succeeded (502 otherwise), so 100%
// success proves both calls through the mode's data plane — none direct,
// sidecar through the face pod's Envoy, ambient through ztunnel to the
// services' VIPs, linkerd through the proxies with mTLS verified on every
// hop (client→face, face→smiley, face→color) from their own counters.
func TestSubstrateFaces(t *testing.T) {
	zt := requirements(t)
	bin := linkerdProxy(t)
	mb := testutil.BuildMeshbench(t)
	for _, tc := range []struct {
		name     string
		mode     topology.Mode
		policies int
	}{
		{"none", topology.ModeNone, 0},       // replica i calls replica i at its pod address
		{"sidecar", topology.ModeSidecar, 0}, // face's sidecar at 127.0.0.1, outside istio-init's capture
		{"ambient", topology.ModeAmbient, 0}, // the services' VIPs through ztunnel
		{"linkerd", topology.ModeLinkerd, 5}, // VIPs through the proxies, the faces' five ALLOW rules
	} {
		t.Run(tc.name, func(t *testing.T) {
			mo := topology.DefaultOptions()
			mo.Mode, mo.App, mo.Replicas, mo.Policies = tc.mode, topology.AppFaces, 2, tc.policies
			out := filepath.Join(t.TempDir(), "run")
			o := local.Options{Settings: platform.Settings{Mesh: mo, Load: loadgen.OpenLoopPerSecond(100), Duration: 2 * time.Second},
				OutDir: out, Meshbench: mb, Substrate: &Substrate{Ztunnel: zt, LinkerdProxy: bin, Meshbench: mb}}
			if tc.mode == topology.ModeSidecar {
				o.Envoy = findEnvoy(t)
			}
			res, _ := runCell(t, o, checkRunGone)
			if lr := res.Load; lr.Completed < 200 || lr.Success != lr.Completed {
				t.Errorf("%d of %d requests answered 200: %v %v", lr.Success, lr.Completed, lr.StatusCodes, lr.Errors)
			}
			if !res.Manifest.Valid {
				t.Errorf("cell invalid: %v", res.Manifest.Invalid)
			}
			if tc.mode == topology.ModeLinkerd {
				text := strings.Join(res.MeshCheck.Lines, "\n")
				for _, p := range []string{"smiley-0", "smiley-1", "color-0", "color-1"} {
					if !strings.Contains(text, p+"-linkerd-proxy") {
						t.Errorf("no counters of %s's proxy:\n%s", p, text)
					}
				}
			}
		})
	}
}

// TestFacesLinkerdVerdict: the faces proof from counters (no proxy
// needed: the counters are the input, as parsed from the proxies'
// metrics): a cell where face's proxy reached both backends and they
// took face's requests over mTLS is valid; a backend that took nothing
// from face, or anything in plaintext, makes it invalid.
func TestFacesLinkerdVerdict(t *testing.T) {
	o := topology.DefaultOptions()
	o.Mode, o.App = topology.ModeLinkerd, topology.AppFaces
	topo, err := topology.Plan(o)
	if err != nil {
		t.Fatal(err)
	}
	id := func(pod string) string { return controlplane.Name(topo.Pod(pod).Identity) }
	cell := func(colorTook, smileyPlain float64) map[string]proxy.Stats {
		return map[string]proxy.Stats{
			"face-0":   {ServerIDs: map[string]float64{id("smiley-0"): 10, id("color-0"): 10}},
			"smiley-0": {ClientIDs: map[string]float64{id("face-0"): 10}, InboundPlain: smileyPlain},
			"color-0":  {ClientIDs: map[string]float64{id("face-0"): colorTook}},
		}
	}
	for _, tc := range []struct {
		name                   string
		colorTook, smileyPlain float64
		invalid                string
	}{
		{"valid", 10, 0, ""},
		{"color took nothing", 0, 0, "faces: color's proxies took no request from face over mTLS"},
		{"smiley took plaintext", 10, 3, "faces: smiley's proxies took 3 requests in plaintext"},
	} {
		mc := local.MeshCheck{Derived: map[string]float64{}}
		facesLinkerd(topo, cell(tc.colorTook, tc.smileyPlain), &mc)
		got := strings.Join(mc.Invalid, "; ")
		if tc.invalid == "" && got != "" || tc.invalid != "" && !strings.Contains(got, tc.invalid) {
			t.Errorf("%s: invalid %q, want %q", tc.name, got, tc.invalid)
		}
		if mc.Derived["linkerd_faces_smiley_sent"] != 10 || !strings.Contains(strings.Join(mc.Lines, "\n"), "face's proxies sent smiley 10 requests over mTLS") {
			t.Errorf("%s: derived %v lines %q", tc.name, mc.Derived, mc.Lines)
		}
	}

	// Two replicas each: the replicas of a service share its identity,
	// so each pod's counter for a peer identity counts once (not once
	// per peer pod).
	o.Replicas = 2
	two, err := topology.Plan(o)
	if err != nil {
		t.Fatal(err)
	}
	id2 := func(pod string) string { return controlplane.Name(two.Pod(pod).Identity) }
	cell2 := map[string]proxy.Stats{}
	for _, f := range two.ServicePods("face") {
		cell2[f.Name] = proxy.Stats{ServerIDs: map[string]float64{id2("smiley-0"): 10, id2("color-0"): 10}}
	}
	for _, b := range []string{"smiley", "color"} {
		for _, q := range two.ServicePods(b) {
			cell2[q.Name] = proxy.Stats{ClientIDs: map[string]float64{id2("face-0"): 10}}
		}
	}
	mc := local.MeshCheck{Derived: map[string]float64{}}
	facesLinkerd(two, cell2, &mc)
	if len(two.ServicePods("face")) != 2 || len(two.ServicePods("smiley")) != 2 {
		t.Fatalf("replicas 2: %d face pods, %d smiley pods", len(two.ServicePods("face")), len(two.ServicePods("smiley")))
	}
	for _, k := range []string{"linkerd_faces_smiley_sent", "linkerd_faces_smiley_took", "linkerd_faces_color_sent", "linkerd_faces_color_took"} {
		if mc.Derived[k] != 20 {
			t.Errorf("replicas 2: %s = %v, want 20 (10 per pod)", k, mc.Derived[k])
		}
	}
}
