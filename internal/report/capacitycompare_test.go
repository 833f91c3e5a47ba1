package report

import (
	"bytes"
	"testing"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestCapacityCompareText pins compare's text for two capacity searches:
// the mismatch warning, a verdict per configuration in both, and those in
// one only.
func TestCapacityCompareText(t *testing.T) {
	sc := &analysis.CapacitySetComparison{
		Mismatch: "A searched at p99<=5ms, B at p99<=10ms: the capacities answer different questions",
		Rows:     []analysis.CapacityRow{{Config: "sidecar, static", Verdict: "sidecar: 61% of none's capacity at p99 ≤ 5ms"}},
		OnlyA:    []string{"ambient, static"},
		OnlyB:    []string{"waypoint, static"},
	}
	var b bytes.Buffer
	if err := CapacityCompareText(&b, sc, "p99 ≤ 5ms", "results/a", "results/b"); err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, "capacity-compare.txt.golden", b.Bytes())
}
