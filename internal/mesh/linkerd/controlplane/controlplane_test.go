package controlplane

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	pbdst "github.com/linkerd/linkerd2-proxy-api/go/destination"
	pbid "github.com/linkerd/linkerd2-proxy-api/go/identity"
	pbin "github.com/linkerd/linkerd2-proxy-api/go/inbound"
	pbout "github.com/linkerd/linkerd2-proxy-api/go/outbound"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/sys/pki"
)

// These tests call the APIs with grpc-go's client over a real loopback
// connection, to check each answer's content case by case; that the real
// linkerd2-proxy accepts the answers (ready, mTLS, 403s, gRPC) is tested
// in internal/mesh/linkerd against the proxy itself.

var (
	clientIP   = netip.MustParseAddr("10.97.1.10")
	server0IP  = netip.MustParseAddr("10.97.2.10")
	server1IP  = netip.MustParseAddr("10.97.2.11")
	plainIP    = netip.MustParseAddr("10.97.1.12")
	serverVIP  = netip.MustParseAddr("10.97.255.1")
	outsideIP  = netip.MustParseAddr("10.97.9.9")
	serverName = Name(topology.IdentityServer)
)

func testConfig(t *testing.T, policies int) Config {
	t.Helper()
	ca, err := pki.NewRootCA(pkix.Name{CommonName: "root.linkerd.cluster.local"}, pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return Config{
		CA: ca,
		Workloads: []Workload{
			{Name: "client", Identity: topology.IdentityClient, IP: clientIP, Meshed: true},
			{Name: "server-0", Identity: topology.IdentityServer, IP: server0IP, Meshed: true, Services: []string{"server"}, Policies: policies > 0},
			{Name: "server-1", Identity: topology.IdentityServer, IP: server1IP, Meshed: true, Services: []string{"server"}, Policies: policies > 0},
			{Name: "plain", Identity: topology.Identity{Namespace: "default", ServiceAccount: "plain"}, IP: plainIP, Services: []string{"server"}},
		},
		Services: []Service{
			{Name: "server", Namespace: "default", VIP: serverVIP, Port: 80, TargetPort: 8080},
			{Name: "empty", Namespace: "default", Port: 81, TargetPort: 8080},
		},
		Rules: topology.Rules(policies),
	}
}

// serve starts s on a loopback port and returns a client connection.
func serve(t *testing.T, s *Server) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Serve(lis)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func csrFor(t *testing.T, name string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: name}, DNSNames: []string{name}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// TestName: Linkerd's identity naming.
func TestName(t *testing.T) {
	if got := Name(topology.IdentityClient); got != "client.default.serviceaccount.identity.linkerd.cluster.local" {
		t.Errorf("Name = %q", got)
	}
}

// TestCertify signs a proxy's CSR for the identity its token is for and
// refuses every other request.
func TestCertify(t *testing.T) {
	s, err := New(testConfig(t, 0))
	if err != nil {
		t.Fatal(err)
	}
	c := pbid.NewIdentityClient(serve(t, s))
	clientName := Name(topology.IdentityClient)
	tok := s.Token("default:client")
	if tok == "" || tok == s.Token("default:server-0") {
		t.Fatalf("tokens %q, %q: want distinct non-empty ones", tok, s.Token("default:server-0"))
	}
	tests := []struct {
		name     string
		identity string
		token    string
		csr      []byte
		want     codes.Code
	}{
		// the proxy's request: its name, its token, a CSR for its name
		{"ok", clientName, tok, csrFor(t, clientName), codes.OK},
		// a token nobody was given
		{"unknown token", clientName, "forged", csrFor(t, clientName), codes.Unauthenticated},
		// another workload's token for this name
		{"other's token", clientName, s.Token("default:server-0"), csrFor(t, clientName), codes.PermissionDenied},
		// the right token, asking for another name
		{"other name", serverName, tok, csrFor(t, serverName), codes.PermissionDenied},
		// a CSR for another name than the one asked for
		{"csr for another name", clientName, tok, csrFor(t, serverName), codes.InvalidArgument},
		// not a CSR
		{"garbage csr", clientName, tok, []byte("not DER"), codes.InvalidArgument},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := c.Certify(ctx(t), &pbid.CertifyRequest{Identity: tc.identity, Token: []byte(tc.token), CertificateSigningRequest: tc.csr})
			if got := status.Code(err); got != tc.want {
				t.Fatalf("code %v (%v), want %v", got, err, tc.want)
			}
			if tc.want != codes.OK {
				return
			}
			cert, err := x509.ParseCertificate(resp.GetLeafCertificate())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cert.Verify(x509.VerifyOptions{DNSName: clientName, Roots: s.cfg.CA.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
				t.Errorf("leaf does not verify against the trust anchor for %s: %v", clientName, err)
			}
			if len(resp.GetIntermediateCertificates()) != 0 {
				t.Errorf("%d intermediates, want none (the anchor signs leaves)", len(resp.GetIntermediateCertificates()))
			}
			if !resp.GetValidUntil().AsTime().Equal(cert.NotAfter) || time.Until(cert.NotAfter) < 23*time.Hour {
				t.Errorf("valid_until %v, NotAfter %v: want equal and about 24 h ahead", resp.GetValidUntil().AsTime(), cert.NotAfter)
			}
		})
	}
	if n := len(s.Calls()); n != len(tests) {
		t.Errorf("%d calls recorded, want %d", n, len(tests))
	}
}

// first reads a watch's first message and cancels the watch.
func first[T any](t *testing.T, open func(context.Context) (grpc.ServerStreamingClient[T], error)) (*T, error) {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := open(c)
	if err != nil {
		return nil, err
	}
	return st.Recv()
}

// TestDestination resolves services and pod addresses.
func TestDestination(t *testing.T) {
	s, err := New(testConfig(t, 0))
	if err != nil {
		t.Fatal(err)
	}
	c := pbdst.NewDestinationClient(serve(t, s))
	tests := []struct {
		name  string
		path  string
		addrs []string // endpoints, "IP:PORT id|-" (- without TLS identity)
		none  string   // "exists" or "missing" for a no_endpoints answer
	}{
		// a service: its three backing pods on the target port, the
		// unmeshed one without identity and hint
		{"service", "server.default.svc.cluster.local:80", []string{"10.97.2.10:8080 " + serverName, "10.97.2.11:8080 " + serverName, "10.97.1.12:8080 -"}, ""},
		// the fully qualified form with a trailing dot
		{"fqdn", "server.default.svc.cluster.local.:80", []string{"10.97.2.10:8080 " + serverName, "10.97.2.11:8080 " + serverName, "10.97.1.12:8080 -"}, ""},
		// a service without pods
		{"empty service", "empty.default.svc.cluster.local:81", nil, "exists"},
		// the right name on a port the service does not have
		{"wrong port", "server.default.svc.cluster.local:8080", nil, "missing"},
		// a pod's address
		{"pod", "10.97.2.11:8080", []string{"10.97.2.11:8080 " + serverName}, ""},
		// nothing known
		{"unknown", "db.default.svc.cluster.local:5432", nil, "missing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			up, err := first(t, func(c2 context.Context) (grpc.ServerStreamingClient[pbdst.Update], error) {
				return c.Get(c2, &pbdst.GetDestination{Path: tc.path})
			})
			if err != nil {
				t.Fatal(err)
			}
			if tc.none != "" {
				ne := up.GetNoEndpoints()
				if ne == nil || ne.GetExists() != (tc.none == "exists") {
					t.Fatalf("update %v, want no_endpoints exists=%v", up, tc.none == "exists")
				}
				return
			}
			var got []string
			for _, a := range up.GetAdd().GetAddrs() {
				ap, _ := addrPort(a.GetAddr())
				id := "-"
				if a.GetTlsIdentity() != nil {
					id = a.GetTlsIdentity().GetDnsLikeIdentity().GetName()
					if a.GetTlsIdentity().GetServerName().GetName() != id {
						t.Errorf("%s: server name %q, want the identity", ap, a.GetTlsIdentity().GetServerName().GetName())
					}
					if a.GetProtocolHint().GetH2() == nil {
						t.Errorf("%s: no HTTP/2 hint", ap)
					}
				} else if a.GetProtocolHint() != nil {
					t.Errorf("%s: unmeshed endpoint with a protocol hint", ap)
				}
				got = append(got, ap.String()+" "+id)
			}
			if strings.Join(got, ",") != strings.Join(tc.addrs, ",") {
				t.Errorf("endpoints %v, want %v", got, tc.addrs)
			}
		})
	}
	// Profiles: the service's name for a service, empty otherwise.
	for path, want := range map[string]string{"server.default.svc.cluster.local:80": "server.default.svc.cluster.local", "10.97.2.10:8080": ""} {
		p, err := first(t, func(c2 context.Context) (grpc.ServerStreamingClient[pbdst.DestinationProfile], error) {
			return c.GetProfile(c2, &pbdst.GetDestination{Path: path})
		})
		if err != nil || p.GetFullyQualifiedName() != want || len(p.GetRoutes()) != 0 {
			t.Errorf("profile of %s: %v %v, want name %q and no routes", path, p, err, want)
		}
	}
}

// TestInbound: meshed clients by default, the rules by identity with
// --policies, the admin port open.
func TestInbound(t *testing.T) {
	clientName := Name(topology.IdentityClient)
	tests := []struct {
		name     string
		policies int
		ref      string
		port     uint32
		want     []string // per authorization: "NAME unauth|any|ID…|*.SUFFIX"
		code     codes.Code
	}{
		// no policies: any meshed identity on the app port
		{"default", 0, "default:server-0", 8080, []string{"all-authenticated any"}, codes.OK},
		// the admin port is open to everyone (probes, scrapes)
		{"admin", 4, "default:server-0", 4191, []string{"all-unauthenticated unauth"}, codes.OK},
		// four rules: those covering 8080 (allow-client, allow-waypoint, allow-ingress), by identity
		{"four rules on 8080", 4, "default:server-0", 8080, []string{
			"ns[default]-policy[allow-client]-rule[0] " + clientName,
			"ns[default]-policy[allow-waypoint]-rule[0] " + Name(topology.IdentityWaypoint),
			"ns[default]-policy[allow-ingress]-rule[0] " + Name(topology.IdentityIngress)}, codes.OK},
		// the monitoring port: allow-waypoint (any port) and the monitoring namespace by suffix
		{"four rules on 9090", 4, "default:server-0", uint32(topology.PortMonitoring), []string{
			"ns[default]-policy[allow-waypoint]-rule[0] " + Name(topology.IdentityWaypoint),
			"ns[default]-policy[allow-monitoring]-rule[0] *.monitoring.serviceaccount.identity.linkerd.cluster.local"}, codes.OK},
		// a workload without policies is not affected by them
		{"client with rules elsewhere", 4, "default:client", 8080, []string{"all-authenticated any"}, codes.OK},
		// one rule: the client only
		{"one rule", 1, "default:server-1", 8080, []string{"ns[default]-policy[allow-client]-rule[0] " + clientName}, codes.OK},
		// an unknown workload
		{"unknown", 0, "default:nobody", 8080, nil, codes.NotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(testConfig(t, tc.policies))
			if err != nil {
				t.Fatal(err)
			}
			c := pbin.NewInboundServerPoliciesClient(serve(t, s))
			srv, err := first(t, func(c2 context.Context) (grpc.ServerStreamingClient[pbin.Server], error) {
				return c.WatchPort(c2, &pbin.PortSpec{Workload: tc.ref, Port: tc.port})
			})
			if status.Code(err) != tc.code {
				t.Fatalf("code %v (%v), want %v", status.Code(err), err, tc.code)
			}
			if err != nil {
				return
			}
			if srv.GetProtocol().GetDetect().GetTimeout().AsDuration() <= 0 {
				t.Error("no detect timeout (the proxy requires one)")
			}
			var got []string
			for _, a := range srv.GetAuthorizations() {
				if len(a.GetNetworks()) != 2 {
					t.Errorf("%d networks, want 0.0.0.0/0 and ::/0", len(a.GetNetworks()))
				}
				name := a.GetMetadata().GetDefault()
				if r := a.GetMetadata().GetResource(); r != nil {
					name = r.GetName()
				}
				var who string
				switch {
				case a.GetAuthentication().GetUnauthenticated() != nil:
					who = "unauth"
				default:
					ids := a.GetAuthentication().GetMeshTLS().GetIdentities()
					for _, id := range ids.GetIdentities() {
						who += id.GetName()
					}
					for _, sfx := range ids.GetSuffixes() {
						if len(sfx.GetParts()) == 0 {
							who += "any"
						} else {
							who += "*." + strings.Join(sfx.GetParts(), ".")
						}
					}
				}
				got = append(got, name+" "+who)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("authorizations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			// GetPort answers the same.
			one, err := c.GetPort(ctx(t), &pbin.PortSpec{Workload: tc.ref, Port: tc.port})
			if err != nil || len(one.GetAuthorizations()) != len(srv.GetAuthorizations()) {
				t.Errorf("GetPort: %v %v", one, err)
			}
		})
	}
}

// TestOutbound: services balanced by name, pods forwarded with their
// identity, the rest forwarded plainly.
func TestOutbound(t *testing.T) {
	s, err := New(testConfig(t, 0))
	if err != nil {
		t.Fatal(err)
	}
	c := pbout.NewOutboundPoliciesClient(serve(t, s))
	addr := func(ap string) *pbout.TrafficSpec {
		return &pbout.TrafficSpec{SourceWorkload: "default:client", Target: &pbout.TrafficSpec_Addr{Addr: tcpAddr(netip.MustParseAddrPort(ap))}}
	}
	tests := []struct {
		name string
		spec *pbout.TrafficSpec
		want string // "balance PATH", "forward IP:PORT ID|-"
		code codes.Code
	}{
		// the service's VIP: balanced over what Destination/Get answers for its name
		{"vip", addr("10.97.255.1:80"), "balance server.default.svc.cluster.local:80", codes.OK},
		// the service by name (ingress mode)
		{"authority", &pbout.TrafficSpec{Target: &pbout.TrafficSpec_Authority{Authority: "server.default.svc.cluster.local:80"}}, "balance server.default.svc.cluster.local:80", codes.OK},
		// a meshed pod's address: forwarded with its identity (mTLS)
		{"meshed pod", addr("10.97.2.10:8080"), "forward 10.97.2.10:8080 " + serverName, codes.OK},
		// an unmeshed pod: forwarded in plaintext
		{"unmeshed pod", addr("10.97.1.12:8080"), "forward 10.97.1.12:8080 -", codes.OK},
		// outside the lab
		{"outside", addr(outsideIP.String() + ":443"), "forward 10.97.9.9:443 -", codes.OK},
		// the VIP on another port is not the service
		{"vip other port", addr("10.97.255.1:81"), "forward 10.97.255.1:81 -", codes.OK},
		// an unknown name
		{"unknown authority", &pbout.TrafficSpec{Target: &pbout.TrafficSpec_Authority{Authority: "db.default.svc.cluster.local:5432"}}, "", codes.NotFound},
		// no target
		{"no target", &pbout.TrafficSpec{}, "", codes.InvalidArgument},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := first(t, func(c2 context.Context) (grpc.ServerStreamingClient[pbout.OutboundPolicy], error) {
				return c.Watch(c2, tc.spec)
			})
			if status.Code(err) != tc.code {
				t.Fatalf("code %v (%v), want %v", status.Code(err), err, tc.code)
			}
			if err != nil {
				return
			}
			d := p.GetProtocol().GetDetect()
			if p.GetMetadata() == nil || d.GetTimeout() == nil || d.GetHttp1() == nil || d.GetHttp2() == nil || d.GetOpaque() == nil {
				t.Fatalf("policy lacks metadata, the detect timeout or one of http1/http2/opaque (each required by the proxy): %v", p)
			}
			h1 := d.GetHttp1().GetRoutes()[0].GetRules()[0].GetBackends().GetFirstAvailable().GetBackends()[0].GetBackend()
			op := d.GetOpaque().GetRoutes()[0].GetRules()[0].GetBackends().GetFirstAvailable().GetBackends()[0].GetBackend()
			if h1.GetMetadata() == nil || h1.GetQueue().GetCapacity() == 0 || h1.GetQueue().GetFailfastTimeout() == nil {
				t.Errorf("backend lacks metadata or queue: %v", h1)
			}
			describe := func(b *pbout.Backend) string {
				if bal := b.GetBalancer(); bal != nil {
					if bal.GetPeakEwma() == nil {
						return "balancer without load"
					}
					return "balance " + bal.GetDiscovery().GetDst().GetPath()
				}
				f := b.GetForward()
				ap, _ := addrPort(f.GetAddr())
				id := "-"
				if f.GetTlsIdentity() != nil {
					id = f.GetTlsIdentity().GetDnsLikeIdentity().GetName()
				}
				return "forward " + ap.String() + " " + id
			}
			if got := describe(h1); got != tc.want {
				t.Errorf("http/1 backend %q, want %q", got, tc.want)
			}
			if got := describe(op); got != tc.want {
				t.Errorf("opaque backend %q, want %q", got, tc.want)
			}
		})
	}
}

// TestValidate reports every problem at once.
func TestValidate(t *testing.T) {
	cfg := Config{
		Workloads: []Workload{
			{Name: "a", Identity: topology.IdentityClient, IP: clientIP},
			{Name: "a", Identity: topology.IdentityClient, IP: clientIP},
			{Name: "b", Identity: topology.Identity{Namespace: "default"}},
		},
		Services: []Service{{Name: "s", Namespace: "default", Port: 0, TargetPort: 8080}},
		Rules:    []topology.Policy{{Name: "odd", Principal: topology.Principal{Exact: "spiffe://other.domain/x"}}},
	}
	_, err := New(cfg)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"no CA", "given twice", "share IP", "needs a name, a namespace and a service account", "has no IP", "ports 1 to 65535", "rule odd"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
