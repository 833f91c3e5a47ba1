package local

import (
	"context"
	"fmt"
	"time"

	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/mesh/envoy"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform/fault"
	"github.com/meshbench/meshbench/internal/sys/process"
	"github.com/meshbench/meshbench/internal/workload"
)

// A cell's fault (Settings.Fault) on the lab: scheduled when the measured
// window opens, stopped (undone) when the load ends, whatever ended it,
// and recorded in the manifest (options.fault_record, beside the fault
// itself in options.fault: its times from the window, events, errors). The lab is its fault.Target: the parts are the
// processes serving the app's first replica (its sidecar, its node's
// proxy, the waypoint), the Envoys the lab runs and the substrate's own
// processes (PartNetwork); a killed one is started again from the same
// spec as its supervisor started it, and sampled from then on.

// FaultInterval is the load's interval in a cell with a fault: what the
// fault cost is read from (analysis.FaultCost), finer than the default
// second.
const FaultInterval = fault.LoadInterval

// PartNetwork is a Network whose own processes a fault can hit (the netns
// substrate's ztunnels and Linkerd proxies).
type PartNetwork interface {
	// PartProcess is the process of part p that serves pod; ok false when
	// the network runs none.
	PartProcess(p mesh.Part, pod string) (pid int, name string, ok bool)
	// Restart kills that process (SIGKILL) and starts it again as its
	// supervisor would, returning once it is ready with its PID; Died
	// ignores its exit meanwhile.
	Restart(ctx context.Context, p mesh.Part, pod string) (pid int, err error)
}

// PartReplacer is a PartNetwork whose restart of a part replaces other
// sampled processes too (istiod's sidecar: pilot-agent beside its Envoy):
// each old PID's new one since the last call, sampled under the old one's
// name from then on.
type PartReplacer interface {
	Replaced() map[int]int
}

// faultTarget is a running cell as a fault.Target.
type faultTarget struct{ c *cell }

// servedPod is the app's first replica, the pod whose parts a fault hits.
func (t faultTarget) servedPod() (topology.Pod, error) {
	ps := t.c.lab.topo.ServerPods()
	if len(ps) == 0 {
		return topology.Pod{}, fmt.Errorf("the lab has no app replica")
	}
	return ps[0], nil
}

// envoyOf is the lab's Envoy that is part p for pod, "" when none is.
func (t faultTarget) envoyOf(p mesh.Part, pod topology.Pod) string {
	for _, px := range t.c.lab.topo.Proxies {
		switch {
		case p == mesh.PartSidecar && px.Role == topology.RoleSidecar && px.Pod == pod.Name,
			p == mesh.PartWaypoint && px.Role == topology.RoleWaypoint,
			p == mesh.PartNodeProxy && px.Role == topology.RoleNodeProxy && px.Node == pod.Node:
			return px.Name
		}
	}
	return ""
}

func (t faultTarget) PartPID(p mesh.Part) (int, string, error) {
	pod, err := t.servedPod()
	if err != nil {
		return 0, "", err
	}
	if pn, ok := t.c.lab.net.(PartNetwork); ok {
		if pid, name, ok := pn.PartProcess(p, pod.Name); ok {
			return pid, name, nil
		}
	}
	if name := t.envoyOf(p, pod); name != "" {
		l := t.c.lab
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, px := range l.procs {
			if px.Name == name {
				return px.PID, name, nil
			}
		}
	}
	return 0, "", fmt.Errorf("the lab runs no %s for %s", p, pod.Name)
}

func (t faultTarget) Kill(ctx context.Context, p mesh.Part) (int, error) {
	pod, err := t.servedPod()
	if err != nil {
		return 0, err
	}
	oldPID, _, err := t.PartPID(p)
	if err != nil {
		return 0, err
	}
	var pid int
	if pn, ok := t.c.lab.net.(PartNetwork); ok {
		if _, _, ok := pn.PartProcess(p, pod.Name); ok {
			if pid, err = pn.Restart(ctx, p, pod.Name); err != nil {
				return 0, err
			}
		}
	}
	if pid == 0 {
		if pid, err = t.c.lab.restartEnvoy(ctx, t.envoyOf(p, pod)); err != nil {
			return 0, err
		}
	}
	t.c.resample(oldPID, pid)
	if pr, ok := t.c.lab.net.(PartReplacer); ok {
		for from, to := range pr.Replaced() {
			t.c.resample(from, to)
		}
	}
	return pid, nil
}

func (t faultTarget) Replicas(svc string) []workload.Control {
	if svc == "" {
		svc = t.c.lab.topo.Service.Name
	}
	var out []workload.Control
	byName := map[string]*child{}
	for _, a := range t.c.lab.apps {
		byName[a.name] = a
	}
	for _, p := range t.c.lab.topo.ServicePods(svc) {
		if a := byName[p.Name+" app"]; a != nil && a.control != "" {
			out = append(out, workload.Control{Path: a.control})
		}
	}
	return out
}

// restartEnvoy kills the lab's Envoy name and starts it again from its
// spec; somethingDied ignores it meanwhile. A restart that fails leaves
// the dead Envoy in place, which somethingDied then reports.
func (l *Lab) restartEnvoy(ctx context.Context, name string) (int, error) {
	l.mu.Lock()
	i := -1
	for j, p := range l.procs {
		if p.Name == name {
			i = j
		}
	}
	if i < 0 || l.sup == nil {
		l.mu.Unlock()
		return 0, fmt.Errorf("the lab runs no Envoy %q", name)
	}
	old, spec := l.procs[i], l.specs[name]
	if l.restarting == nil {
		l.restarting = map[string]bool{}
	}
	l.restarting[name] = true
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.restarting, name)
		l.mu.Unlock()
	}()
	process.KillGroup(old.PID)
	<-old.Done()
	p, err := l.sup.Start(ctx, spec)
	if err != nil {
		return 0, err
	}
	if spec.In != nil {
		envoy.AdminIn(p.AdminAddr, spec.In)
	}
	l.mu.Lock()
	l.procs[i] = p
	l.mu.Unlock()
	return p.PID, nil
}

// resample samples the process that replaced oldPID under the same name
// from now on, and records it in the manifest.
func (c *cell) resample(oldPID, pid int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.manifest.Processes {
		if p.PID == oldPID {
			np := p
			np.PID = pid
			c.manifest.Processes = append(c.manifest.Processes, np)
			_ = c.sampler.Add(sample.Target{PID: pid, Name: p.Name, Component: p.Component, Category: p.Category})
			return
		}
	}
}

// scheduleFault starts the cell's fault for a window opening at from.
func (c *cell) scheduleFault(ctx context.Context, from time.Time) *fault.Running {
	return fault.Schedule(ctx, c.opts.Fault, faultTarget{c}, from, func(s string) { c.logf("%s", s) })
}

// stopFault undoes the cell's fault and records it.
func (c *cell) stopFault(r *fault.Running) {
	if c.opts.Fault.Zero() {
		return
	}
	rec := r.Stop()
	c.mu.Lock()
	c.manifest.Options["fault_record"] = rec
	c.mu.Unlock()
	for _, e := range rec.Errors {
		c.invalid("fault " + rec.Fault + ": " + e)
	}
}
