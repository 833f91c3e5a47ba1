package workload

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// A CPU hog: the noisy neighbour of meshbench's noisy-neighbour fault on a
// cluster (`meshbench hog`, run in a pod whose CPU limit is the fault's
// millicores). It keeps busy as many threads as the limit has started
// cores, each an empty loop (no allocation, no system call), so the
// pod's CFS quota, not the hog, is what bounds its CPU.

// MaxHogFor bounds a hog's length: a hog left behind stops by itself.
const MaxHogFor = time.Hour

// HogStats are what a hog did, by its own account.
type HogStats struct {
	// Threads is how many threads were busy.
	Threads int
	// Start and End are when the threads began and stopped.
	Start, End time.Time
	// CPU is the process's CPU time (user + system, getrusage) at the end.
	CPU time.Duration
}

// String is the hog's one line, as `meshbench hog` prints it and its pod
// reports it (its termination message).
func (s HogStats) String() string {
	busy := s.End.Sub(s.Start)
	return fmt.Sprintf("busy %.3fs on %d thread(s) from %s to %s, CPU %.3fs (%.0fm)", busy.Seconds(), s.Threads,
		s.Start.UTC().Format(time.RFC3339Nano), s.End.UTC().Format(time.RFC3339Nano), s.CPU.Seconds(),
		1000*s.CPU.Seconds()/max(busy.Seconds(), 1e-9))
}

// HogThreads is how many busy threads a hog of millicores runs: one per
// started core.
func HogThreads(millicores int) int { return max(1, (millicores+999)/1000) }

// Hog keeps HogThreads(millicores) threads busy for d, or until ctx ends.
func Hog(ctx context.Context, millicores int, d time.Duration) HogStats {
	n := HogThreads(millicores)
	if runtime.GOMAXPROCS(0) < n {
		runtime.GOMAXPROCS(n)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	st := HogStats{Threads: n, Start: time.Now()}
	for range n {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for !stop.Load() {
			}
		})
	}
	t := time.NewTimer(d)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
	}
	stop.Store(true)
	wg.Wait()
	st.End = time.Now()
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		st.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return st
}
