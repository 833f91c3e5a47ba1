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
	// KillPod deletes the pod of part p and returns once its replacement
	// is Ready, with both pods' names (namespace/name).
	KillPod(ctx context.Context, p mesh.Part) (old, replacement string, err error)
}

// OnCluster is why fault f cannot run on a cluster yet, "" when it can
// (a kill of any part the mesh has).
func OnCluster(f Fault) string {
	switch f.Kind {
	case CPULimit:
		return "cpu-limit on a cluster: not yet (the part's container would be resized in place and restored; not built): the local lab only"
	case SlowReplica:
		return "slow-replica on a cluster: not yet (the app's control socket is not reached inside its pod): the local lab only"
	case NoisyNeighbour:
		return "noisy-neighbour on a cluster: not yet (no CPU-hog pod pinned to the server's node): the local lab only"
	}
	return ""
}

// killPod is a Kill through a PodTarget.
func (r *Running) killPod(ctx context.Context, pt PodTarget) error {
	r.event(fmt.Sprintf("deleting the pod of the %s", r.f.Part))
	start := time.Now()
	old, rep, err := pt.KillPod(ctx, r.f.Part)
	if old != "" {
		r.event("deleted pod " + old)
	}
	if err != nil {
		return fmt.Errorf("killing the %s: %w", r.f.Part, err)
	}
	r.event(fmt.Sprintf("pod %s Ready in its place, %.3fs after the delete", rep, time.Since(start).Seconds()))
	return nil
}
