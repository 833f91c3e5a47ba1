package controlplane

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	pbdst "github.com/linkerd/linkerd2-proxy-api/go/destination"
	pbroute "github.com/linkerd/linkerd2-proxy-api/go/http_route"
	pbin "github.com/linkerd/linkerd2-proxy-api/go/inbound"
	pbmeta "github.com/linkerd/linkerd2-proxy-api/go/meta"
	pbnet "github.com/linkerd/linkerd2-proxy-api/go/net"
	pbout "github.com/linkerd/linkerd2-proxy-api/go/outbound"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/meshbench/meshbench/internal/mesh/topology"
)

// Tunables of the answers, Linkerd's defaults where it has them.
const (
	// detectTimeout is how long a proxy waits for a protocol to show.
	detectTimeout = 10 * time.Second
	// queueCapacity and failfastTimeout are each backend's request queue.
	queueCapacity   = 100
	failfastTimeout = 3 * time.Second
	// ewmaRTT and ewmaDecay are the balancer's PeakEWMA defaults.
	ewmaRTT   = 30 * time.Millisecond
	ewmaDecay = 10 * time.Second
	// endpointWeight is every endpoint's weight (all equal).
	endpointWeight = 10000
)

// Default policy names (Linkerd's "default" authorization policies).
const (
	AllAuthenticated   = "all-authenticated"
	AllUnauthenticated = "all-unauthenticated"
)

// ---------- addresses ----------

func ipAddr(a netip.Addr) *pbnet.IPAddress {
	if a.Is4() {
		b := a.As4()
		return &pbnet.IPAddress{Ip: &pbnet.IPAddress_Ipv4{Ipv4: binary.BigEndian.Uint32(b[:])}}
	}
	b := a.As16()
	return &pbnet.IPAddress{Ip: &pbnet.IPAddress_Ipv6{Ipv6: &pbnet.IPv6{
		First: binary.BigEndian.Uint64(b[:8]), Last: binary.BigEndian.Uint64(b[8:])}}}
}

func tcpAddr(a netip.AddrPort) *pbnet.TcpAddress {
	return &pbnet.TcpAddress{Ip: ipAddr(a.Addr()), Port: uint32(a.Port())}
}

// addrPort decodes a TcpAddress; false when it has no IP or port.
func addrPort(t *pbnet.TcpAddress) (netip.AddrPort, bool) {
	if t == nil || t.GetIp() == nil || t.GetPort() == 0 || t.GetPort() > 65535 {
		return netip.AddrPort{}, false
	}
	switch ip := t.GetIp().GetIp().(type) {
	case *pbnet.IPAddress_Ipv4:
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], ip.Ipv4)
		return netip.AddrPortFrom(netip.AddrFrom4(b), uint16(t.GetPort())), true
	case *pbnet.IPAddress_Ipv6:
		var b [16]byte
		binary.BigEndian.PutUint64(b[:8], ip.Ipv6.GetFirst())
		binary.BigEndian.PutUint64(b[8:], ip.Ipv6.GetLast())
		return netip.AddrPortFrom(netip.AddrFrom16(b).Unmap(), uint16(t.GetPort())), true
	}
	return netip.AddrPort{}, false
}

func defaultMeta(name string) *pbmeta.Metadata {
	return &pbmeta.Metadata{Kind: &pbmeta.Metadata_Default{Default: name}}
}

func resourceMeta(group, kind, name, namespace string, port int) *pbmeta.Metadata {
	return &pbmeta.Metadata{Kind: &pbmeta.Metadata_Resource{Resource: &pbmeta.Resource{
		Group: group, Kind: kind, Name: name, Namespace: namespace, Port: uint32(port)}}}
}

// ---------- destination ----------

type destination struct {
	pbdst.UnimplementedDestinationServer
	s *Server
}

// endpoint is w listening on port: with its TLS identity and the HTTP/2
// hint when a proxy runs beside it (that is what turns on mTLS and h2
// between the proxies), plain otherwise.
func endpoint(w Workload, port int) *pbdst.WeightedAddr {
	a := &pbdst.WeightedAddr{
		Addr:         tcpAddr(netip.AddrPortFrom(w.IP, uint16(port))),
		Weight:       endpointWeight,
		MetricLabels: map[string]string{"namespace": w.Identity.Namespace, "pod": w.Name, "serviceaccount": w.Identity.ServiceAccount},
	}
	if w.Meshed {
		name := Name(w.Identity)
		a.TlsIdentity = &pbdst.TlsIdentity{
			Strategy:   &pbdst.TlsIdentity_DnsLikeIdentity_{DnsLikeIdentity: &pbdst.TlsIdentity_DnsLikeIdentity{Name: name}},
			ServerName: &pbdst.TlsIdentity_DnsLikeIdentity{Name: name},
		}
		a.ProtocolHint = &pbdst.ProtocolHint{Protocol: &pbdst.ProtocolHint_H2_{H2: &pbdst.ProtocolHint_H2{}}}
	}
	return a
}

// resolve answers a destination path: a service's authority (its
// workloads on the target port) or a workload's IP:PORT.
func (s *Server) resolve(path string) *pbdst.Update {
	if svc, ok := s.serviceByAuthority(path); ok {
		ws := s.backends(svc)
		if len(ws) == 0 {
			return &pbdst.Update{Update: &pbdst.Update_NoEndpoints{NoEndpoints: &pbdst.NoEndpoints{Exists: true}}}
		}
		set := &pbdst.WeightedAddrSet{MetricLabels: map[string]string{"service": svc.Name, "namespace": svc.Namespace}}
		for _, w := range ws {
			set.Addrs = append(set.Addrs, endpoint(w, svc.TargetPort))
		}
		return &pbdst.Update{Update: &pbdst.Update_Add{Add: set}}
	}
	if ap, err := netip.ParseAddrPort(path); err == nil {
		if w, ok := s.workloadAt(ap.Addr().Unmap()); ok {
			return &pbdst.Update{Update: &pbdst.Update_Add{Add: &pbdst.WeightedAddrSet{
				Addrs:        []*pbdst.WeightedAddr{endpoint(w, int(ap.Port()))},
				MetricLabels: map[string]string{"namespace": w.Identity.Namespace},
			}}}
		}
	}
	return &pbdst.Update{Update: &pbdst.Update_NoEndpoints{NoEndpoints: &pbdst.NoEndpoints{Exists: false}}}
}

func (v destination) Get(req *pbdst.GetDestination, stream grpc.ServerStreamingServer[pbdst.Update]) error {
	up := v.s.resolve(req.GetPath())
	err := stream.Send(up)
	v.s.record("Destination/Get", req.GetPath(), err)
	if err != nil {
		return err
	}
	return hold(stream.Context())
}

// profile is the default service profile: the service's name, no routes,
// no retries, no traffic split (routing is left to the outbound policy).
func (s *Server) profile(path string) *pbdst.DestinationProfile {
	if svc, ok := s.serviceByAuthority(path); ok {
		return &pbdst.DestinationProfile{FullyQualifiedName: svc.Host()}
	}
	return &pbdst.DestinationProfile{}
}

func (v destination) GetProfile(req *pbdst.GetDestination, stream grpc.ServerStreamingServer[pbdst.DestinationProfile]) error {
	err := stream.Send(v.s.profile(req.GetPath()))
	v.s.record("Destination/GetProfile", req.GetPath(), err)
	if err != nil {
		return err
	}
	return hold(stream.Context())
}

// ---------- inbound policy ----------

type inbound struct {
	pbin.UnimplementedInboundServerPoliciesServer
	s *Server
}

func allNetworks() []*pbin.Network {
	return []*pbin.Network{
		{Net: &pbnet.IPNetwork{Ip: ipAddr(netip.IPv4Unspecified()), PrefixLen: 0}},
		{Net: &pbnet.IPNetwork{Ip: ipAddr(netip.IPv6Unspecified()), PrefixLen: 0}},
	}
}

// authn translates a rule's principal into Linkerd's: an exact SPIFFE ID
// spiffe://TD/ns/NS/sa/SA is the identity SA.NS.serviceaccount…; a
// namespace prefix spiffe://TD/ns/NS/ is the suffix NS.serviceaccount….
func authn(p topology.Principal) (*pbin.Authn, error) {
	root := "spiffe://" + topology.TrustDomain + "/ns/"
	ids := &pbin.Authn_PermitMeshTLS_PermitClientIdentities{}
	switch {
	case p.Exact != "":
		rest, ok := strings.CutPrefix(p.Exact, root)
		ns, sa, ok2 := strings.Cut(rest, "/sa/")
		if !ok || !ok2 || ns == "" || sa == "" || strings.Contains(sa, "/") {
			return nil, fmt.Errorf("principal %q: allowed spiffe://%s/ns/NS/sa/SA", p.Exact, topology.TrustDomain)
		}
		ids.Identities = []*pbin.Identity{{Name: Name(topology.Identity{Namespace: ns, ServiceAccount: sa})}}
	case p.Prefix != "":
		rest, ok := strings.CutPrefix(p.Prefix, root)
		ns, ok2 := strings.CutSuffix(rest, "/")
		if !ok || !ok2 || ns == "" || strings.Contains(ns, "/") {
			return nil, fmt.Errorf("principal prefix %q: allowed spiffe://%s/ns/NS/", p.Prefix, topology.TrustDomain)
		}
		ids.Suffixes = []*pbin.IdentitySuffix{{Parts: append([]string{ns}, strings.Split(IdentitySuffix, ".")...)}}
	default:
		return nil, fmt.Errorf("empty principal")
	}
	return &pbin.Authn{Permit: &pbin.Authn_MeshTLS{MeshTLS: &pbin.Authn_PermitMeshTLS{
		Clients: &pbin.Authn_PermitMeshTLS_Identities{Identities: ids}}}}, nil
}

// defaultAuthz is one of Linkerd's default policies for every network.
func defaultAuthz(name string) *pbin.Authz {
	a := &pbin.Authz{
		Networks: allNetworks(),
		Labels:   map[string]string{"group": "", "kind": "default", "name": name},
		Metadata: defaultMeta(name),
	}
	if name == AllUnauthenticated {
		a.Authentication = &pbin.Authn{Permit: &pbin.Authn_Unauthenticated{Unauthenticated: &pbin.Authn_PermitUnauthenticated{}}}
	} else {
		// mTLS from any identity: the empty suffix matches every name.
		a.Authentication = &pbin.Authn{Permit: &pbin.Authn_MeshTLS{MeshTLS: &pbin.Authn_PermitMeshTLS{
			Clients: &pbin.Authn_PermitMeshTLS_Identities{Identities: &pbin.Authn_PermitMeshTLS_PermitClientIdentities{
				Suffixes: []*pbin.IdentitySuffix{{}}}}}}}
	}
	return a
}

// server is the inbound policy of the workload ref on port: its admin
// port open to all, meshed clients on every port of a workload without
// policies, else one authorization per rule that covers the port (none
// covering it: everyone but localhost is refused).
func (s *Server) server(ref string, port int) (*pbin.Server, error) {
	w, ok := s.workload(ref)
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no workload %q", ref)
	}
	srv := &pbin.Server{Protocol: &pbin.ProxyProtocol{Kind: &pbin.ProxyProtocol_Detect_{Detect: &pbin.ProxyProtocol_Detect{
		Timeout: durationpb.New(detectTimeout)}}}}
	switch {
	case port == s.cfg.AdminPort:
		srv.Authorizations = []*pbin.Authz{defaultAuthz(AllUnauthenticated)}
		srv.Labels = map[string]string{"group": "", "kind": "default", "name": AllUnauthenticated}
	case !w.Policies:
		srv.Authorizations = []*pbin.Authz{defaultAuthz(AllAuthenticated)}
		srv.Labels = map[string]string{"group": "", "kind": "default", "name": AllAuthenticated}
	default:
		name := fmt.Sprintf("%s-%d", w.Name, port)
		srv.Labels = map[string]string{"group": "policy.linkerd.io", "kind": "server", "name": name}
		for _, r := range s.cfg.Rules {
			if len(r.Ports) > 0 && !slices.Contains(r.Ports, port) {
				continue
			}
			an, err := authn(r.Principal) // checked by New
			if err != nil {
				return nil, status.Error(codes.Internal, err.Error())
			}
			srv.Authorizations = append(srv.Authorizations, &pbin.Authz{
				Networks:       allNetworks(),
				Authentication: an,
				Labels:         map[string]string{"group": "policy.linkerd.io", "kind": "authorizationpolicy", "name": r.Name},
				Metadata:       resourceMeta("policy.linkerd.io", "AuthorizationPolicy", r.Name, w.Identity.Namespace, 0),
			})
		}
	}
	return srv, nil
}

func portSubject(req *pbin.PortSpec) string {
	return fmt.Sprintf("%s:%d", req.GetWorkload(), req.GetPort())
}

func (v inbound) GetPort(_ context.Context, req *pbin.PortSpec) (*pbin.Server, error) {
	srv, err := v.s.server(req.GetWorkload(), int(req.GetPort()))
	v.s.record("InboundServerPolicies/GetPort", portSubject(req), err)
	return srv, err
}

func (v inbound) WatchPort(req *pbin.PortSpec, stream grpc.ServerStreamingServer[pbin.Server]) error {
	srv, err := v.s.server(req.GetWorkload(), int(req.GetPort()))
	if err == nil {
		err = stream.Send(srv)
	}
	v.s.record("InboundServerPolicies/WatchPort", portSubject(req), err)
	if err != nil {
		return err
	}
	return hold(stream.Context())
}

// ---------- outbound policy ----------

type outbound struct {
	pbout.UnimplementedOutboundPoliciesServer
	s *Server
}

func queue() *pbout.Queue {
	return &pbout.Queue{Capacity: queueCapacity, FailfastTimeout: durationpb.New(failfastTimeout)}
}

// balancer is a backend balancing over the endpoints Destination/Get
// returns for path.
func balancer(meta *pbmeta.Metadata, path string) *pbout.Backend {
	return &pbout.Backend{Metadata: meta, Queue: queue(), Kind: &pbout.Backend_Balancer{Balancer: &pbout.Backend_BalanceP2C{
		Discovery: &pbout.Backend_EndpointDiscovery{Kind: &pbout.Backend_EndpointDiscovery_Dst{
			Dst: &pbout.Backend_EndpointDiscovery_DestinationGet{Path: path}}},
		Load: &pbout.Backend_BalanceP2C_PeakEwma_{PeakEwma: &pbout.Backend_BalanceP2C_PeakEwma{
			DefaultRtt: durationpb.New(ewmaRTT), Decay: durationpb.New(ewmaDecay)}},
	}}}
}

// policyFor is the outbound policy for one backend: the same default
// route for HTTP/1, HTTP/2 and opaque traffic.
func policyFor(meta *pbmeta.Metadata, be *pbout.Backend) *pbout.OutboundPolicy {
	route := &pbout.HttpRoute{
		Metadata: defaultMeta("http"),
		Rules: []*pbout.HttpRoute_Rule{{
			Matches: []*pbroute.HttpRouteMatch{{Path: &pbroute.PathMatch{Kind: &pbroute.PathMatch_Prefix{Prefix: "/"}}}},
			Backends: &pbout.HttpRoute_Distribution{Kind: &pbout.HttpRoute_Distribution_FirstAvailable_{
				FirstAvailable: &pbout.HttpRoute_Distribution_FirstAvailable{Backends: []*pbout.HttpRoute_RouteBackend{{Backend: be}}}}},
		}},
	}
	opaque := &pbout.OpaqueRoute{
		Metadata: defaultMeta("opaq"),
		Rules: []*pbout.OpaqueRoute_Rule{{
			Backends: &pbout.OpaqueRoute_Distribution{Kind: &pbout.OpaqueRoute_Distribution_FirstAvailable_{
				FirstAvailable: &pbout.OpaqueRoute_Distribution_FirstAvailable{Backends: []*pbout.OpaqueRoute_RouteBackend{{Backend: be}}}}},
		}},
	}
	return &pbout.OutboundPolicy{
		Metadata: meta,
		Protocol: &pbout.ProxyProtocol{Kind: &pbout.ProxyProtocol_Detect_{Detect: &pbout.ProxyProtocol_Detect{
			Timeout: durationpb.New(detectTimeout),
			Http1:   &pbout.ProxyProtocol_Http1{Routes: []*pbout.HttpRoute{route}},
			Http2:   &pbout.ProxyProtocol_Http2{Routes: []*pbout.HttpRoute{route}},
			Opaque:  &pbout.ProxyProtocol_Opaque{Routes: []*pbout.OpaqueRoute{opaque}},
		}}},
	}
}

func serviceMeta(svc Service) *pbmeta.Metadata {
	return resourceMeta("core", "Service", svc.Name, svc.Namespace, svc.Port)
}

// outboundPolicy answers a target: a service's VIP:port or authority
// (balanced over its workloads, found by Destination/Get), a workload's
// IP:port (forwarded to it, over mTLS when it is meshed), anything else
// forwarded as it is, in plaintext.
func (s *Server) outboundPolicy(req *pbout.TrafficSpec) (*pbout.OutboundPolicy, string, error) {
	switch t := req.GetTarget().(type) {
	case *pbout.TrafficSpec_Authority:
		svc, ok := s.serviceByAuthority(t.Authority)
		if !ok {
			return nil, t.Authority, status.Errorf(codes.NotFound, "no service %q", t.Authority)
		}
		return policyFor(serviceMeta(svc), balancer(serviceMeta(svc), svc.Authority())), t.Authority, nil
	case *pbout.TrafficSpec_Addr:
		ap, ok := addrPort(t.Addr)
		if !ok {
			return nil, "", status.Error(codes.InvalidArgument, "target address without IP or port")
		}
		if svc, ok := s.serviceAt(ap); ok {
			return policyFor(serviceMeta(svc), balancer(serviceMeta(svc), svc.Authority())), ap.String(), nil
		}
		if w, ok := s.workloadAt(ap.Addr()); ok {
			// A pod's own address: forwarded to it, with its identity
			// (mTLS) and the HTTP/2 hint when it is meshed. (A balancer
			// backend needs a name: the proxy panics on an IP path.)
			meta := resourceMeta("core", "Pod", w.Name, w.Identity.Namespace, int(ap.Port()))
			be := &pbout.Backend{Metadata: meta, Queue: queue(), Kind: &pbout.Backend_Forward{Forward: endpoint(w, int(ap.Port()))}}
			return policyFor(meta, be), ap.String(), nil
		}
		be := &pbout.Backend{Metadata: defaultMeta("forward"), Queue: queue(),
			Kind: &pbout.Backend_Forward{Forward: &pbdst.WeightedAddr{Addr: tcpAddr(ap), Weight: endpointWeight}}}
		return policyFor(defaultMeta("forward"), be), ap.String(), nil
	}
	return nil, "", status.Error(codes.InvalidArgument, "no target")
}

func (v outbound) Get(_ context.Context, req *pbout.TrafficSpec) (*pbout.OutboundPolicy, error) {
	p, subject, err := v.s.outboundPolicy(req)
	v.s.record("OutboundPolicies/Get", subject, err)
	return p, err
}

func (v outbound) Watch(req *pbout.TrafficSpec, stream grpc.ServerStreamingServer[pbout.OutboundPolicy]) error {
	p, subject, err := v.s.outboundPolicy(req)
	if err == nil {
		err = stream.Send(p)
	}
	v.s.record("OutboundPolicies/Watch", subject, err)
	if err != nil {
		return err
	}
	return hold(stream.Context())
}
