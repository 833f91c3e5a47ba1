package analysis

import (
	"math"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/analysis/capacity"
)

func runsOf(mesh string, results ...capacity.Result) []SearchRun {
	var out []SearchRun
	for _, r := range results {
		out = append(out, SearchRun{ID: mesh, Config: Config{Mesh: mesh, App: "static", Rate: "search", Replicas: 1, Protocol: "http", MTLS: true}, Result: r})
	}
	return out
}

func found2(c, m float64) capacity.Result {
	return capacity.Result{Kind: capacity.Found, Capacity: c, Missed: m}
}

// TestSummarize: a median and interval only when every search found a
// number; otherwise each search's result, in words.
func TestSummarize(t *testing.T) {
	tests := []struct {
		name string
		runs []SearchRun
		want string
		nan  bool
	}{
		// Three found: the median, the range as interval (n ≤ 5).
		{"found", runsOf("none", found2(1950, 2000), found2(2000, 2100), found2(1900, 1990)), "1950/s [1900, 2000]", false},
		// One found, one "≥ to": no median of mixed numbers and bounds.
		{"mixed", runsOf("none", found2(1950, 2000), capacity.Result{Kind: capacity.AtLeastTo, Capacity: 50000}), "1950/s; ≥ 50000/s", true},
		// Below from: said plainly.
		{"below", runsOf("none", capacity.Result{Kind: capacity.BelowFrom, Missed: 100}), "< 100/s", true},
	}
	for _, tt := range tests {
		iv, text := summarize(tt.runs, 0.95, nil)
		if text != tt.want || math.IsNaN(iv.Estimate) != tt.nan {
			t.Errorf("%s: %q (estimate %v), want %q (NaN %v)", tt.name, text, iv.Estimate, tt.want, tt.nan)
		}
	}
}

func TestCompareCapacities(t *testing.T) {
	group := func(mesh string, runs []SearchRun) CapacityGroup {
		iv, text := summarize(runs, 0.95, nil)
		return CapacityGroup{Mesh: mesh, Scenario: runs[0].Config.Scenario(), Runs: runs, Capacity: iv, Text: text}
	}
	a := &SearchAnalysis{Objective: "p99<=5ms", Groups: []CapacityGroup{
		group("none", runsOf("none", found2(2000, 2100), found2(2000, 2100), found2(1950, 2000))),
		group("sidecar", runsOf("sidecar", found2(1200, 1250), found2(1250, 1300), found2(1200, 1250))),
	}}
	b := &SearchAnalysis{Objective: "p99<=5ms", Groups: []CapacityGroup{
		group("none", runsOf("none", found2(2000, 2100), found2(2050, 2100), found2(1950, 2000))),
		group("sidecar", runsOf("sidecar", found2(1500, 1550), found2(1550, 1600), found2(1500, 1550))),
		group("ambient", runsOf("ambient", found2(1800, 1850))),
	}}
	sc := CompareCapacities(a, b, 0.95, 1)
	if len(sc.Rows) != 2 || len(sc.OnlyB) != 1 || !strings.HasPrefix(sc.OnlyB[0], "ambient") || sc.Mismatch != "" {
		t.Fatalf("%+v", sc)
	}
	// sidecar: B 1500 vs A 1200: +25%, the runs do not overlap: significant.
	r := sc.Rows[1]
	if math.Abs(r.Diff.Estimate-0.25) > 1e-9 || !r.Diff.Significant() || !strings.Contains(r.Verdict, "~25% higher") {
		t.Errorf("sidecar row %+v", r)
	}
	b.Objective = "p99<=10ms"
	if sc := CompareCapacities(a, b, 0.95, 1); sc.Mismatch == "" {
		t.Error("different objectives not flagged")
	}
}
