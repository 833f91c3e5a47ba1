package cli

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/analysis/capacity"
	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestLoadSearchKnownCapacity runs `meshbench load --slo` against a real
// `meshbench serve static --concurrency K --service-time S` process, whose
// capacity is exactly K/S.
//
// The reasoning: the load is open loop at a constant rate λ. Below K/S the
// arrivals are evenly spaced, so at most K requests are ever in service and
// each answer takes S plus the machine's noise (a few ms at worst on a
// loaded 2-core machine): p99 stays far below the objective (≥ 5×S). Above
// K/S the server's queue grows by (λ − K/S) requests per second, so after t
// seconds a request waits (λ − K/S)·t/(K/S): at λ = 1.05·K/S over a 5 s
// probe (1 s warm-up + 4 s) that is 250 ms for the last request, above the
// objective for far more than the last 1% of them.
//
// The probes last 4 s because this machine is shared: another process can
// stall this one for 10–30 ms, which delays every request due in the stall;
// over a 4 s window a 30 ms stall is 0.75% of the requests, under the 1%
// that p99 allows, while over 2 s it is 1.5% and fails a rate far below
// the capacity (seen here). On a machine so loaded that the generator
// itself falls behind by tens of ms (load average 5–30 on these 2 cores,
// seen while other builds ran) the search says so and ends ("load
// generator limit"), and this test fails with that reason: run it on a
// machine that is not saturated. Measured here on a quiet moment: 2000/s
// (met; 2100/s missed) and 500/s (met; 525/s missed). So every rate ≤ K/S meets the objective and
// every rate ≥ 1.05·K/S misses it, and the search, which brackets the
// capacity between a met and a missed rate within its precision (5%), must
// report a capacity within 5% of K/S (in fact in [K/S·0.95, K/S]).
//
// The objective is 5·S (knownCapacityP99) unless the machine's timer lag,
// measured just before, says its noise alone could miss that: then it is
// raised to cover the noise, within ceilings that keep every rate 5% over
// the capacity a miss of the app's, so the check (within 5% of K/S) is as
// strict.
func TestLoadSearchKnownCapacity(t *testing.T) {
	lag := testutil.Timing(t)
	tests := []struct {
		name     string
		k        int
		s        time.Duration
		capacity float64
		from, to string
	}{
		// The known answer: 4 at once, 2 ms each: 2000/s; p99 ≤ 10 ms.
		{"K4 S2ms", 4, 2 * time.Millisecond, 2000, "100", "20000"},
		// A second: 2 at once, 4 ms each: 500/s; p99 ≤ 20 ms.
		{"K2 S4ms", 2, 4 * time.Millisecond, 500, "50", "20000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objective := fmt.Sprintf("p99<=%v,errors<=0.1%%", knownCapacityP99(t, tt.s, tt.k, lag))
			addr := testutil.StartServe(t, "static", "--concurrency", strconv.Itoa(tt.k), "--service-time", tt.s.String())
			out := filepath.Join(t.TempDir(), "search.json")
			inv := runCLI(t, nil, "load", "--slo", objective, "--search-from", tt.from, "--search-to", tt.to,
				"--duration", "4s", "--warmup", "1s", "-o", out, "http://"+addr+"/")
			if inv.code != 0 {
				t.Fatalf("exit %d\n%s\n%s", inv.code, inv.stdout, inv.stderr)
			}
			t.Logf("\n%s", inv.stdout)
			doc, err := capacity.ReadLoadSearch(out)
			if err != nil {
				t.Fatal(err)
			}
			res := doc.Result
			if res == nil || res.Kind != capacity.Found {
				t.Fatalf("result %+v, want a found capacity", res)
			}
			if d := math.Abs(res.Capacity-tt.capacity) / tt.capacity; d > 0.05 {
				t.Errorf("found %v/s, want within 5%% of %v/s (off by %.1f%%)", res.Capacity, tt.capacity, d*100)
			}
			if len(doc.Probes) != res.Probes {
				t.Errorf("%d probes in the file, result says %d", len(doc.Probes), res.Probes)
			}
			for _, p := range doc.Probes {
				if p.Load == nil || p.Load.TargetRatePerSec != p.Probe.RatePerSec {
					t.Errorf("probe %d: load result missing or at another rate", p.Index)
				}
			}
			if !strings.Contains(inv.stdout, "Capacity at p99 ≤ ") || strings.Count(inv.stdout, "\nprobe ") != res.Probes {
				t.Errorf("printout lacks the probes or the capacity:\n%s", inv.stdout)
			}
		})
	}
}

// TestLoadSearchEnds: an objective even the lowest rate misses, and one
// the highest still meets, are said plainly, never as a number. In the
// timing lane: beside real nodes on a saturated machine the generator fell
// 100 ms behind at 50/s, so "at least to" missed p99 ≤ 100 ms.
func TestLoadSearchEnds(t *testing.T) {
	testutil.Timing(t)
	addr := testutil.StartServe(t, "static", "--concurrency", "1", "--service-time", "5ms")
	tests := []struct {
		name, objective, from, to string
		want                      capacity.Kind
		line                      string
	}{
		// Every answer takes ≥ 5 ms: p50 ≤ 1 ms is missed at once.
		{"below from", "p50<=1ms", "20", "100", capacity.BelowFrom, "< 20/s"},
		// 50/s and 100/s are far below the 200/s capacity.
		{"at least to", "p99<=100ms", "50", "100", capacity.AtLeastTo, "≥ 100/s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "s.json")
			inv := runCLI(t, nil, "load", "--slo", tt.objective, "--search-from", tt.from, "--search-to", tt.to,
				"--duration", "1s", "--warmup", "200ms", "-o", out, "http://"+addr+"/")
			if inv.code != 0 {
				t.Fatalf("exit %d\n%s\n%s", inv.code, inv.stdout, inv.stderr)
			}
			doc, err := capacity.ReadLoadSearch(out)
			if err != nil {
				t.Fatal(err)
			}
			if doc.Result.Kind != tt.want || !strings.Contains(inv.stdout, tt.line) {
				t.Errorf("kind %s, want %s; printout:\n%s", doc.Result.Kind, tt.want, inv.stdout)
			}
		})
	}
}

func TestLoadSearchBadInput(t *testing.T) {
	tests := []struct {
		args []string
		want []string // one stderr line each
	}{
		// A term without a value.
		{[]string{"--slo", "p99<=", "--search-from", "100", "--search-to", "200"}, []string{`--slo "p99<=": p99<=: missing value`}},
		// A percentile above 100.
		{[]string{"--slo", "p101<=1ms", "--search-from", "100", "--search-to", "200"}, []string{"p101<=1ms: allowed percentiles"}},
		// An error ratio above 100%.
		{[]string{"--slo", "errors<=150%", "--search-from", "100", "--search-to", "200"}, []string{"errors<=150%: allowed: a percentage"}},
		// from ≥ to.
		{[]string{"--slo", "p99<=5ms", "--search-from", "200", "--search-to", "100"}, []string{"--search-to 100: allowed: a rate above from (200)"}},
		// Precision 0.
		{[]string{"--slo", "p99<=5ms", "--search-from", "100", "--search-to", "200", "--search-precision", "0"}, []string{"--search-precision 0: allowed"}},
		// Missing bounds, and --rate given too.
		{[]string{"--slo", "p99<=5ms", "--rate", "10"}, []string{"--slo needs --search-from", "--slo needs --search-to", "--slo and --rate exclude each other"}},
		// Search flags without --slo.
		{[]string{"--search-from", "100"}, []string{"--search-from: only with --slo"}},
	}
	for _, tt := range tests {
		inv := runCLI(t, nil, append(append([]string{"load"}, tt.args...), "http://127.0.0.1:1/")...)
		lines := strings.Split(strings.TrimSuffix(inv.stderr, "\n"), "\n")
		if inv.code != ExitUsage || len(lines) != len(tt.want) {
			t.Errorf("load %q: exit %d, stderr:\n%s\nwant exit %d, %d line(s)", tt.args, inv.code, inv.stderr, ExitUsage, len(tt.want))
			continue
		}
		for i, w := range tt.want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("load %q: line %d %q, want %q", tt.args, i+1, lines[i], w)
			}
		}
	}
}

// Bounds of knownCapacityP99.
const (
	// lagWakes is how many times the machine's timer lag (its p99) a
	// request below the capacity may be late by: about four wakes on its
	// path (the pacer's send, the app's read, its service-time sleep, the
	// generator's read of the answer), doubled since near the capacity a
	// late request's delay passes to those queued behind it.
	lagWakes = 8
	// maxKnownCapacityP99 is the highest objective a known capacity keeps
	// sharp: 5% above the capacity queues for 5% of the probe's 5 s, so its
	// last requests wait 250 ms; an objective a fifth of that still misses
	// that rate by far.
	maxKnownCapacityP99 = 50 * time.Millisecond
)

// knownCapacityP99 is the p99 objective of a known-capacity search whose
// app serves k requests at once in s each, loaded over the default 16
// connections: 5·s, which a quiet machine meets with room to spare up to
// the capacity, or s + lagWakes × the timer lag's p99 when that is more,
// rounded up to the millisecond.
//
// Two ceilings keep the search's verdicts what they are on a quiet
// machine. maxKnownCapacityP99 (a rate 5% over the capacity still misses
// by far). And 1.5·(c/k)·s (12 ms at K=4, S=2 ms, 48 ms at K=2, S=4 ms):
// above the capacity each of the c connections waits about c/k service
// times for its answer, and the search's generator-limit rule once read
// that overload as "too few connections" whenever the objective was at
// least twice the service time (seen with p99 ≤ 35 ms at K=4, S=2 ms).
// The rule now compares a probe's service time with its first probe's
// and calls a slower answer the app queueing (analysis's
// TestUnloadedServiceFromFirstProbe),
// so this ceiling is a guard kept for the searches' verdicts to stay
// those of a quiet machine, not a workaround. A lag that
// needs more fails the test (skips outside `make test`): the machine is
// too busy for a known capacity.
func knownCapacityP99(t *testing.T, s time.Duration, k int, lag testutil.Lag) time.Duration {
	t.Helper()
	ceiling := min(maxKnownCapacityP99, 3*loadgen.DefaultConnections*s/(2*time.Duration(k)))
	p99 := max(5*s, s+lagWakes*lag.P99)
	p99 = (p99 + time.Millisecond - 1).Truncate(time.Millisecond)
	if p99 > ceiling {
		testutil.SkipOrFail(t, fmt.Sprintf("timer lag p99 %v: the objective would have to be p99 ≤ %v to cover this machine's noise, past the %v this known capacity allows (a rate 5%% over it must miss, and be the app's limit, not the generator's); run it on a machine that is not saturated",
			lag.P99, p99, ceiling))
	}
	if p99 != 5*s {
		t.Logf("objective p99 ≤ %v instead of 5 × %v: this machine's timer lag p99 is %v", p99, s, lag.P99)
	}
	return p99
}
