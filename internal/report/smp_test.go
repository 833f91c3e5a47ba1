package report

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// smpFixture reads one fixture cell of plan-small: the cell, its run
// manifest and its load result.
func smpFixture(t *testing.T, id string) (*analysis.Cell, *results.RunManifest, *results.LoadResult) {
	t.Helper()
	dir := results.CellDir(filepath.Join("..", "analysis", "testdata", "plan-small"), id)
	c, err := analysis.ReadCell(dir, id)
	if err != nil {
		t.Fatal(err)
	}
	run, err := results.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	load, err := results.ReadFile(filepath.Join(dir, results.LoadFile))
	if err != nil {
		t.Fatal(err)
	}
	return c, run, load
}

// smpCell renders one fixture cell of plan-small as `meshbench report` does.
func smpCell(t *testing.T, id string) (*analysis.Cell, []byte) {
	t.Helper()
	c, run, load := smpFixture(t, id)
	b, err := SMPResult(c, run, load)
	if err != nil {
		t.Fatal(err)
	}
	return c, b
}

// get walks decoded JSON by keys (and list indexes given as "0").
func get(t *testing.T, v any, path string) any {
	t.Helper()
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[k]; !ok {
				t.Fatalf("%s: no %q", path, k)
			}
		case []any:
			if k != "0" || len(x) == 0 {
				t.Fatalf("%s: index %q of %d", path, k, len(x))
			}
			v = x[0]
		default:
			t.Fatalf("%s: %q of a %T", path, k, v)
		}
	}
	return v
}

// TestSMPGolden pins the SMP export of a sidecar, an ambient and a no-mesh
// cell, checks the fields SMP's messages are made of, and that the
// latencies are analysis.ReadCell's.
func TestSMPGolden(t *testing.T) {
	for _, tt := range []struct {
		id, meshType, mode string
	}{
		{"sidecar-static-r50-x1-p0-http-pod-mtls-rep1", "ISTIO", "sidecar"},
		{"ambient-static-r200-x1-p0-http-pod-mtls-rep2", "ISTIO", "ambient"},
		{"none-static-r50-x1-p0-http-pod-mtls-rep1", "", "none"},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			c, b := smpCell(t, tt.id)
			testutil.Golden(t, "smp-"+tt.mode+".json.golden", b)
			var doc map[string]any
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			// Every message's own fields, by the proto's names.
			for _, f := range []string{"smp_version", "id", "start_time", "end_time", "latencies_ms", "actual_qps", "test_id", "mesh_config_id", "env_id"} {
				get(t, doc, "performance_test_result."+f)
			}
			for _, f := range []string{"smp_version", "id", "name", "duration", "clients.0.load_generator", "clients.0.protocol",
				"clients.0.connections", "clients.0.rps", "clients.0.endpoint_urls"} {
				get(t, doc, "performance_test_config."+f)
			}
			for _, m := range []string{"service_mesh_config", "environment_config"} {
				if got := get(t, doc, m+".smp_version"); got != SMPVersion {
					t.Errorf("%s.smp_version %v", m, got)
				}
			}
			// The ids link the four messages.
			for ref, msg := range map[string]string{"test_id": "performance_test_config", "mesh_config_id": "service_mesh_config", "env_id": "environment_config"} {
				if get(t, doc, "performance_test_result."+ref) != get(t, doc, msg+".id") {
					t.Errorf("%s does not name %s's id", ref, msg)
				}
			}
			lat := "performance_test_result.latencies_ms."
			for key, fig := range map[string]string{"p50": analysis.LatencyP50, "p90": analysis.LatencyP90, "p99": analysis.LatencyP99,
				"max": analysis.LatencyMax, "average": analysis.LatencyMean} {
				if got := get(t, doc, lat+key); got != c.Figures[fig] {
					t.Errorf("%s %v, ReadCell %v", key, got, c.Figures[fig])
				}
			}
			if got := get(t, doc, lat+"min"); got != c.Spectrum[0] {
				t.Errorf("min %v, ReadCell p0 %v", got, c.Spectrum[0])
			}
			if got := get(t, doc, "performance_test_result.actual_qps"); got != c.Figures[analysis.AchievedRate] {
				t.Errorf("actual_qps %v, ReadCell %v", got, c.Figures[analysis.AchievedRate])
			}
			mesh := get(t, doc, "service_mesh_config").(map[string]any)
			if tt.meshType == "" {
				if _, ok := mesh["mesh_type"]; ok || mesh["mtls_enabled"] != false {
					t.Errorf("no mesh: mesh_type %v, mtls %v", mesh["mesh_type"], mesh["mtls_enabled"])
				}
			} else {
				if get(t, doc, "service_mesh_config.mesh_type.type") != tt.meshType ||
					get(t, doc, "service_mesh_config.mesh_type.labels").(map[string]any)["istio.mode"] != tt.mode {
					t.Errorf("mesh_type %v", mesh["mesh_type"])
				}
				note := get(t, doc, "service_mesh_config.mesh_type.annotations").(map[string]any)["meshbench.io/emulation"]
				if s, _ := note.(string); !strings.Contains(s, "not Istio itself") {
					t.Errorf("emulation annotation %q", note)
				}
			}
		})
	}
}

// TestSMPMeshTypeByPlatform checks that only a run of the local lab is
// labelled an emulation: the same cell on a cluster ran the real mesh. It
// renders the sidecar fixture cell with its manifest's platform changed,
// and as a Linkerd cell (only clusters run Linkerd).
func TestSMPMeshTypeByPlatform(t *testing.T) {
	const id = "sidecar-static-r50-x1-p0-http-pod-mtls-rep1"
	for _, tt := range []struct {
		name, platform, mesh string
		wantType, wantMode   string // mesh_type.type and its istio.mode label ("" none)
		emulation            bool   // the meshbench.io/emulation annotation is there
	}{
		// The lab's sidecar mode is Envoy playing istio-proxy.
		{"local sidecar", results.PlatformLocal, "sidecar", "ISTIO", "sidecar", true},
		// A manifest from before the platform field: those were local runs.
		{"old manifest", "", "sidecar", "ISTIO", "sidecar", true},
		// The bug fixed: Istio on a cluster is Istio itself.
		{"kube sidecar", results.PlatformKube, "sidecar", "ISTIO", "sidecar", false},
		// Linkerd is its own SMP mesh type and never an emulation.
		{"kube linkerd", results.PlatformKube, "linkerd", "LINKERD", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, run, load := smpFixture(t, id)
			run.Platform, c.Config.Mesh = tt.platform, tt.mesh
			b, err := SMPResult(c, run, load)
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]any
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			mt := get(t, doc, "service_mesh_config.mesh_type").(map[string]any)
			if mt["type"] != tt.wantType {
				t.Errorf("mesh_type.type %v, want %s", mt["type"], tt.wantType)
			}
			labels, _ := mt["labels"].(map[string]any)
			if got, _ := labels["istio.mode"].(string); got != tt.wantMode {
				t.Errorf("istio.mode %q, want %q", got, tt.wantMode)
			}
			ann, _ := mt["annotations"].(map[string]any)
			if _, got := ann["meshbench.io/emulation"]; got != tt.emulation {
				t.Errorf("emulation annotation present %v, want %v (%v)", got, tt.emulation, ann)
			}
			// Both sidecar meshes report their sidecars' usage.
			get(t, doc, "service_mesh_config.sidecar.count")
		})
	}
}
