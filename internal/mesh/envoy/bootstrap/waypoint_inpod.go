package bootstrap

import (
	"fmt"
	"net/netip"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/meshbench/meshbench/internal/mesh/topology"
)

// connectOriginate names the waypoint's internal listener that tunnels to
// svc's pods on the in-pod path (connect_originate, connect_originate_smiley),
// and encapCluster its ORIGINAL_DST HBONE cluster (encap, encap_smiley):
// Istio's names, one per destination identity.
func connectOriginate(svc topology.Service) string { return "connect_originate" + svc.Suffix }
func encapCluster(svc topology.Service) string     { return "encap" + svc.Suffix }

// waypointInPod is the waypoint where the real ztunnel carries the mesh
// (topology InPod): ztunnel sends it HTTP/2 CONNECTs over mTLS with no SNI
// and an :authority of IP:port (the service's VIP and port, or a pod and
// its app port), so connect_terminate has one filter chain with the
// waypoint's certificate and one virtual host per service listing those
// addresses (ALLOW rules on the source workload as on loopback). Then
// main_internal[_<svc>] (L7, as on loopback) balances over the replicas,
// each reached through connect_originate[_<svc>], whose original_dst
// filter restores the pod's app address; its tcp_proxy tunnels to that
// address through the ORIGINAL_DST cluster encap[_<svc>], which dials the
// same pod on port 15008 (the ztunnel socket in the pod's namespace) with
// the waypoint's certificate and accepts only the service's identity:
// Istio's waypoint path (ZTUNNEL-FROM-SOURCE.md, "Waypoint with real
// ztunnel").
func (b *builder) waypointInPod(l topology.Listener) error {
	var vhosts []*routev3.VirtualHost
	for _, svc := range b.topo.Services {
		var domains []string
		if vip, ok := b.topo.InPod.VIP(svc); ok {
			domains = append(domains, vip.String())
		}
		internal, cname := b.waypointL7(svc)
		lname := connectOriginate(svc)
		var eps []*endpointv3.LbEndpoint
		for _, pod := range b.topo.ServicePods(svc.Name) {
			domains = append(domains, pod.AppAddr().String())
			eps = append(eps, originalDstEndpoint(lname, pod.AppAddr()))
		}
		if len(eps) == 0 {
			return fmt.Errorf("service %s has no pods", svc.Name)
		}
		vhosts = append(vhosts, &routev3.VirtualHost{Name: svc.Host(), Domains: domains,
			Routes: []*routev3.Route{connectRoute(internal)}})

		c := cluster(cname, netip.Addr{}, eps...)
		if b.grpcApp(svc) {
			grpcUpstream(c)
		}
		c.TransportSocket = passthroughOriginalDst()
		b.addCluster(c)
		b.addListener(internalListener(lname, originalDst(), &listenerv3.FilterChain{
			Filters: []*listenerv3.Filter{tcpProxy(lname, encapCluster(svc), tunnelToLocalAddr)}}))

		encap := &clusterv3.Cluster{Name: encapCluster(svc),
			ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_ORIGINAL_DST},
			LbPolicy:             clusterv3.Cluster_CLUSTER_PROVIDED, ConnectTimeout: durationpb.New(connectTimeout),
			CircuitBreakers: circuitBreakers(),
			LbConfig: &clusterv3.Cluster_OriginalDstLbConfig_{OriginalDstLbConfig: &clusterv3.Cluster_OriginalDstLbConfig{
				UpstreamPortOverride: wrapperspb.UInt32(topology.PortHBONE)}},
			TransportSocket: b.upstreamTLS(b.p.Identity, svc.Identity, true, "", "h2")}
		http2Upstream(encap)
		b.addCluster(encap)
	}
	chain := &listenerv3.FilterChain{FilterChainMatch: tlsOnly(), TransportSocket: b.downstreamMTLS(l.Identity, true, "h2"),
		Filters: []*listenerv3.Filter{networkFilter(nameHCM, connectHCM(l.Name, routeTable(l.Name, vhosts...), hboneRBAC(b.topo.Policies)))}}
	b.addListener(socketListener(l.Name, l.Addr, tlsInspector(), chain))
	b.internal = true
	return nil
}

// gatewayInPod is the cluster of an ambient gateway where the real
// ztunnel carries the mesh (topology InPod): the gateway's pod is
// enrolled, so it calls in plaintext and its pod's capture hands every
// connection to its node's ztunnel. In waypoint mode it calls the
// service's VIP (ztunnel sends that to the waypoint, which balances); in
// ambient mode each replica's own address, round robin.
func (b *builder) gatewayInPod(svc topology.Service, cname string) (*clusterv3.Cluster, error) {
	var eps []netip.AddrPort
	if vip, ok := b.topo.InPod.VIP(svc); ok && b.mode == topology.ModeWaypoint {
		eps = append(eps, vip)
	} else {
		for _, pod := range b.topo.ServicePods(svc.Name) {
			eps = append(eps, pod.AppAddr())
		}
	}
	if len(eps) == 0 {
		return nil, fmt.Errorf("service %s has no pods", svc.Name)
	}
	c := cluster(cname, netip.Addr{}, sockEndpoints(eps)...)
	if b.grpcApp(svc) {
		grpcUpstream(c)
	}
	return c, nil
}
