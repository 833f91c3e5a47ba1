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

// PartProcess is the process of part p that serves pod.
func (n *network) PartProcess(p mesh.Part, pod string) (pid int, name string, ok bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
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
