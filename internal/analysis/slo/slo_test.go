package slo

import (
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/load/latency"
	"github.com/meshbench/meshbench/internal/results"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want string // Objective.String(), or the error's text (a substring) when wantErr
		bad  bool
	}{
		// The objective.
		{"p99<=5ms,errors<=0.1%", "p99<=5ms,errors<=0.1%", false},
		// Several percentiles, spaces, max; written back ordered by percentile.
		{" max<=1s , p50<=2ms, p99.9<=20ms ", "p50<=2ms,p99.9<=20ms,max<=1s", false},
		// Errors as a fraction; p100 is max.
		{"errors<=0.01,p100<=3s", "max<=3s,errors<=1%", false},
		// Errors alone (the rate and drop conditions always hold).
		{"errors<=0%", "errors<=0%", false},
		// A term without a value.
		{"p99<=", "p99<=: missing value", true},
		// A percentile above 100.
		{"p101<=1ms", "p101<=1ms: allowed percentiles: p0.1 to p99.999", true},
		// An error ratio above 100%.
		{"errors<=150%", "errors<=150%: allowed: a percentage 0% to 100%", true},
		// No <= at all.
		{"p99=5ms", "p99=5ms<=: missing <=", true},
		// Not a duration.
		{"p99<=fast", "p99<=fast: allowed: a duration above 0", true},
		// Zero latency can never be met.
		{"p50<=0s", "p50<=0s: allowed: a duration above 0", true},
		// Unknown term.
		{"mean<=1ms", "mean<=1ms: unknown term", true},
		// The same percentile twice.
		{"p99<=1ms,p99.0<=2ms", "p99 bounded twice", true},
		// Empty.
		{"", "empty objective", true},
		// Every problem at once.
		{"p101<=1ms,errors<=2", "errors<=2", true},
	}
	for _, tt := range tests {
		o, err := Parse(tt.in)
		if tt.bad {
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse(%q) error %v, want one containing %q", tt.in, err, tt.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if got := o.String(); got != tt.want {
			t.Errorf("Parse(%q).String() = %q, want %q", tt.in, got, tt.want)
		}
	}
	o, _ := Parse("p50<=1ms,p99<=5ms,errors<=0.1%")
	if b, ok := o.Primary(); !ok || b.Name != "p99" {
		t.Errorf("Primary = %+v, %v; want p99", b, ok)
	}
	if got := o.Human(); got != "p50 ≤ 1ms, p99 ≤ 5ms, errors ≤ 0.1%" {
		t.Errorf("Human = %q", got)
	}
}

// FuzzParse: Parse never panics, and whatever it accepts writes back to a
// string it parses to the same objective.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"p99<=5ms,errors<=0.1%", "max<=1s", "p99.9<=20ms", "errors<=0.5", "p101<=1ms", "p99<=", ",", "p1e1<=1ms"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := Parse(s)
		if err != nil {
			if strings.Contains(err.Error(), "\n\n") {
				t.Errorf("empty error line for %q: %q", s, err)
			}
			return
		}
		o2, err := Parse(o.String())
		if err != nil || o2.String() != o.String() {
			t.Errorf("%q -> %q -> %q, %v", s, o.String(), o2.String(), err)
		}
	})
}

// loadResult builds a real load result: n requests at rate, latencies from
// lat (ns, cycled), service times svc, schedule lags lag, failed of them
// failed, dropped dropped.
func loadResult(t *testing.T, rate float64, lat, svc, lag []int64, n, failed, dropped int64) *results.LoadResult {
	t.Helper()
	enc := func(vals []int64) latency.Encoded {
		r := latency.NewRecorder()
		for i := int64(0); i < n; i++ {
			r.Record(vals[i%int64(len(vals))])
		}
		e, err := r.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	d := time.Duration(float64(n) / rate * float64(time.Second))
	return &results.LoadResult{Schema: results.LoadSchema, Model: results.ModelOpen, TargetRatePerSec: rate, Connections: 16,
		Scheduled: n + dropped, Sent: n, Completed: n, Success: n - failed, Dropped: dropped,
		FirstSendNs: 1, LastSendNs: 1 + int64(d) - int64(time.Duration(float64(time.Second)/rate)), LastEndNs: 2 + int64(d),
		Latency: enc(lat), ServiceTime: enc(svc), ScheduleLag: enc(lag)}
}

func TestEvaluate(t *testing.T) {
	ms := int64(time.Millisecond)
	obj, err := Parse("p99<=10ms,errors<=0.1%")
	if err != nil {
		t.Fatal(err)
	}
	// 1000 requests: 990 at 2 ms, 10 at the tail value.
	tail := func(v int64) []int64 {
		out := make([]int64, 100)
		for i := range out {
			out[i] = 2 * ms
		}
		out[99] = v
		return out
	}
	fewConns := make([]int64, 100)
	for i := range fewConns {
		fewConns[i] = 4 * ms
	}
	fewConns[99] = 500 * ms
	tests := []struct {
		name     string
		in       Input
		met, gen bool
		reason   string // a substring of the first reason
	}{
		// All fast, no errors: met.
		{"met", Input{Load: loadResult(t, 1000, tail(3*ms), tail(3*ms), []int64{10000}, 1000, 0, 0)}, true, false, ""},
		// p99 over the limit, with answers slow too: the target missed it.
		{"p99", Input{Load: loadResult(t, 1000, []int64{20 * ms}, []int64{18 * ms}, []int64{2 * ms}, 1000, 0, 0)}, false, false, "p99 20ms > 10ms"},
		// 2 of 1000 failed: 0.2% > 0.1%.
		{"errors", Input{Load: loadResult(t, 1000, tail(2*ms), tail(2*ms), []int64{1000}, 1000, 2, 0)}, false, false, "errors 0.2% > 0.1%"},
		// 1 of 1000 failed: exactly the limit, met.
		{"errors at limit", Input{Load: loadResult(t, 1000, tail(2*ms), tail(2*ms), []int64{1000}, 1000, 1, 0)}, true, false, ""},
		// Drops fail the objective whatever the latency.
		{"dropped", Input{Load: loadResult(t, 1000, tail(2*ms), tail(2*ms), []int64{1000}, 1000, 0, 3)}, false, false, "rate not achieved"},
		// The generator's CPU over the plan's threshold: the generator, not the target.
		{"cpu", Input{Load: loadResult(t, 1000, tail(2*ms), tail(2*ms), []int64{1000}, 1000, 0, 0), LoadCPU: 0.95, LoadCPUMax: 0.9}, false, true, "load generator CPU 95%"},
		// Requests left late while few connections were busy (1000/s × 1 ms
		// = 1 of 16): the engine fell behind.
		{"lag starved", Input{Load: loadResult(t, 1000, []int64{30 * ms}, []int64{ms}, []int64{29 * ms}, 1000, 0, 0)}, false, true, "fell behind its schedule"},
		// Every connection busy (1000/s × 16 ms = 16 of 16), answers slow:
		// the target is saturated, not the generator.
		{"lag saturated target", Input{Load: loadResult(t, 1000, []int64{300 * ms}, []int64{16 * ms}, []int64{284 * ms}, 1000, 0, 0)}, false, false, "p99 300ms > 10ms"},
		// Half the connections busy (1000/s × 8.96 ms mean: 99% at 4 ms, 1%
		// at 500 ms) but p99 service time 4 ms ≤ half the limit: too few
		// connections.
		{"lag few connections", Input{Load: loadResult(t, 1000, []int64{100 * ms}, fewConns, []int64{96 * ms}, 1000, 0, 0)}, false, true, "too few connections"},
		// The same, with the search's unloaded service time known: 8.96 ms
		// mean against 4.5 unloaded is at most twice as slow, still too few
		// connections; against 1 ms unloaded the target queued (a loose
		// objective near the capacity): the target's miss.
		{"few connections, unloaded 4.5ms", Input{Load: loadResult(t, 1000, []int64{100 * ms}, fewConns, []int64{96 * ms}, 1000, 0, 0), UnloadedServiceNs: 4.5 * float64(ms)}, false, true, "too few connections"},
		{"queued target, unloaded 1ms", Input{Load: loadResult(t, 1000, []int64{100 * ms}, fewConns, []int64{96 * ms}, 1000, 0, 0), UnloadedServiceNs: float64(ms)}, false, false, "p99 100ms > 10ms"},
	}
	for _, tt := range tests {
		out := Evaluate(obj, tt.in)
		if out.Met != tt.met || out.GeneratorLimit != tt.gen {
			t.Errorf("%s: met %v generator %v (%v), want %v %v", tt.name, out.Met, out.GeneratorLimit, out.Reasons, tt.met, tt.gen)
			continue
		}
		if tt.reason == "" {
			if len(out.Reasons) != 0 {
				t.Errorf("%s: reasons %v, want none", tt.name, out.Reasons)
			}
		} else if len(out.Reasons) == 0 || !strings.Contains(out.Reasons[0], tt.reason) {
			t.Errorf("%s: reasons %v, want the first to contain %q", tt.name, out.Reasons, tt.reason)
		}
	}
}
