package loadgen

import (
	"math"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/workload"
)

// TestPoissonSchedule checks the Poisson schedule's statistics and its
// determinism: the gaps of a Poisson process at rate λ are exponential,
// mean 1/λ and standard deviation 1/λ, and their count in a window of
// length T has mean and variance λT.
func TestPoissonSchedule(t *testing.T) {
	r := Rate{Freq: 1000, Per: time.Second}
	p := Pacer{Rate: r, Duration: 100 * time.Second, Poisson: NewPoissonSchedule(7)}
	n := p.Total()
	// 100000 expected; the count's standard deviation is sqrt(100000) ≈ 316:
	// five of them is a bound a correct schedule misses once in millions.
	if math.Abs(float64(n)-100000) > 5*316 {
		t.Fatalf("arrivals in 100 s at 1000/s: %d, want 100000 ± 1580", n)
	}
	var sum, sumSq float64
	prev := time.Duration(0)
	for i := uint64(1); i < n; i++ {
		at, ok := p.Intended(i)
		if !ok || at < prev {
			t.Fatalf("Intended(%d) = %v, %v after %v: arrival times must not decrease", i, at, ok, prev)
		}
		gap := float64(at - prev)
		sum += gap
		sumSq += gap * gap
		prev = at
	}
	mean := sum / float64(n-1)
	sd := math.Sqrt(sumSq/float64(n-1) - mean*mean)
	// 1 ms both; the mean of 100000 gaps is within 1% (3 standard errors).
	if math.Abs(mean-1e6) > 1e4 || math.Abs(sd-1e6) > 3e4 {
		t.Errorf("gaps: mean %.0f ns, sd %.0f ns; want both 1000000 (exponential)", mean, sd)
	}
	// A constant schedule's gaps have sd 0: the test tells them apart.
	// The same seed is the same schedule, asked in any order.
	q := Pacer{Rate: r, Poisson: NewPoissonSchedule(7)}
	for _, i := range []uint64{5000, 3, 99999, 3} {
		a, _ := p.Intended(i)
		b, _ := q.Intended(i)
		if a != b {
			t.Errorf("seed 7, request %d: %v then %v", i, a, b)
		}
	}
	other := Pacer{Rate: r, Poisson: NewPoissonSchedule(8)}
	a, _ := p.Intended(1000)
	b, _ := other.Intended(1000)
	if a == b {
		t.Errorf("seeds 7 and 8 gave the same request 1000 at %v", a)
	}
	// Request 0 is due at once, as in a constant schedule.
	if at, ok := p.Intended(0); at != 0 || !ok {
		t.Errorf("Intended(0) = %v, %v; want 0", at, ok)
	}
}

func TestParseArrivals(t *testing.T) {
	for in, want := range map[string]Arrivals{"": ArrivalsConstant, "constant": ArrivalsConstant, "Poisson": ArrivalsPoisson} {
		if got, err := ParseArrivals(in); err != nil || got != want {
			t.Errorf("ParseArrivals(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseArrivals("bursty"); err == nil {
		t.Error("ParseArrivals(bursty) accepted")
	}
}

// TestRunPoisson: a Poisson load sends the schedule its seed stands for,
// every request of it, and no more.
func TestRunPoisson(t *testing.T) {
	static := startApp(t, workload.Config{Kind: workload.KindStatic})
	cfg := baseConfig(targets(t, false, "http://"+static+"/"), 400, time.Second)
	cfg.Arrivals, cfg.Seed = ArrivalsPoisson, 42
	res := mustRun(t, cfg)
	want := Pacer{Rate: Rate{Freq: 400, Per: time.Second}, Duration: time.Second, Poisson: NewPoissonSchedule(42)}.Total()
	if res.Scheduled != want || uint64(res.Sent) != res.Scheduled || res.Success != res.Sent {
		t.Errorf("scheduled %d (the seed's schedule holds %d), sent %d, success %d", res.Scheduled, want, res.Sent, res.Success)
	}
	closed := cfg
	closed.Load = ClosedLoop
	if err := closed.Validate(); err == nil {
		t.Error("poisson arrivals in a closed loop accepted")
	}
}
