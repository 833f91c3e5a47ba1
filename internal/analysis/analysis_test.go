package analysis_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/analysis/stats"
	"github.com/meshbench/meshbench/internal/results"
)

// The fixtures are real plan results directories (none, sidecar and ambient
// at 50 and 200 rps, 2 repetitions, 1 replica, from a real `meshbench bench`
// run) cut down to the files the analysis reads. plan-invalid is a copy with
// sidecar-r50-rep2 invalid, sidecar-r200-rep2 failed with its results kept,
// ambient-r50-rep2 failed with a directory but no load.json (the load
// generator died), ambient-r200-rep2 failed with no directory, and
// none-r200-rep2 pending.
const (
	smallDir   = "testdata/plan-small"
	invalidDir = "testdata/plan-invalid"
)

func readPlan(t *testing.T, dir string) *analysis.Plan {
	t.Helper()
	p, err := analysis.ReadPlan(dir)
	if err != nil {
		t.Fatalf("ReadPlan(%s): %v", dir, err)
	}
	return p
}

// rawJSON decodes a file into generic JSON values, so the test reads the
// files without the types the code under test uses.
func rawJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // Unix times in ns do not fit a float64
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

func obj(v any, path ...string) map[string]any {
	for _, k := range path {
		v = v.(map[string]any)[k]
	}
	return v.(map[string]any)
}

func num(v any, path ...string) float64 {
	for _, k := range path {
		v = v.(map[string]any)[k]
	}
	f, err := v.(json.Number).Float64()
	if err != nil {
		panic(err)
	}
	return f
}

func integer(v any, path ...string) int64 {
	for _, k := range path {
		v = v.(map[string]any)[k]
	}
	n, err := v.(json.Number).Int64()
	if err != nil {
		panic(err)
	}
	return n
}

// expectedFigures recomputes a cell's figures from its load.json and
// resources.json, independently of ReadCell.
func expectedFigures(t *testing.T, dir string) (map[string]float64, []float64) {
	t.Helper()
	want := map[string]float64{}
	load := rawJSON(t, filepath.Join(dir, results.LoadFile))
	lat := obj(load, "latency")
	// The load generator's own summary of the histogram (exact side
	// counters for max and mean).
	want[analysis.LatencyP50] = num(lat, "p50_ns") / 1e6
	want[analysis.LatencyP90] = num(lat, "p90_ns") / 1e6
	want[analysis.LatencyP95] = num(lat, "p95_ns") / 1e6
	want[analysis.LatencyP99] = num(lat, "p99_ns") / 1e6
	// p99.9 only with the 1000 answers that resolve it (the fixture's
	// cells at 50 and 200 rps for 2 s have 100 and 400: left out).
	if num(lat, "count")+num(lat, "out_of_range") >= 1000 {
		want[analysis.LatencyP999] = num(lat, "p999_ns") / 1e6
	}
	want[analysis.LatencyMax] = num(lat, "max_ns") / 1e6
	want[analysis.LatencyMean] = num(lat, "mean_ns") / 1e6
	// The spectrum from the HDR histogram itself.
	lr, err := results.ReadFile(filepath.Join(dir, results.LoadFile))
	if err != nil {
		t.Fatal(err)
	}
	h, _, _, err := lr.Histograms()
	if err != nil {
		t.Fatal(err)
	}
	if h.Count() != integer(lat, "count") {
		t.Fatalf("%s: histogram holds %d, load.json says %v", dir, h.Count(), lat["count"])
	}
	var spectrum []float64
	for _, p := range analysis.SpectrumPercentiles {
		spectrum = append(spectrum, float64(h.Percentile(p))/1e6)
	}
	// Achieved rate as vegeta computes it: sent over the span of sends.
	span := float64(integer(load, "last_send_unix_ns")-integer(load, "first_send_unix_ns")) / 1e9
	rate := num(load, "sent") / span
	want[analysis.AchievedRate] = rate
	want[analysis.SuccessRatio] = num(load, "success") / num(load, "completed")

	res := obj(rawJSON(t, filepath.Join(dir, results.ResourcesFile)), "summary")
	put := func(prefix string, g map[string]any) {
		want[analysis.CPUPrefix+prefix] = num(g, "cpu_millicores", "avg")
		if num(g, "pss_rounds") > 0 {
			want[analysis.MemPrefix+prefix] = num(g, "pss_bytes", "avg") / (1 << 20)
		}
	}
	for _, g := range res["categories"].([]any) {
		put(g.(map[string]any)["name"].(string), g.(map[string]any))
	}
	put("TOTAL", obj(res, "total"))
	for _, g := range res["components"].([]any) {
		put(analysis.ComponentInfix+g.(map[string]any)["name"].(string), g.(map[string]any))
	}
	if dp, ok := want[analysis.CPUPrefix+"data-plane"]; ok {
		want[analysis.DataPlaneCPUPer1000] = dp / rate * 1000
		want[analysis.DataPlaneCPUToApp] = dp / want[analysis.CPUPrefix+"app"]
	}
	if mem, ok := want[analysis.MemPrefix+"data-plane"]; ok {
		want[analysis.DataPlaneMemPer1000] = mem / rate * 1000
		want[analysis.DataPlaneMemPerPod] = mem // one replica of static
		if app, ok := want[analysis.MemPrefix+"app"]; ok {
			want[analysis.DataPlaneMemToApp] = mem / app
		}
	}
	// The seed's ratios: (data plane + control plane) and data plane over
	// app + load, in percent (these fixtures have no control plane).
	for _, r := range []struct{ prefix, mesh, dp string }{{analysis.CPUPrefix, analysis.MeshCPURatio, analysis.DataPlaneCPURatio},
		{analysis.MemPrefix, analysis.MeshMemRatio, analysis.DataPlaneMemRatio}} {
		if dp, ok := want[r.prefix+"data-plane"]; ok {
			if nonMesh := want[r.prefix+"app"] + want[r.prefix+"load"]; nonMesh > 0 {
				want[r.dp] = 100 * dp / nonMesh
				want[r.mesh] = 100 * (dp + want[r.prefix+"control-plane"]) / nonMesh
			}
		}
	}
	return want, spectrum
}

func near(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// TestReadCell: every figure of every fixture cell equals the value
// recomputed here from load.json and resources.json, no figure is extra,
// and the config comes from the manifest.
func TestReadCell(t *testing.T) {
	ids, err := os.ReadDir(filepath.Join(smallDir, results.CellsDir))
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 12 {
		t.Fatalf("fixture has %d cells, want 12", len(ids))
	}
	for _, e := range ids {
		id := e.Name()
		t.Run(id, func(t *testing.T) {
			dir := results.CellDir(smallDir, id)
			c, err := analysis.ReadCell(dir, id)
			if err != nil {
				t.Fatal(err)
			}
			want, spectrum := expectedFigures(t, dir)
			for name, w := range want {
				got, ok := c.Figures[name]
				if !ok {
					t.Errorf("figure %s missing, want %v", name, w)
				} else if !near(got, w) {
					t.Errorf("figure %s = %v, want %v", name, got, w)
				}
			}
			for name, v := range c.Figures {
				if _, ok := want[name]; !ok {
					t.Errorf("unexpected figure %s = %v", name, v)
				}
			}
			if !slices.Equal(c.Spectrum, spectrum) {
				t.Errorf("spectrum %v, want %v", c.Spectrum, spectrum)
			}
			// The spectrum is monotonic and ends at the exact maximum's bucket.
			if !slices.IsSorted(c.Spectrum) {
				t.Errorf("spectrum not monotonic: %v", c.Spectrum)
			}
			mesh, _, _ := strings.Cut(id, "-")
			rate := "50"
			if strings.Contains(id, "-r200-") {
				rate = "200"
			}
			wantCfg := analysis.Config{Mesh: mesh, App: "static", Rate: rate, Replicas: 1, Policies: 0, Protocol: "http", MTLS: true,
				Params: analysis.Params{Connections: 16}} // one cell: nothing to fold
			if c.Config != wantCfg {
				t.Errorf("config %+v, want %+v", c.Config, wantCfg)
			}
			if !c.Valid || len(c.Invalid) != 0 || c.ID != id || c.Dir != dir {
				t.Errorf("valid %v invalid %q id %q dir %q", c.Valid, c.Invalid, c.ID, c.Dir)
			}
			// No mesh, no data plane: its figures must be absent, not 0.
			_, hasDP := c.Figures[analysis.CPUPrefix+"data-plane"]
			if hasDP != (mesh != "none") {
				t.Errorf("data-plane CPU present %v for mesh %s", hasDP, mesh)
			}
		})
	}
}

// TestReadCellMemory: the memory figures (absent from the fixture, which
// had no PSS reading) come from PSS averages in MiB, and the per-replica
// figure divides by the app pods (3 per replica for faces).
func TestReadCellMemory(t *testing.T) {
	src := results.CellDir(smallDir, "sidecar-static-r200-x1-p0-http-pod-mtls-rep1")
	dir := t.TempDir()
	for _, f := range []string{results.ManifestFile, results.LoadFile} {
		copyFile(t, filepath.Join(src, f), filepath.Join(dir, f))
	}
	res := rawJSON(t, filepath.Join(src, results.ResourcesFile))
	sum := obj(res, "summary")
	setPSS := func(g map[string]any, mib float64) {
		g["pss_rounds"] = 2.0
		g["pss_bytes"] = map[string]any{"min": mib * (1 << 20), "max": mib * (1 << 20), "avg": mib * (1 << 20)}
	}
	for _, g := range sum["categories"].([]any) {
		g := g.(map[string]any)
		switch g["name"] {
		case "data-plane":
			setPSS(g, 60)
		case "app":
			setPSS(g, 20)
		}
	}
	setPSS(obj(sum, "total"), 200)
	b, _ := json.Marshal(res)
	if err := os.WriteFile(filepath.Join(dir, results.ResourcesFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := analysis.ReadCell(dir, "x")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := expectedFigures(t, dir)
	rate := want[analysis.AchievedRate]
	for name, w := range map[string]float64{
		analysis.MemPrefix + "data-plane":  60,
		analysis.MemPrefix + "app":         20,
		analysis.MemPrefix + "TOTAL":       200,
		analysis.DataPlaneMemPerPod:        60,
		analysis.DataPlaneMemToApp:         3,
		analysis.DataPlaneMemPer1000:       60 / rate * 1000,
		analysis.CPUPrefix + "data-plane":  want[analysis.CPUPrefix+"data-plane"],
		analysis.MemPrefix + "load":        math.NaN(), // no PSS: absent
		analysis.MemPrefix + "component:x": math.NaN(),
	} {
		got, ok := c.Figures[name]
		switch {
		case math.IsNaN(w) && ok:
			t.Errorf("%s = %v, want absent", name, got)
		case !math.IsNaN(w) && (!ok || !near(got, w)):
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, w)
		}
	}

	// faces runs three app pods per replica.
	m := rawJSON(t, filepath.Join(dir, results.ManifestFile))
	obj(m, "options")["app"] = "faces"
	obj(m, "options")["replicas"] = 2.0
	b, _ = json.Marshal(m)
	if err := os.WriteFile(filepath.Join(dir, results.ManifestFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err = analysis.ReadCell(dir, "x")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Figures[analysis.DataPlaneMemPerPod]; got != 10 {
		t.Errorf("faces ×2: data-plane MiB per pod %v, want 60/6 = 10", got)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReadCellErrors: a missing or broken file is an error naming it.
func TestReadCellErrors(t *testing.T) {
	src := results.CellDir(smallDir, "none-static-r50-x1-p0-http-pod-mtls-rep1")
	for _, tt := range []struct {
		name, drop, garble, want string
	}{
		{"no manifest", results.ManifestFile, "", results.ManifestFile},
		{"no load", results.LoadFile, "", results.LoadFile},
		{"no resources", results.ResourcesFile, "", results.ResourcesFile},
		{"bad resources", "", results.ResourcesFile, results.ResourcesFile},
		{"bad load", "", results.LoadFile, results.LoadFile},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range []string{results.ManifestFile, results.LoadFile, results.ResourcesFile} {
				if f != tt.drop {
					copyFile(t, filepath.Join(src, f), filepath.Join(dir, f))
				}
			}
			if tt.garble != "" {
				os.WriteFile(filepath.Join(dir, tt.garble), []byte("{not json"), 0o644)
			}
			_, err := analysis.ReadCell(dir, "c1")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want one naming %s", err, tt.want)
			}
		})
	}
}

// TestReadPlan: every cell in the plan's order; the invalid fixture's
// invalid, failed and pending cells each where they belong.
func TestReadPlan(t *testing.T) {
	p := readPlan(t, smallDir)
	if len(p.Cells) != 12 || len(p.Missing) != 0 || len(p.Failed) != 0 {
		t.Fatalf("%d cells, missing %v, failed %v", len(p.Cells), p.Missing, p.Failed)
	}
	for i, c := range p.Cells {
		if c.ID != p.Manifest.Order[i] {
			t.Errorf("cell %d is %s, want %s (the plan's order)", i, c.ID, p.Manifest.Order[i])
		}
		if !c.Valid {
			t.Errorf("%s invalid: %v", c.ID, c.Invalid)
		}
	}
	if !strings.Contains(string(p.PlanYAML), "repetitions: 2") {
		t.Errorf("plan.yaml not read: %q", p.PlanYAML)
	}

	p = readPlan(t, invalidDir)
	if want := []string{"none-static-r200-x1-p0-http-pod-mtls-rep2"}; !slices.Equal(p.Missing, want) {
		t.Errorf("missing %v, want %v", p.Missing, want)
	}
	wantFailed := map[string]string{
		"ambient-static-r200-x1-p0-http-pod-mtls-rep2": "prepare: listen tcp 127.0.2.10:8080: bind: address already in use",
		// A directory without load.json: nothing measured, so failed, not a cell.
		"ambient-static-r50-x1-p0-http-pod-mtls-rep2": "load generator: exit status 2: panic: boom",
	}
	if !reflect.DeepEqual(p.Failed, wantFailed) {
		t.Errorf("failed %v, want %v", p.Failed, wantFailed)
	}
	if len(p.Cells) != 9 {
		t.Errorf("%d cells, want 9", len(p.Cells))
	}
	invalid := map[string][]string{}
	for _, c := range p.Cells {
		if !c.Valid {
			invalid[c.ID] = c.Invalid
		}
	}
	wantInvalid := map[string][]string{
		"sidecar-static-r50-x1-p0-http-pod-mtls-rep2": {"target rate not reached: sent 94 of 100 scheduled"},
		// Failed with its results kept: invalid, with the error as reason.
		"sidecar-static-r200-x1-p0-http-pod-mtls-rep2": {"teardown: server-0 sidecar: still running after 15s"},
	}
	if !reflect.DeepEqual(invalid, wantInvalid) {
		t.Errorf("invalid %v, want %v", invalid, wantInvalid)
	}
}

// TestReadPlanErrors: not a plan directory is an error; a done cell that
// cannot be read is listed (cell, file, reason) and the others are read.
func TestReadPlanErrors(t *testing.T) {
	if _, err := analysis.ReadPlan(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a plan results directory") {
		t.Errorf("empty dir: %v", err)
	}
	if _, err := analysis.ReadPlan(results.CellDir(smallDir, "none-static-r50-x1-p0-http-pod-mtls-rep1")); err == nil {
		t.Error("a cell directory read as a plan")
	}
	whole, err := analysis.ReadPlan(smallDir)
	if err != nil {
		t.Fatal(err)
	}
	const id = "none-static-r50-x1-p0-http-pod-mtls-rep1"
	tests := []struct {
		name   string
		file   string
		damage func(path string) error
		reason string // in the listed reason
	}{
		// load.json cut in the middle (a full disk, a crash).
		{"truncated load.json", results.LoadFile, func(p string) error { return os.Truncate(p, 100) }, "unexpected EOF"},
		// load.json without a required field: its latency histogram.
		{"load.json missing a field", results.LoadFile, func(p string) error {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				return err
			}
			delete(m, "latency")
			b, _ = json.Marshal(m)
			return os.WriteFile(p, b, 0o644)
		}, "histogram missing"},
		// load.json gone: must not be dropped silently.
		{"load.json gone", results.LoadFile, os.Remove, "no such file"},
		// resources.json gone.
		{"resources.json gone", results.ResourcesFile, os.Remove, "no such file"},
		// manifest.json truncated.
		{"truncated manifest.json", results.ManifestFile, func(p string) error { return os.Truncate(p, 10) }, "unexpected end of JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyPlan(t, smallDir)
			if err := tt.damage(filepath.Join(results.CellDir(dir, id), tt.file)); err != nil {
				t.Fatal(err)
			}
			p, err := analysis.ReadPlan(dir)
			if err != nil {
				t.Fatalf("one bad cell sank the plan: %v", err)
			}
			if len(p.Unreadable) != 1 || p.Unreadable[0].ID != id || p.Unreadable[0].File != tt.file ||
				!strings.Contains(p.Unreadable[0].Reason(), tt.reason) {
				t.Fatalf("unreadable %+v, want %s's %s (%s)", p.Unreadable, id, tt.file, tt.reason)
			}
			if len(p.Cells) != len(whole.Cells)-1 {
				t.Errorf("%d cells read, want the other %d", len(p.Cells), len(whole.Cells)-1)
			}
			for _, c := range p.Cells {
				if c.ID == id {
					t.Error("the unreadable cell is among the figures")
				}
			}
		})
	}
}

func copyPlan(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// validValues are a figure's values over a group's valid cells, computed
// from the cells (not via the analysis).
func validValues(cells []*analysis.Cell, cfg analysis.Config, fig string) []float64 {
	var xs []float64
	for _, c := range cells {
		if c.Config == cfg && c.Valid {
			if v, ok := c.Figures[fig]; ok {
				xs = append(xs, v)
			}
		}
	}
	return xs
}

// TestAnalyzeMedians: every group's figure is the median of its valid
// cells' values with N the number of values; invalid cells are excluded
// and listed.
func TestAnalyzeMedians(t *testing.T) {
	for _, dir := range []string{smallDir, invalidDir} {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			p := readPlan(t, dir)
			a := analysis.Analyze(p, analysis.Options{Seed: 1})
			cfgs := map[string]analysis.Config{}
			for _, c := range p.Cells {
				cfgs[c.Config.Key()] = c.Config
			}
			if len(a.Groups) != len(cfgs) || len(cfgs) != 6 {
				t.Fatalf("%d groups, %d configs, want 6", len(a.Groups), len(cfgs))
			}
			for key, cfg := range cfgs {
				g := a.Groups[key]
				if g == nil || g != a.Group(cfg.Mesh, cfg.Scenario()) {
					t.Fatalf("group %s missing or not found by Group()", key)
				}
				valid, all := 0, 0
				for _, c := range p.Cells {
					if c.Config == cfg {
						all++
						if c.Valid {
							valid++
						}
					}
				}
				if g.Valid != valid || len(g.Cells) != all {
					t.Errorf("%s: valid %d of %d, want %d of %d", key, g.Valid, len(g.Cells), valid, all)
				}
				if len(g.Figures) < 15 {
					t.Errorf("%s: only %d figures", key, len(g.Figures))
				}
				for fig, iv := range g.Figures {
					xs := validValues(p.Cells, cfg, fig)
					if iv.Estimate != stats.Median(xs) || iv.N != len(xs) {
						t.Errorf("%s %s: median %v n %d, want %v n %d", key, fig, iv.Estimate, iv.N, stats.Median(xs), len(xs))
					}
					if len(xs) > 1 && (iv.Lo != slices.Min(xs) || iv.Hi != slices.Max(xs)) {
						// 2 runs at 95%: the bootstrap interval is the range.
						t.Errorf("%s %s: interval [%v, %v], want the range of %v", key, fig, iv.Lo, iv.Hi, xs)
					}
					if len(xs) == 1 && (iv.HasInterval() || iv.Lo != xs[0]) {
						t.Errorf("%s %s: one run gave interval %+v", key, fig, iv)
					}
				}
				if len(g.Spectrum) != len(analysis.SpectrumPercentiles) {
					t.Fatalf("%s: spectrum of %d points", key, len(g.Spectrum))
				}
				for i, iv := range g.Spectrum {
					var xs []float64
					for _, c := range p.Cells {
						if c.Config == cfg && c.Valid {
							xs = append(xs, c.Spectrum[i])
						}
					}
					if iv.Estimate != stats.Median(xs) || iv.N != valid {
						t.Errorf("%s spectrum[%d]: %v n %d, want %v n %d", key, i, iv.Estimate, iv.N, stats.Median(xs), valid)
					}
				}
			}
			var invalid []string
			for _, c := range a.Invalid {
				invalid = append(invalid, c.ID)
			}
			var want []string
			if dir == invalidDir {
				// In the plan's order.
				want = []string{"sidecar-static-r50-x1-p0-http-pod-mtls-rep2", "sidecar-static-r200-x1-p0-http-pod-mtls-rep2"}
				// The invalid cell's value must not reach the median: with one
				// valid run left the median is that run's value.
				g := a.Group("sidecar", analysis.Scenario{App: "static", Rate: "50", Replicas: 1, Protocol: "http", MTLS: true})
				var validP50, invalidP50 float64
				for _, c := range g.Cells {
					if c.Valid {
						validP50 = c.Figures[analysis.LatencyP50]
					} else {
						invalidP50 = c.Figures[analysis.LatencyP50]
					}
				}
				if got := g.Figures[analysis.LatencyP50]; got.Estimate != validP50 || got.Estimate == invalidP50 || got.N != 1 {
					t.Errorf("sidecar 50 rps p50 %+v, want the valid run's %v only", got, validP50)
				}
			}
			if !slices.Equal(invalid, want) {
				t.Errorf("invalid %v, want %v", invalid, want)
			}
		})
	}
}

// TestAnalyzeComparisons: every mesh against the baseline per scenario,
// then the pairs of the other meshes, ratios of the medians.
func TestAnalyzeComparisons(t *testing.T) {
	a := analysis.Analyze(readPlan(t, smallDir), analysis.Options{Seed: 1})
	if a.Baseline != "none" || !slices.Equal(a.Meshes, []string{"none", "sidecar", "ambient"}) {
		t.Fatalf("baseline %s, meshes %v", a.Baseline, a.Meshes)
	}
	var got []string
	for _, c := range a.Comparisons {
		got = append(got, c.Scenario.Rate+": "+c.Mesh+" vs "+c.Baseline)
		g, base := a.Group(c.Mesh, c.Scenario), a.Group(c.Baseline, c.Scenario)
		for _, f := range analysis.CompareFigures {
			av := validValues(g.Cells, g.Config, f)
			bv := validValues(base.Cells, base.Config, f)
			d, ok := c.Diffs[f]
			if len(av) == 0 || len(bv) == 0 {
				if ok {
					t.Errorf("%s vs %s: diff of %s without data on both sides", c.Mesh, c.Baseline, f)
				}
				continue
			}
			ratio := stats.Median(av) / stats.Median(bv)
			if !ok || !near(c.Ratios[f], ratio) || !near(d.Estimate, ratio-1) {
				t.Errorf("%s %s vs %s %s: ratio %v diff %v, want %v", c.Scenario.Rate, c.Mesh, c.Baseline, f, c.Ratios[f], d.Estimate, ratio)
			}
			if d.N != 2 || !d.HasInterval() || !(d.Lo <= d.Estimate && d.Estimate <= d.Hi) {
				t.Errorf("%s vs %s %s: interval %+v", c.Mesh, c.Baseline, f, d)
			}
		}
	}
	want := []string{"50: sidecar vs none", "50: ambient vs none", "200: sidecar vs none", "200: ambient vs none",
		"50: ambient vs sidecar", "200: ambient vs sidecar"}
	if !slices.Equal(got, want) {
		t.Errorf("comparisons %q, want %q", got, want)
	}
	// Two runs a side are too few to judge: no verdict, whatever the
	// intervals (TestVerdict has the words for three).
	for _, c := range a.Comparisons {
		if v, want := c.Verdict(), c.Mesh+" vs "+c.Baseline+": 2 runs: too few to judge; run 3 or more"; v != want {
			t.Errorf("verdict %q, want %q", v, want)
		}
		for f, d := range c.Diffs {
			if d.Significant() {
				t.Errorf("%s vs %s %s: significant with 2 runs a side", c.Mesh, c.Baseline, f)
			}
		}
	}
}

// TestAnalyzeOneRun: the invalid fixture leaves groups with one valid run:
// their comparisons have no interval and the verdict says it is too few
// to judge.
func TestAnalyzeOneRun(t *testing.T) {
	a := analysis.Analyze(readPlan(t, invalidDir), analysis.Options{Seed: 1})
	for _, c := range a.Comparisons {
		if c.Scenario.Rate == "200" {
			// none, sidecar and ambient all have one valid run at 200 rps.
			for f, d := range c.Diffs {
				if d.HasInterval() || d.N != 1 || d.Method != stats.MethodSingleRun {
					t.Errorf("%s vs %s %s: %+v, want a single run", c.Mesh, c.Baseline, f, d)
				}
			}
			if v := c.Verdict(); !strings.HasSuffix(v, ": 1 run: too few to judge; run 3 or more") {
				t.Errorf("verdict %q: want it too few to judge", v)
			}
		}
	}
}

// TestVerdict: the verdict's words for known differences.
func TestVerdict(t *testing.T) {
	sig := func(est, lo, hi float64) stats.Interval {
		return stats.Interval{Estimate: est, Lo: lo, Hi: hi, Level: 0.95, N: 3}
	}
	one := func(est float64) stats.Interval {
		return stats.Interval{Estimate: est, Lo: est, Hi: est, N: 1, Method: stats.MethodSingleRun}
	}
	nan := stats.Interval{Estimate: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), Method: stats.MethodZeroBase}
	dpCPU, dpMem := analysis.CPUPrefix+"data-plane", analysis.MemPrefix+"data-plane"
	totCPU, totMem := analysis.CPUPrefix+"TOTAL", analysis.MemPrefix+"TOTAL"
	tests := []struct {
		name   string
		diffs  map[string]stats.Interval
		ratios map[string]float64
		want   string
	}{
		{"significant lower", map[string]stats.Interval{analysis.LatencyP50: sig(-0.2, -0.25, -0.15)},
			map[string]float64{analysis.LatencyP50: 0.8}, "ambient vs sidecar: ~20% lower p50"},
		{"not significant", map[string]stats.Interval{analysis.LatencyP50: sig(-0.2, -0.3, 0.05)},
			map[string]float64{analysis.LatencyP50: 0.8}, "ambient vs sidecar: p50: no significant difference"},
		{"one run", map[string]stats.Interval{analysis.LatencyP99: one(0.3)},
			map[string]float64{analysis.LatencyP99: 1.3}, "ambient vs sidecar: 1 run: too few to judge; run 3 or more"},
		// two runs a side, however far apart: no verdict
		{"two runs", map[string]stats.Interval{analysis.LatencyP50: {Estimate: -0.34, Lo: -0.51, Hi: -0.15, Level: 0.95, N: 2}},
			map[string]float64{analysis.LatencyP50: 0.66}, "ambient vs sidecar: 2 runs: too few to judge; run 3 or more"},
		{"half and thrice", map[string]stats.Interval{
			analysis.LatencyP50: sig(2, 1.5, 2.5), analysis.LatencyP99: sig(0.02, 0.01, 0.03),
			dpCPU: sig(-0.5, -0.6, -0.4), dpMem: sig(-0.75, -0.8, -0.7)},
			map[string]float64{analysis.LatencyP50: 3, analysis.LatencyP99: 1.02, dpCPU: 0.5, dpMem: 0.25},
			"ambient vs sidecar: ~3× the p50; p99: about the same; ~1/2 the data-plane CPU; ~1/4 the data-plane memory"},
		{"total without data plane", map[string]stats.Interval{totCPU: sig(1.8, 1.5, 2), totMem: sig(0.1, -0.1, 0.3)},
			map[string]float64{totCPU: 2.8, totMem: 1.1}, "ambient vs sidecar: ~2.8× the total CPU; total memory: no significant difference"},
		{"not computable", map[string]stats.Interval{analysis.LatencyP50: nan}, map[string]float64{},
			"ambient vs sidecar: p50: n/a"},
		{"nothing", map[string]stats.Interval{}, map[string]float64{}, "ambient vs sidecar: nothing to compare"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := analysis.Comparison{Mesh: "ambient", Baseline: "sidecar", Diffs: tt.diffs, Ratios: tt.ratios}
			if got := c.Verdict(); got != tt.want {
				t.Errorf("Verdict() = %q, want %q", got, tt.want)
			}
		})
	}
}

// dump prints what Analyze computed, NaN included, for comparing runs.
func dump(a *analysis.Analysis) string {
	var b strings.Builder
	keys := make([]string, 0, len(a.Groups))
	for k := range a.Groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(&b, "%s %v %v %v\n", a.Baseline, a.Meshes, a.Scenarios, a.Level)
	for _, k := range keys {
		g := a.Groups[k]
		fmt.Fprintf(&b, "%s %d %v %v\n", k, g.Valid, g.Figures, g.Spectrum)
	}
	for _, c := range a.Comparisons {
		fmt.Fprintf(&b, "%v %s %s %v %v\n", c.Scenario, c.Mesh, c.Baseline, c.Diffs, c.Ratios)
	}
	for _, f := range a.Fits {
		fmt.Fprintf(&b, "%+v\n", f)
	}
	return b.String()
}

// TestAnalyzeDeterministic: the same seed gives the same analysis, to the
// last bit; another seed moves the bootstrap intervals (so the first check
// is not vacuous).
func TestAnalyzeDeterministic(t *testing.T) {
	p := readPlan(t, smallDir)
	first := dump(analysis.Analyze(p, analysis.Options{Seed: 42}))
	if again := dump(analysis.Analyze(readPlan(t, smallDir), analysis.Options{Seed: 42})); again != first {
		t.Errorf("same seed, different analysis:\n%s\n---\n%s", first, again)
	}
	// With 8 repetitions the bootstrap interval is not just the range.
	p = synthPlan(8, []int{1})
	a1, a2 := dump(analysis.Analyze(p, analysis.Options{Seed: 7})), dump(analysis.Analyze(p, analysis.Options{Seed: 7}))
	if a1 != a2 {
		t.Errorf("same seed, different analysis:\n%s\n---\n%s", a1, a2)
	}
	if a3 := dump(analysis.Analyze(p, analysis.Options{Seed: 8})); a3 == a1 {
		t.Error("seeds 7 and 8 gave identical bootstrap intervals: is the seed used?")
	}
}

// synthPlan builds a plan in memory: meshes none and sidecar at 50 rps, reps
// repetitions of each replica count. Data-plane memory is exactly 20 + 15
// per replica, data-plane CPU 5 + 2 per replica; latency varies with the
// repetition so intervals have width.
func synthPlan(reps int, replicas []int) *analysis.Plan {
	p := &analysis.Plan{Failed: map[string]string{}}
	for _, mesh := range []string{"none", "sidecar"} {
		for _, r := range replicas {
			for rep := range reps {
				cfg := analysis.Config{Mesh: mesh, App: "static", Rate: "50", Replicas: r, Protocol: "http", MTLS: true}
				f := map[string]float64{
					analysis.LatencyP50:          1 + float64(rep*rep%7)/10,
					analysis.LatencyP99:          5 + float64(rep*3%5),
					analysis.CPUPrefix + "TOTAL": 100 + float64(rep),
				}
				if mesh != "none" {
					f[analysis.MemPrefix+"data-plane"] = 20 + 15*float64(r)
					f[analysis.CPUPrefix+"data-plane"] = 5 + 2*float64(r)
				}
				p.Cells = append(p.Cells, &analysis.Cell{ID: fmt.Sprintf("%s-x%d-rep%d", mesh, r, rep+1), Config: cfg, Valid: true, Figures: f})
			}
		}
	}
	return p
}

// TestAnalyzeFit: data-plane memory 20 + 15·replicas over replicas 1, 10,
// 50 fits slope 15, intercept 20, R² 1; invalid cells stay out of the fit.
func TestAnalyzeFit(t *testing.T) {
	p := synthPlan(1, []int{1, 10, 50})
	// An invalid cell far off the line must not bend it.
	p.Cells = append(p.Cells, &analysis.Cell{ID: "bad", Valid: false, Invalid: []string{"sampler gap"},
		Config:  analysis.Config{Mesh: "sidecar", App: "static", Rate: "50", Replicas: 10, Protocol: "http", MTLS: true},
		Figures: map[string]float64{analysis.MemPrefix + "data-plane": 9999, analysis.CPUPrefix + "data-plane": 9999}})
	a := analysis.Analyze(p, analysis.Options{})
	if len(a.Fits) != 2 {
		t.Fatalf("%d fits, want 2 (sidecar data-plane memory and CPU): %+v", len(a.Fits), a.Fits)
	}
	want := map[string][2]float64{analysis.MemPrefix + "data-plane": {15, 20}, analysis.CPUPrefix + "data-plane": {2, 5}}
	for _, f := range a.Fits {
		w, ok := want[f.Figure]
		if !ok || f.Mesh != "sidecar" || f.Points != 3 {
			t.Errorf("fit %+v", f)
			continue
		}
		if math.Abs(f.Slope.Estimate-w[0]) > 1e-9 || math.Abs(f.Intercept-w[1]) > 1e-9 || math.Abs(f.R2-1) > 1e-12 {
			t.Errorf("%s: slope %v intercept %v R² %v, want %v, %v, 1", f.Figure, f.Slope.Estimate, f.Intercept, f.R2, w[0], w[1])
		}
		if !f.Slope.HasInterval() || !f.Slope.Contains(w[0]) || f.Slope.N != 3 {
			t.Errorf("%s: slope interval %+v", f.Figure, f.Slope)
		}
		if f.Scenario.Replicas != 0 || f.Scenario.Rate != "50" {
			t.Errorf("fit scenario %+v: replicas must be 0 (fitted over)", f.Scenario)
		}
	}
	if len(a.Invalid) != 1 || a.Invalid[0].ID != "bad" {
		t.Errorf("invalid %v", a.Invalid)
	}
	// One replica count: nothing to fit.
	if fits := analysis.Analyze(readPlan(t, smallDir), analysis.Options{}).Fits; len(fits) != 0 {
		t.Errorf("fits over one replica count: %+v", fits)
	}
}

// TestAnalyzeScenarioOrder: rates sort as numbers (50 before 200, 1000
// after), closed loop last; replicas numerically too.
func TestAnalyzeScenarioOrder(t *testing.T) {
	a := analysis.Analyze(readPlan(t, smallDir), analysis.Options{})
	if len(a.Scenarios) != 2 || a.Scenarios[0].Rate != "50" || a.Scenarios[1].Rate != "200" {
		t.Errorf("scenarios %v, want 50 rps then 200 rps", a.Scenarios)
	}
	p := &analysis.Plan{}
	for _, s := range []struct {
		rate     string
		replicas int
	}{{"max", 1}, {"1000", 1}, {"200", 10}, {"50", 1}, {"200", 2}, {"9", 1}} {
		p.Cells = append(p.Cells, &analysis.Cell{ID: s.rate, Valid: true, Figures: map[string]float64{},
			Config: analysis.Config{Mesh: "none", App: "static", Rate: s.rate, Replicas: s.replicas}})
	}
	var got []string
	for _, s := range analysis.Analyze(p, analysis.Options{}).Scenarios {
		got = append(got, fmt.Sprintf("%s/%d", s.Rate, s.Replicas))
	}
	if want := []string{"9/1", "50/1", "200/2", "200/10", "1000/1", "max/1"}; !slices.Equal(got, want) {
		t.Errorf("scenario order %v, want %v", got, want)
	}
}

// TestAnalyzeBaseline: without none there is no baseline (the meshes are
// compared pairwise); an explicit baseline comes first and is compared
// against.
func TestAnalyzeBaseline(t *testing.T) {
	p := readPlan(t, smallDir)
	noNone := *p
	noNone.Cells = nil
	for _, c := range p.Cells {
		if c.Config.Mesh != "none" {
			noNone.Cells = append(noNone.Cells, c)
		}
	}
	a := analysis.Analyze(&noNone, analysis.Options{})
	if a.Baseline != "" || !slices.Equal(a.Meshes, []string{"sidecar", "ambient"}) {
		t.Errorf("without none: baseline %s, meshes %v", a.Baseline, a.Meshes)
	}
	if len(a.Comparisons) != 2 {
		t.Errorf("%d comparisons, want ambient vs sidecar in 2 scenarios", len(a.Comparisons))
	}
	for _, c := range a.Comparisons {
		if c.Mesh != "ambient" || c.Baseline != "sidecar" {
			t.Errorf("comparison %s vs %s", c.Mesh, c.Baseline)
		}
	}

	a = analysis.Analyze(p, analysis.Options{Baseline: "ambient"})
	if a.Baseline != "ambient" || !slices.Equal(a.Meshes, []string{"ambient", "none", "sidecar"}) {
		t.Errorf("baseline ambient: got %s, meshes %v", a.Baseline, a.Meshes)
	}
	var got []string
	for _, c := range a.Comparisons {
		got = append(got, c.Mesh+" vs "+c.Baseline)
	}
	want := []string{"none vs ambient", "sidecar vs ambient", "none vs ambient", "sidecar vs ambient", "sidecar vs none", "sidecar vs none"}
	if !slices.Equal(got, want) {
		t.Errorf("comparisons %v, want %v", got, want)
	}

	// A baseline the plan does not hold (callers refuse it first) gives
	// no baseline, never another mesh in its place.
	a = analysis.Analyze(p, analysis.Options{Baseline: "linkerd"})
	if a.Baseline != "" || !slices.Equal(a.Meshes, []string{"none", "sidecar", "ambient"}) {
		t.Errorf("absent baseline: got %s, meshes %v", a.Baseline, a.Meshes)
	}
	if a := analysis.Analyze(&analysis.Plan{}, analysis.Options{}); len(a.Meshes) != 0 || len(a.Comparisons) != 0 {
		t.Errorf("empty plan: %+v", a)
	}
}

// TestAnalyzeLevel: the level reaches every interval; 0 means 0.95.
func TestAnalyzeLevel(t *testing.T) {
	p := synthPlan(8, []int{1})
	for _, tt := range []struct{ in, want float64 }{{0, 0.95}, {0.8, 0.8}} {
		a := analysis.Analyze(p, analysis.Options{Level: tt.in})
		if a.Level != tt.want {
			t.Errorf("level %v: analysis level %v", tt.in, a.Level)
		}
		for _, g := range a.Groups {
			for f, iv := range g.Figures {
				if iv.Level != tt.want {
					t.Errorf("level %v: %s interval level %v", tt.in, f, iv.Level)
				}
			}
		}
		for _, c := range a.Comparisons {
			for f, iv := range c.Diffs {
				if iv.Level != tt.want {
					t.Errorf("level %v: %s diff level %v", tt.in, f, iv.Level)
				}
			}
		}
	}
}

// TestReadCellClusterKernel: a cluster cell's kernel figures (its node
// readers', in the manifest's derived map) become figures as they are,
// the outside-the-pods one also per 1000 achieved rps; a cell without
// them (a node missing) has none, never 0.
func TestReadCellClusterKernel(t *testing.T) {
	src := results.CellDir(smallDir, "sidecar-static-r200-x1-p0-http-pod-mtls-rep1")
	dir := t.TempDir()
	for _, f := range []string{results.ManifestFile, results.LoadFile, results.ResourcesFile} {
		copyFile(t, filepath.Join(src, f), filepath.Join(dir, f))
	}
	c, err := analysis.ReadCell(dir, "x")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{analysis.KernelNodeCPU, analysis.KernelPodsSystemCPU, analysis.KernelOutsidePodsCPU, analysis.KernelOutsidePodsCPUPer1000} {
		if v, ok := c.Figures[f]; ok {
			t.Errorf("without kernel figures: %s = %v, want absent", f, v)
		}
	}
	m := rawJSON(t, filepath.Join(dir, results.ManifestFile))
	m["derived"] = map[string]any{"kernel_node_cpu_m": 302.0, "kernel_softirq_cpu_m": 53.0, "kernel_pods_system_cpu_m": 12.0, "kernel_outside_pods_cpu_m": 290.0}
	b, _ := json.Marshal(m)
	if err := os.WriteFile(filepath.Join(dir, results.ManifestFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err = analysis.ReadCell(dir, "x"); err != nil {
		t.Fatal(err)
	}
	rate := c.Figures[analysis.AchievedRate]
	for f, w := range map[string]float64{analysis.KernelNodeCPU: 302, analysis.KernelSoftIRQCPU: 53, analysis.KernelPodsSystemCPU: 12,
		analysis.KernelOutsidePodsCPU: 290, analysis.KernelOutsidePodsCPUPer1000: 290 / rate * 1000} {
		if got, ok := c.Figures[f]; !ok || !near(got, w) || rate <= 0 {
			t.Errorf("%s = %v (present %v), want %v (rate %v)", f, got, ok, w, rate)
		}
	}
	if _, ok := c.Figures[analysis.KernelOutsideCPU]; ok {
		t.Error("a cluster cell has the lab's outside-the-processes figure")
	}
}
