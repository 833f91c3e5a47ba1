package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/results"
)

// controlPlaneFixture is plan-small copied with its cells' manifests
// recording, as the netns substrate does, who configured their proxies:
// the sidecar cells the lab's own configs (control_plane lab), the
// ambient cells istiod. Nothing else changes, so every label below comes
// from that record.
func controlPlaneFixture(t *testing.T) *analysis.Plan {
	t.Helper()
	src := filepath.Join("..", "analysis", "testdata", "plan-small")
	dst := filepath.Join(t.TempDir(), "plan-small")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	cells, err := filepath.Glob(filepath.Join(dst, results.CellsDir, "*", results.ManifestFile))
	if err != nil || len(cells) == 0 {
		t.Fatalf("no cells in the fixture: %v", err)
	}
	for _, f := range cells {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		opts := m["options"].(map[string]any)
		opts["substrate"] = "netns"
		switch opts["mesh"] {
		case "sidecar":
			opts["control_plane"] = map[string]any{"name": "lab", "what": "sidecars: Envoy configs rendered by meshbench from the topology"}
		case "ambient":
			opts["control_plane"] = map[string]any{"name": "istiod", "what": "ztunnels: …"}
		}
		if b, err = json.Marshal(m); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := analysis.ReadPlan(dst)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const (
	labSidecar    = "sidecar (meshbench's configs)"
	istiodAmbient = "ambient (config from istiod)"
)

// TestControlPlaneLabelled: every renderer of a plan's results says, for
// the cells whose proxies the lab's own configs configured, that they
// were, and for the others which real control plane, from the cells'
// manifests: the text report (header line and table heads), both plan
// CSVs (the mesh label; figures.csv's control_plane column), the HTML
// report (header and tables; the summary chart's caption), compare's text
// and CSV, the SMP export, and the live view's line for the last cell;
// mode none says nothing.
func TestControlPlaneLabelled(t *testing.T) {
	p := controlPlaneFixture(t)
	a := analysis.Analyze(p, analysis.Options{Level: 0.95, Seed: uint64(p.Manifest.Seed)})
	render := func(f func(*bytes.Buffer) error) string {
		t.Helper()
		var b bytes.Buffer
		if err := f(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	header := "Proxies configured by: sidecar: meshbench's own configs (not istiod's); ambient: istiod"
	t.Run("text", func(t *testing.T) {
		out := render(func(b *bytes.Buffer) error { return PlanText(b, a) })
		for _, want := range []string{header, labSidecar + " (2/2)", istiodAmbient + " (2/2)"} {
			if !strings.Contains(out, want) {
				t.Errorf("report.txt lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("csv", func(t *testing.T) {
		out := render(func(b *bytes.Buffer) error { return TidyCSV(b, a) })
		lines := strings.Split(out, "\n")
		if !strings.HasSuffix(lines[0], ",control_plane") {
			t.Errorf("figures.csv's header %q: want control_plane last", lines[0])
		}
		var lab, real, none int
		for _, l := range lines[1:] {
			switch {
			case strings.Contains(l, ","+labSidecar+",") && strings.HasSuffix(l, ",meshbench's own configs (not istiod's)"):
				lab++
			case strings.Contains(l, ","+istiodAmbient+",") && strings.HasSuffix(l, ",istiod"):
				real++
			case strings.Contains(l, ",none,") && strings.HasSuffix(l, ","):
				none++
			}
		}
		if lab == 0 || real == 0 || none == 0 {
			t.Errorf("figures.csv rows labelled: lab %d, istiod %d, none (empty) %d; want each:\n%s", lab, real, none, out)
		}
		nh := render(func(b *bytes.Buffer) error { return NighthawkCSV(b, a) })
		if !strings.Contains(nh, labSidecar) || !strings.Contains(nh, istiodAmbient) {
			t.Errorf("latency.csv's columns do not name the control planes:\n%s", nh)
		}
	})
	t.Run("html", func(t *testing.T) {
		out := render(func(b *bytes.Buffer) error { return PlanHTML(b, a, nil) })
		for _, want := range []string{`<p class="controlplanes">` + strings.ReplaceAll(header, "'", "&#39;") + "</p>",
			"<th>" + strings.ReplaceAll(labSidecar, "'", "&#39;") + " (2/2)</th>", "<th>" + istiodAmbient + " (2/2)</th>"} {
			if !strings.Contains(out, want) {
				t.Errorf("report.html lacks %q", want)
			}
		}
	})
	t.Run("chart", func(t *testing.T) {
		// The summary chart's ticks are the bare modes (long labels
		// rotated under four panels squeeze the plots); its caption says
		// who configured each.
		charts, err := SummaryCharts(a)
		if err != nil || len(charts) == 0 {
			t.Fatalf("summary charts: %v", err)
		}
		for _, c := range charts {
			if !strings.Contains(c.Chart.Caption(), header+".") {
				t.Errorf("%s's caption lacks %q: %s", c.Name, header, c.Chart.Caption())
			}
		}
		if got := shortTicks([]string{"none", labSidecar, istiodAmbient}); strings.Join(got, ",") != "none,sidecar,ambient" {
			t.Errorf("ticks %q", got)
		}
		if got := shortTicks([]string{labSidecar, "sidecar" + analysis.IstiodConfigured}); got[0] != labSidecar {
			t.Errorf("ticks %q: two sidecars must keep their labels", got)
		}
	})
	t.Run("compare", func(t *testing.T) {
		sc := analysis.CompareSets(p, p, analysis.Options{Level: 0.95, Seed: uint64(p.Manifest.Seed)})
		txt := render(func(b *bytes.Buffer) error { return CompareText(b, sc) })
		if !strings.Contains(txt, labSidecar) || !strings.Contains(txt, istiodAmbient) || strings.Count(txt, "     "+header+"\n") != 2 {
			t.Errorf("compare's text does not name the control planes:\n%s", txt)
		}
		cs := render(func(b *bytes.Buffer) error { return CompareCSV(b, sc) })
		if !strings.Contains(cs, ",meshbench's own configs (not istiod's)\n") || !strings.Contains(cs, ",istiod\n") {
			t.Errorf("compare's CSV lacks the control_plane column's values:\n%s", cs)
		}
	})
	t.Run("smp", func(t *testing.T) {
		seen := map[string]bool{}
		for _, c := range p.Cells {
			run, err := results.ReadManifest(c.Dir)
			if err != nil {
				t.Fatal(err)
			}
			load, err := results.ReadFile(filepath.Join(c.Dir, results.LoadFile))
			if err != nil {
				t.Fatal(err)
			}
			b, err := SMPResult(c, run, load)
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				MeshConfig struct {
					Labels   map[string]string `json:"labels"`
					MeshType struct {
						Annotations map[string]string `json:"annotations"`
					} `json:"mesh_type"`
				} `json:"service_mesh_config"`
			}
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			cp, emulation := doc.MeshConfig.Labels["meshbench.control_plane"], doc.MeshConfig.MeshType.Annotations["meshbench.io/emulation"]
			mode := analysis.MeshMode(c.Config.Mesh)
			seen[mode] = true
			switch {
			case mode == "sidecar" && (cp != "meshbench's own configs (not istiod's)" || emulation == ""):
				t.Errorf("%s: SMP control plane %q, emulation %q: want the lab's own configs, an emulation", c.ID, cp, emulation)
			case mode == "ambient" && (cp != "istiod" || emulation != ""):
				t.Errorf("%s: SMP control plane %q, emulation %q: want istiod, no emulation", c.ID, cp, emulation)
			case mode == "sidecar" && !strings.HasPrefix(emulation, "meshbench's local Envoy emulation"):
				t.Errorf("%s: SMP emulation %q", c.ID, emulation)
			case mode == "none" && cp != "":
				t.Errorf("%s: SMP control plane %q for mode none", c.ID, cp)
			}
		}
		// An ambient cell on the fast path: the ztunnel is Istio's own,
		// only its config is meshbench's.
		for _, c := range p.Cells {
			if analysis.MeshMode(c.Config.Mesh) != "ambient" {
				continue
			}
			run, err := results.ReadManifest(c.Dir)
			if err != nil {
				t.Fatal(err)
			}
			load, err := results.ReadFile(filepath.Join(c.Dir, results.LoadFile))
			if err != nil {
				t.Fatal(err)
			}
			run.Options["control_plane"] = map[string]any{"name": "lab"}
			lc := *c
			lc.Config.Mesh = "ambient" + analysis.LabConfigured
			b, err := SMPResult(&lc, run, load)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), `"meshbench.io/emulation": "Istio's own ztunnel configured from meshbench's local config file, not by istiod`) ||
				!strings.Contains(string(b), `"meshbench.control_plane": "meshbench's own configs (not istiod's)"`) {
				t.Errorf("a fast-path ambient cell's SMP mesh config:\n%s", b)
			}
			break
		}
		if !seen["sidecar"] || !seen["ambient"] {
			t.Errorf("modes seen %v", seen)
		}
	})
	t.Run("live", func(t *testing.T) {
		var c *analysis.Cell
		for _, cell := range p.Cells {
			if analysis.MeshMode(cell.Config.Mesh) == "sidecar" {
				c = cell
			}
		}
		run, err := results.ReadManifest(c.Dir)
		if err != nil {
			t.Fatal(err)
		}
		frame := LiveFrame(LiveState{Total: 12, Last: &LiveLast{ID: c.ID, HasLatency: true, P50Ns: 1e6, P99Ns: 2e6, SuccessRatio: 1, RatePerSec: 50,
			ControlPlane: analysis.CellControlPlane(run)}}, 200)
		if !strings.Contains(frame, "last "+c.ID+": 50.0/s") || !strings.Contains(frame, "configs: meshbench's own configs (not istiod's)") {
			t.Errorf("the live view's last line does not say the lab's configs:\n%s", frame)
		}
	})
}
