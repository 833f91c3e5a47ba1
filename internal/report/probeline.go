package report

import (
	"fmt"
	"strings"

	"github.com/meshbench/meshbench/internal/analysis/capacity"
	"github.com/meshbench/meshbench/internal/analysis/slo"
)

// ProbeLine is one printed probe: "probe  3  400/s  achieved 400.0/s  p99
// 2.1ms ≤ 10ms  errors 0% ≤ 0.1%  dropped 0  cpu 12%  met".
func ProbeLine(i int, o slo.Outcome, loadCPU float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "probe %2d  %8s/s  achieved %9.1f/s  p50 %-8s", i, capacity.FormatRate(o.TargetRatePerSec), o.AchievedRatePerSec, slo.FmtNs(o.P50Ns))
	for _, fg := range o.Figures {
		if fg.Name == "errors" {
			fmt.Fprintf(&b, "  errors %s ≤ %s", slo.FormatRatio(fg.Value), slo.FormatRatio(fg.Limit))
			continue
		}
		fmt.Fprintf(&b, "  %s %s ≤ %s", fg.Name, slo.FmtNs(int64(fg.Value)), slo.FmtNs(int64(fg.Limit)))
	}
	fmt.Fprintf(&b, "  dropped %d  load cpu %.0f%%  ", o.Dropped, loadCPU*100)
	switch {
	case o.Met:
		b.WriteString("met")
	case o.GeneratorLimit:
		b.WriteString("LOAD GENERATOR LIMIT: " + strings.Join(o.Reasons, "; "))
	default:
		b.WriteString("missed: " + strings.Join(o.Reasons, "; "))
	}
	return b.String()
}
