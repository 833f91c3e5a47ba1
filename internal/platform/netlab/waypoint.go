package netlab

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/mesh/ztunnel"
	"github.com/meshbench/meshbench/internal/platform/local"
	"github.com/meshbench/meshbench/internal/sys/pki"
)

// waypointPod is the name of the waypoint's pod on the substrate.
const waypointPod = "waypoint"

// waypoint returns the lab's waypoint pod, or nil.
func (l *Lab) waypoint() *Pod {
	for _, n := range l.Nodes {
		for _, p := range n.Pods {
			if p.Spec.Waypoint {
				return p
			}
		}
	}
	return nil
}

// useWaypoint names the lab's waypoint, when it has one, in ztunnel's
// config as Istio's istio.io/use-waypoint on the namespace does: on every
// service (traffic sent to the VIP) and on every workload that backs one
// (traffic sent to the pod's IP), as the waypoint's workload address and
// HBONE port. The waypoint's own workload entry (protocol TCP, not
// enrolled) gives ztunnel the identity to expect from it.
func (l *Lab) useWaypoint(cfg *ztunnel.Config) {
	wp := l.waypoint()
	if wp == nil {
		return
	}
	to := func() *ztunnel.Waypoint {
		return &ztunnel.Waypoint{Destination: ztunnel.Addr(wp.IP), HBONEMTLSPort: topology.PortHBONE}
	}
	for i := range cfg.Services {
		cfg.Services[i].Waypoint = to()
	}
	for i := range cfg.Workloads {
		if len(cfg.Workloads[i].Services) > 0 && cfg.Workloads[i].Name != wp.Spec.Name {
			cfg.Workloads[i].Waypoint = to()
		}
	}
}

// enrolls reports whether a pod of the node is enrolled: only then does
// the node run a ztunnel.
func (n *Node) enrolls() bool {
	for _, p := range n.Pods {
		if p.Spec.Enrolled {
			return true
		}
	}
	return false
}

// waypointSpec is the waypoint's pod: its own service account, not
// enrolled (Istio's istio.io/dataplane-mode none for waypoints), no
// capture: its Envoy terminates and originates HBONE itself.
func waypointSpec() PodSpec {
	return PodSpec{Name: waypointPod, Identity: topology.IdentityWaypoint, Waypoint: true}
}

// waypointTopology turns the loopback waypoint wp into the one the
// substrate runs in nt: in its pod, connect_terminate on the pod's IP
// (the admin keeps its loopback address inside the pod), rendered for the
// in-pod path (topology.InPod with the lab's VIPs); and the load sent to the
// entry service's VIP, which the client pod's capture hands to ztunnel
// and ztunnel to the waypoint, which balances over the replicas.
func waypointTopology(lab *Lab, wp topology.Proxy, nt *topology.Topology) error {
	pod := lab.waypoint()
	if pod == nil {
		return errors.New("the netns lab has no waypoint pod")
	}
	wp.Addr = pod.IP
	wp.Listeners = slices.Clone(wp.Listeners)
	for i := range wp.Listeners {
		wp.Listeners[i].Addr = netip.AddrPortFrom(pod.IP, wp.Listeners[i].Addr.Port())
	}
	nt.Proxies = append(nt.Proxies, wp)
	vip, ok := nt.InPod.VIP(nt.Service)
	if !ok {
		return fmt.Errorf("service %s has no VIP on the netns lab", nt.Service.Name)
	}
	nt.LoadTargets = []topology.LoadTarget{{URL: "http://" + vip.String() + "/", Proxy: wp.Name}}
	return nil
}

// CA is the lab's CA, which its ztunnels trust (local.CASource): the
// waypoint's certificate comes from it. Nil without ztunnel.
func (n *network) CA() *pki.CA { return n.lab.CA }

// The netns network hands its CA to the lab.
var _ local.CASource = (*network)(nil)
