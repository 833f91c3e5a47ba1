package report

import (
	"bytes"
	"encoding/csv"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestAxesReports: the small fixture (none, sidecar, ambient at 50 and
// 200 rps) compared along rate too: the text report gains a block with
// one line per mesh (200 vs 50 rps) and one interaction line per mesh
// but the baseline; axes.csv holds the same comparisons, one row per
// figure; the HTML shows the block. All golden.
func TestAxesReports(t *testing.T) {
	p, err := analysis.ReadPlan(filepath.Join("..", "analysis", "testdata", "plan-small"))
	if err != nil {
		t.Fatal(err)
	}
	a := analysis.Analyze(p, analysis.Options{Level: 0.95, Seed: uint64(p.Manifest.Seed), Compare: []string{"mesh", "rate"}})
	var txt, cs bytes.Buffer
	if err := PlanText(&txt, a); err != nil {
		t.Fatal(err)
	}
	if err := AxesCSV(&cs, a); err != nil {
		t.Fatal(err)
	}
	block := txt.String()[strings.Index(txt.String(), "== Along rate"):]
	lines := strings.Split(strings.TrimSpace(block), "\n")
	var verdicts, inter int
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "  ") && strings.Contains(l, ": 200 rps vs 50 rps: p50 "):
			verdicts++
		case strings.HasPrefix(l, "    ") && strings.Contains(l, " vs none (static, 1 replica): p50 ") && strings.Contains(l, " at 200 rps, "):
			inter++
		}
	}
	if verdicts != 3 || inter != 2 {
		t.Errorf("%d rate verdicts and %d interactions, want 3 (one per mesh) and 2 (sidecar, ambient):\n%s", verdicts, inter, block)
	}
	rows, err := csv.NewReader(bytes.NewReader(cs.Bytes())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, r := range rows[1:] {
		kinds[r[0]]++
		if r[1] != "rate" {
			t.Errorf("row %v: axis %s, want rate", r, r[1])
		}
	}
	if kinds["axis"] == 0 || kinds["interaction"] == 0 {
		t.Errorf("axes.csv rows by kind %v, want both", kinds)
	}
	testutil.Golden(t, "axes-rate.txt.golden", []byte(block))
	testutil.Golden(t, "axes-rate.csv.golden", cs.Bytes())
	h, _ := renderHTML(t, a)
	if !bytes.Contains(h, []byte("<h3>Along rate</h3>")) || !bytes.Contains(h, []byte(": 200 rps vs 50 rps: p50 ")) {
		t.Errorf("HTML lacks the rate block")
	}
}
