package netlab

import (
	"context"
	"fmt"

	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/proxy"
	"github.com/meshbench/meshbench/internal/mesh/ztunnel"
	"github.com/meshbench/meshbench/internal/sys/process"
)

// The substrate's own processes a fault hits (local.PartNetwork): the
// node ztunnel of a pod's node, and Linkerd's proxy beside a pod. A kill
// is SIGKILL to the process's group, then the same process started again
// from the same spec, as the lab's supervisor started it (a DaemonSet's or
// a pod's restart on a cluster); until it is ready again Died does not
// count its exit.

// With a real control plane (restart.go) the substrate's processes are
// also istiod (control-plane), each pod's pilot-agent with its Envoy
// (sidecar, waypoint: the Envoy is the part, a kill kills and restarts
// both), and Linkerd's destination pod's controllers (control-plane: the
// destination controller is the part, a kill kills and restarts it and
// the policy controller).

// Keys of network.restarting for the real control planes' processes.
const (
	restartIstiod             = "istiod"
	restartAgent              = "agent/"
	restartLinkerdControllers = "linkerd-destination-pod"
)

// agentPod is the pod whose pilot-agent is part p for pod (its sidecar,
// or the waypoint), "" when istiod runs none (n.mu held).
func (n *network) agentPod(p mesh.Part, pod string) string {
	if n.istiod == nil {
		return ""
	}
	switch p {
	case mesh.PartSidecar:
		if _, ok := n.istiod.envoys[pod]; ok {
			return pod
		}
	case mesh.PartWaypoint:
		if wp := n.lab.waypoint(); wp != nil {
			if _, ok := n.istiod.envoys[wp.Spec.Name]; ok {
				return wp.Spec.Name
			}
		}
	}
	return ""
}

// PartProcess is the process of part p that serves pod.
func (n *network) PartProcess(p mesh.Part, pod string) (pid int, name string, ok bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if ap := n.agentPod(p, pod); ap != "" {
		return n.istiod.envoys[ap], n.istiod.names[ap], true
	}
	if p == mesh.PartControlPlane {
		switch {
		case n.istiod != nil:
			return n.istiod.d.proc().PID, IstiodName, true
		case n.linkerd != nil && n.linkerd.ctl != nil:
			c := n.linkerd.ctl.proc("destination")
			return c.PID, c.Name, true
		}
		return 0, "", false
	}
	switch p {
	case mesh.PartNodeProxy:
		np := n.lab.Pod(pod)
		if np == nil || np.Node.Ztunnel == nil {
			return 0, "", false
		}
		return np.Node.Ztunnel.PID(), "ztunnel-" + np.Node.Name, true
	case mesh.PartSidecar:
		if n.linkerd == nil || n.linkerd.mesh.Proxies[pod] == nil {
			return 0, "", false
		}
		return n.linkerd.mesh.Proxies[pod].PID(), proxyName(pod), true
	}
	return 0, "", false
}

// Restart kills part p's process serving pod and starts it again,
// returning once it is ready with its PID.
func (n *network) Restart(ctx context.Context, p mesh.Part, pod string) (int, error) {
	np := n.lab.Pod(pod)
	if np == nil {
		return 0, fmt.Errorf("no pod %s on the netns substrate", pod)
	}
	key := string(p) + "/" + pod
	n.mu.Lock()
	if n.restarting == nil {
		n.restarting = map[string]bool{}
	}
	n.restarting[key] = true
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		delete(n.restarting, key)
		n.mu.Unlock()
	}()
	n.mu.Lock()
	ap := n.agentPod(p, pod)
	n.mu.Unlock()
	switch {
	case ap != "":
		return n.restartAgent(ctx, ap)
	case p == mesh.PartControlPlane:
		return n.restartControlPlane(ctx)
	}
	switch p {
	case mesh.PartNodeProxy:
		n.mu.Lock()
		old := np.Node.Ztunnel
		n.mu.Unlock()
		if old == nil {
			return 0, fmt.Errorf("no ztunnel on %s", np.Node.Name)
		}
		process.KillGroup(old.PID())
		<-old.Exited()
		nz, err := ztunnel.Start(old.Spec)
		if err != nil {
			return 0, err
		}
		n.mu.Lock()
		np.Node.Ztunnel = nz
		n.mu.Unlock()
		if err := nz.Ready(ctx); err != nil {
			return 0, fmt.Errorf("%w (log %s)", err, np.Node.Log)
		}
		return nz.PID(), nil
	case mesh.PartSidecar:
		n.mu.Lock()
		var old *proxy.Process
		if n.linkerd != nil {
			old = n.linkerd.mesh.Proxies[pod]
		}
		n.mu.Unlock()
		if old == nil {
			return 0, fmt.Errorf("no linkerd2-proxy beside %s", pod)
		}
		process.KillGroup(old.PID())
		<-old.Exited()
		pr, err := proxy.Start(old.Spec)
		if err != nil {
			return 0, err
		}
		n.mu.Lock()
		n.linkerd.mesh.Proxies[pod] = pr
		n.mu.Unlock()
		if err := pr.Ready(ctx); err != nil {
			return 0, err
		}
		return pr.PID(), nil
	}
	return 0, fmt.Errorf("the netns substrate runs no %s of its own", p)
}

// restartAgent restarts pod's pilot-agent and Envoy (istiod's sidecar
// or waypoint), returning the new Envoy's PID; the new pilot-agent's is in
// Replaced.
func (n *network) restartAgent(ctx context.Context, pod string) (int, error) {
	n.mark(restartAgent+pod, true)
	defer n.mark(restartAgent+pod, false)
	old := n.istiod.d.agent(pod)
	a, envoy, err := n.istiod.d.RestartAgent(ctx, pod)
	if err != nil {
		return 0, err
	}
	n.mu.Lock()
	n.istiod.envoys[pod] = envoy
	n.replace(old.PID, a.PID)
	n.mu.Unlock()
	return envoy, nil
}

// restartControlPlane restarts istiod, or Linkerd's destination pod's
// controllers (the policy controller's new PID in Replaced), returning
// the new istiod's or destination controller's PID.
func (n *network) restartControlPlane(ctx context.Context) (int, error) {
	switch {
	case n.istiod != nil:
		n.mark(restartIstiod, true)
		defer n.mark(restartIstiod, false)
		p, err := n.istiod.d.Restart(ctx)
		if err != nil {
			return 0, err
		}
		return p.PID, nil
	case n.linkerd != nil && n.linkerd.ctl != nil:
		c := n.linkerd.ctl
		n.mark(restartLinkerdControllers, true)
		defer n.mark(restartLinkerdControllers, false)
		oldPolicy := c.proc("policy")
		dst, pol, err := c.RestartDestination(ctx)
		if err != nil {
			return 0, err
		}
		n.mu.Lock()
		n.replace(oldPolicy.PID, pol.PID)
		n.mu.Unlock()
		return dst.PID, nil
	}
	return 0, fmt.Errorf("the netns substrate runs no %s of its own (control plane lab: the lab's own configs)", mesh.PartControlPlane)
}

// mark sets or clears key in n.restarting.
func (n *network) mark(key string, on bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.restarting == nil {
		n.restarting = map[string]bool{}
	}
	if on {
		n.restarting[key] = true
	} else {
		delete(n.restarting, key)
	}
}

// replace notes that process from was replaced by to (n.mu held).
func (n *network) replace(from, to int) {
	if n.replaced == nil {
		n.replaced = map[int]int{}
	}
	n.replaced[from] = to
}

// Replaced are the processes a restart replaced besides the part's own
// (pilot-agent beside its Envoy, the policy controller beside
// destination), old PID to new, since the last call (local.PartReplacer).
func (n *network) Replaced() map[int]int {
	n.mu.Lock()
	defer n.mu.Unlock()
	r := n.replaced
	n.replaced = nil
	return r
}
