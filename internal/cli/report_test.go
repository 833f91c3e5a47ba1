package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/results"
)

// The plan fixtures of the analysis tests: real plan results directories.
var (
	planSmall   = filepath.Join("..", "analysis", "testdata", "plan-small")
	planInvalid = filepath.Join("..", "analysis", "testdata", "plan-invalid")
)

// copyPlan copies a fixture to a temporary directory (report writes into it).
func copyPlan(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "plan")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestReportCommand: `meshbench report DIR` writes every report into
// DIR/report; report.txt is the text report's golden (the report package
// renders the same fixture with the command's defaults) and is printed.
func TestReportCommand(t *testing.T) {
	dir := copyPlan(t, planSmall)
	inv := runCLI(t, nil, "report", dir)
	if inv.code != ExitOK {
		t.Fatalf("exit %d: %s", inv.code, inv.stderr)
	}
	if inv.stderr != "" {
		t.Errorf("stderr %q", inv.stderr)
	}
	out := filepath.Join(dir, ReportDir)
	for _, f := range []string{"report.txt", "report.html", "latency.csv", "figures.csv"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	// Nine charts (see internal/report/testdata/plan-small.charts.golden:
	// the two scenarios' summary charts first), each as PNG and SVG.
	charts := []string{"rate-1-dp-cpu", "rate-1-load-curve", "rate-1-p50", "rate-1-p95", "rate-1-p99", "scenario-1-meshes", "scenario-2-meshes", "spectrum-1", "spectrum-2"}
	for _, ext := range []string{"png", "svg"} {
		got, err := filepath.Glob(filepath.Join(out, "plots", "*."+ext))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range got {
			names = append(names, strings.TrimSuffix(filepath.Base(p), "."+ext))
			if st, err := os.Stat(p); err != nil {
				t.Error(err)
			} else if st.Size() < 1000 {
				t.Errorf("%s: %d bytes", p, st.Size())
			}
		}
		if !slices.Equal(names, charts) {
			t.Errorf("plots/*.%s: %v, want %v", ext, names, charts)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(out, "plots", "spectrum-1.png")); !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		t.Error("spectrum-1.png is not a PNG")
	}
	for f, golden := range map[string]string{
		"report.txt":  "plan-small.txt.golden",
		"latency.csv": "plan-small.latency.csv.golden",
		"figures.csv": "plan-small.figures.csv.golden",
	} {
		got, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join("..", "report", "testdata", golden))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from internal/report/testdata/%s:\n%s", f, golden, got)
		}
		if f == "report.txt" && !strings.HasPrefix(inv.stdout, string(want)) {
			t.Errorf("stdout does not start with the text report:\n%s", inv.stdout)
		}
	}
	if !strings.Contains(inv.stdout, "Reports: "+out+" (HTML: "+filepath.Join(out, "report.html")+", 9 plots)") {
		t.Errorf("stdout does not say where the reports are:\n%s", inv.stdout)
	}
	html, _ := os.ReadFile(filepath.Join(out, "report.html"))
	if n := bytes.Count(html, []byte("<svg ")); n != 9 {
		t.Errorf("report.html holds %d SVGs, want 9", n)
	}

	// Again, quiet: the same files, the text report not printed.
	inv = runCLI(t, nil, "report", "-q", dir)
	if inv.code != ExitOK || strings.Contains(inv.stdout, "Verdicts") || !strings.Contains(inv.stdout, "Reports: ") {
		t.Errorf("quiet: exit %d, stdout %q, stderr %q", inv.code, inv.stdout, inv.stderr)
	}
}

// TestReportIncomplete: a plan with invalid, failed (one whose directory
// has no load.json) and pending cells still gets its reports, which say so.
func TestReportIncomplete(t *testing.T) {
	dir := copyPlan(t, planInvalid)
	inv := runCLI(t, nil, "report", dir)
	if inv.code != ExitOK {
		t.Fatalf("exit %d: %s", inv.code, inv.stderr)
	}
	txt, err := os.ReadFile(filepath.Join(dir, ReportDir, "report.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"9 cells (7 valid)", "INCOMPLETE: 1 of 12 cells not run yet (resume with meshbench bench --resume " + dir + ")",
		"ambient-static-r50-x1-p0-http-pod-mtls-rep2: failed: load generator"} {
		if !strings.Contains(string(txt), want) {
			t.Errorf("report.txt lacks %q:\n%s", want, txt)
		}
	}
}

// TestReportPlanSettings: without flags the report compares against the
// plan's baseline at the plan's confidence, as bench's own report does;
// flags override them.
func TestReportPlanSettings(t *testing.T) {
	dir := copyPlan(t, planSmall)
	yml := filepath.Join(dir, "plan.yaml")
	b, err := os.ReadFile(yml)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte("baseline: none"), []byte("baseline: sidecar"), 1)
	b = bytes.Replace(b, []byte("confidence: 0.95"), []byte("confidence: 0.9"), 1)
	if err := os.WriteFile(yml, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "confidence 90%, baseline sidecar\n"},
		{[]string{"--baseline", "ambient", "--confidence", "0.8"}, "confidence 80%, baseline ambient\n"},
	} {
		inv := runCLI(t, nil, append(append([]string{"report", "-q"}, tt.args...), dir)...)
		if inv.code != ExitOK {
			t.Fatalf("%v: exit %d: %s", tt.args, inv.code, inv.stderr)
		}
		txt, _ := os.ReadFile(filepath.Join(dir, ReportDir, "report.txt"))
		first, _, _ := strings.Cut(string(txt), "\n")
		if !strings.HasSuffix(first+"\n", tt.want) {
			t.Errorf("%v: first line %q, want it to end %q", tt.args, first, tt.want)
		}
	}
}

// TestReportCompareAxes: the plan's compare (here added to a recorded
// plan.yaml) gives report.txt a block per axis and axes.csv its rows;
// --compare overrides it, and a plan with only mesh has an axes.csv of
// the header alone.
func TestReportCompareAxes(t *testing.T) {
	dir := copyPlan(t, planSmall)
	yml := filepath.Join(dir, "plan.yaml")
	b, err := os.ReadFile(yml)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(yml, append(b, []byte("compare: [mesh, rate]\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args      []string
		wantBlock bool
	}{
		{nil, true},                            // the plan's compare
		{[]string{"--compare", "mesh"}, false}, // the flag wins
	} {
		inv := runCLI(t, nil, append(append([]string{"report", "-q"}, tt.args...), dir)...)
		if inv.code != ExitOK {
			t.Fatalf("%v: exit %d: %s", tt.args, inv.code, inv.stderr)
		}
		txt, _ := os.ReadFile(filepath.Join(dir, ReportDir, "report.txt"))
		if got := strings.Contains(string(txt), "== Along rate"); got != tt.wantBlock {
			t.Errorf("%v: rate block %v, want %v", tt.args, got, tt.wantBlock)
		}
		cs, _ := os.ReadFile(filepath.Join(dir, ReportDir, "axes.csv"))
		if rows := strings.Count(string(cs), "\n"); (rows > 1) != tt.wantBlock {
			t.Errorf("%v: axes.csv has %d lines", tt.args, rows)
		}
	}
}

// TestReportBadInput: bad input exits 2 with one line saying what is wrong,
// and writes nothing.
func TestReportBadInput(t *testing.T) {
	empty := t.TempDir()
	plan := copyPlan(t, planSmall)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"not a plan", []string{"report", empty}, "is not a plan results directory"},
		{"no such directory", []string{"report", filepath.Join(empty, "nope")}, "is not a plan results directory"},
		{"a cell, not a plan", []string{"report", filepath.Join(plan, "cells", "none-static-r50-x1-p0-http-pod-mtls-rep1")}, "is not a plan results directory"},
		{"confidence above 1", []string{"report", "--confidence", "1.5", plan}, "--confidence 1.5: allowed: a level between 0 and 1"},
		{"confidence 0", []string{"report", "--confidence", "0", plan}, "--confidence 0: allowed"},
		// NaN passes "<= 0 || >= 1"; it once overwrote a good report with "-".
		{"confidence NaN", []string{"report", "--confidence", "NaN", plan}, "--confidence NaN: allowed"},
		// A baseline mesh the plan has no cell of: refused, naming its meshes.
		{"baseline not in the plan", []string{"report", "--baseline", "linkerd", plan}, `--baseline "linkerd": the plan in ` + plan + " has no cell of that mesh; allowed: ambient, none, sidecar"},
		{"unknown compare axis", []string{"report", "--compare", "mesh,colour", plan}, `--compare "colour": allowed: mesh, policies, mtls, load_model`},
		{"no directory", []string{"report"}, "accepts 1 arg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := runCLI(t, nil, tt.args...)
			if inv.code != ExitUsage {
				t.Errorf("exit %d, want %d (stderr %q)", inv.code, ExitUsage, inv.stderr)
			}
			lines := strings.Split(strings.TrimSpace(inv.stderr), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "meshbench: ") || !strings.Contains(lines[0], tt.want) {
				t.Errorf("stderr %q, want one line containing %q", inv.stderr, tt.want)
			}
			if inv.stdout != "" {
				t.Errorf("stdout %q", inv.stdout)
			}
		})
	}
	for _, d := range []string{empty, plan} {
		if _, err := os.Stat(filepath.Join(d, ReportDir)); !os.IsNotExist(err) {
			t.Errorf("%s/report written on bad input: %v", d, err)
		}
	}
}

// TestReportPartial: one cell whose load.json is cut short (a full disk)
// does not block the report of the others: it is listed under "Unreadable
// cells" and the exit code (3) says the report is partial. compare says
// the same.
func TestReportPartial(t *testing.T) {
	dir := copyPlan(t, planSmall)
	const id = "none-static-r50-x1-p0-http-pod-mtls-rep1"
	if err := os.Truncate(filepath.Join(dir, "cells", id, results.LoadFile), 100); err != nil {
		t.Fatal(err)
	}
	inv := runCLI(t, nil, "report", dir)
	if inv.code != ExitPartial {
		t.Fatalf("exit %d, want %d (partial); stderr %q", inv.code, ExitPartial, inv.stderr)
	}
	if !strings.Contains(inv.stderr, "partial report: 1 cell(s) of "+dir+" cannot be read") {
		t.Errorf("stderr %q", inv.stderr)
	}
	txt, err := os.ReadFile(filepath.Join(dir, ReportDir, "report.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(txt), "Unreadable cells (PARTIAL: left out of every figure):\n  "+id+": load.json: ") ||
		!strings.Contains(string(txt), "== ") {
		t.Errorf("report.txt lacks the unreadable cell or the others:\n%s", txt)
	}
	if inv.stdout == "" {
		t.Error("nothing printed")
	}
	inv = runCLI(t, nil, "compare", planSmall, dir)
	if inv.code != ExitPartial || !strings.Contains(inv.stdout, "Unreadable cells of B (PARTIAL: left out of every figure):\n  "+id+": load.json: ") {
		t.Errorf("compare: exit %d, stdout:\n%s\nstderr %q", inv.code, inv.stdout, inv.stderr)
	}
}
