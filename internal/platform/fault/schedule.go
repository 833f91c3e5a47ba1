package fault

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/sys/cgroup"
	"github.com/meshbench/meshbench/internal/sys/process"
	"github.com/meshbench/meshbench/internal/workload"
)

// Target is what a platform hands the scheduler: its running cell's parts
// and app replicas.
type Target interface {
	// PartPID is the process of part p that a fault hits, and its name
	// for the record ("ztunnel-node1", "server-0-sidecar").
	PartPID(p mesh.Part) (pid int, name string, err error)
	// Kill sends SIGKILL to part p's process and starts it again as its
	// supervisor would, returning once it is ready again with the new
	// process's PID. Until then the platform must not count the part's
	// exit as a failure of the cell.
	Kill(ctx context.Context, p mesh.Part) (newPID int, err error)
	// Replicas are the control sockets of the replicas of the app's
	// service svc ("": the entry, the one the load calls), in the
	// topology's order (the slowed ones are the first).
	Replicas(svc string) []workload.Control
}

// Event is one thing the scheduler did, for the record.
type Event struct {
	At   time.Time `json:"at"`
	What string    `json:"what"`
}

// Record is what a cell's fault did, as its manifest records it
// (options.fault_record): when it took effect and ended (zero when it never
// did), from the measured window's start in seconds too, its events and
// any error (a fault that failed is said, never hidden).
type Record struct {
	Fault string `json:"fault"`
	// Start and End are when the fault took effect and when it was
	// undone (a kill: the part killed, and ready again).
	Start time.Time `json:"start,omitzero"`
	End   time.Time `json:"end,omitzero"`
	// StartS and EndS are Start and End from the window's start, in s.
	StartS float64  `json:"start_s"`
	EndS   float64  `json:"end_s"`
	Events []Event  `json:"events"`
	Errors []string `json:"errors,omitempty"`
}

// Running is a scheduled fault; Stop ends it.
type Running struct {
	f      Fault
	t      Target
	window time.Time
	log    func(string)

	stop chan struct{}
	done chan struct{}

	mu   sync.Mutex
	rec  Record
	undo []func() error
}

// Schedule applies f to t at windowStart+f.At and undoes it f.For later
// (0: at Stop). Stop must be called, whatever happens: it undoes
// everything still applied and returns the record. log, when not nil,
// gets one line per event. A zero f schedules nothing.
func Schedule(ctx context.Context, f Fault, t Target, windowStart time.Time, log func(string)) *Running {
	r := &Running{f: f, t: t, window: windowStart, log: log, stop: make(chan struct{}), done: make(chan struct{}),
		rec: Record{Fault: f.String()}}
	if f.Zero() {
		close(r.done)
		return r
	}
	go r.run(ctx)
	return r
}

func (r *Running) event(what string) {
	now := time.Now()
	r.mu.Lock()
	r.rec.Events = append(r.rec.Events, Event{At: now.UTC(), What: what})
	r.mu.Unlock()
	if r.log != nil {
		r.log(fmt.Sprintf("fault %s: +%.3fs %s", r.f, now.Sub(r.window).Seconds(), what))
	}
}

func (r *Running) fail(err error) {
	r.mu.Lock()
	r.rec.Errors = append(r.rec.Errors, err.Error())
	r.mu.Unlock()
	if r.log != nil {
		r.log(fmt.Sprintf("fault %s: error: %v", r.f, err))
	}
}

// wait sleeps until t, returning false when stopped first.
func (r *Running) wait(ctx context.Context, t time.Time) bool {
	tm := time.NewTimer(time.Until(t))
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-r.stop:
	case <-ctx.Done():
	}
	return false
}

func (r *Running) run(ctx context.Context) {
	defer close(r.done)
	if !r.wait(ctx, r.window.Add(r.f.At)) {
		r.event("not applied: the cell ended before its time")
		return
	}
	start := time.Now()
	r.mu.Lock()
	r.rec.Start = start.UTC()
	r.mu.Unlock()
	if err := r.apply(ctx); err != nil {
		r.fail(err)
	}
	if r.f.Kind == Kill {
		r.mu.Lock()
		r.rec.End = time.Now().UTC()
		r.mu.Unlock()
		return
	}
	if r.f.For > 0 && r.wait(ctx, start.Add(r.f.For)) {
		r.undoAll()
	}
}

// apply does the fault, keeping what undoes it.
func (r *Running) apply(ctx context.Context) error {
	switch r.f.Kind {
	case Kill:
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if pt, ok := r.t.(PodTarget); ok {
			return r.killPod(kctx, pt)
		}
		pid, name, err := r.t.PartPID(r.f.Part)
		if err != nil {
			return err
		}
		r.event(fmt.Sprintf("killing %s (pid %d)", name, pid))
		newPID, err := r.t.Kill(kctx, r.f.Part)
		if err != nil {
			return fmt.Errorf("restarting %s: %w", name, err)
		}
		r.event(fmt.Sprintf("%s ready again (pid %d)", name, newPID))
	case CPULimit:
		if pl, ok := r.t.(PodLimiter); ok {
			return r.limitPod(ctx, pl)
		}
		pid, name, err := r.t.PartPID(r.f.Part)
		if err != nil {
			return err
		}
		h, err := cgroup.Find()
		if err != nil {
			return err
		}
		r.removeStale(h)
		lim, err := h.LimitCPU(pid, "limit", r.f.Millicores)
		if err != nil {
			return err
		}
		r.keep(lim.Lift)
		r.event(fmt.Sprintf("%s (pid %d) limited to %dm (cgroup %s)", name, pid, r.f.Millicores, lim.Dir))
	case SlowReplica:
		if rr, ok := r.t.(ReplicaReacher); ok {
			return r.slowPods(ctx, rr)
		}
		reps := r.t.Replicas(r.f.Service)
		if len(reps) < r.f.Replicas {
			return fmt.Errorf("%d replica(s) to slow, the service has %d with a control socket", r.f.Replicas, len(reps))
		}
		for i, c := range reps[:r.f.Replicas] {
			if _, err := c.SetDelay(ctx, r.f.Delay); err != nil {
				return err
			}
			r.keep(func() error {
				cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_, err := c.SetDelay(cctx, 0)
				return err
			})
			what := "replica"
			if r.f.Service != "" {
				what = r.f.Service + " replica"
			}
			r.event(fmt.Sprintf("%s %d answers %s later", what, i, r.f.Delay))
		}
	case NoisyNeighbour:
		if ph, ok := r.t.(PodHogger); ok {
			return r.hogPod(ctx, ph)
		}
		if _, ok := r.t.(PodTarget); ok {
			return errors.New("noisy-neighbour: this platform runs no hog pod")
		}
		if h, err := cgroup.Find(); err == nil {
			r.removeStale(h)
		}
		undo, err := hog(r.f.Millicores)
		r.keep(undo)
		if err != nil {
			return err
		}
		r.event(fmt.Sprintf("a CPU hog of %dm runs", r.f.Millicores))
	}
	return nil
}

// removeStale removes the fault cgroups a meshbench killed with SIGKILL
// left behind (their maker is gone; their processes died with it), so
// they never pile up; said in the record when there were any.
func (r *Running) removeStale(h cgroup.Hierarchy) {
	st := h.Stale()
	if len(st) == 0 {
		return
	}
	if err := h.RemoveStale(); err != nil {
		// Not this cell's fault: said, not counted against it.
		r.event(fmt.Sprintf("could not remove the fault cgroups a killed meshbench left: %v", err))
		return
	}
	r.event(fmt.Sprintf("removed %d fault cgroup(s) a killed meshbench left", len(st)))
}

func (r *Running) keep(undo func() error) {
	r.mu.Lock()
	r.undo = append(r.undo, undo)
	r.mu.Unlock()
}

// undoAll undoes what is applied, last first, once.
func (r *Running) undoAll() {
	r.mu.Lock()
	undo := r.undo
	r.undo = nil
	r.mu.Unlock()
	if len(undo) == 0 {
		return
	}
	var errs []error
	for i := len(undo) - 1; i >= 0; i-- {
		errs = append(errs, undo[i]())
	}
	r.mu.Lock()
	r.rec.End = time.Now().UTC()
	r.mu.Unlock()
	if err := errors.Join(errs...); err != nil {
		r.fail(fmt.Errorf("undoing: %w", err))
		return
	}
	r.event("undone")
}

// Stop ends the fault: it is not applied if its time has not come, a
// kill's restart is waited for, and whatever is applied is undone. It
// returns the record; safe to call more than once.
func (r *Running) Stop() Record {
	r.mu.Lock()
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	r.mu.Unlock()
	<-r.done
	r.undoAll()
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.rec
	rec.Events = append([]Event(nil), rec.Events...)
	if !rec.Start.IsZero() {
		rec.StartS = rec.Start.Sub(r.window).Seconds()
	}
	if !rec.End.IsZero() {
		rec.EndS = rec.End.Sub(r.window).Seconds()
	}
	return rec
}

// hog starts a CPU hog of millicores: one busy process per started core,
// each capped through a cgroup of its own at its share. The undo stops
// them and removes the cgroups; on error what was started is in it too.
func hog(millicores int) (undo func() error, err error) {
	h, err := cgroup.Find()
	if err != nil {
		return func() error { return nil }, err
	}
	n := (millicores + 999) / 1000
	var cmds []*exec.Cmd
	var limits []*cgroup.Limit
	undo = func() error {
		var errs []error
		for _, c := range cmds {
			process.KillGroup(c.Process.Pid)
			_ = c.Wait()
		}
		for _, l := range limits {
			errs = append(errs, l.Lift())
		}
		return errors.Join(errs...)
	}
	for i := range n {
		share := millicores / n
		if i == 0 {
			share += millicores % n
		}
		// A shell's empty loop: no allocation, no system call, one core.
		c := exec.Command("sh", "-c", "while :; do :; done")
		if err := process.Start(c); err != nil {
			return undo, fmt.Errorf("starting the CPU hog: %w", err)
		}
		cmds = append(cmds, c)
		l, err := h.LimitCPU(c.Process.Pid, "hog"+strconv.Itoa(i), share)
		if err != nil {
			return undo, err
		}
		limits = append(limits, l)
	}
	return undo, nil
}
