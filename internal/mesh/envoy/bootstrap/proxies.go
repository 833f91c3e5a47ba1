package bootstrap

import (
	"fmt"
	"net/netip"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	overloadv3 "github.com/envoyproxy/go-control-plane/envoy/config/overload/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	internallistenerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/bootstrap/internal_listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	downstreamconnsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/resource_monitors/downstream_connections/v3"
	previoushostsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/host/previous_hosts/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/meshbench/meshbench/internal/mesh/topology"
)

// Names of the objects the configs share with Istio (LAB.md §2).
const (
	inboundCluster        = "inbound|8080||"
	virtualInboundCluster = "virtual_inbound" // node proxy: ORIGINAL_DST on :authority
	mainInternal          = "main_internal"   // waypoint's L7 internal listener and its cluster
	tunnelToLocalAddr     = "%DOWNSTREAM_LOCAL_ADDRESS%"
)

// serviceCluster is Istio's outbound cluster name,
// outbound|8080||server.default.svc.cluster.local.
func serviceCluster(s topology.Service) string {
	return fmt.Sprintf("outbound|%d||%s", s.Port, s.Host())
}

// serviceSNI is the SNI Istio's sidecars send to the service.
func serviceSNI(s topology.Service) string {
	return fmt.Sprintf("outbound_.%d_._.%s", s.Port, s.Host())
}

// serviceAuthority is what a client node proxy asks the waypoint for.
func serviceAuthority(s topology.Service) string { return fmt.Sprintf("%s:%d", s.Host(), s.Port) }

// originateListener names the waypoint's internal listener that tunnels
// to node n's proxy for svc's pods: connect_originate_node2 (plus svc's
// suffix, connect_originate_node2_smiley: each destination identity has
// its own HBONE connections, as ztunnel pools them).
func originateListener(node int, svc topology.Service) string {
	return fmt.Sprintf("connect_originate_node%d%s", node, svc.Suffix)
}

// hboneCluster names an HBONE cluster: on the waypoint, to node n's proxy
// (hbone|node2); on a node proxy, to one server pod for one source
// workload (hbone|server-0|client) or to the waypoint
// (hbone|waypoint|client).
func hboneCluster(peer, source string) string {
	if source == "" {
		return "hbone|" + peer
	}
	return "hbone|" + peer + "|" + source
}

// authorityKey is where a node proxy's per-pod HBONE cluster keeps its
// CONNECT :authority (the pod's app address), in the cluster's metadata;
// tunnelToClusterAuthority reads it back when the tcp_proxy has picked
// the cluster.
const (
	metadataNamespace        = "meshbench"
	authorityKey             = "authority"
	tunnelToClusterAuthority = "%CLUSTER_METADATA(" + metadataNamespace + ":" + authorityKey + ")%"
)

// builder renders one proxy.
type builder struct {
	topo  *topology.Topology
	certs CertPaths
	p     *topology.Proxy
	mode  topology.Mode
	tcp   bool

	listeners []*listenerv3.Listener
	clusters  []*clusterv3.Cluster
	internal  bool // uses internal listeners
}

func (b *builder) build() (*bootstrapv3.Bootstrap, error) {
	for _, l := range b.p.Listeners {
		var err error
		switch {
		case b.p.Role == topology.RoleSidecar && l.Kind == topology.ListenerOutbound:
			err = b.sidecarOutbound(l)
		case b.p.Role == topology.RoleSidecar && l.Kind == topology.ListenerInbound:
			err = b.sidecarInbound(l)
		case b.p.Role == topology.RoleNodeProxy && l.Kind == topology.ListenerOutbound:
			err = b.nodeOutbound(l)
		case b.p.Role == topology.RoleNodeProxy && l.Kind == topology.ListenerOutboundWaypoint:
			err = b.nodeOutboundWaypoint(l)
		case b.p.Role == topology.RoleNodeProxy && l.Kind == topology.ListenerHBONE:
			err = b.nodeInbound(l)
		case b.p.Role == topology.RoleWaypoint && l.Kind == topology.ListenerHBONE && b.topo.InPod != nil:
			err = b.waypointInPod(l)
		case b.p.Role == topology.RoleWaypoint && l.Kind == topology.ListenerHBONE:
			err = b.waypoint(l)
		case b.p.Role == topology.RoleGateway && l.Kind == topology.ListenerGateway:
			err = b.gateway(l)
		default:
			err = fmt.Errorf("no rendering for a %s listener on a %s", l.Kind, b.p.Role)
		}
		if err != nil {
			return nil, fmt.Errorf("listener %s: %w", l.Name, err)
		}
	}
	bs := &bootstrapv3.Bootstrap{
		Node:  &corev3.Node{Id: b.p.Name, Cluster: "meshbench"},
		Admin: &bootstrapv3.Admin{Address: sockAddr(b.p.Admin)},
		// Histogram quantiles are computed at a stats flush. Flushing when
		// the admin is asked (no flush timer) makes the end-of-run scrape
		// report every request, and spares the proxies a periodic flush
		// while they are measured; no stats sink is configured anyway.
		StatsFlush:      &bootstrapv3.Bootstrap_StatsFlushOnAdmin{StatsFlushOnAdmin: true},
		StaticResources: &bootstrapv3.Bootstrap_StaticResources{Listeners: b.listeners, Clusters: b.clusters},
		OverloadManager: &overloadv3.OverloadManager{ResourceMonitors: []*overloadv3.ResourceMonitor{{
			Name: nameMaxConnections, ConfigType: &overloadv3.ResourceMonitor_TypedConfig{TypedConfig: typed(
				&downstreamconnsv3.DownstreamConnectionsConfig{MaxActiveDownstreamConnections: maxDownstreamConnections})}}}},
	}
	if b.internal {
		bs.LayeredRuntime = keepTunnelCloses()
		bs.BootstrapExtensions = []*corev3.TypedExtensionConfig{{Name: nameInternalListener,
			TypedConfig: typed(&internallistenerv3.InternalListener{})}}
	}
	return bs, nil
}

// rstPropagationFlag is the Envoy (≥ 1.38) runtime guard that makes a
// tcp_proxy close its downstream with a TCP RST when its upstream was reset.
const rstPropagationFlag = "envoy.reloadable_features.propagate_upstream_rst_through_tunneled_tcp_proxy"

// keepTunnelCloses turns rstPropagationFlag off in proxies with internal
// listeners (the waypoint). With it on, Envoy 1.40 takes the ordinary end
// of an internal connection (the app closing after a close-delimited or
// "Connection: close" response) for an upstream reset, and the RST the
// tcp_proxy in front then sends downstream drops response bytes still in
// flight: through an internal-listener chain, 6 of 15 such requests lost
// their body (curl: headers, then "connection reset by peer"); the
// waypoint at L4 lost whole responses. Envoy issue #45190 is the
// HTTP-upstream variant of the same race. Off, a close is forwarded as a
// close (FIN), as before Envoy 1.38.
func keepTunnelCloses() *bootstrapv3.LayeredRuntime {
	return &bootstrapv3.LayeredRuntime{Layers: []*bootstrapv3.RuntimeLayer{{Name: "static",
		LayerSpecifier: &bootstrapv3.RuntimeLayer_StaticLayer{StaticLayer: &structpb.Struct{Fields: map[string]*structpb.Value{
			rstPropagationFlag: structpb.NewBoolValue(false)}}}}}}
}

func (b *builder) addListener(l *listenerv3.Listener) { b.listeners = append(b.listeners, l) }

// addCluster adds c unless a cluster of that name is there already.
func (b *builder) addCluster(c *clusterv3.Cluster) {
	for _, x := range b.clusters {
		if x.Name == c.Name {
			return
		}
	}
	b.clusters = append(b.clusters, c)
}

// istioRetries is Istio's default retry policy for outbound HTTP routes: 2
// retries on connection failures, refused streams and 503s, each on
// another host when there is one.
func istioRetries() *routev3.RetryPolicy {
	return &routev3.RetryPolicy{RetryOn: istioRetryOn, NumRetries: wrapperspb.UInt32(2),
		RetriableStatusCodes: []uint32{503}, HostSelectionRetryMaxAttempts: 5,
		RetryHostPredicate: []*routev3.RetryPolicy_RetryHostPredicate{{Name: "envoy.retry_host_predicates.previous_hosts",
			ConfigType: &routev3.RetryPolicy_RetryHostPredicate_TypedConfig{TypedConfig: typed(&previoushostsv3.PreviousHostsPredicate{})}}}}
}

// appFilter is what carries app traffic for svc to cluster: an HCM
// routing every request there (with Istio's retries when retry is set), or,
// with protocol tcp, a tcp_proxy.
func (b *builder) appFilter(svc topology.Service, statPrefix, cluster string, retry bool) *listenerv3.Filter {
	if b.tcp {
		return tcpProxy(statPrefix, cluster, "")
	}
	var rp *routev3.RetryPolicy
	if retry {
		rp = istioRetries()
	}
	routes := routeTable(statPrefix, &routev3.VirtualHost{Name: serviceAuthority(svc), Domains: []string{"*"},
		Routes: []*routev3.Route{prefixRoute(cluster, rp)}})
	return networkFilter(nameHCM, hcm(statPrefix, routes, nil))
}

// service returns the named service of the topology.
func (b *builder) service(name string) (topology.Service, error) {
	s := b.topo.Svc(name)
	if s == nil {
		return topology.Service{}, fmt.Errorf("unknown service %q", name)
	}
	return *s, nil
}

// grpcApp reports whether the proxies speak HTTP/2 to svc's app.
func (b *builder) grpcApp(svc topology.Service) bool {
	return !b.tcp && svc.Protocol == topology.AppGRPC
}

// sidecarInbounds lists the inbound address of every sidecar of svc's pods.
func (b *builder) sidecarInbounds(svc topology.Service) ([]netip.AddrPort, error) {
	var out []netip.AddrPort
	for _, pod := range b.topo.ServicePods(svc.Name) {
		sc := b.topo.Sidecar(pod.Name)
		if sc == nil || sc.Listener(topology.ListenerInbound) == nil {
			return nil, fmt.Errorf("server pod %s has no sidecar inbound", pod.Name)
		}
		out = append(out, sc.Listener(topology.ListenerInbound).Addr)
	}
	return out, nil
}

// sidecarCluster is the outbound cluster of every sidecar of svc's pods,
// mTLS with Istio's ISTIO_MUTUAL settings when on, originating from from;
// HTTP/2 to a gRPC service.
func (b *builder) sidecarCluster(svc topology.Service, from netip.Addr, id topology.Identity) (*clusterv3.Cluster, error) {
	eps, err := b.sidecarInbounds(svc)
	if err != nil {
		return nil, err
	}
	c := cluster(serviceCluster(svc), from, sockEndpoints(eps)...)
	if b.grpcApp(svc) {
		grpcUpstream(c)
	}
	if b.topo.Options.MTLS {
		alpn := alpnIstioHTTP11
		switch {
		case b.tcp:
			alpn = alpnIstioTCP
		case b.grpcApp(svc):
			alpn = alpnIstioH2
		}
		c.TransportSocket = b.upstreamTLS(id, svc.Identity, false, serviceSNI(svc), alpn)
	}
	return c, nil
}

// sidecarOutbound: HCM (or tcp_proxy) → every inbound of the sidecars of
// the listener's service.
func (b *builder) sidecarOutbound(l topology.Listener) error {
	svc, err := b.service(l.Service)
	if err != nil {
		return err
	}
	cname := serviceCluster(svc)
	b.addListener(socketListener(l.Name, l.Addr, nil, &listenerv3.FilterChain{
		Filters: []*listenerv3.Filter{b.appFilter(svc, l.Name, cname, true)}}))
	c, err := b.sidecarCluster(svc, b.p.Addr, b.p.Identity)
	if err != nil {
		return err
	}
	b.addCluster(c)
	return nil
}

// sidecarInbound: TLS required (inspector + transport_protocol tls),
// optional network RBAC, HCM with XFCC (or tcp_proxy) → the app, from
// 127.0.0.6. Plaintext when mTLS is off.
func (b *builder) sidecarInbound(l topology.Listener) error {
	pod := b.topo.Pod(b.p.Pod)
	if pod == nil {
		return fmt.Errorf("sidecar of unknown pod %q", b.p.Pod)
	}
	mtls := b.topo.Options.MTLS
	chain := &listenerv3.FilterChain{}
	var lfilters []*listenerv3.ListenerFilter
	if mtls {
		lfilters = tlsInspector()
		chain.FilterChainMatch = tlsOnly()
		chain.TransportSocket = b.downstreamMTLS(l.Identity, false, "h2", "http/1.1")
		if len(b.topo.Policies) > 0 {
			chain.Filters = append(chain.Filters, networkRBAC(l.Name+".", b.topo.Policies))
		}
	}
	if b.tcp {
		chain.Filters = append(chain.Filters, tcpProxy(l.Name, inboundCluster, ""))
	} else {
		routes := routeTable(inboundCluster, &routev3.VirtualHost{Name: inboundCluster, Domains: []string{"*"},
			Routes: []*routev3.Route{prefixRoute(inboundCluster, nil)}})
		h := hcm(l.Name, routes, nil)
		if mtls {
			h.ForwardClientCertDetails = hcmv3.HttpConnectionManager_APPEND_FORWARD
			h.SetCurrentClientCertDetails = &hcmv3.HttpConnectionManager_SetCurrentClientCertDetails{Uri: true}
		}
		chain.Filters = append(chain.Filters, networkFilter(nameHCM, h))
	}
	b.addListener(socketListener(l.Name, l.Addr, lfilters, chain))
	c := cluster(inboundCluster, topology.InboundPassthroughSource, endpoint(sockAddr(pod.AppAddr())))
	if svc, err := b.service(pod.Service); err != nil {
		return err
	} else if b.grpcApp(svc) {
		grpcUpstream(c)
	}
	b.addCluster(c)
	return nil
}

// hboneUpstream is an HTTP/2 CONNECT cluster to one HBONE listener,
// TLS 1.3 only, presenting id, asking for peer's certificate by SNI and
// accepting only peer.
func (b *builder) hboneUpstream(name string, to netip.AddrPort, id, peer topology.Identity) *clusterv3.Cluster {
	c := cluster(name, b.p.Addr, endpoint(sockAddr(to)))
	http2Upstream(c)
	c.TransportSocket = b.upstreamTLS(id, peer, true, topology.HBONESNI(peer), "h2")
	return c
}

// originateTo adds, for every node with pods of svc, an internal listener
// that tunnels each connection to the node's HBONE listener, its CONNECT
// :authority being the pod address restored by the original_dst listener
// filter; and the cluster clusterName of every replica of svc, reached
// through those listeners, which balances round robin (LAB.md §2(d)). The
// tunnels carry the proxy's own certificate.
func (b *builder) originateTo(svc topology.Service, clusterName string) error {
	var eps []*endpointv3.LbEndpoint
	done := map[int]bool{}
	for _, pod := range b.topo.ServicePods(svc.Name) {
		lname := originateListener(pod.Node, svc)
		eps = append(eps, originalDstEndpoint(lname, pod.AppAddr()))
		if done[pod.Node] {
			continue
		}
		done[pod.Node] = true
		hl, err := b.hboneOf(pod)
		if err != nil {
			return err
		}
		hname := hboneCluster(fmt.Sprintf("node%d%s", pod.Node, svc.Suffix), "")
		b.addListener(internalListener(lname, originalDst(), &listenerv3.FilterChain{
			Filters: []*listenerv3.Filter{tcpProxy(lname, hname, tunnelToLocalAddr)}}))
		b.addCluster(b.hboneUpstream(hname, hl.Addr, b.p.Identity, pod.Identity))
	}
	c := cluster(clusterName, netip.Addr{}, eps...)
	if b.grpcApp(svc) {
		grpcUpstream(c)
	}
	c.TransportSocket = passthroughOriginalDst()
	b.addCluster(c)
	b.internal = true
	return nil
}

// hboneOf returns the HBONE listener of pod's node proxy.
func (b *builder) hboneOf(pod topology.Pod) (*topology.Listener, error) {
	np := b.topo.NodeProxy(pod.Node)
	if np == nil || np.Listener(topology.ListenerHBONE) == nil {
		return nil, fmt.Errorf("node %d of %s has no node proxy with an HBONE listener", pod.Node, pod.Name)
	}
	return np.Listener(topology.ListenerHBONE), nil
}

// nodeOutbound: one source workload's plaintext → one server replica per
// connection → HBONE to that replica's node proxy with the source's
// certificate, :authority the replica's app address.
//
// Each replica has its own HBONE cluster, carrying its authority in the
// cluster metadata, and the tcp_proxy picks among them as weighted
// clusters of equal weight (random per connection). Envoy 1.40 evaluates
// tunneling_config.hostname before it picks a host, so a host's metadata
// cannot supply the authority (checked: the CONNECT goes out without a
// usable one), but the picked cluster's can. The other way, a round-robin
// cluster of internal endpoints each feeding an internal listener per
// destination node (the waypoint's pattern), adds an in-process hop to
// every connection and cost about 10% more node proxy CPU in a
// 1000 rps comparison; this way the path is LAB.md's (c) for any replica
// count, and each replica gets its own pooled HBONE connection, as the
// in-pod ztunnel keeps one per destination pod.
func (b *builder) nodeOutbound(l topology.Listener) error {
	var names []string
	for _, pod := range b.topo.ServicePods(l.Service) {
		hl, err := b.hboneOf(pod)
		if err != nil {
			return err
		}
		name := hboneCluster(pod.Name, l.Source)
		c := b.hboneUpstream(name, hl.Addr, l.Identity, pod.Identity)
		c.Metadata = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{metadataNamespace: {
			Fields: map[string]*structpb.Value{authorityKey: structpb.NewStringValue(pod.AppAddr().String())}}}}
		b.addCluster(c)
		names = append(names, name)
	}
	tp := &tcpproxyv3.TcpProxy{StatPrefix: l.Name,
		TunnelingConfig: &tcpproxyv3.TcpProxy_TunnelingConfig{Hostname: tunnelToClusterAuthority}}
	if len(names) == 1 {
		tp.ClusterSpecifier = &tcpproxyv3.TcpProxy_Cluster{Cluster: names[0]}
	} else {
		wc := &tcpproxyv3.TcpProxy_WeightedCluster{}
		for _, n := range names {
			wc.Clusters = append(wc.Clusters, &tcpproxyv3.TcpProxy_WeightedCluster_ClusterWeight{Name: n, Weight: 1})
		}
		tp.ClusterSpecifier = &tcpproxyv3.TcpProxy_WeightedClusters{WeightedClusters: wc}
	}
	b.addListener(socketListener(l.Name, l.Addr, nil, &listenerv3.FilterChain{
		Filters: []*listenerv3.Filter{networkFilter(nameTCPProxy, tp)}}))
	return nil
}

// nodeOutboundWaypoint: one source pod's plaintext → HBONE to the waypoint,
// :authority the service's name and port.
func (b *builder) nodeOutboundWaypoint(l topology.Listener) error {
	wp := b.topo.ProxyByRole(topology.RoleWaypoint)
	if wp == nil || wp.Listener(topology.ListenerHBONE) == nil {
		return fmt.Errorf("waypoint mode without a waypoint")
	}
	wl := wp.Listener(topology.ListenerHBONE)
	svc, err := b.service(l.Service)
	if err != nil {
		return err
	}
	hname := hboneCluster("waypoint", l.Source)
	b.addListener(socketListener(l.Name, l.Addr, nil, &listenerv3.FilterChain{
		Filters: []*listenerv3.Filter{tcpProxy(l.Name, hname, serviceAuthority(svc))}}))
	b.addCluster(b.hboneUpstream(hname, wl.Addr, l.Identity, wl.Identity))
	return nil
}

// hboneChain terminates HBONE on l: TLS 1.3 only with a client
// certificate, one filter chain per identity l presents, chosen by the
// SNI the peer asks for (topology.HBONESNI), then the CONNECT-terminating HCM.
func (b *builder) hboneChain(l topology.Listener, h *hcmv3.HttpConnectionManager) *listenerv3.Listener {
	var chains []*listenerv3.FilterChain
	for _, id := range l.Identities {
		match := tlsOnly()
		match.ServerNames = []string{topology.HBONESNI(id)}
		chains = append(chains, &listenerv3.FilterChain{
			FilterChainMatch: match, TransportSocket: b.downstreamMTLS(id, true, "h2"),
			Filters: []*listenerv3.Filter{networkFilter(nameHCM, h)}})
	}
	return socketListener(l.Name, l.Addr, tlsInspector(), chains...)
}

// nodeInbound: HBONE → the pod named by :authority, only pods of this
// node (else the ORIGINAL_DST cluster would be an open proxy), with the
// ALLOW rules on each stream.
func (b *builder) nodeInbound(l topology.Listener) error {
	var domains []string
	for _, pod := range b.topo.ServerPods() { // every service's
		if pod.Node == b.p.Node {
			domains = append(domains, pod.Addr.String()+":*")
		}
	}
	if len(domains) == 0 {
		return fmt.Errorf("HBONE listener on node %d, which has no server pod", b.p.Node)
	}
	routes := routeTable(l.Name, &routev3.VirtualHost{Name: "node_pods", Domains: domains,
		Routes: []*routev3.Route{connectRoute(virtualInboundCluster)}})
	b.addListener(b.hboneChain(l, connectHCM(l.Name, routes, hboneRBAC(b.topo.Policies))))
	b.addCluster(&clusterv3.Cluster{Name: virtualInboundCluster,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_ORIGINAL_DST},
		LbPolicy:             clusterv3.Cluster_CLUSTER_PROVIDED, ConnectTimeout: durationpb.New(connectTimeout),
		CircuitBreakers: circuitBreakers(),
		LbConfig: &clusterv3.Cluster_OriginalDstLbConfig_{OriginalDstLbConfig: &clusterv3.Cluster_OriginalDstLbConfig{
			UseHttpHeader: true, HttpHeaderName: ":authority"}},
		UpstreamBindConfig: &corev3.BindConfig{SourceAddress: &corev3.SocketAddress{Address: b.p.Addr.String(),
			PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 0}}}})
	return nil
}

// waypoint: connect_terminate (HBONE, ALLOW rules on the source workload;
// one virtual host per service, by the CONNECT :authority) →
// main_internal[_<svc>] (L7: /admin → 403, everything else round robin
// over the service's replicas with Istio's retries, x-served-by added;
// tcp_proxy with protocol tcp) → connect_originate_nodeN[_<svc>] → HBONE
// with the waypoint's certificate.
func (b *builder) waypoint(l topology.Listener) error {
	var vhosts []*routev3.VirtualHost
	for _, svc := range b.topo.Services {
		authority := serviceAuthority(svc)
		internal, cname := b.waypointL7(svc)
		vhosts = append(vhosts, &routev3.VirtualHost{Name: authority, Domains: []string{authority},
			Routes: []*routev3.Route{connectRoute(internal)}})
		if err := b.originateTo(svc, cname); err != nil {
			return err
		}
	}
	b.addListener(b.hboneChain(l, connectHCM(l.Name, routeTable(l.Name, vhosts...), hboneRBAC(b.topo.Policies))))
	return nil
}

// waypointL7 adds the waypoint's L7 stage for svc: the internal listener
// main_internal[_<svc>] and its cluster (/admin → 403, everything else
// round robin over svc's replicas in cluster cname with Istio's retries,
// x-served-by added; tcp_proxy with protocol tcp). The caller adds cname.
func (b *builder) waypointL7(svc topology.Service) (internal, cname string) {
	internal, cname = mainInternal+svc.Suffix, serviceCluster(svc)
	b.addCluster(cluster(internal, netip.Addr{}, endpoint(internalAddr(internal, ""))))
	var filter *listenerv3.Filter
	if b.tcp {
		filter = tcpProxy(internal, cname, "")
	} else {
		admin := &routev3.Route{Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/admin"}},
			Action: &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{Status: 403}}}
		vh := &routev3.VirtualHost{Name: serviceAuthority(svc), Domains: []string{"*"},
			Routes: []*routev3.Route{admin, prefixRoute(cname, istioRetries())},
			ResponseHeadersToAdd: []*corev3.HeaderValueOption{{Header: &corev3.HeaderValue{
				Key: "x-served-by", Value: b.p.Identity.ServiceAccount + "." + b.p.Identity.Namespace}}}}
		filter = networkFilter(nameHCM, hcm(internal, routeTable(internal, vh), nil))
	}
	b.addListener(internalListener(internal, nil, &listenerv3.FilterChain{Filters: []*listenerv3.Filter{filter}}))
	return internal, cname
}

// gateway: HTTPS from the load generator (the gateway's serving
// certificate) → the mesh as a client: the app directly (no mesh), the
// server sidecars with mTLS (sidecar), or the node proxy's listener for the
// gateway (ambient, waypoint), which carries it over HBONE.
func (b *builder) gateway(l topology.Listener) error {
	svc := b.topo.Service
	cname := serviceCluster(svc)
	var alpn []string
	if !b.tcp {
		alpn = []string{"h2", "http/1.1"}
	}
	b.addListener(socketListener(l.Name, l.Addr, nil, &listenerv3.FilterChain{
		TransportSocket: b.servingTLS(b.certs.Serving[b.p.Name], alpn...),
		Filters:         []*listenerv3.Filter{b.appFilter(svc, l.Name, cname, true)}}))
	switch b.mode {
	case topology.ModeNone:
		var eps []netip.AddrPort
		for _, pod := range b.topo.ServicePods(svc.Name) {
			eps = append(eps, pod.AppAddr())
		}
		b.addCluster(cluster(cname, b.p.Addr, sockEndpoints(eps)...))
	case topology.ModeSidecar:
		c, err := b.sidecarCluster(svc, b.p.Addr, b.p.Identity)
		if err != nil {
			return err
		}
		b.addCluster(c)
	default:
		if b.topo.InPod != nil {
			c, err := b.gatewayInPod(svc, cname)
			if err != nil {
				return err
			}
			b.addCluster(c)
			return nil
		}
		np := b.topo.NodeProxy(b.p.Node)
		var via *topology.Listener
		if np != nil {
			for i := range np.Listeners {
				if np.Listeners[i].Source == b.p.Name {
					via = &np.Listeners[i]
				}
			}
		}
		if via == nil {
			return fmt.Errorf("no node proxy listener carries the gateway's traffic on node %d", b.p.Node)
		}
		b.addCluster(cluster(cname, b.p.Addr, endpoint(sockAddr(via.Addr))))
	}
	return nil
}
