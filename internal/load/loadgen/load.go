package loadgen

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Load is the load a run offers: an open loop at a constant Rate, or the
// closed loop (ClosedLoop), where each connection sends its next request
// when the last answer arrives. It is parsed once, from a flag or a plan
// (ParseLoad), and travels typed to the `meshbench load` process, whose
// --rate/--max flags String and Flags render. The zero Load is neither
// (IsZero): "no load set".
type Load struct {
	rate   Rate
	closed bool
	bulk   bool
}

// ClosedLoop is the closed loop, the one name in code for what users
// write as "max" (plan rate axis, `--rate max`), `--max` (`meshbench load`,
// `meshbench run`) or `load_model: closed`.
var ClosedLoop = Load{closed: true}

// ClosedLoopText is how the closed loop is written where a rate is
// expected: the plan's rate axis and Load.String.
const ClosedLoopText = "max"

// Bulk is the bulk-throughput load (netperf's TCP_STREAM, in the
// server-to-client direction): every connection asks for one endless
// answer (`meshbench serve static`'s StreamPath) and reads it as fast as
// it can; what counts is the bytes received in the measured window
// (`meshbench load --bulk`, `load_model: bulk`).
var Bulk = Load{bulk: true}

// BulkText is how the bulk load is written: Load.String, the plan's
// load_model and cell IDs ("rbulk").
const BulkText = "bulk"

// OpenLoop is the open loop at r.
func OpenLoop(r Rate) Load { return Load{rate: r.reduced()} }

// OpenLoopPerSecond is the open loop at n requests per second.
func OpenLoopPerSecond(n uint64) Load { return OpenLoop(Rate{Freq: n, Per: time.Second}) }

// ParseLoad reads a load: ClosedLoopText ("max") for the closed loop,
// BulkText ("bulk") for bulk throughput, or a rate as ParseRate reads it
// ("1000", "33.3", "60/m").
func ParseLoad(s string) (Load, error) {
	switch strings.TrimSpace(s) {
	case ClosedLoopText:
		return ClosedLoop, nil
	case BulkText:
		return Bulk, nil
	}
	r, err := ParseRate(s)
	if err != nil {
		return Load{}, err
	}
	return OpenLoop(r), nil
}

// Closed reports whether l is the closed loop.
func (l Load) Closed() bool { return l.closed }

// Bulk reports whether l is the bulk-throughput load.
func (l Load) Bulk() bool { return l.bulk }

// IsZero reports whether l is the zero Load (no load set).
func (l Load) IsZero() bool { return l == Load{} }

// Rate is the open loop's rate, the zero Rate for the closed loop.
func (l Load) Rate() Rate { return l.rate }

// PerSecond is the open loop's rate in requests per second, 0 for the
// closed loop.
func (l Load) PerSecond() float64 { return l.rate.PerSecond() }

// RateText is the open loop's rate as RateText renders it, "" for the
// closed loop, bulk and the zero Load (the manifest's "rate" key).
func (l Load) RateText() string {
	if l.closed || l.bulk || l.rate.Freq == 0 {
		return ""
	}
	return l.rate.Text()
}

// String is ClosedLoopText for the closed loop, BulkText for bulk, else
// RateText: what
// ParseLoad reads back as l.
func (l Load) String() string {
	if l.closed {
		return ClosedLoopText
	}
	if l.bulk {
		return BulkText
	}
	return l.RateText()
}

// Flags are the `meshbench load` flags that ask for l: --max, --bulk, or
// --rate with RateText.
func (l Load) Flags() []string {
	if l.closed {
		return []string{"--max"}
	}
	if l.bulk {
		return []string{"--bulk"}
	}
	return []string{"--rate", l.RateText()}
}

// Text renders r for ParseRate to read back exactly: requests per second
// as a plain decimal ("100", "33.3") when that is exact, else
// "FREQ/PERIOD" ("1/3s").
func (r Rate) Text() string {
	r = r.reduced()
	s := strconv.FormatFloat(r.PerSecond(), 'f', -1, 64)
	if back, err := ParseRate(s); err == nil && back == r {
		return s
	}
	return fmt.Sprintf("%d/%s", r.Freq, r.Per)
}

// RateOf is perSec requests per second rounded to the nearest thousandth
// (the resolution of a capacity search's probe rates, capacity.FormatRate),
// within ParseRate's bounds.
func RateOf(perSec float64) (Rate, error) {
	milli := math.Round(perSec * 1000)
	if math.IsNaN(milli) || milli < 1 || milli/1000 > maxRatePerSec {
		return Rate{}, fmt.Errorf("rate %g per second: allowed: 0.001 to %d", perSec, maxRatePerSec)
	}
	return Rate{Freq: uint64(milli), Per: 1000 * time.Second}.reduced(), nil
}
