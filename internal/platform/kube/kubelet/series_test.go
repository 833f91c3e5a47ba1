package kubelet

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/measure/sample"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)

// rec is one container reading of round r: the counter's timestamp ts
// (seconds after t0; the kubelet's), its value in core-seconds and the
// working set in MiB; start is the container's start (seconds after t0),
// NaN for none.
func rec(r int, key string, ts, cpu float64, memMiB uint64, start float64) Record {
	parts := strings.SplitN(key, "/", 3)
	at := t0.Add(time.Duration(ts * float64(time.Second)))
	read := at.Add(300 * time.Millisecond)
	lag := int64(300 * time.Millisecond)
	x := Record{Kind: RawContainer, Round: r, TUnixNs: t0.Add(time.Duration(r) * time.Second).UnixNano(), Node: "n1",
		ReadUnixNs: read.UnixNano(), Namespace: parts[0], Pod: parts[1], Container: parts[2],
		Component: "app " + parts[1], Category: sample.CategoryApp,
		CPUSeconds: cpu, HasCPU: true, CPUTimestampMs: at.UnixMilli(), MemoryBytes: float64(memMiB << 20), HasMemory: true, LagNs: &lag}
	if !math.IsNaN(start) {
		x.StartTimeSeconds = float64(t0.Unix()) + start
	}
	return x
}

func stale(r Record) Record { r.Stale = true; return r }

func TestWindow(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name     string
		recs     []Record
		from, to float64 // seconds after t0
		period   time.Duration
		// want: the container's CPU (core-seconds) in the window, whether
		// it was partial, the resets in the window, and the stale count.
		key     string
		cpuSec  float64
		partial bool
		resets  int
		stale   int
	}{
		// 500m steady, read every second; the window [0.5, 4.5] falls
		// between readings, so both edges are interpolated: 4 s × 0.5.
		{name: "steady, interpolated edges", recs: []Record{
			rec(0, "a/p/c", 0, 10, 64, nan), rec(1, "a/p/c", 1, 10.5, 64, nan), rec(2, "a/p/c", 2, 11, 64, nan),
			rec(3, "a/p/c", 3, 11.5, 64, nan), rec(4, "a/p/c", 4, 12, 64, nan), rec(5, "a/p/c", 5, 12.5, 64, nan),
		}, from: 0.5, to: 4.5, period: time.Second, key: "a/p/c", cpuSec: 2},
		// The counter's timestamp did not advance at round 2 (the
		// kubelet had no new statistics): that reading is no new
		// information, and the interpolation spans rounds 1–3.
		{name: "stale reading skipped", recs: []Record{
			rec(0, "a/p/c", 0, 0, 64, nan), rec(1, "a/p/c", 1, 1, 64, nan), stale(rec(2, "a/p/c", 1, 1, 64, nan)),
			rec(3, "a/p/c", 3, 3, 64, nan), rec(4, "a/p/c", 4, 4, 64, nan),
		}, from: 0, to: 4, period: time.Second, key: "a/p/c", cpuSec: 4, stale: 1},
		// Restart at 2.5 (started then, per its start time): the old
		// incarnation counts 0–2 (2 s of 1 core), the new one from its
		// start, 2.5–4 (1.5 s); the 0.5 s between is not known.
		{name: "counter reset", recs: []Record{
			rec(0, "a/p/c", 0, 100, 64, -100), rec(1, "a/p/c", 1, 101, 64, -100), rec(2, "a/p/c", 2, 102, 64, -100),
			rec(3, "a/p/c", 3, 0.5, 64, 2.5), rec(4, "a/p/c", 4, 1.5, 64, 2.5), rec(5, "a/p/c", 5, 2.5, 64, 2.5),
		}, from: 0, to: 4, period: time.Second, key: "a/p/c", cpuSec: 3.5, resets: 1, partial: true},
		// A container that appears at 2 (no start time known) counts
		// from its first reading only, and says it was partial.
		{name: "appears mid-window", recs: []Record{
			rec(2, "a/q/c", 2, 5, 64, nan), rec(3, "a/q/c", 3, 5.25, 64, nan), rec(4, "a/q/c", 4, 5.5, 64, nan), rec(5, "a/q/c", 5, 5.75, 64, nan),
		}, from: 0, to: 4, period: time.Second, key: "a/q/c", cpuSec: 0.5, partial: true},
		// With a start time (the kubelet's), the counter was 0 then:
		// started at 1.5, 1 core-second by 2.5, so 2 s to 3.5 of 1 core.
		{name: "appears with start time", recs: []Record{
			rec(3, "a/q/c", 2.5, 1, 64, 1.5), rec(4, "a/q/c", 3.5, 2, 64, 1.5), rec(5, "a/q/c", 4.5, 3, 64, 1.5),
		}, from: 0, to: 3.5, period: time.Second, key: "a/q/c", cpuSec: 2, partial: true},
		// A container that ended (a Job's): the kubelet reports its
		// counter as 0 with the same start time. Not a restart: its
		// series ends at its last running reading.
		{name: "ended, counter 0", recs: []Record{
			rec(0, "a/j/c", 0, 10, 64, -50), rec(1, "a/j/c", 1, 10.5, 64, -50), rec(2, "a/j/c", 2, 11, 64, -50),
			rec(3, "a/j/c", 3, 0, 0, -50), rec(4, "a/j/c", 4, 0, 0, -50),
		}, from: 0, to: 4, period: time.Second, key: "a/j/c", cpuSec: 1, partial: true},
		// One that disappears at 2 counts until its last reading.
		{name: "disappears mid-window", recs: []Record{
			rec(0, "a/r/c", 0, 0, 64, nan), rec(1, "a/r/c", 1, 0.2, 64, nan), rec(2, "a/r/c", 2, 0.4, 64, nan),
		}, from: 0, to: 4, period: time.Second, key: "a/r/c", cpuSec: 0.4, partial: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from, to := t0.Add(time.Duration(tc.from*1e9)), t0.Add(time.Duration(tc.to*1e9))
			res, err := Window(tc.recs, from, to, tc.period)
			if err != nil {
				t.Fatal(err)
			}
			var got *sample.ContainerWindow
			for i := range res.Containers {
				if res.Containers[i].Key == tc.key {
					if got != nil {
						got.CPUSeconds += res.Containers[i].CPUSeconds // incarnations
						continue
					}
					c := res.Containers[i]
					got = &c
				}
			}
			if got == nil {
				t.Fatalf("no window for %s: %+v", tc.key, res.Containers)
			}
			if math.Abs(got.CPUSeconds-tc.cpuSec) > 1e-9 {
				t.Errorf("CPU %v core-seconds, want %v", got.CPUSeconds, tc.cpuSec)
			}
			if got.Partial != tc.partial || len(res.Resets) != tc.resets || res.StaleRecords != tc.stale {
				t.Errorf("partial %v, resets %v, stale %d; want %v, %d, %d", got.Partial, res.Resets, res.StaleRecords, tc.partial, tc.resets, tc.stale)
			}
			// The intervals' CPU averages out to the window's: equal
			// intervals, each counter difference over the same step.
			sum := sample.Summarize(res.Rounds)
			var avg float64
			for _, c := range sum.Components {
				avg += c.CPUMillicores.Avg * float64(c.Rounds)
			}
			n := float64(len(res.Rounds))
			if want := tc.cpuSec / to.Sub(from).Seconds() * 1000; math.Abs(avg/n-want) > 1e-6 {
				t.Errorf("interval CPU averages %vm over %v intervals, want %vm", avg/n, n, want)
			}
			if res.Lag.Samples == 0 || res.Lag.Median != 300*time.Millisecond {
				t.Errorf("lag %+v, want 300ms", res.Lag)
			}
		})
	}
}

func TestIntervals(t *testing.T) {
	nan := math.NaN()
	recs := []Record{
		rec(0, "a/p/c", 0, 1, 10, nan), {Kind: RawRound, Round: 0, TUnixNs: t0.UnixNano(), WallNs: 5e6, CPUNs: 2e6},
		rec(1, "a/p/c", 1, 1.25, 11, nan), {Kind: RawRound, Round: 1, TUnixNs: t0.Add(time.Second).UnixNano(), WallNs: 5e6, CPUNs: 3e6},
		stale(rec(2, "a/p/c", 1, 1.25, 11, nan)), {Kind: RawRound, Round: 2, TUnixNs: t0.Add(2 * time.Second).UnixNano()},
		rec(3, "a/p/c", 3, 2.25, 12, nan), {Kind: RawRound, Round: 3, TUnixNs: t0.Add(3 * time.Second).UnixNano()},
	}
	rounds := Intervals(recs)
	if len(rounds) != 4 {
		t.Fatalf("%d rounds, want 4", len(rounds))
	}
	for i, want := range []struct {
		n   int
		cpu float64
		mem uint64
	}{
		{0, 0, 0},          // the first reading is the baseline
		{1, 250, 11 << 20}, // 0.25 core-seconds over 1 s
		{0, 0, 0},          // stale: nothing new
		{1, 500, 12 << 20}, // 1 core-second over the 2 s since the last fresh reading
	} {
		r := rounds[i]
		if len(r.Samples) != want.n {
			t.Fatalf("round %d: %d samples, want %d", i, len(r.Samples), want.n)
		}
		if want.n == 1 && (math.Abs(r.Samples[0].CPUMillicores-want.cpu) > 1e-9 || r.Samples[0].RSSBytes != want.mem) {
			t.Errorf("round %d: %+v, want %vm %d bytes", i, r.Samples[0], want.cpu, want.mem)
		}
	}
	if rounds[1].Overhead.CPU != 3*time.Millisecond {
		t.Errorf("round 1 overhead %+v, want 3ms CPU", rounds[1].Overhead)
	}
	// Within keeps the intervals that start at or after 2 s: only round 3's
	// begins at 1 s, so nothing; from 0.5 s, round 3 only.
	if w := Within(rounds, recs, t0.Add(2*time.Second), time.Time{}); len(w) != 0 {
		t.Errorf("Within(2s..) = %v, want none", w)
	}
	if w := Within(rounds, recs, t0.Add(500*time.Millisecond), time.Time{}); len(w) != 1 || w[0].Index != 3 {
		t.Errorf("Within(0.5s..) = %v, want round 3", w)
	}
}
