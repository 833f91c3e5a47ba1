package report

import (
	"bytes"
	"encoding/csv"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/bench/plan"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// compareFixtures compares fixture b against fixture a as `meshbench
// compare` does with its defaults.
func compareFixtures(t *testing.T, a, b string) *analysis.SetComparison {
	t.Helper()
	pa, err := analysis.ReadPlan(filepath.Join("..", "analysis", "testdata", a))
	if err != nil {
		t.Fatal(err)
	}
	pb, err := analysis.ReadPlan(filepath.Join("..", "analysis", "testdata", b))
	if err != nil {
		t.Fatal(err)
	}
	pa.Settings = plan.MethodSettings("A/plan.yaml", pa.PlanYAML)
	pb.Settings = plan.MethodSettings("B/plan.yaml", pb.PlanYAML)
	return analysis.CompareSets(pa, pb, analysis.Options{Level: 0.95, Seed: uint64(pa.Manifest.Seed)})
}

// TestCompareGolden pins the text and the CSV of plan-small against itself
// (every difference 0%, not significant) and against plan-invalid (configs
// with one valid run on a side, cells left out of B).
func TestCompareGolden(t *testing.T) {
	for _, tt := range []struct{ a, b, golden string }{
		{"plan-small", "plan-small", "compare-small-small"},
		{"plan-small", "plan-invalid", "compare-small-invalid"},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			sc := compareFixtures(t, tt.a, tt.b)
			var txt, cs bytes.Buffer
			if err := CompareText(&txt, sc); err != nil {
				t.Fatal(err)
			}
			if err := CompareCSV(&cs, sc); err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, tt.golden+".txt.golden", txt.Bytes())
			testutil.Golden(t, tt.golden+".csv.golden", cs.Bytes())
		})
	}
}

// TestCompareSelf: a plan against itself says "+0%" on every difference
// line, never "significant", claims no difference in any verdict (its 2
// runs a side are too few to judge: every verdict says so), and its CSV has
// one row per config and measured figure, all not significant.
func TestCompareSelf(t *testing.T) {
	sc := compareFixtures(t, "plan-small", "plan-small")
	var txt bytes.Buffer
	if err := CompareText(&txt, sc); err != nil {
		t.Fatal(err)
	}
	diffs := 0
	for _, line := range strings.Split(txt.String(), "\n") {
		if strings.Contains(line, "Verdict:") && (strings.Contains(line, "B has") || !strings.HasSuffix(line, "2 runs: too few to judge; run 3 or more")) {
			t.Errorf("verdict claims a difference or judges 2 runs: %s", line)
		}
		if strings.Contains(line, "%") && strings.HasPrefix(line, "    ") {
			diffs++
			if !strings.HasSuffix(strings.TrimSuffix(line, " not significant"), "]") || !strings.Contains(line, " +0% [") {
				t.Errorf("difference line not 0%%: %s", line)
			}
		}
	}
	var cs bytes.Buffer
	if err := CompareCSV(&cs, sc); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&cs).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows)-1 != diffs || diffs != 46 {
		t.Errorf("%d CSV rows, %d text lines; want 46 each (6 configs × 7 or 8 figures)", len(rows)-1, diffs)
	}
	for _, r := range rows[1:] {
		if r[17] != "0" || r[22] != "false" {
			t.Errorf("row %v: diff %s significant %s", r, r[17], r[22])
		}
	}
}
