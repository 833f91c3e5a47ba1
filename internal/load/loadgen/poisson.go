package loadgen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// Arrivals is how an open loop spaces its requests in time.
type Arrivals string

// The open loop's arrival processes.
const (
	// ArrivalsConstant sends request n at exactly n/rate: every request
	// one period after the last (the default; fortio's -uniform, wrk2's
	// schedule).
	ArrivalsConstant Arrivals = "constant"
	// ArrivalsPoisson spaces requests by independent exponential gaps of
	// mean 1/rate: a Poisson process at the same mean rate, the arrivals
	// of many independent clients. Bursts and lulls are part of the load.
	ArrivalsPoisson Arrivals = "poisson"
)

// ArrivalsNames lists the arrival processes as flags and plans write them.
var ArrivalsNames = []string{string(ArrivalsConstant), string(ArrivalsPoisson)}

// ParseArrivals reads an arrival process: "constant" or "poisson" ("" is
// constant).
func ParseArrivals(s string) (Arrivals, error) {
	switch a := Arrivals(strings.ToLower(strings.TrimSpace(s))); a {
	case "", ArrivalsConstant:
		return ArrivalsConstant, nil
	case ArrivalsPoisson:
		return a, nil
	}
	return "", fmt.Errorf("arrivals %q: allowed: %s", s, strings.Join(ArrivalsNames, ", "))
}

// poissonStream is the second PCG seed word of a Poisson schedule: fixed,
// so a recorded seed stands for the same arrival times forever.
const poissonStream = 0x706f6973736f6e31 // "poisson1"

// PoissonSchedule is the arrival times of a Poisson process: request 0 at
// 0, request n at the sum of n exponential gaps of mean Per/Freq of the
// pacer's rate, each gap drawn in turn from a PCG generator seeded with
// Seed (math/rand/v2's PCG, its 64-bit outputs turned into gaps here, not
// by a library routine that could change with the Go release). The times
// are a pure function of (Seed, rate, n); the schedule keeps its last
// position so that asking for n, n+1, … costs one draw each. It is not
// safe for concurrent use (one pacing goroutine reads it).
type PoissonSchedule struct {
	Seed uint64

	rng  *rand.PCG
	n    uint64  // the next gap to draw is gap n: at holds t(n)
	at   float64 // t(n) in ns, summed exactly as drawn
	mean float64 // the mean gap the position was built for, in ns
}

// NewPoissonSchedule is the Poisson schedule drawn from seed.
func NewPoissonSchedule(seed uint64) *PoissonSchedule { return &PoissonSchedule{Seed: seed} }

// intended is t(n) in ns for rate r, ok false past the Duration range.
func (s *PoissonSchedule) intended(r Rate, n uint64) (time.Duration, bool) {
	mean := float64(r.Per) / float64(r.Freq)
	if s.rng == nil || n < s.n || mean != s.mean {
		s.rng, s.n, s.at, s.mean = rand.NewPCG(s.Seed, poissonStream), 0, 0, mean
	}
	for s.n < n {
		// u in (0, 1]: -ln(u) is an exponential draw of mean 1, never +Inf.
		u := float64(s.rng.Uint64()>>11+1) / (1 << 53)
		s.at += -math.Log(u) * mean
		s.n++
		if s.at >= math.MaxInt64 {
			return 0, false
		}
	}
	return time.Duration(math.Round(s.at)), true
}
