package report

import (
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/analysis"
)

// TestOverTimeMarksTheFault: a cell with a fault gets the fault's start
// and end as dashed lines in its latency and rate charts (their SVG holds
// the legend entries), its cost in the captions, and the failed answers
// per second beside the rate; a cell without one gets none of them.
func TestOverTimeMarksTheFault(t *testing.T) {
	pts := []analysis.TimePoint{
		{StartSec: 0, LengthSec: 1, Count: 100, RatePerSec: 100, P50Ms: 1, P99Ms: 2},
		{StartSec: 1, LengthSec: 1, Count: 100, RatePerSec: 100, Failed: 30, P50Ms: 1, P99Ms: 40},
		{StartSec: 2, LengthSec: 1, Count: 100, RatePerSec: 100, P50Ms: 1, P99Ms: 2},
	}
	fc := &analysis.FaultCost{Fault: "kill:node-proxy@1s", StartS: 1.1, EndS: 1.3, Kill: true, IntervalS: 1, FailedDuring: 30, Recovered: true, RecoveryS: 0.9}
	charts, err := OverTimeCharts([]*analysis.Cell{{ID: "faulted", OverTime: pts, Fault: fc}, {ID: "healthy", OverTime: pts}})
	if err != nil {
		t.Fatal(err)
	}
	if len(charts) != 4 {
		t.Fatalf("%d charts, want 4", len(charts))
	}
	for i, c := range charts {
		svg, err := c.Chart.SVG(800, 500)
		if err != nil {
			t.Fatal(err)
		}
		faulted := i < 2
		for _, want := range []string{"fault starts", "killed part ready"} {
			if strings.Contains(string(svg), want) != faulted {
				t.Errorf("%s: legend %q present %v, want %v", c.Name, want, !faulted, faulted)
			}
		}
		if strings.Contains(c.Chart.Caption(), "30 failed during") != faulted {
			t.Errorf("%s: caption %q", c.Name, c.Chart.Caption())
		}
		if strings.Contains(c.Name, "rate") && strings.Contains(string(svg), ">failed<") != true {
			t.Errorf("%s: no failed series", c.Name)
		}
	}
}
