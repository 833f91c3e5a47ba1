package analysis

import (
	"math"
	"testing"
)

// TestDeltaText: the absolute difference beside a relative one, in the
// figure's unit, as axis verdicts and interaction lines print it.
func TestDeltaText(t *testing.T) {
	for _, tt := range []struct {
		fig  string
		d    float64
		rate float64
		want string
	}{
		{LatencyP50, 0.723, 0, " (+0.723 ms)"},                                    // latency in ms, three significant digits
		{LatencyP99, -12.5, 500, " (−12.5 ms)"},                                   // the rate is for CPU only
		{CPUPrefix + "data-plane", 35, 500, " (+35 mCPU, +70 mCPU per 1000 rps)"}, // CPU with its cost per 1000 rps
		{CPUPrefix + "TOTAL", 35, 0, " (+35 mCPU)"},                               // no known rate: no per 1000 rps
		{CPUPrefix + "load", 0, 500, " (0 mCPU)"},                                 // no difference: nothing per 1000 rps
		{MemPrefix + "data-plane", 12.5, 500, " (+12.5 MiB)"},                     // memory in MiB, never per rate
		{AchievedRate, 150, 0, " (+150 rps)"},                                     // a rate difference
		{AchievedRate, -0.0000468, 0, " (0 rps)"},                                 // below 0.1 rps: the schedule's rounding
		{LatencyP50, math.NaN(), 0, ""},                                           // no median on a side
		{"unknown_figure", 3, 0, ""},                                              // no unit known: nothing rather than a bare number
	} {
		if got := deltaText(tt.fig, map[string]float64{tt.fig: tt.d}, tt.rate); got != tt.want {
			t.Errorf("deltaText(%s, %v, %v) = %q, want %q", tt.fig, tt.d, tt.rate, got, tt.want)
		}
	}
	if got := deltaText(LatencyP50, nil, 0); got != "" {
		t.Errorf("no delta: %q", got)
	}
}
