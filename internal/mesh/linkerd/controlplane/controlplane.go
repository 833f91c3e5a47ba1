// Package controlplane is the lab's stand-in for Linkerd's control plane:
// the four gRPC APIs the real linkerd2-proxy cannot run without, served
// from the lab's static topology on the published Go types of
// github.com/linkerd/linkerd2-proxy-api.
//
//   - identity (io.linkerd.proxy.identity.Identity/Certify): signs a
//     proxy's CSR with the lab CA, for the name
//     SA.NS.serviceaccount.identity.linkerd.cluster.local, after checking
//     the proxy's token (one random token per workload, written in its
//     token file, as a service account token is in a cluster);
//   - destination (Destination/Get, GetProfile): a service's endpoints,
//     each with its TLS identity and an HTTP/2 protocol hint when it is
//     meshed (so two proxies talk mTLS and h2 to each other as in a
//     cluster); default service profiles;
//   - inbound policy (InboundServerPolicies/WatchPort, GetPort): meshed
//     clients allowed by default ("all-authenticated"), or, on workloads
//     with policies, one ALLOW rule per topology.Policy that covers the port,
//     by client identity, enforced by the proxy;
//   - outbound policy (OutboundPolicies/Watch, Get): a default HTTP/1,
//     HTTP/2 and opaque route to the service (or pod) behind the target
//     address, a plain forward for unknown targets.
//
// The configuration is static: every watch gets one answer and is held
// open until the proxy or Close ends it. It is not Linkerd's control
// plane (which needs the Kubernetes API): its CPU and memory are the
// lab's, to be shown apart and labelled so.
package controlplane

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	pbdst "github.com/linkerd/linkerd2-proxy-api/go/destination"
	pbid "github.com/linkerd/linkerd2-proxy-api/go/identity"
	pbin "github.com/linkerd/linkerd2-proxy-api/go/inbound"
	pbout "github.com/linkerd/linkerd2-proxy-api/go/outbound"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/sys/pki"
)

// IdentitySuffix ends every proxy identity: Linkerd's default identity
// trust domain under its "serviceaccount.identity" naming.
const IdentitySuffix = "serviceaccount.identity.linkerd.cluster.local"

// ServiceDomain ends every service's host name (Linkerd's default
// cluster domain).
const ServiceDomain = "svc.cluster.local"

// DefaultValidity is a proxy certificate's lifetime when Config.Validity
// is 0. The proxy renews at 70 % of it, so a lab run never sees a renewal.
const DefaultValidity = 24 * time.Hour

// Name is id's Linkerd identity: SA.NS.serviceaccount.identity.linkerd.cluster.local.
func Name(id topology.Identity) string {
	return id.ServiceAccount + "." + id.Namespace + "." + IdentitySuffix
}

// Workload is one pod: its identity, address and what it serves.
type Workload struct {
	// Name is the pod's name, unique in its namespace.
	Name     string
	Identity topology.Identity
	IP       netip.Addr
	// Meshed says a linkerd2-proxy runs beside it: its endpoints carry its
	// TLS identity and the HTTP/2 hint.
	Meshed bool
	// Services are the names of the services it backs.
	Services []string
	// Policies applies Config.Rules to its inbound ports; without, meshed
	// clients are allowed on every port.
	Policies bool
}

// Ref is the workload's name as the proxy's LINKERD2_PROXY_POLICY_WORKLOAD
// sends it: "NS:NAME".
func (w Workload) Ref() string { return w.Identity.Namespace + ":" + w.Name }

// Service is one service: a virtual IP (optional) and a port in front of
// its workloads' target port.
type Service struct {
	Name       string
	Namespace  string
	VIP        netip.Addr // zero: reached by name only
	Port       int        // the service's port
	TargetPort int        // the workloads' port
}

// Host is NAME.NS.svc.cluster.local.
func (s Service) Host() string { return s.Name + "." + s.Namespace + "." + ServiceDomain }

// Authority is Host():Port, the destination path of the service.
func (s Service) Authority() string { return fmt.Sprintf("%s:%d", s.Host(), s.Port) }

// Config is the topology the control plane serves.
type Config struct {
	// CA signs the proxies' certificates; its certificate is their trust
	// anchor.
	CA        *pki.CA
	Workloads []Workload
	Services  []Service
	// Rules are the ALLOW rules of workloads with Policies (topology.Rules(N)
	// for --policies N).
	Rules []topology.Policy
	// AdminPort is the proxies' admin port, always open to unauthenticated
	// clients (health checks and scrapes); 0 means 4191.
	AdminPort int
	// Validity is a certificate's lifetime; 0 means DefaultValidity.
	Validity time.Duration
	// Tokens are the workloads' identity tokens by Workload.Ref (NewTokens),
	// for a control plane in another process than the one writing the
	// proxies' token files; nil: New draws them.
	Tokens map[string]string
}

// NewTokens draws one random identity token per workload, by Ref.
func NewTokens(ws []Workload) (map[string]string, error) {
	out := map[string]string{}
	for _, w := range ws {
		b := make([]byte, 24)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		out[w.Ref()] = hex.EncodeToString(b)
	}
	return out, nil
}

// Call is one request a proxy made, for tests and the run's log.
type Call struct {
	// Method is the gRPC method, e.g. "Identity/Certify".
	Method string
	// Subject is what was asked about: an identity, a path, "NS:NAME:PORT"
	// or a target address.
	Subject string
	// Err is the error answered, "" on success.
	Err string
}

// Server serves the four APIs on every listener given to Serve.
type Server struct {
	cfg    Config
	tokens map[string]string // token → identity name
	byName map[string]string // workload ref → token
	grpc   *grpc.Server

	mu    sync.Mutex
	calls []Call
	wg    sync.WaitGroup
	errs  []error
}

// New checks cfg and prepares a server (one random token per workload).
func New(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.AdminPort == 0 {
		cfg.AdminPort = 4191
	}
	if cfg.Validity == 0 {
		cfg.Validity = DefaultValidity
	}
	s := &Server{cfg: cfg, tokens: map[string]string{}, byName: map[string]string{}}
	toks := cfg.Tokens
	if toks == nil {
		var err error
		if toks, err = NewTokens(cfg.Workloads); err != nil {
			return nil, err
		}
	}
	for _, w := range cfg.Workloads {
		tok := toks[w.Ref()]
		if tok == "" {
			return nil, fmt.Errorf("linkerd control plane: no token for workload %s", w.Ref())
		}
		s.tokens[tok] = Name(w.Identity)
		s.byName[w.Ref()] = tok
	}
	s.grpc = grpc.NewServer()
	pbid.RegisterIdentityServer(s.grpc, identity{s: s})
	pbdst.RegisterDestinationServer(s.grpc, destination{s: s})
	pbin.RegisterInboundServerPoliciesServer(s.grpc, inbound{s: s})
	pbout.RegisterOutboundPoliciesServer(s.grpc, outbound{s: s})
	return s, nil
}

func (c Config) validate() error {
	var errs []error
	if c.CA == nil {
		errs = append(errs, errors.New("linkerd control plane: no CA given"))
	}
	refs := map[string]bool{}
	ips := map[netip.Addr]string{}
	for _, w := range c.Workloads {
		if w.Name == "" || w.Identity.Namespace == "" || w.Identity.ServiceAccount == "" {
			errs = append(errs, fmt.Errorf("linkerd control plane: workload %q needs a name, a namespace and a service account", w.Name))
		}
		if refs[w.Ref()] {
			errs = append(errs, fmt.Errorf("linkerd control plane: workload %s given twice", w.Ref()))
		}
		refs[w.Ref()] = true
		if !w.IP.IsValid() {
			errs = append(errs, fmt.Errorf("linkerd control plane: workload %s has no IP", w.Ref()))
		} else if other, ok := ips[w.IP]; ok {
			errs = append(errs, fmt.Errorf("linkerd control plane: workloads %s and %s share IP %s", other, w.Ref(), w.IP))
		}
		ips[w.IP] = w.Ref()
	}
	for _, s := range c.Services {
		if s.Name == "" || s.Namespace == "" || s.Port <= 0 || s.Port > 65535 || s.TargetPort <= 0 || s.TargetPort > 65535 {
			errs = append(errs, fmt.Errorf("linkerd control plane: service %q/%q port %d target %d: allowed a name, a namespace and ports 1 to 65535", s.Namespace, s.Name, s.Port, s.TargetPort))
		}
	}
	for _, r := range c.Rules {
		if _, err := authn(r.Principal); err != nil {
			errs = append(errs, fmt.Errorf("linkerd control plane: rule %s: %w", r.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Token is the identity token of the workload NS:NAME (what its proxy's
// LINKERD2_PROXY_IDENTITY_TOKEN_FILE holds); "" for an unknown workload.
func (s *Server) Token(ref string) string { return s.byName[ref] }

// TrustAnchorsPEM is the proxies' LINKERD2_PROXY_IDENTITY_TRUST_ANCHORS.
func (s *Server) TrustAnchorsPEM() string { return string(s.cfg.CA.CertPEM()) }

// Serve serves on lis until Close (in the background). It may be called
// for many listeners, e.g. one on 127.0.0.1 inside every pod's network
// namespace: the proxy speaks plaintext gRPC to a loopback control plane
// only.
func (s *Server) Serve(lis net.Listener) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.grpc.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			s.mu.Lock()
			s.errs = append(s.errs, fmt.Errorf("serving on %s: %w", lis.Addr(), err))
			s.mu.Unlock()
		}
	}()
}

// Close stops serving at once, cutting the proxies' watches, and closes
// every listener. Safe to call twice.
func (s *Server) Close() error {
	s.grpc.Stop()
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.errs...)
}

// Calls returns the requests served so far, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

func (s *Server) record(method, subject string, err error) {
	c := Call{Method: method, Subject: subject}
	if err != nil {
		c.Err = err.Error()
	}
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.mu.Unlock()
}

// hold keeps a watch open until the proxy goes away or the server stops.
func hold(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

// identity serves io.linkerd.proxy.identity.Identity.
type identity struct {
	pbid.UnimplementedIdentityServer
	s *Server
}

func (v identity) Certify(_ context.Context, req *pbid.CertifyRequest) (resp *pbid.CertifyResponse, err error) {
	defer func() { v.s.record("Identity/Certify", req.GetIdentity(), err) }()
	want, ok := v.s.tokens[string(req.GetToken())]
	if !ok {
		return nil, status.Error(codes.Unauthenticated, "identity token unknown")
	}
	if req.GetIdentity() != want {
		return nil, status.Errorf(codes.PermissionDenied, "the token is %s's, not %s's", want, req.GetIdentity())
	}
	csr, err := x509.ParseCertificateRequest(req.GetCertificateSigningRequest())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "csr: %v", err)
	}
	cert, err := v.s.cfg.CA.SignDNSCSR(csr, want, pki.Options{Validity: v.s.cfg.Validity})
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "csr: %v", err)
	}
	// The trust anchor signs the leaf itself: no intermediates.
	return &pbid.CertifyResponse{LeafCertificate: cert.Raw, ValidUntil: timestamppb.New(cert.NotAfter)}, nil
}

// workload returns the workload with ref NS:NAME.
func (s *Server) workload(ref string) (Workload, bool) {
	for _, w := range s.cfg.Workloads {
		if w.Ref() == ref {
			return w, true
		}
	}
	return Workload{}, false
}

// workloadAt returns the workload with IP ip.
func (s *Server) workloadAt(ip netip.Addr) (Workload, bool) {
	for _, w := range s.cfg.Workloads {
		if w.IP == ip {
			return w, true
		}
	}
	return Workload{}, false
}

// serviceByAuthority returns the service whose authority is path
// ("HOST:PORT"; a fully qualified HOST may end with a dot).
func (s *Server) serviceByAuthority(path string) (Service, bool) {
	host, port, err := net.SplitHostPort(path)
	if err != nil {
		return Service{}, false
	}
	path = net.JoinHostPort(strings.TrimSuffix(host, "."), port)
	for _, svc := range s.cfg.Services {
		if path == svc.Authority() {
			return svc, true
		}
	}
	return Service{}, false
}

// serviceAt returns the service whose VIP:port is addr.
func (s *Server) serviceAt(addr netip.AddrPort) (Service, bool) {
	for _, svc := range s.cfg.Services {
		if svc.VIP.IsValid() && svc.VIP == addr.Addr() && svc.Port == int(addr.Port()) {
			return svc, true
		}
	}
	return Service{}, false
}

// backends returns the workloads that back svc.
func (s *Server) backends(svc Service) []Workload {
	var out []Workload
	for _, w := range s.cfg.Workloads {
		if w.Identity.Namespace != svc.Namespace {
			continue
		}
		for _, name := range w.Services {
			if name == svc.Name {
				out = append(out, w)
				break
			}
		}
	}
	return out
}
