package sample

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"
)

// DefaultInterval is the sampling period when New is given 0: 1 s, so one
// clock tick (10 ms of CPU) is 10 millicores.
const DefaultInterval = time.Second

// DefaultPSSPeriod is about how often a lab reads PSS by default
// (PSSEveryFor): often enough for memory, which moves slowly, and rarely
// enough that smaps_rollup does not dominate the sampler's cost.
const DefaultPSSPeriod = 5 * time.Second

// PSSEveryFor returns the Sampler.PSSEvery that reads PSS about every
// period at the given sampling interval (0 means DefaultInterval):
// max(1, round(period / interval)).
func PSSEveryFor(interval, period time.Duration) int {
	if interval <= 0 {
		interval = DefaultInterval
	}
	return max(1, int(math.Round(float64(period)/float64(interval))))
}

// Gap reasons.
const (
	// GapExited: the process has exited, or its PID now belongs to another
	// process. Its series ends.
	GapExited = "exited"
)

// Clock is the sampler's source of time. SystemClock is the real one;
// tests inject their own.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Tick returns a channel that receives a value every d (dropping ticks
	// a slow receiver misses, like time.Ticker) and a function that stops
	// it.
	Tick(d time.Duration) (c <-chan time.Time, stop func())
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) Tick(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// SystemClock returns the real clock (time.Now, time.Ticker).
func SystemClock() Clock { return systemClock{} }

// Sample is one process's figures for one round.
type Sample struct {
	Target
	// Time is when the process was read (just before /proc/PID/stat).
	Time time.Time
	// CPUMillicores is the CPU the process used between its previous
	// reading and this one, user and system, in millicores (1000 = one
	// core busy for the whole interval). Its resolution is one clock tick
	// over the interval: 10m at a 1 s interval.
	CPUMillicores float64
	// RSSBytes is the resident set size (VmRSS), in bytes.
	RSSBytes uint64
	// PSSBytes is the proportional set size (Pss), in bytes, when HasPSS
	// is true; 0 otherwise.
	PSSBytes uint64
	// HasPSS tells whether PSS was read in this round (see
	// Sampler.PSSEvery). A sample without it has no PSS figure: no earlier
	// value is carried forward.
	HasPSS bool
}

// Gap records a process that yielded no sample in a round.
type Gap struct {
	Target
	// Time is when the process was read.
	Time time.Time
	// Reason is GapExited, or "read error: …" for a process that is still
	// there but could not be read (its next reading is a new baseline).
	Reason string
	// Gone is true when the process has exited: its series ends here and
	// it is not read again.
	Gone bool
}

// Overhead is what one sampling round cost the sampler.
type Overhead struct {
	// CPU is the CPU time (user+system) the sampling thread used for the
	// round: reading /proc, computing, and encoding the JSON lines, but
	// not the final write of those lines.
	CPU time.Duration
	// Wall is the wall time of the same span (from the Clock).
	Wall time.Duration
	// Processes is the number of processes read, the sampler's own
	// included.
	Processes int
}

// Round is one sampling round.
type Round struct {
	// Index numbers rounds from 0 in the order they were taken.
	Index int
	// Time is when the round started.
	Time time.Time
	// Samples holds one entry per process that has a sample this round (not
	// those read for the first time: that reading is their baseline).
	Samples []Sample
	// Gaps holds the processes that could not be read this round.
	Gaps []Gap
	// Overhead is the round's own cost.
	Overhead Overhead
}

// HasPSS reports whether the round read PSS: it has samples and every one
// of them has a PSS reading. A Sampler's round reads PSS for all of its
// samples or for none, and never for a baseline (which yields no sample),
// so a round without samples read no smaps_rollup at all.
func (r Round) HasPSS() bool {
	for _, x := range r.Samples {
		if !x.HasPSS {
			return false
		}
	}
	return len(r.Samples) > 0
}

// Sampler samples registered processes every interval. Add, Remove,
// Rounds, Summary and Err are safe to call while Run runs.
type Sampler struct {
	// Out, when not nil, receives every round as JSON lines (WriteRound), in
	// one Write call per round. Set it before the first round. After a
	// failed write the sampler writes no more, keeps sampling, and Err and
	// Run return the error.
	Out io.Writer
	// Self is the sampler's own process (/proc/self), read every round
	// like a target. New sets PID os.Getpid(), Name and Component
	// "meshbench", Category CategoryOverhead. Change the labels before the
	// first round (e.g. to CategoryLoad when the load generator runs
	// inside this process); a PID of 0 leaves it out.
	Self Target
	// PSSEvery is how often PSS is read, in rounds. Reading
	// /proc/PID/smaps_rollup costs ~1.3 ms of CPU per Envoy and ~0.5 ms
	// per Go process, against ~35 µs for stat and status together, so
	// reading it every round makes the sampler a large lab's busiest
	// process. The first round that yields samples reads PSS, then every
	// PSSEvery-th round after the last one that did (a due round without
	// samples leaves it due). CPU and RSS are read every round. 0 or 1
	// means every round. Set it before the first round.
	PSSEvery int
	// OnRound, when not nil, is called with every round after it is kept
	// and written, outside the sampler's locks, on the goroutine that took
	// it (Run's). It must not modify the round's slices, and should return
	// quickly: the next round waits for it. Set it before the first round.
	OnRound func(Round)

	interval  time.Duration
	clock     Clock
	read      func(pid int, pss bool) (ProcSample, error) // ReadProc with a reused buffer; smaps_rollup only if pss
	threadCPU func() time.Duration

	mu       sync.Mutex // guards the fields below
	targets  []*tracked // active targets in the order added
	byPID    map[int]*tracked
	rounds   []Round
	writeErr error
	selfDone bool // Self has been registered

	roundMu sync.Mutex // one round at a time; guards tracked's reading state and the fields below
	buf     []byte     // JSON lines of the current round
	lastPSS int        // index of the last round that read PSS; -1 before the first
}

// tracked is a target with its previous reading.
type tracked struct {
	Target
	seen       bool   // read successfully at least once
	startTicks uint64 // the process's start time at its first reading
	base       bool   // baseTicks/baseTime hold the previous reading
	baseTicks  uint64
	baseTime   time.Time
}

// New returns a sampler reading every interval (0 means DefaultInterval)
// with clock (nil means SystemClock()).
func New(interval time.Duration, clock Clock) *Sampler {
	if interval <= 0 {
		interval = DefaultInterval
	}
	if clock == nil {
		clock = SystemClock()
	}
	var r procReader
	return &Sampler{
		Self:      Target{PID: os.Getpid(), Name: "meshbench", Component: "meshbench", Category: CategoryOverhead},
		interval:  interval,
		clock:     clock,
		read:      r.read,
		threadCPU: threadCPUTime,
		byPID:     map[int]*tracked{},
		lastPSS:   -1,
	}
}

// Interval returns the sampling period.
func (s *Sampler) Interval() time.Duration { return s.interval }

// Add registers a process to sample from the next round on. It refuses an
// invalid target and a PID that is already sampled.
func (s *Sampler) Add(t Target) error {
	if err := t.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addLocked(t)
}

func (s *Sampler) addLocked(t Target) error {
	if old, ok := s.byPID[t.PID]; ok {
		return fmt.Errorf("sample target %q: PID %d is already sampled as %q", t.Name, t.PID, old.Name)
	}
	tr := &tracked{Target: t}
	s.targets = append(s.targets, tr)
	s.byPID[t.PID] = tr
	return nil
}

// AddNow registers a process found while it runs (a load generator's
// child, started between rounds) and reads its CPU ticks now as its
// baseline, so that the next round charges it from this moment instead of
// taking a baseline then and losing up to an interval of its CPU. It
// refuses what Add refuses, and a process that cannot be read.
func (s *Sampler) AddNow(t Target) error {
	if err := t.Validate(); err != nil {
		return err
	}
	s.roundMu.Lock() // the reading state belongs to rounds
	defer s.roundMu.Unlock()
	now := s.clock.Now()
	ps, err := s.read(t.PID, false)
	if err != nil {
		return fmt.Errorf("sample target %q: %w", t.Name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.addLocked(t); err != nil {
		return err
	}
	tr := s.byPID[t.PID]
	tr.seen, tr.startTicks = true, ps.StartTicks
	tr.base, tr.baseTicks, tr.baseTime = true, ps.CPUTicks, now
	return nil
}

// Remove stops sampling pid (a planned stop: no gap is recorded) and
// reports whether it was sampled.
func (s *Sampler) Remove(pid int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.removeLocked(pid)
}

func (s *Sampler) removeLocked(pid int) bool {
	tr, ok := s.byPID[pid]
	if !ok {
		return false
	}
	delete(s.byPID, pid)
	s.targets = slices.DeleteFunc(s.targets, func(x *tracked) bool { return x == tr })
	return true
}

// Run takes a round at once, then one every interval until ctx is done. It
// returns nil, or the error of a failed write to Out.
func (s *Sampler) Run(ctx context.Context) error {
	tick, stop := s.clock.Tick(s.interval)
	defer stop()
	s.SampleNow()
	for {
		select {
		case <-ctx.Done():
			return s.Err()
		case <-tick:
			if ctx.Err() != nil {
				return s.Err()
			}
			s.SampleNow()
		}
	}
}

// SampleNow takes one round at once, keeps it, writes it to Out, passes it
// to OnRound, and returns it.
func (s *Sampler) SampleNow() Round {
	r := s.takeRound()
	if s.OnRound != nil {
		s.OnRound(r)
	}
	return r
}

// takeRound takes, keeps and writes one round.
func (s *Sampler) takeRound() Round {
	s.roundMu.Lock()
	defer s.roundMu.Unlock()
	// The round runs on one locked thread so that the thread's CPU clock
	// measures exactly this round's work.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0 := s.threadCPU()
	start := s.clock.Now()

	s.mu.Lock()
	if !s.selfDone {
		s.selfDone = true
		if s.Self.PID != 0 {
			if err := s.Self.Validate(); err == nil {
				_ = s.addLocked(s.Self) // a target with our own PID already covers us
			}
		}
	}
	targets := slices.Clone(s.targets)
	r := Round{Index: len(s.rounds), Time: start}
	pssEvery := max(s.PSSEvery, 1)
	s.mu.Unlock()
	// PSS is due in the first round that yields samples, then every
	// pssEvery rounds. It is read only for readings that yield a sample
	// (never for a baseline), so a due round reads it for all its samples.
	pssDue := s.lastPSS < 0 || r.Index-s.lastPSS >= pssEvery

	var gone []*tracked
	for _, tr := range targets {
		now := s.clock.Now()
		ps, err := s.read(tr.PID, pssDue && tr.base)
		if err == nil && tr.seen && ps.StartTicks != tr.startTicks {
			err = ErrGone // the PID now belongs to another process
		}
		switch {
		case errors.Is(err, ErrGone):
			r.Gaps = append(r.Gaps, Gap{Target: tr.Target, Time: now, Reason: GapExited, Gone: true})
			gone = append(gone, tr)
		case err != nil:
			r.Gaps = append(r.Gaps, Gap{Target: tr.Target, Time: now, Reason: "read error: " + err.Error()})
			tr.base = false
		default:
			if !tr.seen {
				tr.seen, tr.startTicks = true, ps.StartTicks
			}
			if tr.base && now.After(tr.baseTime) && ps.CPUTicks >= tr.baseTicks {
				ticks := ps.CPUTicks - tr.baseTicks
				r.Samples = append(r.Samples, Sample{
					Target:        tr.Target,
					Time:          now,
					CPUMillicores: float64(ticks) * 1000 / ClockTicksPerSecond / now.Sub(tr.baseTime).Seconds(),
					RSSBytes:      ps.RSSBytes,
					PSSBytes:      ps.PSSBytes,
					HasPSS:        ps.HasPSS,
				})
			}
			tr.base, tr.baseTicks, tr.baseTime = true, ps.CPUTicks, now
		}
	}
	r.Overhead.Processes = len(targets)
	if r.HasPSS() {
		s.lastPSS = r.Index
	}

	s.mu.Lock()
	for _, tr := range gone {
		if s.byPID[tr.PID] == tr {
			s.removeLocked(tr.PID)
		}
	}
	writing := s.Out != nil && s.writeErr == nil
	s.mu.Unlock()

	var werr error
	if writing {
		s.buf, werr = appendRoundLines(s.buf[:0], &r)
	}
	r.Overhead.CPU = s.threadCPU() - cpu0
	r.Overhead.Wall = s.clock.Now().Sub(start)
	if writing && werr == nil {
		if s.buf, werr = appendOverheadLine(s.buf, &r); werr == nil {
			_, werr = s.Out.Write(s.buf)
		}
	}
	if werr != nil {
		s.mu.Lock()
		s.writeErr = fmt.Errorf("writing resource samples: %w", werr)
		s.mu.Unlock()
	}
	s.mu.Lock()
	s.rounds = append(s.rounds, r)
	s.mu.Unlock()
	return r
}

// Rounds returns the rounds taken so far, oldest first. The returned
// slice is a copy; the rounds' own slices must not be modified.
func (s *Sampler) Rounds() []Round {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.rounds)
}

// Summary summarizes the rounds taken so far (Summarize).
func (s *Sampler) Summary() Summary { return Summarize(s.Rounds()) }

// Err returns the first error writing to Out, or nil.
func (s *Sampler) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writeErr
}
