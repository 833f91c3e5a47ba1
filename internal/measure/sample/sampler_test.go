package sample

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// fakeClock is a clock the test moves by hand; its ticker is a channel the
// test sends on.
type fakeClock struct {
	mu   sync.Mutex
	now  time.Time
	tick chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), tick: make(chan time.Time)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *fakeClock) Tick(time.Duration) (<-chan time.Time, func()) { return c.tick, func() {} }

// fakeProcs stands in for /proc. pssReads records, per PID, how often
// smaps_rollup was read.
type fakeProcs struct {
	procs    map[int]*fakeProc
	pssReads map[int]int
}

type fakeProc struct {
	ProcSample
	err error // returned instead of a reading
}

func (f *fakeProcs) read(pid int, pss bool) (ProcSample, error) {
	p, ok := f.procs[pid]
	if !ok {
		return ProcSample{}, fmt.Errorf("reading process %d: %w", pid, ErrGone)
	}
	if p.err != nil {
		return ProcSample{}, p.err
	}
	ps := p.ProcSample
	ps.HasPSS = pss
	if pss {
		f.pssReads[pid]++
	} else {
		ps.PSSBytes = 0
	}
	return ps, nil
}

// newFakeSampler returns a sampler on a fake clock and fake /proc whose
// rounds each cost 250 µs of CPU; Self is PID 1000.
func newFakeSampler() (*Sampler, *fakeClock, *fakeProcs) {
	clock := newFakeClock()
	procs := &fakeProcs{procs: map[int]*fakeProc{}, pssReads: map[int]int{}}
	s := New(time.Second, clock)
	s.read = procs.read
	var cpu time.Duration
	s.threadCPU = func() time.Duration { cpu += 250 * time.Microsecond; return cpu }
	s.Self.PID = 1000
	return s, clock, procs
}

const mi = 1 << 20

// scenario is a small lab over six rounds, 1 s apart:
//   - round 0 is everyone's baseline;
//   - server-1 sidecar exits before round 3;
//   - load cannot be read in round 2 (its round-3 reading is a new baseline);
//   - waypoint is added before round 2 (baseline), so it has samples from
//     round 3 on.
//
// ticks[pid][k] is the CPU ticks the process uses before round k+1; -1
// means it has exited, -2 a read error.
var scenario = []struct {
	target   Target
	ticks    []int
	rss, pss uint64 // bytes in round 0; each round adds 64 KiB to both
	addedAt  int    // the round before which it is added
}{
	{Target{1000, "meshbench", "meshbench", CategoryOverhead}, []int{1, 0, 1, 0, 1}, 30 * mi, 20 * mi, 0},
	{Target{2001, "client-0 sidecar", "client sidecar", CategoryDataPlane}, []int{13, 12, 14, 13, 12}, 69 * mi, 19 * mi, 0},
	{Target{2002, "server-0 sidecar", "server sidecar", CategoryDataPlane}, []int{12, 12, 13, 11, 12}, 69 * mi, 19 * mi, 0},
	{Target{2003, "server-1 sidecar", "server sidecar", CategoryDataPlane}, []int{11, 12, -1, -1, -1}, 70 * mi, 20 * mi, 0},
	{Target{3001, "server-0 app", "app static", CategoryApp}, []int{6, 6, 7, 6, 6}, 10 * mi, 8 * mi, 0},
	{Target{3002, "server-1 app", "app static", CategoryApp}, []int{5, 6, 6, 7, 6}, 10 * mi, 8 * mi, 0},
	{Target{4001, "load", "load", CategoryLoad}, []int{15, -2, 16, 14, 15}, 12 * mi, 11 * mi, 0},
	{Target{5001, "waypoint", "waypoint", CategoryDataPlane}, []int{0, 0, 15, 17, 16}, 70 * mi, 21 * mi, 2},
	{Target{6001, "ztunnel node1", "node proxy node1", CategoryDataPlane}, []int{5, 5, 6, 5, 5}, 68 * mi, 18 * mi, 0},
}

// runScenario takes the scenario's six rounds and returns the sampler and
// what it wrote.
func runScenario(t *testing.T) (*Sampler, *bytes.Buffer) {
	t.Helper()
	s, clock, procs := newFakeSampler()
	var out bytes.Buffer
	s.Out = &out
	for i, sc := range scenario {
		procs.procs[sc.target.PID] = &fakeProc{ProcSample: ProcSample{StartTicks: uint64(100 + i), RSSBytes: sc.rss, PSSBytes: sc.pss}}
		if sc.addedAt == 0 && sc.target.PID != 1000 {
			if err := s.Add(sc.target); err != nil {
				t.Fatal(err)
			}
		}
	}
	for round := 0; round < 6; round++ {
		if round > 0 {
			clock.Advance(time.Second)
			for _, sc := range scenario {
				p := procs.procs[sc.target.PID]
				switch d := sc.ticks[round-1]; d {
				case -1:
					delete(procs.procs, sc.target.PID)
				case -2:
					p.err = errors.New("reading process 4001: open /proc/4001/smaps_rollup: permission denied")
				default:
					p.err = nil
					p.CPUTicks += uint64(d)
					p.RSSBytes += 64 << 10
					p.PSSBytes += 64 << 10
				}
			}
		}
		for _, sc := range scenario {
			if sc.addedAt == round && round > 0 {
				if err := s.Add(sc.target); err != nil {
					t.Fatal(err)
				}
			}
		}
		s.SampleNow()
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return s, &out
}

func TestSamplerScenario(t *testing.T) {
	s, _ := runScenario(t)
	rounds := s.Rounds()
	if len(rounds) != 6 {
		t.Fatalf("%d rounds, want 6", len(rounds))
	}
	// Round 0 is everyone's baseline: no samples, no gaps.
	if len(rounds[0].Samples) != 0 || len(rounds[0].Gaps) != 0 {
		t.Errorf("round 0: %d samples, %d gaps; want none", len(rounds[0].Samples), len(rounds[0].Gaps))
	}
	find := func(r Round, pid int) (Sample, bool) {
		for _, x := range r.Samples {
			if x.PID == pid {
				return x, true
			}
		}
		return Sample{}, false
	}
	// CPU = ticks × 10 ms over 1 s = ticks × 10 m.
	if x, ok := find(rounds[1], 2001); !ok || x.CPUMillicores != 130 || x.RSSBytes != 69*mi+64<<10 || x.PSSBytes != 19*mi+64<<10 {
		t.Errorf("client-0 sidecar in round 1 = %+v, want 130m, RSS 69Mi+64Ki, PSS 19Mi+64Ki", x)
	}
	// server-1 sidecar: samples in rounds 1 and 2, one gone gap in round 3,
	// nothing after.
	for i, r := range rounds {
		_, has := find(r, 2003)
		if has != (i == 1 || i == 2) {
			t.Errorf("round %d: server-1 sidecar sampled = %v", i, has)
		}
		var gaps []Gap
		for _, g := range r.Gaps {
			if g.PID == 2003 {
				gaps = append(gaps, g)
			}
		}
		if wantGap := i == 3; (len(gaps) == 1 && gaps[0].Gone && gaps[0].Reason == GapExited) != wantGap || len(gaps) > 1 {
			t.Errorf("round %d: server-1 sidecar gaps %+v", i, gaps)
		}
	}
	if rounds[4].Overhead.Processes != 8 { // 9 targets, one gone
		t.Errorf("round 4 read %d processes, want 8", rounds[4].Overhead.Processes)
	}
	// load: read error in round 2 (not gone), new baseline in round 3, a
	// sample again in round 4.
	for i, want := range []bool{false, true, false, false, true, true} {
		if _, has := find(rounds[i], 4001); has != want {
			t.Errorf("round %d: load sampled = %v, want %v", i, has, want)
		}
	}
	if g := rounds[2].Gaps; len(g) != 1 || g[0].PID != 4001 || g[0].Gone || !strings.HasPrefix(g[0].Reason, "read error: ") {
		t.Errorf("round 2 gaps = %+v, want one read error of load", g)
	}
	// waypoint: added before round 2, first sample in round 3.
	if _, has := find(rounds[2], 5001); has {
		t.Error("waypoint sampled at its baseline")
	}
	if x, ok := find(rounds[3], 5001); !ok || x.CPUMillicores != 150 {
		t.Errorf("waypoint in round 3 = %+v, want 150m", x)
	}
	// The sampler's own process is read like the others.
	if x, ok := find(rounds[1], 1000); !ok || x.Category != CategoryOverhead || x.CPUMillicores != 10 {
		t.Errorf("self in round 1 = %+v", x)
	}
	if o := rounds[1].Overhead; o.CPU != 250*time.Microsecond || o.Processes != 8 {
		t.Errorf("round 1 overhead = %+v", o)
	}
}

// TestSummarizeRollup checks the rollup rule on hand-made rounds: sum per
// round, then min/max/avg over rounds.
func TestSummarizeRollup(t *testing.T) {
	a := Target{1, "a-0", "a", CategoryApp}
	b := Target{2, "a-1", "a", CategoryApp}
	c := Target{3, "sc", "sidecar", CategoryDataPlane}
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	smp := func(tg Target, cpu float64, mem uint64) Sample {
		return Sample{Target: tg, CPUMillicores: cpu, RSSBytes: 2 * mem, PSSBytes: mem, HasPSS: true}
	}
	rounds := []Round{
		{Index: 0, Time: t0, Overhead: Overhead{CPU: time.Millisecond, Processes: 3}},
		{Index: 1, Time: t0.Add(time.Second), Samples: []Sample{smp(a, 10, 100), smp(b, 20, 200), smp(c, 5, 50)}, Overhead: Overhead{CPU: 2 * time.Millisecond, Processes: 3}},
		{Index: 2, Time: t0.Add(2 * time.Second), Samples: []Sample{smp(a, 30, 100), smp(c, 7, 70)}, Gaps: []Gap{{Target: b, Time: t0.Add(2 * time.Second), Reason: GapExited, Gone: true}}, Overhead: Overhead{CPU: 4 * time.Millisecond, Processes: 3}},
		{Index: 3, Time: t0.Add(3 * time.Second), Samples: []Sample{smp(a, 0, 100)}, Gaps: []Gap{{Target: c, Reason: "read error: x"}}, Overhead: Overhead{CPU: 6 * time.Millisecond, Processes: 2}},
	}
	s := Summarize(rounds)
	// Component a: per-round sums 30, 30, 0 → min 0, max 30, avg 20; PSS 300, 100, 100.
	wantA := Figures{Rounds: 3, PSSRounds: 3, CPUMillicores: Stats{0, 30, 20}, RSSBytes: Stats{200, 600, 1000.0 / 3}, PSSBytes: Stats{100, 300, 500.0 / 3}}
	if len(s.Components) != 2 || s.Components[0].Name != "a" || !reflect.DeepEqual(s.Components[0].Figures, wantA) || s.Components[0].Processes != 2 {
		t.Errorf("component a = %+v, want %+v over 2 processes", s.Components, wantA)
	}
	// Category data-plane: rounds 1 and 2 only (round 3 had no sample).
	if g := s.Categories[1]; g.Name != CategoryDataPlane || g.Rounds != 2 || g.CPUMillicores != (Stats{5, 7, 6}) {
		t.Errorf("data-plane = %+v", g)
	}
	// Total: 35, 37, 0.
	if s.Total.Rounds != 3 || s.Total.CPUMillicores != (Stats{0, 37, 24}) {
		t.Errorf("total = %+v", s.Total)
	}
	// Processes: b gone, c has one gap.
	for _, p := range s.Processes {
		switch p.PID {
		case 2:
			if !p.Gone || !p.ExitedBy.Equal(t0.Add(2*time.Second)) || p.Rounds != 1 {
				t.Errorf("b = %+v, want gone at 2 s after 1 round", p)
			}
		case 3:
			if p.Gone || p.Gaps != 1 || p.Rounds != 2 {
				t.Errorf("c = %+v, want 1 gap", p)
			}
		}
	}
	// Overhead: rounds 1–3 used 12 ms of CPU over 3 s: 4 millicores.
	o := s.Overhead
	if o.Rounds != 4 || o.CPUMillicores != 4 || o.RoundCPUNs != (Stats{1e6, 6e6, 3.25e6}) || o.ProcessesPerRound != (Stats{2, 3, 2.75}) {
		t.Errorf("overhead = %+v", o)
	}
	// No rounds: an empty summary, no NaN.
	if e := Summarize(nil); e.Total.Rounds != 0 || e.Overhead.CPUMillicores != 0 || len(e.Processes) != 0 {
		t.Errorf("Summarize(nil) = %+v", e)
	}
	// Window keeps rounds in (from, to].
	if w := Window(rounds, t0.Add(time.Second), t0.Add(3*time.Second)); len(w) != 2 || w[0].Index != 2 || w[1].Index != 3 {
		t.Errorf("Window = %v", w)
	}
	if w := Window(rounds, time.Time{}, t0.Add(time.Second)); len(w) != 2 {
		t.Errorf("Window with open start = %d rounds, want 2", len(w))
	}
}

func TestSamplerPIDReuse(t *testing.T) {
	s, clock, procs := newFakeSampler()
	s.Self.PID = 0 // not sampled
	procs.procs[7] = &fakeProc{ProcSample: ProcSample{StartTicks: 50, RSSBytes: mi, PSSBytes: mi}}
	if err := s.Add(Target{7, "envoy", "waypoint", CategoryDataPlane}); err != nil {
		t.Fatal(err)
	}
	s.SampleNow()
	// The process exits and another one gets PID 7 between two rounds.
	clock.Advance(time.Second)
	procs.procs[7] = &fakeProc{ProcSample: ProcSample{CPUTicks: 3, StartTicks: 900, RSSBytes: mi, PSSBytes: mi}}
	r := s.SampleNow()
	if len(r.Samples) != 0 || len(r.Gaps) != 1 || !r.Gaps[0].Gone {
		t.Fatalf("round after PID reuse = %+v, want one gone gap", r)
	}
	clock.Advance(time.Second)
	if r := s.SampleNow(); r.Overhead.Processes != 0 || len(r.Samples)+len(r.Gaps) != 0 {
		t.Errorf("the stranger under PID 7 is still read: %+v", r)
	}
	// The PID can be registered again (a restart).
	if err := s.Add(Target{7, "envoy", "waypoint", CategoryDataPlane}); err != nil {
		t.Errorf("Add after gone: %v", err)
	}
}

func TestSamplerAddRemove(t *testing.T) {
	s, clock, procs := newFakeSampler()
	procs.procs[1000] = &fakeProc{}
	procs.procs[5] = &fakeProc{}
	ok := Target{5, "x", "x", CategoryApp}
	if err := s.Add(ok); err != nil {
		t.Fatal(err)
	}
	// Duplicate PID; every problem of an invalid target at once.
	if err := s.Add(ok); err == nil || !strings.Contains(err.Error(), "already sampled") {
		t.Errorf("duplicate Add: %v", err)
	}
	err := s.Add(Target{PID: -1, Category: "mesh"})
	for _, want := range []string{"PID -1", "empty name", "empty component", `category "mesh"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("invalid Add: %v, want it to mention %q", err, want)
		}
	}
	s.SampleNow()
	clock.Advance(time.Second)
	if !s.Remove(5) || s.Remove(5) {
		t.Error("Remove(5) should succeed once")
	}
	r := s.SampleNow()
	// Removed: no gap, no sample; self still read.
	if len(r.Gaps) != 0 || len(r.Samples) != 1 || r.Samples[0].PID != 1000 {
		t.Errorf("after Remove: %+v", r)
	}
}

func TestSamplerRun(t *testing.T) {
	s, clock, procs := newFakeSampler()
	procs.procs[1000] = &fakeProc{}
	// Run takes a tick's round after receiving it, and drops a tick whose
	// round would start after the cancel: the cancel waits for round 4.
	fourth := make(chan struct{})
	s.OnRound = func(r Round) {
		if r.Index == 3 {
			close(fourth)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	// Run samples at once, then at every tick.
	for i := 0; i < 3; i++ {
		clock.Advance(time.Second)
		clock.tick <- clock.Now()
	}
	select {
	case <-fourth:
	case <-time.After(10 * time.Second):
		t.Error("no fourth round 10 s after the third tick")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := len(s.Rounds()); n != 4 {
		t.Errorf("%d rounds, want 4", n)
	}
	if got := New(0, nil).Interval(); got != DefaultInterval {
		t.Errorf("default interval %v", got)
	}
}

// TestSamplerOnRound: the hook sees every round after it is kept, and runs
// outside every lock: it may read the sampler, and even take a round
// itself (the hook of round 0 does, so round 1 is seen first).
func TestSamplerOnRound(t *testing.T) {
	s, clock, procs := newFakeSampler()
	procs.procs[1000] = &fakeProc{}
	var seen []int
	s.OnRound = func(r Round) {
		if n := len(s.Rounds()); n != r.Index+1 {
			t.Errorf("round %d: %d rounds kept when the hook runs, want %d", r.Index, n, r.Index+1)
		}
		if r.Index == 0 {
			s.SampleNow() // would deadlock if a lock were held
		}
		seen = append(seen, r.Index)
	}
	for i := 0; i < 3; i++ {
		s.SampleNow()
		clock.Advance(time.Second)
	}
	if !reflect.DeepEqual(seen, []int{1, 0, 2, 3}) {
		t.Errorf("hook saw rounds %v, want [1 0 2 3]", seen)
	}
}

type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	w.n++
	return 0, errors.New("disk full")
}

func TestSamplerWriteError(t *testing.T) {
	s, clock, procs := newFakeSampler()
	procs.procs[1000] = &fakeProc{}
	w := &failingWriter{}
	s.Out = w
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	clock.Advance(time.Second)
	clock.tick <- clock.Now()
	cancel()
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "writing resource samples: disk full") {
		t.Errorf("Run = %v, want the write error", err)
	}
	// Sampling goes on in memory; writing stops after the first failure.
	if len(s.Rounds()) != 2 || w.n != 1 {
		t.Errorf("%d rounds, %d writes; want 2 and 1", len(s.Rounds()), w.n)
	}
}

// TestJSONLines checks the raw format (golden) and that a summary
// recomputed from it equals the one from memory.
func TestJSONLines(t *testing.T) {
	s, out := runScenario(t)
	testutil.Golden(t, "samples.jsonl", out.Bytes())
	rounds, err := ReadRounds(bytes.NewReader(out.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rounds, s.Rounds()) {
		t.Errorf("rounds read back differ:\n%+v\nwant\n%+v", rounds, s.Rounds())
	}
	if !reflect.DeepEqual(Summarize(rounds), s.Summary()) {
		t.Error("summary from the JSON lines differs from the summary from memory")
	}
	// WriteRound writes the same lines.
	var again bytes.Buffer
	for _, r := range rounds {
		if err := WriteRound(&again, r); err != nil {
			t.Fatal(err)
		}
	}
	if again.String() != out.String() {
		t.Error("WriteRound output differs from the sampler's")
	}
}

func TestReadRoundsErrors(t *testing.T) {
	tests := []struct {
		in      string
		wantErr string
	}{
		{in: "{", wantErr: "line 1"},
		{in: `{"round":0}`, wantErr: "t_unix_ns and a round index"},
		{in: `{"t_unix_ns":1,"round":-1,"cpu_millicores":1}`, wantErr: "round index >= 0"},
		{in: "\n" + `{"t_unix_ns":1,"round":0,"pid":3}`, wantErr: "line 2: neither a sample"},
		{in: strings.Repeat("x", MaxLineBytes+1), wantErr: "longer than"},
		// a line of a later version of the format is refused, named
		{in: `{"schema":"meshbench.samples/v2","t_unix_ns":1,"round":0,"cpu_millicores":1}`, wantErr: `line 1: schema "meshbench.samples/v2"`},
	}
	for _, tt := range tests {
		if _, err := ReadRounds(strings.NewReader(tt.in)); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("ReadRounds(%.40q) = %v, want %q", tt.in, err, tt.wantErr)
		}
	}
	// A round without its overhead line (a run cut short) keeps its
	// earliest sample's time.
	rounds, err := ReadRounds(strings.NewReader(`{"t_unix_ns":5,"round":3,"pid":1,"name":"a","component":"a","category":"app","cpu_millicores":1,"rss_bytes":2,"pss_bytes":1}
{"t_unix_ns":4,"round":3,"pid":2,"name":"b","component":"b","category":"app","gap":"exited","gone":true}
{"t_unix_ns":9,"round":3,"future_key":true,"pid":3,"name":"c","component":"c","category":"app","cpu_millicores":0,"rss_bytes":2,"pss_bytes":1}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(rounds) != 1 || rounds[0].Index != 3 || rounds[0].Time.UnixNano() != 4 || len(rounds[0].Samples) != 2 || len(rounds[0].Gaps) != 1 {
		t.Errorf("rounds = %+v", rounds)
	}
	// Those lines are in the format written before PSSEvery: pss_bytes in
	// every sample line, always a reading.
	for _, x := range rounds[0].Samples {
		if !x.HasPSS || x.PSSBytes != 1 {
			t.Errorf("old-format sample %+v: want PSS 1, HasPSS", x)
		}
	}
}

// TestSummaryGolden keeps the scenario's summary as a golden file: the
// stored input of report's table tests (report.TestResourceTables).
func TestSummaryGolden(t *testing.T) {
	s, _ := runScenario(t)
	js, err := json.MarshalIndent(s.Summary(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, "summary.json", append(js, '\n'))
}
