package cli

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompareCommand: `meshbench compare A B` prints the comparison (the
// report package's golden for the same fixtures) and, with --out, writes
// the tidy CSV (its golden too).
func TestCompareCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cmp.csv")
	a, b := filepath.Join("..", "analysis", "testdata", "plan-small"), filepath.Join("..", "analysis", "testdata", "plan-invalid")
	inv := runCLI(t, nil, "compare", "--out", out, a, b)
	if inv.code != ExitOK || inv.stderr != "" {
		t.Fatalf("exit %d, stderr %q", inv.code, inv.stderr)
	}
	// The goldens name the fixtures as seen from internal/report.
	rel := func(s string) string {
		return strings.ReplaceAll(s, "../analysis/testdata/", filepath.ToSlash(filepath.Join("..", "analysis", "testdata"))+"/")
	}
	want, err := os.ReadFile(filepath.Join("..", "report", "testdata", "compare-small-invalid.txt.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if inv.stdout != rel(string(want)) {
		t.Errorf("stdout differs from internal/report/testdata/compare-small-invalid.txt.golden:\n%s", inv.stdout)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	wantCSV, _ := os.ReadFile(filepath.Join("..", "report", "testdata", "compare-small-invalid.csv.golden"))
	if !bytes.Equal(got, wantCSV) {
		t.Errorf("--out CSV differs from internal/report/testdata/compare-small-invalid.csv.golden:\n%s", got)
	}
}

// TestCompareSelfCLI: a plan against itself: every difference not
// significant (its 2 runs a side are too few to judge), each interval's
// coverage (2 vs 2: 1 − 2/C(4,2)) below its nominal 0.95 in the CSV.
func TestCompareSelfCLI(t *testing.T) {
	out := filepath.Join(t.TempDir(), "self.csv")
	inv := runCLI(t, nil, "compare", "-o", out, planSmall, planSmall)
	if inv.code != ExitOK {
		t.Fatalf("exit %d: %s", inv.code, inv.stderr)
	}
	if !strings.Contains(inv.stdout, "6 configs in both") || strings.Contains(inv.stdout, "B has") {
		t.Errorf("stdout:\n%s", inv.stdout)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows[1:] {
		if r[17] != "0" || r[20] != "0.666667" || r[21] != "0.95" || r[22] != "false" {
			t.Errorf("row %v", r)
		}
	}
}

// TestCompareBadInput: a directory that is not a plan exits 2, no config
// in both exits 1; one line each, nothing on stdout, no CSV.
func TestCompareBadInput(t *testing.T) {
	empty := t.TempDir()
	// A copy of plan-small whose meshes are all renamed: nothing in common.
	other := copyPlan(t, planSmall)
	cells, _ := filepath.Glob(filepath.Join(other, "cells", "*", "manifest.json"))
	for _, m := range cells {
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(m, bytes.Replace(b, []byte(`"mesh": "`), []byte(`"mesh": "v2-`), 1), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	csvOut := filepath.Join(empty, "out.csv")
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"A not a plan", []string{"compare", empty, planSmall}, ExitUsage, "is not a plan results directory"},
		{"B not a plan", []string{"compare", planSmall, filepath.Join(empty, "nope")}, ExitUsage, "is not a plan results directory"},
		{"one directory", []string{"compare", planSmall}, ExitUsage, "accepts 2 arg"},
		{"confidence", []string{"compare", "--confidence", "2", planSmall, planSmall}, ExitUsage, "--confidence 2: allowed"},
		{"confidence NaN", []string{"compare", "--confidence", "NaN", planSmall, planSmall}, ExitUsage, "--confidence NaN: allowed"},
		// An unusable output path is named before anything is computed.
		{"output in a missing directory", []string{"compare", "-o", "/nonexistent-dir/x.csv", planSmall, planSmall}, ExitUsage,
			"--out /nonexistent-dir/x.csv: directory /nonexistent-dir: no such file or directory"},
		{"nothing in common", []string{"compare", "-o", csvOut, planSmall, other}, ExitFailure,
			"nothing to compare: no config (mesh and scenario) has a valid cell in both " + planSmall + " (6 configs) and " + other + " (6 configs)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := runCLI(t, nil, tt.args...)
			if inv.code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", inv.code, tt.code, inv.stderr)
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
	if _, err := os.Stat(csvOut); !os.IsNotExist(err) {
		t.Errorf("CSV written with nothing to compare: %v", err)
	}
}

// TestReportSMP: `meshbench report` writes report/smp/CELL.json for every
// cell, the report package's SMP golden for the cells it pins.
func TestReportSMP(t *testing.T) {
	dir := copyPlan(t, planSmall)
	if inv := runCLI(t, nil, "report", "-q", dir); inv.code != ExitOK {
		t.Fatalf("exit %d: %s", inv.code, inv.stderr)
	}
	ids, _ := os.ReadDir(filepath.Join(dir, "cells"))
	for _, id := range ids {
		b, err := os.ReadFile(filepath.Join(dir, ReportDir, "smp", id.Name()+".json"))
		if err != nil {
			t.Error(err)
			continue
		}
		var doc struct {
			Result struct {
				ID string `json:"id"`
			} `json:"performance_test_result"`
		}
		if err := json.Unmarshal(b, &doc); err != nil || doc.Result.ID != id.Name() {
			t.Errorf("%s: id %q, %v", id.Name(), doc.Result.ID, err)
		}
	}
	got, _ := os.ReadFile(filepath.Join(dir, ReportDir, "smp", "sidecar-static-r50-x1-p0-http-pod-mtls-rep1.json"))
	want, _ := os.ReadFile(filepath.Join("..", "report", "testdata", "smp-sidecar.json.golden"))
	if len(want) == 0 || !bytes.Equal(got, want) {
		t.Errorf("smp/sidecar-…-rep1.json differs from internal/report/testdata/smp-sidecar.json.golden")
	}
}

// TestCompareWarnsOnMethodDifferences: two sets measured with other
// settings or versions get one WARNING line per difference; a set
// against itself gets none.
func TestCompareWarnsOnMethodDifferences(t *testing.T) {
	b := filepath.Join(t.TempDir(), "b")
	if err := os.CopyFS(b, os.DirFS(planSmall)); err != nil {
		t.Fatal(err)
	}
	edit := func(name, old, new string) {
		p := filepath.Join(b, name)
		data, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(data), old) {
			t.Fatalf("%s: %v, or no %q in it", p, err, old)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit("plan.yaml", "duration: 2s", "duration: 5s")
	edit("plan-manifest.json", `"envoy_version": "1.40.0"`, `"envoy_version": "1.41.0"`)
	inv := runCLI(t, nil, "compare", planSmall, b)
	if inv.code != ExitOK {
		t.Fatalf("exit %d: %s", inv.code, inv.stderr)
	}
	for _, want := range []string{"WARNING: duration differs: A 2s, B 5s;", "WARNING: Envoy version differs: A 1.40.0, B 1.41.0;"} {
		if !strings.Contains(inv.stdout, want) {
			t.Errorf("no %q in:\n%s", want, inv.stdout)
		}
	}
	if n := strings.Count(inv.stdout, "WARNING:"); n != 2 {
		t.Errorf("%d WARNING lines, want 2:\n%s", n, inv.stdout)
	}
	if self := runCLI(t, nil, "compare", planSmall, planSmall); strings.Contains(self.stdout, "WARNING") {
		t.Errorf("a set against itself warns:\n%s", self.stdout)
	}
}

// TestCompareFailOnRegression: the fixtures differ by nothing significant,
// so --fail-on-regression (bare: 0%) exits 0 with the comparison printed;
// a bad margin is bad input. Regressions themselves are tested in
// internal/analysis/threshold against plans with known shifts.
func TestCompareFailOnRegression(t *testing.T) {
	a, b := filepath.Join("..", "analysis", "testdata", "plan-small"), filepath.Join("..", "analysis", "testdata", "plan-invalid")
	if inv := runCLI(t, nil, "compare", "--fail-on-regression", a, b); inv.code != ExitOK || !strings.Contains(inv.stdout, "configs in both") {
		t.Errorf("exit %d, stderr %q", inv.code, inv.stderr)
	}
	if inv := runCLI(t, nil, "compare", "--fail-on-regression=-3%", a, b); inv.code != ExitUsage || !strings.Contains(inv.stderr, "--fail-on-regression \"-3%\": allowed") {
		t.Errorf("bad margin: exit %d, stderr %q", inv.code, inv.stderr)
	}
}
