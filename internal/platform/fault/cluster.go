package fault

import (
	"context"
	"fmt"
	"time"

	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/workload"
)

// LoadInterval is the load's interval in a cell with a fault, on every
// platform: what the fault's cost is read from (analysis.FaultCost),
// finer than the default second.
const LoadInterval = 250 * time.Millisecond

// PodTarget is a Target whose parts are pods (a cluster's): the scheduler
// asks it, not PartPID's process, to kill a part. A kill deletes the
// part's pod and waits until its controller (a DaemonSet, a Deployment)
// has a new one Ready in its place.
type PodTarget interface {
	Target
	// KillPod deletes the pod of part p, calls deleted with its name
	// (namespace/name) once the delete is accepted, and returns once its
	// replacement is Ready, with that pod's name.
	KillPod(ctx context.Context, p mesh.Part, deleted func(old string)) (replacement string, err error)
}

// PodLimiter is a PodTarget that caps a part's CPU itself (a cluster's
// in-place resize of the part's container).
type PodLimiter interface {
	PodTarget
	// LimitPod caps part p at millicores, returning what it did for the
	// record once the limit is applied, and what undoes it; with an
	// error, undo is not nil when something may need undoing.
	LimitPod(ctx context.Context, p mesh.Part, millicores int) (what string, undo func(context.Context) error, err error)
}

// PodHogger is a PodTarget that runs the noisy neighbour itself: a pod
// of its own beside the server, busy on all of its CPU.
type PodHogger interface {
	PodTarget
	// HogPod starts a pod limited to millicores of CPU (requests =
	// limits) on the server's node, busy on all of it, and returns once
	// it runs, with what it did for the record and what deletes it (which
	// says, for the record, what the hog did). With an error, undo is not
	// nil when something may need deleting.
	HogPod(ctx context.Context, millicores int) (what string, undo func(context.Context) (said string, err error), err error)
}

// Replica is one of the app's replicas, reached for its control API.
type Replica struct {
	// Name is its pod (namespace/name) or process, for the record.
	Name    string
	Control workload.Control
}

// ReplicaReacher is a PodTarget that reaches its app replicas' control
// APIs itself (on a cluster: a port-forward to each pod's control port).
type ReplicaReacher interface {
	PodTarget
	// ReachReplicas opens the control of the first n Ready replicas of
	// the app's service svc ("": the entry, the one the load calls), in
	// the order of their names; close ends what it opened (not nil when
	// something was, also with an error).
	ReachReplicas(ctx context.Context, svc string, n int) (reps []Replica, close func(), err error)
}

// killPod is a Kill through a PodTarget.
func (r *Running) killPod(ctx context.Context, pt PodTarget) error {
	var start time.Time
	rep, err := pt.KillPod(ctx, r.f.Part, func(old string) {
		start = time.Now()
		r.event(fmt.Sprintf("deleted pod %s (the %s)", old, r.f.Part))
	})
	if err != nil {
		return fmt.Errorf("killing the %s: %w", r.f.Part, err)
	}
	r.event(fmt.Sprintf("pod %s Ready in its place, %.3fs after the delete", rep, time.Since(start).Seconds()))
	return nil
}

// limitPod is a CPULimit through a PodLimiter; undone (at most a minute)
// by Stop or at its end, also when the limit was asked but not seen
// applied (LimitPod's undo with its error).
func (r *Running) limitPod(ctx context.Context, pl PodLimiter) error {
	// As a kill's restart: once asked, the limit is waited for even when
	// the cell is interrupted meanwhile, then undone by Stop.
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	what, undo, err := pl.LimitPod(lctx, r.f.Part, r.f.Millicores)
	if undo != nil {
		r.keep(func() error {
			uctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			return undo(uctx)
		})
	}
	if err != nil {
		return fmt.Errorf("limiting the %s: %w", r.f.Part, err)
	}
	r.event(what)
	return nil
}

// hogPod is a NoisyNeighbour through a PodHogger: the hog pod, once asked
// for, is waited for even when the cell is interrupted meanwhile (at most
// a minute), then deleted by Stop or at its end.
func (r *Running) hogPod(ctx context.Context, ph PodHogger) error {
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	what, undo, err := ph.HogPod(hctx, r.f.Millicores)
	if undo != nil {
		r.keep(func() error {
			uctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			said, err := undo(uctx)
			if said != "" {
				r.event(said)
			}
			return err
		})
	}
	if err != nil {
		return fmt.Errorf("the CPU hog: %w", err)
	}
	r.event(what)
	return nil
}

// slowPods is a SlowReplica through a ReplicaReacher: each replica's
// measured waits are started again when it is slowed, and read back
// (what it did, for the record) when its delay is taken away.
func (r *Running) slowPods(ctx context.Context, rr ReplicaReacher) error {
	reps, closeAll, err := rr.ReachReplicas(ctx, r.f.Service, r.f.Replicas)
	if closeAll != nil {
		r.keep(func() error { closeAll(); return nil })
	}
	if err != nil {
		return err
	}
	if len(reps) < r.f.Replicas {
		return fmt.Errorf("%d replica(s) to slow, %d reached", r.f.Replicas, len(reps))
	}
	what := "replica"
	if r.f.Service != "" {
		what = r.f.Service + " replica"
	}
	for i, rep := range reps[:r.f.Replicas] {
		c := rep.Control
		if _, err := c.Stats(ctx, true); err != nil {
			return fmt.Errorf("%s %d (%s): %w", what, i, rep.Name, err)
		}
		// Kept before it is asked: a delay set whose answer was lost is
		// taken away too.
		r.keep(func() error {
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			st, serr := c.Stats(cctx, false)
			if _, err := c.SetDelay(cctx, 0); err != nil {
				return fmt.Errorf("%s %d (%s): %w", what, i, rep.Name, err)
			}
			said := fmt.Sprintf("%s %d (%s) answers without the delay again", what, i, rep.Name)
			if serr == nil {
				said += fmt.Sprintf("; by its own measure %d answer(s) waited, p50 %s, p99 %s", st.Answers,
					time.Duration(st.Measured.P50Ns), time.Duration(st.Measured.P99Ns))
			}
			r.event(said)
			return nil
		})
		if _, err := c.SetDelay(ctx, r.f.Delay); err != nil {
			return fmt.Errorf("%s %d (%s): %w", what, i, rep.Name, err)
		}
		r.event(fmt.Sprintf("%s %d (%s) answers %s later", what, i, rep.Name, r.f.Delay))
	}
	return nil
}
