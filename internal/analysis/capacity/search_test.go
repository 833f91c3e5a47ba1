package capacity

import (
	"math"
	"strings"
	"testing"
)

// run drives a search against a target that meets the objective exactly
// below its capacity (a perfect server) and returns the rates probed and
// the result. limitAt, when above 0, makes the generator the limit from
// that rate on.
func run(t *testing.T, c Config, capacity, limitAt float64) ([]float64, Result) {
	t.Helper()
	var probes []Probe
	var rates []float64
	for {
		rate, done, res := Next(c, probes)
		if done {
			return rates, res
		}
		if len(rates) > MaxProbes {
			t.Fatalf("search does not end: %v", rates)
		}
		rates = append(rates, rate)
		p := Probe{RatePerSec: rate, Met: rate <= capacity}
		if limitAt > 0 && rate >= limitAt {
			p = Probe{RatePerSec: rate, GeneratorLimit: true, Reason: "load generator CPU 95% of a core > 90%"}
		}
		probes = append(probes, p)
	}
}

func TestSearchKnownCapacities(t *testing.T) {
	tests := []struct {
		name      string
		c         Config
		capacity  float64
		limitAt   float64
		wantKind  Kind
		wantRates string // the probes, in order
	}{
		// The known answer: K=4, s=2ms, capacity 2000/s. Doubling
		// from 100 misses first at 3200; bisecting [1600, 3200] to 5%.
		{"2000/s", Config{From: 100, To: 50000, Precision: 0.05}, 2000, 0, Found,
			"100 200 400 800 1600 3200 2400 2000 2200 2100"},
		// Capacity 500/s (K=2, s=4ms): from 100, doubling to 800, then bisecting.
		{"500/s", Config{From: 100, To: 20000, Precision: 0.05}, 500, 0, Found,
			"100 200 400 800 600 500 550 525"},
		// Even the lowest rate misses: no number, "< from".
		{"below from", Config{From: 100, To: 1000, Precision: 0.05}, 50, 0, BelowFrom, "100"},
		// The highest rate still meets: "≥ to", To probed exactly.
		{"at least to", Config{From: 100, To: 1000, Precision: 0.05}, 5000, 0, AtLeastTo, "100 200 400 800 1000"},
		// The generator limits at 1600/s: the search ends with the last met rate.
		{"generator", Config{From: 100, To: 50000, Precision: 0.05}, 2000, 1600, GenLimited, "100 200 400 800 1600"},
		// Growth ×4 and a coarse 20% precision.
		{"growth 4", Config{From: 10, To: 100000, Precision: 0.2, Growth: 4}, 3000, 0, Found,
			"10 40 160 640 2560 10240 6400 4480 3520 3040"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.c.WithDefaults().Validate(); err != nil {
				t.Fatal(err)
			}
			rates, res := run(t, tt.c, tt.capacity, tt.limitAt)
			var got []string
			for _, r := range rates {
				got = append(got, FormatRate(r))
			}
			if g := strings.Join(got, " "); g != tt.wantRates {
				t.Errorf("probes %s\nwant   %s", g, tt.wantRates)
			}
			if res.Kind != tt.wantKind {
				t.Fatalf("kind %s, want %s (%+v)", res.Kind, tt.wantKind, res)
			}
			if res.Kind == Found {
				// The true capacity is bracketed: met ≤ capacity < missed, within precision.
				if res.Capacity > tt.capacity || res.Missed <= tt.capacity {
					t.Errorf("bracket [%v, %v) does not hold %v", res.Capacity, res.Missed, tt.capacity)
				}
				if (res.Missed-res.Capacity)/res.Capacity > tt.c.WithDefaults().Precision {
					t.Errorf("bracket [%v, %v) wider than the precision", res.Capacity, res.Missed)
				}
				if math.Abs(res.Capacity-tt.capacity)/tt.capacity > tt.c.WithDefaults().Precision {
					t.Errorf("found %v, not within precision of %v", res.Capacity, tt.capacity)
				}
			}
			if res.Probes != len(rates) {
				t.Errorf("Probes = %d, ran %d", res.Probes, len(rates))
			}
		})
	}
}

// TestSearchResumes checks that Next depends only on the probes: stopping
// after every probe and resuming from the stored ones gives the same
// sequence and result.
func TestSearchResumes(t *testing.T) {
	c := Config{From: 100, To: 50000, Precision: 0.05}
	want, wantRes := run(t, c, 2000, 0)
	for stop := 0; stop <= len(want); stop++ {
		var probes []Probe
		for _, r := range want[:stop] {
			probes = append(probes, Probe{RatePerSec: r, Met: r <= 2000})
		}
		rate, done, res := Next(c, probes)
		if stop == len(want) {
			if !done || res != wantRes {
				t.Errorf("after all probes: done %v %+v, want %+v", done, res, wantRes)
			}
			continue
		}
		if done || rate != want[stop] {
			t.Errorf("resumed after %d probes: next %v (done %v), want %v", stop, rate, done, want[stop])
		}
	}
}

// TestSearchNoise: a miss below an earlier met rate (noise) keeps the
// bracket consistent: the capacity is below the lowest miss.
func TestSearchNoise(t *testing.T) {
	c := Config{From: 100, To: 1000, Precision: 0.05}
	probes := []Probe{{RatePerSec: 100, Met: true}, {RatePerSec: 200, Met: true}, {RatePerSec: 400, Met: false}, {RatePerSec: 300, Met: true}, {RatePerSec: 150, Met: false}}
	rate, done, _ := Next(c, probes)
	if done || rate != 125 {
		t.Errorf("next %v done %v, want 125 (between met 100 and missed 150)", rate, done)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		c    Config
		want []string // fields with problems
	}{
		// The example.
		{"ok", Config{From: 100, To: 50000, Precision: 0.05, Growth: 2}, nil},
		// from ≥ to.
		{"from = to", Config{From: 100, To: 100, Precision: 0.05, Growth: 2}, []string{"to"}},
		// Precision 0 would never end.
		{"precision 0", Config{From: 100, To: 200, Precision: 0, Growth: 2}, []string{"precision"}},
		// Precision 100%.
		{"precision 1", Config{From: 100, To: 200, Precision: 1, Growth: 2}, []string{"precision"}},
		// Negative from, growth 1 (never grows).
		{"from, growth", Config{From: -1, To: 200, Precision: 0.05, Growth: 1}, []string{"from", "growth"}},
		// NaN to.
		{"to NaN", Config{From: 1, To: math.NaN(), Precision: 0.05, Growth: 2}, []string{"to"}},
	}
	for _, tt := range tests {
		err := tt.c.Validate()
		var got []string
		if err != nil {
			for _, l := range strings.Split(err.Error(), "\n") {
				got = append(got, strings.Fields(l)[0])
			}
		}
		if strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("%s: problems %v (%v), want %v", tt.name, got, err, tt.want)
		}
	}
}

func TestResultString(t *testing.T) {
	tests := []struct {
		r    Result
		want string
	}{
		{Result{Kind: Found, Capacity: 1950, Missed: 2000}, "1950/s (met; 2000/s missed)"},
		{Result{Kind: BelowFrom, Missed: 100}, "< 100/s (the lowest rate missed the objective)"},
		{Result{Kind: AtLeastTo, Capacity: 50000}, "≥ 50000/s (the highest rate still met the objective)"},
		{Result{Kind: GenLimited, Capacity: 800, Reason: "CPU"}, "≥ 800/s (search ended, load generator limit: CPU)"},
	}
	for _, tt := range tests {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.r, got, tt.want)
		}
	}
	for r, want := range map[Result]string{
		{Kind: Found, Capacity: 1950, Missed: 2000}:      "1950/s",
		{Kind: BelowFrom, Missed: 100}:                   "< 100/s",
		{Kind: AtLeastTo, Capacity: 50000}:               "≥ 50000/s",
		{Kind: GenLimited, Capacity: 800, Reason: "CPU"}: "≥ 800/s (generator limit)",
		{Kind: GenLimited, Reason: "CPU"}:                "unknown (generator limit)",
		{Kind: ProbeFailed, Reason: "lab did not start"}: "unknown (probe failed)",
	} {
		if got := r.Short(); got != want {
			t.Errorf("Short(%+v) = %q, want %q", r, got, want)
		}
	}
}

// TestSearchConfirm: with Confirm, a miss is probed again at the same rate;
// a noisy miss (the second probe meets) does not end the growth, a real
// one does.
func TestSearchConfirm(t *testing.T) {
	c := Config{From: 100, To: 50000, Precision: 0.05, Confirm: true}
	// A perfect 2000/s server: every miss is confirmed, so each missed rate
	// is probed twice.
	rates, res := run(t, c, 2000, 0)
	var got []string
	for _, r := range rates {
		got = append(got, FormatRate(r))
	}
	want := "100 200 400 800 1600 3200 3200 2400 2400 2000 2200 2200 2100 2100"
	if g := strings.Join(got, " "); g != want || res.Kind != Found || res.Capacity != 2000 || res.Missed != 2100 {
		t.Errorf("probes %s (%+v)\nwant   %s", g, res, want)
	}
	// A stall fails the first probe at 200/s; its confirmation meets: the
	// search grows on from 200/s instead of bisecting below it.
	probes := []Probe{{RatePerSec: 100, Met: true}, {RatePerSec: 200, Met: false}}
	if rate, done, _ := Next(c, probes); done || rate != 200 {
		t.Fatalf("after a miss: next %v done %v, want the same rate again", rate, done)
	}
	probes = append(probes, Probe{RatePerSec: 200, Met: true})
	if rate, done, _ := Next(c, probes); done || rate != 400 {
		t.Errorf("after a noisy miss: next %v done %v, want 400 (growing on)", rate, done)
	}
	// The generator's limit is confirmed too: one stalled probe does not
	// end the search; two at the same rate do.
	probes = []Probe{{RatePerSec: 100, Met: true}, {RatePerSec: 200, GeneratorLimit: true, Reason: "schedule lag"}}
	if rate, done, _ := Next(c, probes); done || rate != 200 {
		t.Fatalf("after a generator limit: next %v done %v, want the same rate again", rate, done)
	}
	if rate, done, _ := Next(c, append(probes, Probe{RatePerSec: 200, Met: true})); done || rate != 400 {
		t.Errorf("after a passing confirmation: next %v done %v, want 400 (growing on)", rate, done)
	}
	if _, done, res := Next(c, append(probes, Probe{RatePerSec: 200, GeneratorLimit: true, Reason: "schedule lag"})); !done || res.Kind != GenLimited || res.Capacity != 100 {
		t.Errorf("after a confirmed generator limit: done %v, %+v; want the search ended at ≥ 100/s", done, res)
	}
	// Resume: the sequence depends on the probes only.
	for stop := 0; stop < len(rates); stop++ {
		var ps []Probe
		for _, r := range rates[:stop] {
			ps = append(ps, Probe{RatePerSec: r, Met: r <= 2000})
		}
		if rate, done, _ := Next(c, ps); done || rate != rates[stop] {
			t.Errorf("resumed after %d probes: %v, want %v", stop, rate, rates[stop])
		}
	}
}
