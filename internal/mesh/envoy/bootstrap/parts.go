package bootstrap

import (
	"fmt"
	"math"
	"net/netip"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	httprbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	originaldstv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/original_dst/v3"
	tlsinspectorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	netrbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/rbac/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	internalupstreamv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/internal_upstream/v3"
	rawbufferv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/raw_buffer/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	metadatav3 "github.com/envoyproxy/go-control-plane/envoy/type/metadata/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/meshbench/meshbench/internal/mesh/topology"
)

// Extension names Envoy knows the typed configs by.
const (
	nameHCM              = "envoy.filters.network.http_connection_manager"
	nameTCPProxy         = "envoy.filters.network.tcp_proxy"
	nameNetworkRBAC      = "envoy.filters.network.rbac"
	nameHTTPRBAC         = "envoy.filters.http.rbac"
	nameRouter           = "envoy.filters.http.router"
	nameTLSInspector     = "envoy.filters.listener.tls_inspector"
	nameOriginalDst      = "envoy.filters.listener.original_dst"
	nameTLS              = "envoy.transport_sockets.tls"
	nameInternalUpstream = "envoy.transport_sockets.internal_upstream"
	nameRawBuffer        = "envoy.transport_sockets.raw_buffer"
	nameInternalListener = "envoy.bootstrap.internal_listener"
	nameHTTPOptions      = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
	nameMaxConnections   = "envoy.resource_monitors.global_downstream_max_connections"
)

// Istio's defaults.
const (
	connectTimeout = 10 * time.Second // Istio's cluster connect timeout
	// maxThreshold is Istio's default circuit-breaker threshold, 2^32−1:
	// with Envoy's defaults (1024) an open-loop load melts down (LAB.md §5).
	maxThreshold = math.MaxUint32
	// maxDownstreamConnections caps each Envoy's downstream connections;
	// configuring it silences Envoy's start-up warning about having none.
	maxDownstreamConnections = 1_000_000
	// istioRetryOn is Istio's default retry policy for HTTP routes.
	istioRetryOn = "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes"
)

// ALPN values Istio sends between sidecars.
const (
	alpnIstioHTTP11 = "istio-http/1.1"
	alpnIstioH2     = "istio-h2"
	alpnIstioTCP    = "istio"
)

// typed wraps a message in an Any; only messages of linked-in types reach
// it, so failing is a programming error.
func typed(m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		panic(fmt.Sprintf("bootstrap: wrapping %T: %v", m, err))
	}
	return a
}

func sockAddr(ap netip.AddrPort) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address: ap.Addr().String(), PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(ap.Port())}}}}
}

func internalAddr(listener, endpointID string) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_EnvoyInternalAddress{EnvoyInternalAddress: &corev3.EnvoyInternalAddress{
		AddressNameSpecifier: &corev3.EnvoyInternalAddress_ServerListenerName{ServerListenerName: listener}, EndpointId: endpointID}}}
}

// socketListener is a listener bound to ap, with SO_REUSEPORT off so an
// address clash fails loudly (LAB.md §5).
func socketListener(name string, ap netip.AddrPort, filters []*listenerv3.ListenerFilter, chains ...*listenerv3.FilterChain) *listenerv3.Listener {
	return &listenerv3.Listener{Name: name, Address: sockAddr(ap), EnableReusePort: wrapperspb.Bool(false),
		ListenerFilters: filters, FilterChains: chains}
}

// internalListener is an in-process listener that clusters reach through
// envoy_internal_address endpoints.
func internalListener(name string, filters []*listenerv3.ListenerFilter, chains ...*listenerv3.FilterChain) *listenerv3.Listener {
	return &listenerv3.Listener{Name: name, ListenerSpecifier: &listenerv3.Listener_InternalListener{
		InternalListener: &listenerv3.Listener_InternalListenerConfig{}}, ListenerFilters: filters, FilterChains: chains}
}

func listenerFilter(name string, m proto.Message) *listenerv3.ListenerFilter {
	return &listenerv3.ListenerFilter{Name: name, ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: typed(m)}}
}

func tlsInspector() []*listenerv3.ListenerFilter {
	return []*listenerv3.ListenerFilter{listenerFilter(nameTLSInspector, &tlsinspectorv3.TlsInspector{})}
}

func originalDst() []*listenerv3.ListenerFilter {
	return []*listenerv3.ListenerFilter{listenerFilter(nameOriginalDst, &originaldstv3.OriginalDst{})}
}

func networkFilter(name string, m proto.Message) *listenerv3.Filter {
	return &listenerv3.Filter{Name: name, ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: typed(m)}}
}

// tlsOnly matches connections the TLS inspector saw starting with a TLS
// ClientHello; plaintext finds no filter chain and is closed.
func tlsOnly() *listenerv3.FilterChainMatch {
	return &listenerv3.FilterChainMatch{TransportProtocol: "tls"}
}

func tcpProxy(statPrefix, cluster, tunnelHost string) *listenerv3.Filter {
	tp := &tcpproxyv3.TcpProxy{StatPrefix: statPrefix, ClusterSpecifier: &tcpproxyv3.TcpProxy_Cluster{Cluster: cluster}}
	if tunnelHost != "" {
		tp.TunnelingConfig = &tcpproxyv3.TcpProxy_TunnelingConfig{Hostname: tunnelHost}
	}
	return networkFilter(nameTCPProxy, tp)
}

func httpFilter(name string, m proto.Message) *hcmv3.HttpFilter {
	return &hcmv3.HttpFilter{Name: name, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: typed(m)}}
}

// hcm is an HTTP connection manager with an inline route table; rbac, when
// not nil, runs before the router.
func hcm(statPrefix string, routes *routev3.RouteConfiguration, rbac *rbacv3.RBAC) *hcmv3.HttpConnectionManager {
	var filters []*hcmv3.HttpFilter
	if rbac != nil {
		filters = append(filters, httpFilter(nameHTTPRBAC, &httprbacv3.RBAC{Rules: rbac}))
	}
	filters = append(filters, httpFilter(nameRouter, &routerv3.Router{}))
	return &hcmv3.HttpConnectionManager{StatPrefix: statPrefix, CodecType: hcmv3.HttpConnectionManager_AUTO,
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: routes}, HttpFilters: filters}
}

// connectHCM terminates HBONE: HTTP/2 CONNECT streams, each one tunnelled
// TCP connection (LAB.md §5: allow_connect, upgrade_configs CONNECT and a
// connect_matcher route with connect_config, all three). Streams never
// time out for idleness, so long-lived tunnels survive.
func connectHCM(statPrefix string, routes *routev3.RouteConfiguration, rbac *rbacv3.RBAC) *hcmv3.HttpConnectionManager {
	h := hcm(statPrefix, routes, rbac)
	h.CodecType = hcmv3.HttpConnectionManager_HTTP2
	h.Http2ProtocolOptions = &corev3.Http2ProtocolOptions{AllowConnect: true}
	h.UpgradeConfigs = []*hcmv3.HttpConnectionManager_UpgradeConfig{{UpgradeType: "CONNECT"}}
	h.StreamIdleTimeout = durationpb.New(0)
	return h
}

// connectRoute terminates CONNECT and sends the tunnelled bytes to cluster.
func connectRoute(cluster string) *routev3.Route {
	return &routev3.Route{
		Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_ConnectMatcher_{ConnectMatcher: &routev3.RouteMatch_ConnectMatcher{}}},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{
			ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: cluster},
			UpgradeConfigs: []*routev3.RouteAction_UpgradeConfig{{UpgradeType: "CONNECT",
				ConnectConfig: &routev3.RouteAction_UpgradeConfig_ConnectConfig{}}},
			Timeout: durationpb.New(0)}}}
}

// prefixRoute sends every request to cluster, with no route timeout (as
// Istio) and an optional retry policy.
func prefixRoute(cluster string, retry *routev3.RetryPolicy) *routev3.Route {
	return &routev3.Route{
		Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{
			ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: cluster},
			Timeout:          durationpb.New(0), RetryPolicy: retry}}}
}

func routeTable(name string, vhosts ...*routev3.VirtualHost) *routev3.RouteConfiguration {
	return &routev3.RouteConfiguration{Name: name, VirtualHosts: vhosts}
}

func circuitBreakers() *clusterv3.CircuitBreakers {
	return &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{{
		MaxConnections: wrapperspb.UInt32(maxThreshold), MaxPendingRequests: wrapperspb.UInt32(maxThreshold),
		MaxRequests: wrapperspb.UInt32(maxThreshold), MaxRetries: wrapperspb.UInt32(maxThreshold)}}}
}

// cluster is a STATIC round-robin cluster with Istio's connect timeout and
// circuit breakers, originating from bind (port 0) when bind is valid.
func cluster(name string, bind netip.Addr, endpoints ...*endpointv3.LbEndpoint) *clusterv3.Cluster {
	c := &clusterv3.Cluster{Name: name,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC},
		ConnectTimeout:       durationpb.New(connectTimeout), LbPolicy: clusterv3.Cluster_ROUND_ROBIN,
		CircuitBreakers: circuitBreakers(),
		LoadAssignment: &endpointv3.ClusterLoadAssignment{ClusterName: name,
			Endpoints: []*endpointv3.LocalityLbEndpoints{{LbEndpoints: endpoints}}}}
	if bind.IsValid() {
		c.UpstreamBindConfig = &corev3.BindConfig{SourceAddress: &corev3.SocketAddress{Address: bind.String(),
			PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 0}}}
	}
	return c
}

func endpoint(addr *corev3.Address) *endpointv3.LbEndpoint {
	return &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{Address: addr}}}
}

func sockEndpoints(aps []netip.AddrPort) []*endpointv3.LbEndpoint {
	out := make([]*endpointv3.LbEndpoint, len(aps))
	for i, ap := range aps {
		out[i] = endpoint(sockAddr(ap))
	}
	return out
}

// originalDstEndpoint reaches internal listener `listener` and hands it
// dst as the local (destination) address: the original_dst listener filter
// there restores it from the passed-through host metadata.
func originalDstEndpoint(listener string, dst netip.AddrPort) *endpointv3.LbEndpoint {
	e := endpoint(internalAddr(listener, dst.String()))
	e.Metadata = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{
		nameOriginalDst: {Fields: map[string]*structpb.Value{"local": structpb.NewStringValue(dst.String())}}}}
	return e
}

// passthroughOriginalDst is the transport socket of a cluster of
// originalDstEndpoints: it passes the host metadata to the internal listener.
func passthroughOriginalDst() *corev3.TransportSocket {
	return &corev3.TransportSocket{Name: nameInternalUpstream, ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: typed(
		&internalupstreamv3.InternalUpstreamTransport{
			PassthroughMetadata: []*internalupstreamv3.InternalUpstreamTransport_MetadataValueSource{{
				Kind: &metadatav3.MetadataKind{Kind: &metadatav3.MetadataKind_Host_{Host: &metadatav3.MetadataKind_Host{}}},
				Name: nameOriginalDst}},
			TransportSocket: &corev3.TransportSocket{Name: nameRawBuffer,
				ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: typed(&rawbufferv3.RawBuffer{})}}})}}
}

// http2Upstream makes c speak HTTP/2 with CONNECT allowed (HBONE).
func http2Upstream(c *clusterv3.Cluster) {
	http2Options(c, &corev3.Http2ProtocolOptions{AllowConnect: true})
}

// grpcUpstream makes c speak HTTP/2 to a gRPC app.
func grpcUpstream(c *clusterv3.Cluster) { http2Options(c, &corev3.Http2ProtocolOptions{}) }

func http2Options(c *clusterv3.Cluster, o *corev3.Http2ProtocolOptions) {
	c.TypedExtensionProtocolOptions = map[string]*anypb.Any{nameHTTPOptions: typed(&httpv3.HttpProtocolOptions{
		UpstreamProtocolOptions: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
			ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{Http2ProtocolOptions: o}}}})}
}

func exact(s string) *matcherv3.StringMatcher {
	return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: s}}
}

func prefix(s string) *matcherv3.StringMatcher {
	return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: s}}
}

// meshPrefix accepts any identity of the trust domain (the server side of
// Istio's mTLS; authorization is RBAC's job).
var meshPrefix = "spiffe://" + topology.TrustDomain + "/"

// tlsVersions are TLS 1.2–1.3 (Istio's ISTIO_MUTUAL) or 1.3 only (HBONE).
// Envoy's client maximum is 1.2 unless set (LAB.md §5).
func tlsVersions(only13 bool) *tlsv3.TlsParameters {
	p := &tlsv3.TlsParameters{TlsMinimumProtocolVersion: tlsv3.TlsParameters_TLSv1_2, TlsMaximumProtocolVersion: tlsv3.TlsParameters_TLSv1_3}
	if only13 {
		p.TlsMinimumProtocolVersion = tlsv3.TlsParameters_TLSv1_3
	}
	return p
}

// commonTLS presents kp and, when sans is not nil, verifies the peer's
// chain against the CA and its URI SAN against sans.
func (b *builder) commonTLS(kp KeyPair, only13 bool, alpn []string, san *matcherv3.StringMatcher) *tlsv3.CommonTlsContext {
	c := &tlsv3.CommonTlsContext{TlsParams: tlsVersions(only13), AlpnProtocols: alpn,
		TlsCertificates: []*tlsv3.TlsCertificate{{
			CertificateChain: &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: kp.CertFile}},
			PrivateKey:       &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: kp.KeyFile}}}}}
	if san != nil {
		c.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
			TrustedCa: &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: b.certs.CAFile}},
			MatchTypedSubjectAltNames: []*tlsv3.SubjectAltNameMatcher{{
				SanType: tlsv3.SubjectAltNameMatcher_URI, Matcher: san}}}}
	}
	return c
}

// upstreamTLS is a client mTLS context presenting id and accepting only
// the peer identity peer (secure naming).
func (b *builder) upstreamTLS(id, peer topology.Identity, only13 bool, sni string, alpn ...string) *corev3.TransportSocket {
	return &corev3.TransportSocket{Name: nameTLS, ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: typed(
		&tlsv3.UpstreamTlsContext{Sni: sni,
			CommonTlsContext: b.commonTLS(b.certs.Workloads[id], only13, alpn, exact(peer.SPIFFE()))})}}
}

// downstreamMTLS is a server context presenting id and requiring a client
// certificate from any identity of the trust domain.
func (b *builder) downstreamMTLS(id topology.Identity, only13 bool, alpn ...string) *corev3.TransportSocket {
	return &corev3.TransportSocket{Name: nameTLS, ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: typed(
		&tlsv3.DownstreamTlsContext{RequireClientCertificate: wrapperspb.Bool(true),
			CommonTlsContext: b.commonTLS(b.certs.Workloads[id], only13, alpn, prefix(meshPrefix))})}}
}

// servingTLS is a plain HTTPS server context (no client certificate).
func (b *builder) servingTLS(kp KeyPair, alpn ...string) *corev3.TransportSocket {
	return &corev3.TransportSocket{Name: nameTLS, ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: typed(
		&tlsv3.DownstreamTlsContext{CommonTlsContext: b.commonTLS(kp, false, alpn, nil)})}}
}

func principal(p topology.Principal) *rbacv3.Principal {
	m := exact(p.Exact)
	if p.Exact == "" {
		m = prefix(p.Prefix)
	}
	return &rbacv3.Principal{Identifier: &rbacv3.Principal_Authenticated_{Authenticated: &rbacv3.Principal_Authenticated{PrincipalName: m}}}
}

// rbacRules renders the ALLOW rules; port(p) gives the permission matching
// destination port p in the flavour at hand. nil when there are no rules.
func rbacRules(policies []topology.Policy, port func(int) *rbacv3.Permission, extra ...int) *rbacv3.RBAC {
	if len(policies) == 0 {
		return nil
	}
	r := &rbacv3.RBAC{Action: rbacv3.RBAC_ALLOW, Policies: map[string]*rbacv3.Policy{}}
	for _, pol := range policies {
		perm := &rbacv3.Permission{Rule: &rbacv3.Permission_Any{Any: true}}
		if len(pol.Ports) > 0 {
			var ors []*rbacv3.Permission
			for _, p := range append(append([]int(nil), extra...), pol.Ports...) {
				ors = append(ors, port(p))
			}
			perm = &rbacv3.Permission{Rule: &rbacv3.Permission_OrRules{OrRules: &rbacv3.Permission_Set{Rules: ors}}}
		}
		r.Policies[pol.Name] = &rbacv3.Policy{Permissions: []*rbacv3.Permission{perm},
			Principals: []*rbacv3.Principal{principal(pol.Principal)}}
	}
	return r
}

// networkRBAC is the sidecar flavour (LAB.md §(e)1): a network filter
// before the HCM; the port it sees is the inbound listener's, so every
// port-restricted rule also lists 15006.
func networkRBAC(statPrefix string, policies []topology.Policy) *listenerv3.Filter {
	rules := rbacRules(policies, func(p int) *rbacv3.Permission {
		return &rbacv3.Permission{Rule: &rbacv3.Permission_DestinationPort{DestinationPort: uint32(p)}}
	}, topology.PortInbound)
	return networkFilter(nameNetworkRBAC, &netrbacv3.RBAC{StatPrefix: statPrefix, Rules: rules})
}

// hboneRBAC is the ambient flavour (LAB.md §(e)2): HTTP RBAC on each
// CONNECT stream, the port taken from the :authority suffix.
func hboneRBAC(policies []topology.Policy) *rbacv3.RBAC {
	return rbacRules(policies, func(p int) *rbacv3.Permission {
		return &rbacv3.Permission{Rule: &rbacv3.Permission_Header{Header: &routev3.HeaderMatcher{Name: ":authority",
			HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{
				MatchPattern: &matcherv3.StringMatcher_Suffix{Suffix: fmt.Sprintf(":%d", p)}}}}}}
	})
}
