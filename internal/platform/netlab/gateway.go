package netlab

import (
	"errors"
	"net/netip"
	"slices"

	"github.com/meshbench/meshbench/internal/mesh/topology"
)

// gatewayPod is the name of the ingress gateway's pod on the substrate.
const gatewayPod = "gateway"

// gatewaySpec is the ingress gateway's pod, with the ingress identity. In
// the ambient modes it is enrolled, as the loopback lab's gateway hands
// its calls to its node proxy: its Envoy calls the service in plaintext
// and the pod's capture gives the calls to its node's ztunnel. Elsewhere
// it is not (mode none; sidecar mode, where its Envoy makes the mTLS
// calls to the server sidecars itself, as Istio's gateways do).
func gatewaySpec(meshed bool) PodSpec {
	return PodSpec{Name: gatewayPod, Identity: topology.IdentityIngress, Enrolled: meshed}
}

// gatewayTopology turns the loopback gateway gw into the one the
// substrate runs in nt: in its pod, its HTTPS listener and serving
// certificate on the pod's IP (the admin keeps its loopback address in
// the pod), and the load, from the client pod, sent to it.
func gatewayTopology(lab *Lab, gw topology.Proxy, nt *topology.Topology) error {
	pod := lab.Pod(gatewayPod)
	if pod == nil {
		return errors.New("the netns lab has no gateway pod")
	}
	gw.Addr = pod.IP
	gw.Listeners = slices.Clone(gw.Listeners)
	for i := range gw.Listeners {
		gw.Listeners[i].Addr = netip.AddrPortFrom(pod.IP, gw.Listeners[i].Addr.Port())
	}
	gw.ServingHosts = []string{pod.IP.String()}
	nt.Proxies = append(nt.Proxies, gw)
	l := gw.Listener(topology.ListenerGateway)
	if l == nil {
		return errors.New("the gateway has no HTTPS listener")
	}
	nt.LoadTargets = []topology.LoadTarget{{URL: "https://" + l.Addr.String() + "/", Proxy: gw.Name}}
	return nil
}
