package workload

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestStallWait(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		since, every, stallFor time.Duration
		want                   time.Duration
	}{
		// Stalls off: no period.
		{since: 50 * ms, every: 0, stallFor: 100 * ms, want: 0},
		// Stalls off: no stall length.
		{since: 50 * ms, every: 400 * ms, stallFor: 0, want: 0},
		// Negative periods behave as off.
		{since: 50 * ms, every: -400 * ms, stallFor: 100 * ms, want: 0},
		// Before the start (clock skew): no wait.
		{since: -1 * ms, every: 400 * ms, stallFor: 100 * ms, want: 0},
		// The very start is inside the first window [0, 100ms).
		{since: 0, every: 400 * ms, stallFor: 100 * ms, want: 100 * ms},
		// Inside the first window: wait for its end.
		{since: 30 * ms, every: 400 * ms, stallFor: 100 * ms, want: 70 * ms},
		// Last nanosecond of the first window.
		{since: 100*ms - 1, every: 400 * ms, stallFor: 100 * ms, want: 1},
		// The window end is exclusive.
		{since: 100 * ms, every: 400 * ms, stallFor: 100 * ms, want: 0},
		// Between windows.
		{since: 399 * ms, every: 400 * ms, stallFor: 100 * ms, want: 0},
		// Start of the second window.
		{since: 400 * ms, every: 400 * ms, stallFor: 100 * ms, want: 100 * ms},
		// Inside a much later window (k = 1000).
		{since: 400*time.Second + 25*ms, every: 400 * ms, stallFor: 100 * ms, want: 75 * ms},
		// The largest Duration, 47m16.854775807s into its hour: no overflow,
		// waits for the rest of the 59m window.
		{since: 1<<63 - 1, every: time.Hour, stallFor: 59 * time.Minute, want: 11*time.Minute + 43*time.Second + 145224193},
	}
	for _, tt := range tests {
		if got := StallWait(tt.since, tt.every, tt.stallFor); got != tt.want {
			t.Errorf("StallWait(%v, %v, %v) = %v, want %v", tt.since, tt.every, tt.stallFor, got, tt.want)
		}
	}
}

func TestInjectorPlan(t *testing.T) {
	const ms = time.Millisecond
	start := time.Unix(1000, 0)
	tests := []struct {
		name   string
		faults Faults
		at     time.Duration // arrival after start
		want   time.Duration
	}{
		// No faults: answer at once.
		{name: "none", faults: Faults{}, at: 10 * ms, want: 0},
		// Fixed delay only.
		{name: "delay", faults: Faults{Delay: 20 * ms}, at: 10 * ms, want: 20 * ms},
		// Arrival in a stall window: wait to its end.
		{name: "stall", faults: Faults{StallEvery: 400 * ms, StallFor: 150 * ms}, at: 50 * ms, want: 100 * ms},
		// Arrival in a window, then the delay runs after it ends.
		{name: "stall then delay", faults: Faults{Delay: 20 * ms, StallEvery: 400 * ms, StallFor: 150 * ms}, at: 50 * ms, want: 120 * ms},
		// Arrival outside, but the delay ends inside the next window: held
		// until that window ends (380+30=410 → 550).
		{name: "delay into stall", faults: Faults{Delay: 30 * ms, StallEvery: 400 * ms, StallFor: 150 * ms}, at: 380 * ms, want: 170 * ms},
		// Arrival outside, delay ends outside too.
		{name: "delay between stalls", faults: Faults{Delay: 30 * ms, StallEvery: 400 * ms, StallFor: 150 * ms}, at: 200 * ms, want: 30 * ms},
	}
	for _, tt := range tests {
		in := newInjector(tt.faults, nil, start)
		got, fail := in.plan(start.Add(tt.at))
		if got != tt.want || fail {
			t.Errorf("%s: plan = %v, %v; want %v, false", tt.name, got, fail, tt.want)
		}
	}
}

func TestInjectorSeededErrorsAreDeterministic(t *testing.T) {
	const n, ratio = 1000, 0.25
	f := Faults{ErrorRatio: ratio, Seed: 7}
	count := func() []bool {
		in := newInjector(f, nil, time.Unix(0, 0))
		out := make([]bool, n)
		for i := range out {
			out[i], _ = in.draw()
		}
		return out
	}
	a, b := count(), count()
	fails := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("draw %d differs between two injectors with the same seed", i)
		}
		if a[i] {
			fails++
		}
	}
	// Binomial(1000, 0.25): sd ≈ 13.7; allow 5 sd.
	if fails < 250-70 || fails > 250+70 {
		t.Errorf("failures = %d of %d, want about %d", fails, n, int(n*ratio))
	}
	// A random delay drawn from its own stream leaves the error choices
	// unchanged.
	d, _ := ParseDistribution("exp:1ms")
	f.RandomDelay = d
	c := count()
	for i := range a {
		if a[i] != c[i] {
			t.Fatalf("draw %d changed when a random delay was added", i)
		}
	}
}

// expectedFailures replays the injector's seeded error stream.
func expectedFailures(seed int64, ratio float64, n int) int {
	r := rand.New(rand.NewPCG(uint64(seed), 1))
	fails := 0
	for range n {
		if r.Float64() < ratio {
			fails++
		}
	}
	return fails
}
