package loadgen

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// Rate is an exact request rate: Freq requests every Per. A fractional rate
// such as 33.3/s is held exactly as 333 per 10 s, so no request is lost to
// rounding over a long run.
type Rate struct {
	Freq uint64        // requests per Per, > 0
	Per  time.Duration // period, > 0
}

// PerSecond returns the rate as requests per second (for display).
func (r Rate) PerSecond() float64 {
	if r.Per <= 0 {
		return 0
	}
	return float64(r.Freq) * float64(time.Second) / float64(r.Per)
}

// String renders the rate the way ParseRate reads it.
func (r Rate) String() string {
	return strconv.FormatFloat(r.PerSecond(), 'f', -1, 64) + "/s"
}

// maxRatePerSec bounds rates to what a loopback generator can mean.
const maxRatePerSec = 10_000_000

// ParseRate reads a rate: "1000" (per second), "33.3", "0.5", "1000/s",
// "60/m", "5/100ms", "1/1h". Up to 9 decimals are kept exactly.
func ParseRate(s string) (Rate, error) {
	allowed := `allowed: a positive number of requests per second such as "1000" or "33.3", or N/UNIT such as "60/m", "5/100ms"`
	num, per := strings.TrimSpace(s), "s"
	if i := strings.IndexByte(num, '/'); i >= 0 {
		num, per = num[:i], num[i+1:]
	}
	if num == "" {
		return Rate{}, fmt.Errorf("rate %q: %s", s, allowed)
	}
	freq, scale, err := parseDecimal(num)
	if err != nil || freq == 0 {
		return Rate{}, fmt.Errorf("rate %q: %s", s, allowed)
	}
	var period time.Duration
	switch per {
	case "s":
		period = time.Second
	case "m":
		period = time.Minute
	case "h":
		period = time.Hour
	case "ms":
		period = time.Millisecond
	default:
		d, err := time.ParseDuration(per)
		if err != nil || d <= 0 {
			return Rate{}, fmt.Errorf("rate %q: unit %q: %s", s, per, allowed)
		}
		period = d
	}
	// freq/scale requests per period  ==  freq per (period*scale).
	hi, lo := bits.Mul64(uint64(period), scale)
	if hi != 0 || lo > math.MaxInt64 {
		return Rate{}, fmt.Errorf("rate %q: too many decimals for that period; %s", s, allowed)
	}
	r := Rate{Freq: freq, Per: time.Duration(lo)}
	r = r.reduced()
	if r.PerSecond() > maxRatePerSec {
		return Rate{}, fmt.Errorf("rate %q: above the maximum of %d per second", s, maxRatePerSec)
	}
	if r.PerSecond() < 1e-6 {
		return Rate{}, fmt.Errorf("rate %q: below the minimum of one request per 11 days", s)
	}
	return r, nil
}

func (r Rate) reduced() Rate {
	a, b := r.Freq, uint64(r.Per)
	for b != 0 {
		a, b = b, a%b
	}
	if a > 1 {
		r.Freq /= a
		r.Per /= time.Duration(a)
	}
	return r
}

// parseDecimal reads "123.456" as (123456, 1000). At most 9 decimals.
func parseDecimal(s string) (value, scale uint64, err error) {
	intPart, frac, _ := strings.Cut(s, ".")
	if len(frac) > 9 || (intPart == "" && frac == "") {
		return 0, 0, errors.New("bad decimal")
	}
	scale = 1
	for range frac {
		scale *= 10
	}
	digits := intPart + frac
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, 0, errors.New("bad decimal")
		}
	}
	v, err := strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return 0, 0, err
	}
	return v, scale, nil
}

// Pacer decides when each request of an open-loop run is due. It is a pure
// function of (elapsed, sent): no clock, and no state but a Poisson
// schedule's memo of its last draw (which changes no answer).
type Pacer struct {
	Rate Rate
	// Duration bounds the schedule: request n is sent only if its intended
	// time is before Duration. 0 means unbounded (Count or cancellation ends it).
	Duration time.Duration
	// Count bounds the number of requests; 0 means unbounded.
	Count uint64
	// Poisson, when not nil, spaces the requests by exponential gaps of
	// mean 1/Rate drawn from its seed (ArrivalsPoisson) instead of exactly
	// 1/Rate apart; the schedule is still a function of n alone.
	Poisson *PoissonSchedule
	// Tick, when > 0, is the send granularity: the pacer wakes at most once
	// per Tick (at multiples of Tick from the start) and sends every request
	// due by then back to back. A request then leaves up to one Tick after
	// its intended time, never before it; its latency is still counted from
	// the intended time, so the lag is paid in the figures. 0 sends each
	// request at its own time (one wake-up per request).
	Tick time.Duration
}

// Send ticks allowed besides 0 (exact spacing).
const (
	MinSendTick = 100 * time.Microsecond
	MaxSendTick = 10 * time.Millisecond
)

// ValidateSendTick checks a send tick: 0, or MinSendTick … MaxSendTick.
func ValidateSendTick(d time.Duration) error {
	if d == 0 || (d >= MinSendTick && d <= MaxSendTick) {
		return nil
	}
	return fmt.Errorf("send-tick %v: allowed: 0 (exact spacing) or %v to %v", d, MinSendTick, MaxSendTick)
}

// Intended returns the intended send time of request n (0-based) relative to
// the start, in ns: n·Per/Freq, exact (128-bit intermediate). ok is false when
// the time does not fit in a Duration.
func (p Pacer) Intended(n uint64) (t time.Duration, ok bool) {
	if p.Rate.Freq == 0 || p.Rate.Per <= 0 {
		return 0, false
	}
	if p.Poisson != nil {
		return p.Poisson.intended(p.Rate, n)
	}
	hi, lo := bits.Mul64(n, uint64(p.Rate.Per))
	if hi >= p.Rate.Freq {
		return 0, false
	}
	q, _ := bits.Div64(hi, lo, p.Rate.Freq)
	if q > math.MaxInt64 {
		return 0, false
	}
	return time.Duration(q), true
}

// Pace tells, after `sent` requests and `elapsed` time since the start, how
// long to wait before sending the next one (0: it is due now or overdue), or
// stop when the schedule is over.
func (p Pacer) Pace(elapsed time.Duration, sent uint64) (wait time.Duration, stop bool) {
	if p.Count > 0 && sent >= p.Count {
		return 0, true
	}
	due, ok := p.Intended(sent)
	if !ok {
		return 0, true
	}
	if p.Duration > 0 && due >= p.Duration {
		return 0, true
	}
	if due <= elapsed {
		return 0, false
	}
	if p.Tick > 0 && due <= math.MaxInt64-p.Tick {
		// Wake at the first tick boundary at or after the due time.
		if r := due % p.Tick; r != 0 {
			due += p.Tick - r
		}
	}
	return due - elapsed, false
}

// Total is the number of requests the schedule holds, or 0 when unbounded.
func (p Pacer) Total() uint64 {
	if p.Duration <= 0 {
		return p.Count
	}
	if p.Poisson != nil {
		// Count the arrivals before Duration, one draw each.
		var n uint64
		for p.Count == 0 || n < p.Count {
			t, ok := p.Intended(n)
			if !ok || t >= p.Duration {
				break
			}
			n++
		}
		return n
	}
	// Requests n with n·Per/Freq < Duration: n < Duration·Freq/Per, so
	// ceil(Duration·Freq/Per).
	hi, lo := bits.Mul64(uint64(p.Duration), p.Rate.Freq)
	if hi >= uint64(p.Rate.Per) {
		return p.Count
	}
	q, rem := bits.Div64(hi, lo, uint64(p.Rate.Per))
	if rem != 0 {
		q++
	}
	if p.Count > 0 && p.Count < q {
		return p.Count
	}
	return q
}
