package workload

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestParseDistribution(t *testing.T) {
	tests := []struct {
		in      string
		want    string // String() of the result; "" when an error is expected
		wantErr string // substring of the error
	}{
		// Each kind in its canonical form.
		{in: "uniform:1ms,5ms", want: "uniform:1ms,5ms"},
		{in: "exp:2ms", want: "exp:2ms"},
		{in: "normal:10ms,2ms", want: "normal:10ms,2ms"},
		// Spaces around parts are tolerated; output is canonical.
		{in: " uniform: 1ms , 5ms ", want: "uniform:1ms,5ms"},
		// A degenerate uniform is a constant.
		{in: "uniform:3ms,3ms", want: "uniform:3ms,3ms"},
		// Zero stddev is a constant too.
		{in: "normal:5ms,0s", want: "normal:5ms,0s"},
		// The upper limit is inclusive.
		{in: "uniform:0s,1h", want: "uniform:0s,1h0m0s"},
		// No kind separator.
		{in: "5ms", wantErr: "missing ':'"},
		// Empty input.
		{in: "", wantErr: "missing ':'"},
		// Unknown kind.
		{in: "pareto:1ms", wantErr: `unknown distribution "pareto"`},
		// Kind names are case-sensitive.
		{in: "Uniform:1ms,2ms", wantErr: "unknown distribution"},
		// Wrong number of values.
		{in: "uniform:1ms", wantErr: "uniform takes 2 value(s), got 1"},
		{in: "exp:1ms,2ms", wantErr: "exp takes 1 value(s), got 2"},
		// Not a duration (a bare number has no unit).
		{in: "exp:5", wantErr: `"5" is not a duration`},
		{in: "uniform:1ms,", wantErr: `"" is not a duration`},
		// Negative values.
		{in: "normal:-1ms,1ms", wantErr: "outside [0, 1h]"},
		// Above the 1h limit.
		{in: "exp:61m", wantErr: "outside [0, 1h]"},
		// MIN above MAX.
		{in: "uniform:5ms,1ms", wantErr: "MIN 5ms is greater than MAX 1ms"},
		// An exponential needs a positive mean.
		{in: "exp:0s", wantErr: "MEAN must be greater than 0"},
	}
	for _, tt := range tests {
		d, err := ParseDistribution(tt.in)
		if tt.wantErr != "" {
			if err == nil {
				t.Errorf("ParseDistribution(%q) = %v, want error containing %q", tt.in, d, tt.wantErr)
				continue
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.wantErr) || !strings.Contains(msg, "allowed: uniform:MIN,MAX") || strings.Contains(msg, "\n") {
				t.Errorf("ParseDistribution(%q) error %q: want one line containing %q and the syntax", tt.in, msg, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseDistribution(%q): %v", tt.in, err)
			continue
		}
		if got := d.String(); got != tt.want {
			t.Errorf("ParseDistribution(%q).String() = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestDistributionSampleMeans(t *testing.T) {
	const n = 200_000
	tests := []struct {
		spec     string
		wantMean time.Duration
		min, max time.Duration // every sample must fall in [min, max]
	}{
		// Uniform: mean is the midpoint, samples stay inside the bounds.
		{spec: "uniform:1ms,5ms", wantMean: 3 * time.Millisecond, min: time.Millisecond, max: 5 * time.Millisecond},
		// Exponential: mean is MEAN, no upper bound.
		{spec: "exp:2ms", wantMean: 2 * time.Millisecond, max: math.MaxInt64},
		// Normal far from 0: truncation does not move the mean measurably.
		{spec: "normal:10ms,2ms", wantMean: 10 * time.Millisecond, max: math.MaxInt64},
		// Normal truncated at 0 with MEAN 0: the half-normal mean is
		// STDDEV*sqrt(2/pi) ≈ 0.7979 ms.
		{spec: "normal:0s,1ms", wantMean: time.Duration(float64(time.Millisecond) * math.Sqrt(2/math.Pi)), max: math.MaxInt64},
		// Constant.
		{spec: "uniform:4ms,4ms", wantMean: 4 * time.Millisecond, min: 4 * time.Millisecond, max: 4 * time.Millisecond},
	}
	for _, tt := range tests {
		d, err := ParseDistribution(tt.spec)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(1, 2))
		var sum float64
		for range n {
			v := d.Sample(r)
			if v < tt.min || v > tt.max {
				t.Fatalf("%s: sample %v outside [%v, %v]", tt.spec, v, tt.min, tt.max)
			}
			sum += float64(v)
		}
		mean := sum / n
		// 2% is more than 5 standard errors for every row at n=200k.
		if rel := math.Abs(mean-float64(tt.wantMean)) / float64(tt.wantMean); rel > 0.02 {
			t.Errorf("%s: mean %v, want %v ± 2%%", tt.spec, time.Duration(mean), tt.wantMean)
		}
	}
}

func TestDistributionZeroAndNil(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var nilDist *Distribution
	if got := nilDist.Sample(r); got != 0 {
		t.Errorf("nil Sample = %v, want 0", got)
	}
	if got := (&Distribution{}).Sample(r); got != 0 {
		t.Errorf("zero Sample = %v, want 0", got)
	}
	if got := nilDist.String(); got != "" {
		t.Errorf("nil String = %q, want empty", got)
	}
}

func FuzzParseDistribution(f *testing.F) {
	for _, s := range []string{
		"uniform:1ms,5ms", "exp:2ms", "normal:10ms,2ms", "normal:0s,1h", "uniform:0s,1h",
		"", ":", "exp:", "uniform:,", "normal:1ms,2ms,3ms", "exp:1e309s", "uniform:-0s,0s",
		"exp:\n1ms", "uniform:9223372036854775807ns,1ms",
	} {
		f.Add(s, uint64(1))
	}
	f.Fuzz(func(t *testing.T, s string, seed uint64) {
		d, err := ParseDistribution(s)
		if err != nil {
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "invalid delay distribution") {
				t.Fatalf("ParseDistribution(%q) error is not one line naming the input: %q", s, msg)
			}
			return
		}
		// Canonical form round-trips.
		again, err := ParseDistribution(d.String())
		if err != nil {
			t.Fatalf("ParseDistribution(%q).String() = %q does not parse: %v", s, d.String(), err)
		}
		if *again != *d {
			t.Fatalf("round trip of %q: got %+v, want %+v", s, *again, *d)
		}
		r := rand.New(rand.NewPCG(seed, 0))
		for range 16 {
			v := d.Sample(r)
			if v < 0 {
				t.Fatalf("%s: negative sample %v", d, v)
			}
			if d.kind == distUniform && (v < d.a || v > d.b) {
				t.Fatalf("%s: sample %v outside bounds", d, v)
			}
		}
	})
}
