package threshold

import (
	"fmt"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/analysis"
)

// plan: five valid repetitions of sidecar at static 50 rps whose p50 is
// p50Scale × (1, 1.01, 0.99, 1.02, 0.98) ms and achieved rate
// rateScale × 50/s (same jitter), other figures fixed.
func plan(p50Scale, rateScale float64) *analysis.Plan {
	p := &analysis.Plan{Failed: map[string]string{}}
	cfg := analysis.Config{Mesh: "sidecar", App: "static", Rate: "50", Replicas: 1, Protocol: "http", MTLS: true}
	for rep, j := range []float64{1, 1.01, 0.99, 1.02, 0.98} {
		f := map[string]float64{analysis.LatencyP50: p50Scale * j, analysis.LatencyP99: 5, analysis.AchievedRate: 50 * rateScale * j}
		p.Cells = append(p.Cells, &analysis.Cell{ID: fmt.Sprintf("rep%d", rep+1), Config: cfg, Valid: true, Figures: f})
	}
	return p
}

func TestRegressions(t *testing.T) {
	tests := []struct {
		name            string
		p50, rate       float64 // B's scale against A's 1, 1
		margin          float64
		want            int    // regressions found
		wantFig, wantIn string // in the first line
	}{
		// p50 25% higher, interval well beyond 10%
		{"p50 up 25% over 10%", 1.25, 1, 0.10, 1, analysis.LatencyP50, "higher in B"},
		// the same shift within a 30% margin is not a regression
		{"p50 up 25% within 30%", 1.25, 1, 0.30, 0, "", ""},
		// an improvement never is
		{"p50 down 20%", 0.8, 1, 0, 0, "", ""},
		// achieved rate 20% lower is a regression (lower is worse)
		{"rate down 20%", 1, 0.8, 0.05, 1, analysis.AchievedRate, "lower in B"},
		// no change at all, margin 0: nothing significant
		{"unchanged", 1, 1, 0, 0, "", ""},
	}
	for _, tt := range tests {
		sc := analysis.CompareSets(plan(1, 1), plan(tt.p50, tt.rate), analysis.Options{Seed: 1})
		got := Regressions(sc, tt.margin)
		if len(got) != tt.want {
			t.Errorf("%s: %d regressions %q, want %d", tt.name, len(got), got, tt.want)
			continue
		}
		if tt.want > 0 && (!strings.Contains(got[0], tt.wantFig) || !strings.HasSuffix(got[0], tt.wantIn)) {
			t.Errorf("%s: %q, want %s … %s", tt.name, got[0], tt.wantFig, tt.wantIn)
		}
	}
}

func TestParseRelative(t *testing.T) {
	tests := []struct {
		in   string
		want float64 // -1: error
	}{
		{"10%", 0.10}, // a percentage
		{"0.1", 0.10}, // a fraction
		{"0%", 0},     // the bare flag's value
		{"-5%", -1},   // negative
		{"x", -1},     // not a number
	}
	for _, tt := range tests {
		got, err := ParseRelative(tt.in)
		if (err != nil) != (tt.want < 0) || (err == nil && got != tt.want) {
			t.Errorf("ParseRelative(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}
