package netlab

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/meshbench/meshbench/internal/mesh/topology"
)

// callsOn rewrites where every app pod of nt calls its backends (the face
// workload: smiley over HTTP, color over gRPC) for the substrate, once the
// pods have their namespaces' addresses:
//
//   - none: replica i of each backend at its pod address, as the loopback
//     lab's fixed spread (no proxy to balance);
//   - sidecar: the pod's own sidecar's outbound listener for the service
//     at 127.0.0.1 (the sidecar listens on the wildcard; istio-init's
//     capture leaves loopback alone), as on loopback;
//   - ambient and linkerd: the service's VIP, where the pod's capture hands
//     the connection to ztunnel or to the pod's linkerd2-proxy, which
//     balance over the service's pods.
func callsOn(nt *topology.Topology, lab *Lab) error {
	loopback := netip.MustParseAddr("127.0.0.1")
	for i := range nt.Pods {
		p := &nt.Pods[i]
		p.Calls = slices.Clone(p.Calls)
		for j := range p.Calls {
			c := &p.Calls[j]
			svc := nt.Svc(c.Service)
			if svc == nil {
				return fmt.Errorf("pod %s calls unknown service %s", p.Name, c.Service)
			}
			switch nt.Options.Mode {
			case topology.ModeNone:
				pods := nt.ServicePods(c.Service)
				if p.Replica >= len(pods) {
					return fmt.Errorf("pod %s: no replica %d of %s", p.Name, p.Replica, c.Service)
				}
				c.Addr = pods[p.Replica].AppAddr()
			case topology.ModeSidecar:
				c.Addr = netip.AddrPortFrom(loopback, c.Addr.Port())
			default:
				vip, ok := lab.Services[c.Service]
				if !ok {
					return fmt.Errorf("service %s has no VIP in the lab", c.Service)
				}
				c.Addr = netip.AddrPortFrom(vip, uint16(svc.Port))
			}
		}
	}
	return nil
}

// viaVIPs makes every app pod of nt call its backends at their services'
// VIPs (sidecars configured by istiod: a sidecar's outbound listener for
// the service is not on the loopback address callsOn gives).
func viaVIPs(nt *topology.Topology, lab *Lab) {
	for i := range nt.Pods {
		for j := range nt.Pods[i].Calls {
			c := &nt.Pods[i].Calls[j]
			if vip, ok := lab.Services[c.Service]; ok {
				c.Addr = netip.AddrPortFrom(vip, uint16(nt.Svc(c.Service).Port))
			}
		}
	}
}
