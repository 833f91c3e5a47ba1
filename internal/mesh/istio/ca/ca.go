// Package ca serves the lab's CA over Istio's certificate API
// (gRPC istio.v1.auth.IstioCertificateService/CreateCertificate over TLS),
// the endpoint from which a production ztunnel takes its workload
// certificates (CA_ADDRESS, CA_ROOT_CA, AUTH_TOKEN). Certificates come
// from the same pki.CA as the lab's Envoys', so ztunnels, waypoints and
// gateways share one root.
package ca

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	pb "istio.io/api/security/v1alpha1"

	"github.com/meshbench/meshbench/internal/sys/pki"
)

// MaxValidity caps the lifetime a client may ask for (ztunnel asks for
// SECRET_TTL, 24 h by default).
const MaxValidity = 24 * time.Hour

// ImpersonatedIdentity is the request metadata key with which a shared-mode
// (node) ztunnel asks for a pod's identity rather than its own.
const ImpersonatedIdentity = "ImpersonatedIdentity"

// Issued is one certificate the server signed, for tests and logs.
type Issued struct {
	ID           pki.SPIFFEID
	Impersonated string // the ImpersonatedIdentity metadata, "" in dedicated mode
	ClusterID    string // the clusterid gRPC metadata
	NotAfter     time.Time
}

// Server is the lab's Istio CA endpoint.
type Server struct {
	ca    *pki.CA
	token string
	srv   *grpc.Server
	lis   net.Listener

	mu     sync.Mutex
	issued []Issued
	done   chan error
}

type service struct {
	pb.UnimplementedIstioCertificateServiceServer
	s *Server
}

// Serve starts serving the CA on lis (which the caller opened, e.g. inside
// a node's network namespace). The serving certificate names every IP in
// ips (what CA_ADDRESS's host must match) and the DNS name
// istiod.istio-system.svc. With a non-empty token, requests must carry
// "authorization: Bearer TOKEN" (ztunnel's AUTH_TOKEN); others are refused
// with Unauthenticated.
func Serve(ca *pki.CA, lis net.Listener, ips []netip.Addr, token string) (*Server, error) {
	if ca == nil || ca.TrustDomain == "" {
		return nil, errors.New("serving Istio CA: a lab CA with a trust domain is needed")
	}
	cert, err := ca.IssueLeaf(pki.LeafSpec{
		DNSNames:    []string{"istiod.istio-system.svc"},
		IPs:         ips,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, pki.Options{})
	if err != nil {
		return nil, fmt.Errorf("serving Istio CA: %w", err)
	}
	// ztunnel presents no client certificate and speaks TLS 1.3 only.
	tlsCfg := &tls.Config{Certificates: []tls.Certificate{cert.TLSCertificate()}, MinVersion: tls.VersionTLS12}
	s := &Server{ca: ca, token: token, lis: lis, done: make(chan error, 1)}
	s.srv = grpc.NewServer(grpc.Creds(credentials.NewTLS(tlsCfg)))
	pb.RegisterIstioCertificateServiceServer(s.srv, &service{s: s})
	go func() { s.done <- s.srv.Serve(lis) }()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.lis.Addr() }

// Issued returns the certificates signed so far, in order.
func (s *Server) Issued() []Issued {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Issued(nil), s.issued...)
}

// Close stops the server at once (open streams are cut).
func (s *Server) Close() error {
	s.srv.Stop()
	err := <-s.done
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

func (v *service) CreateCertificate(ctx context.Context, req *pb.IstioCertificateRequest) (*pb.IstioCertificateResponse, error) {
	s := v.s
	md, _ := metadata.FromIncomingContext(ctx)
	if s.token != "" {
		a := md.Get("authorization")
		if len(a) != 1 || subtle.ConstantTimeCompare([]byte(a[0]), []byte("Bearer "+s.token)) != 1 {
			return nil, status.Error(codes.Unauthenticated, "bad or missing bearer token")
		}
	}
	blk, _ := pem.Decode([]byte(req.GetCsr()))
	if blk == nil || blk.Type != "CERTIFICATE REQUEST" {
		return nil, status.Error(codes.InvalidArgument, "csr: no PEM CERTIFICATE REQUEST block")
	}
	csr, err := x509.ParseCertificateRequest(blk.Bytes)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "csr: %v", err)
	}
	validity := time.Duration(req.GetValidityDuration()) * time.Second
	if validity <= 0 || validity > MaxValidity {
		validity = MaxValidity
	}
	var impersonated string
	if m := req.GetMetadata(); m != nil {
		if f, ok := m.GetFields()[ImpersonatedIdentity]; ok {
			impersonated = f.GetStringValue()
		}
	}
	id, cert, err := s.ca.SignCSR(csr, pki.Options{Validity: validity})
	if err != nil {
		return nil, status.Errorf(codes.PermissionDenied, "csr: %v", err)
	}
	if impersonated != "" && impersonated != id.String() {
		return nil, status.Errorf(codes.PermissionDenied, "csr names %s but %s=%s", id, ImpersonatedIdentity, impersonated)
	}
	s.mu.Lock()
	s.issued = append(s.issued, Issued{ID: id, Impersonated: impersonated, ClusterID: first(md.Get("clusterid")), NotAfter: cert.NotAfter})
	s.mu.Unlock()
	// ztunnel takes the last element as its trust bundle: [leaf, root].
	leaf := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
	return &pb.IstioCertificateResponse{CertChain: []string{string(leaf), string(s.ca.CertPEM())}}, nil
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}
