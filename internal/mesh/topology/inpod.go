package topology

import "net/netip"

// InPod describes a topology on a substrate where Istio's in-pod ztunnel
// carries the mesh's traffic (internal/platform/netlab): every pod has an
// address of its own on a pod network, HBONE reaches a pod at its own
// address on PortHBONE (the ztunnel socket inside the pod's namespace),
// and the services have virtual IPs. The lab's remaining Envoys (the
// waypoint) are rendered for that path: HBONE CONNECTs name IP:port (a
// VIP and the service port, or a pod and its app port), never a host
// name, carry no SNI, and the waypoint originates HBONE to the pod.
type InPod struct {
	// VIPs maps a service name to its virtual IP; the service's port on
	// the VIP is its Port.
	VIPs map[string]netip.Addr
}

// VIP returns the service's VIP:port, and false when it has none.
func (p *InPod) VIP(s Service) (netip.AddrPort, bool) {
	if p == nil {
		return netip.AddrPort{}, false
	}
	a, ok := p.VIPs[s.Name]
	if !ok || !a.IsValid() {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(a, uint16(s.Port)), true
}
