package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// MaxDistributionParam is the largest duration any distribution parameter
// (MIN, MAX, MEAN, STDDEV) may take: 1 hour. It keeps every sample far from
// int64 overflow.
const MaxDistributionParam = time.Hour

// distSyntax is appended to parse errors so the user sees what is allowed.
const distSyntax = "allowed: uniform:MIN,MAX, exp:MEAN or normal:MEAN,STDDEV with Go durations from 0s to 1h (e.g. uniform:1ms,5ms)"

type distKind uint8

const (
	distNone distKind = iota
	distUniform
	distExp
	distNormal
)

// Distribution is a random delay distribution over non-negative durations.
// Build one with ParseDistribution; the zero value always samples 0.
// A Distribution is immutable and safe for concurrent use; the *rand.Rand
// passed to Sample is not.
type Distribution struct {
	kind distKind
	a, b time.Duration // uniform: min, max; exp: mean, -; normal: mean, stddev
}

// ParseDistribution parses a random delay distribution:
//
//	uniform:MIN,MAX      uniform on [MIN, MAX], 0 <= MIN <= MAX
//	exp:MEAN             exponential with mean MEAN > 0
//	normal:MEAN,STDDEV   normal truncated at 0 (negative draws are redrawn),
//	                     MEAN >= 0, STDDEV >= 0
//
// Values are Go durations (time.ParseDuration), each at most
// MaxDistributionParam. Errors are one line naming the bad value and the
// allowed syntax.
func ParseDistribution(s string) (*Distribution, error) {
	bad := func(why string) error {
		return fmt.Errorf("invalid delay distribution %q: %s; %s", s, why, distSyntax)
	}
	name, params, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return nil, bad("missing ':'")
	}
	args := strings.Split(params, ",")
	var want int
	var kind distKind
	switch strings.TrimSpace(name) {
	case "uniform":
		kind, want = distUniform, 2
	case "exp":
		kind, want = distExp, 1
	case "normal":
		kind, want = distNormal, 2
	default:
		return nil, bad(fmt.Sprintf("unknown distribution %q", name))
	}
	if len(args) != want {
		return nil, bad(fmt.Sprintf("%s takes %d value(s), got %d", name, want, len(args)))
	}
	vals := make([]time.Duration, want)
	for i, a := range args {
		a = strings.TrimSpace(a)
		d, err := time.ParseDuration(a)
		if err != nil {
			return nil, bad(fmt.Sprintf("%q is not a duration", a))
		}
		if d < 0 || d > MaxDistributionParam {
			return nil, bad(fmt.Sprintf("%s is outside [0, 1h]", d))
		}
		vals[i] = d
	}
	d := &Distribution{kind: kind, a: vals[0]}
	if want == 2 {
		d.b = vals[1]
	}
	switch kind {
	case distUniform:
		if d.a > d.b {
			return nil, bad(fmt.Sprintf("MIN %s is greater than MAX %s", d.a, d.b))
		}
	case distExp:
		if d.a == 0 {
			return nil, bad("MEAN must be greater than 0")
		}
	}
	return d, nil
}

// String returns the distribution in the syntax ParseDistribution accepts,
// or "" for the zero value.
func (d *Distribution) String() string {
	if d == nil {
		return ""
	}
	switch d.kind {
	case distUniform:
		return fmt.Sprintf("uniform:%s,%s", d.a, d.b)
	case distExp:
		return fmt.Sprintf("exp:%s", d.a)
	case distNormal:
		return fmt.Sprintf("normal:%s,%s", d.a, d.b)
	}
	return ""
}

// Sample draws one delay from d using r. The result is never negative; a nil
// or zero Distribution returns 0. r must not be shared between goroutines
// without a lock.
func (d *Distribution) Sample(r *rand.Rand) time.Duration {
	if d == nil {
		return 0
	}
	switch d.kind {
	case distUniform:
		if d.a == d.b {
			return d.a
		}
		// Both bounds are <= 1h, so the span cannot overflow.
		return d.a + time.Duration(r.Int64N(int64(d.b-d.a)+1))
	case distExp:
		return floatToDuration(r.ExpFloat64() * float64(d.a))
	case distNormal:
		if d.b == 0 {
			return d.a
		}
		// MEAN >= 0 makes each draw non-negative with probability >= 1/2,
		// so 64 tries fail with probability <= 2^-64.
		for range 64 {
			if v := float64(d.a) + r.NormFloat64()*float64(d.b); v >= 0 {
				return floatToDuration(v)
			}
		}
		return 0
	}
	return 0
}

// floatToDuration rounds v nanoseconds to a Duration, clamped to
// [0, math.MaxInt64].
func floatToDuration(v float64) time.Duration {
	switch {
	case !(v > 0): // also catches NaN
		return 0
	case v >= math.MaxInt64:
		return math.MaxInt64
	}
	return time.Duration(math.Round(v))
}
