package loadgen

import (
	"errors"
	"fmt"
	"time"

	"github.com/meshbench/meshbench/internal/load/latency"
)

// Interval histograms, in bounded memory.
//
// A worker appends each measured answer's three values to its shard's
// pending list (under the shard lock it already holds; the list is reused,
// so nothing is allocated per answer once it has grown). One sealer
// goroutine takes the shards' lists every drainEvery, swapping in an empty
// one, and records the values into one set of three full-range recorders
// per open interval — one set for the whole run, whatever the shard count.
// Once every answer of an interval is in (two intervals behind the clock:
// an answer is appended within microseconds of its end being stamped), the
// interval is sealed: its recorders become compact sparse histograms
// (latency.Compact, a few KB) and are reset for a later interval. So a
// run holds a few open intervals' recorders (~660 KB each) plus a few KB
// per sealed second, instead of 660 KB per shard per second.
//
// Exactness: every measured answer is recorded once in its interval. An
// answer stamped before its interval was sealed but appended after (a
// worker descheduled for more than an interval between the two) goes to a
// late set and is merged into its sealed interval at the end.

// answer is one measured answer waiting for the sealer; times in ns.
type answer struct {
	end           int64 // since the run's start, warm-up included
	lat, svc, lag int64 // the values record puts in the whole-run recorders
	failed        bool  // an error or a status that is not a success
}

// openInterval is an interval's three full-range recorders and its count
// of failed answers.
type openInterval struct {
	lat, svc, lag *latency.Recorder
	failed        int64
}

// intervalSealer turns the shards' pending answers into sealed intervals.
// Only its own goroutine (then, after that has stopped, Run) uses it.
type intervalSealer struct {
	length, warm time.Duration
	open         map[int64]*openInterval // intervals not sealed yet, by index
	late         map[int64]*openInterval // answers that came after their interval was sealed
	free         []*openInterval         // reset recorders for reuse
	sealed       []Interval              // intervals 0 .. next-1, in order
	next         int64                   // first interval not sealed
	last         int64                   // highest interval with an answer; -1: none
	buf          []answer                // trades places with the shards' pending lists
	compactor    *latency.Compactor      // seals without allocating beyond the result
	err          error                   // sealing failed: run stopped, finish returns it
}

func newIntervalSealer(length, warm time.Duration) *intervalSealer {
	return &intervalSealer{length: length, warm: warm, open: map[int64]*openInterval{},
		late: map[int64]*openInterval{}, last: -1, compactor: latency.NewCompactor()}
}

// drainEvery is how often the sealer takes the pending answers: often
// enough that the lists stay short (at 50 000 answers/s, 100 ms is 5 000
// answers, 160 KB) and at least four times per interval, so an interval
// is sealed soon after it can be.
func (s *intervalSealer) drainEvery() time.Duration {
	return max(min(s.length/4, 100*time.Millisecond), time.Millisecond)
}

// index is the interval an answer that ended at end (since the run's start)
// belongs to.
func (s *intervalSealer) index(end int64) int64 {
	return int64(max(time.Duration(end)-s.warm, 0) / s.length)
}

// run drains and seals every drainEvery until done is closed; since is
// the time since the run's start.
func (s *intervalSealer) run(shards []*shard, since func() time.Duration, done <-chan struct{}) {
	t := time.NewTicker(s.drainEvery())
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		// The clock is read before draining: an interval two behind it
		// ended at least one interval before anything drained now.
		now := since()
		s.drain(shards)
		if err := s.sealThrough(s.index(int64(now)) - 2); err != nil {
			s.err = err
			return
		}
	}
}

// drain records every shard's pending answers.
func (s *intervalSealer) drain(shards []*shard) {
	for _, sh := range shards {
		sh.mu.Lock()
		sh.pending, s.buf = s.buf[:0], sh.pending
		sh.mu.Unlock()
		for _, a := range s.buf {
			s.add(a)
		}
	}
}

func (s *intervalSealer) add(a answer) {
	i := s.index(a.end)
	s.last = max(s.last, i)
	m := s.open
	if i < s.next {
		m = s.late
	}
	iv := m[i]
	if iv == nil {
		iv = s.take()
		m[i] = iv
	}
	iv.lat.Record(a.lat)
	iv.svc.Record(a.svc)
	iv.lag.Record(a.lag)
	if a.failed {
		iv.failed++
	}
}

// take returns a set of empty recorders, reused when one is free.
func (s *intervalSealer) take() *openInterval {
	if n := len(s.free); n > 0 {
		iv := s.free[n-1]
		s.free = s.free[:n-1]
		return iv
	}
	return &openInterval{lat: latency.NewRecorder(), svc: latency.NewRecorder(), lag: latency.NewRecorder()}
}

// sealThrough seals the intervals from next to k: compacts them in order
// (an interval without answers is sealed empty) and frees their recorders.
func (s *intervalSealer) sealThrough(k int64) error {
	for ; s.next <= k; s.next++ {
		iv := Interval{Start: time.Duration(s.next) * s.length}
		if o := s.open[s.next]; o != nil {
			if err := o.compact(s.compactor, &iv); err != nil {
				return fmt.Errorf("sealing the interval at %v: %w", iv.Start, err)
			}
			delete(s.open, s.next)
			o.lat.Reset()
			o.svc.Reset()
			o.lag.Reset()
			o.failed = 0
			s.free = append(s.free, o)
		} else {
			iv.Latency, iv.ServiceTime, iv.ScheduleLag = latency.NewCompact(), latency.NewCompact(), latency.NewCompact()
		}
		s.sealed = append(s.sealed, iv)
	}
	return nil
}

// compact sets iv's histograms to o's, compacted.
func (o *openInterval) compact(k *latency.Compactor, iv *Interval) error {
	var errs [3]error
	iv.Latency, errs[0] = k.Compact(o.lat)
	iv.ServiceTime, errs[1] = k.Compact(o.svc)
	iv.ScheduleLag, errs[2] = k.Compact(o.lag)
	iv.Failed = o.failed
	return errors.Join(errs[:]...)
}

// finish, once no answer can come any more, seals everything, merges the
// late answers into their intervals and returns the intervals from the
// first to the last with an answer (none when nothing was answered).
func (s *intervalSealer) finish(shards []*shard) ([]Interval, error) {
	if s.err != nil {
		return nil, s.err
	}
	s.drain(shards)
	if err := s.sealThrough(s.last); err != nil {
		return nil, err
	}
	for i, o := range s.late {
		var late Interval
		if err := o.compact(s.compactor, &late); err != nil {
			return nil, err
		}
		iv := &s.sealed[i]
		iv.Failed += late.Failed
		if err := errors.Join(iv.Latency.Merge(late.Latency), iv.ServiceTime.Merge(late.ServiceTime),
			iv.ScheduleLag.Merge(late.ScheduleLag)); err != nil {
			return nil, fmt.Errorf("merging late answers into the interval at %v: %w", iv.Start, err)
		}
	}
	// Every interval up to the last answer, empty ones too: a second in
	// which nothing was answered (a stall) is a line of count 0, not a gap;
	// seconds sealed empty after the last answer (a hung target's timeout)
	// are not part of the time line.
	if s.last < 0 {
		return nil, nil
	}
	return s.sealed[:s.last+1], nil
}

// retainedBytes is the memory the sealed intervals hold.
func retainedBytes(ivs []Interval) int {
	n := 0
	for _, iv := range ivs {
		n += iv.Latency.ByteSize() + iv.ServiceTime.ByteSize() + iv.ScheduleLag.ByteSize()
	}
	return n
}
