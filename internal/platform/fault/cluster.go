package fault

import (
	"context"
	"fmt"
	"time"

	"github.com/meshbench/meshbench/internal/mesh"
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

// OnCluster is why fault f cannot run on a cluster yet, "" when it can
// (a kill or CPU limit of any part the mesh has).
func OnCluster(f Fault) string {
	switch f.Kind {
	case SlowReplica:
		return "slow-replica on a cluster: not yet (the app's control socket is not reached inside its pod): the local lab only"
	case NoisyNeighbour:
		return "noisy-neighbour on a cluster: not yet (no CPU-hog pod pinned to the server's node): the local lab only"
	}
	return ""
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
