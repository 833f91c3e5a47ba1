package ca

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	pb "istio.io/api/security/v1alpha1"

	"github.com/meshbench/meshbench/internal/sys/pki"
)

func csrPEM(t *testing.T, uris ...string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.CertificateRequest{}
	for _, u := range uris {
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.URIs = append(tmpl.URIs, pu)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
}

// TestCreateCertificate calls the real server over gRPC+TLS on loopback,
// verifying its serving certificate against the lab root for the IP SAN, as
// ztunnel does with CA_ROOT_CA and an https://127.0.0.1 CA_ADDRESS.
func TestCreateCertificate(t *testing.T) {
	ca, err := pki.NewCA("cluster.local")
	if err != nil {
		t.Fatal(err)
	}
	other, err := pki.NewCA("other.local")
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := Serve(ca, lis, []netip.Addr{netip.MustParseAddr("127.0.0.1")}, "lab-token")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	dial := func(roots *x509.CertPool) pb.IstioCertificateServiceClient {
		creds := credentials.NewTLS(&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS13})
		cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(creds))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		return pb.NewIstioCertificateServiceClient(cc)
	}
	client := dial(ca.Pool())
	authed := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer lab-token", "clusterid", "lab")
	imp := func(id string) *structpb.Struct {
		return &structpb.Struct{Fields: map[string]*structpb.Value{ImpersonatedIdentity: structpb.NewStringValue(id)}}
	}
	const client1 = "spiffe://cluster.local/ns/default/sa/client"
	tests := []struct {
		name     string
		ctx      context.Context
		req      *pb.IstioCertificateRequest
		wantCode codes.Code
	}{
		// a shared-mode ztunnel asking for a pod's identity
		{"impersonated", authed, &pb.IstioCertificateRequest{Csr: csrPEM(t, client1), ValidityDuration: 3600, Metadata: imp(client1)}, codes.OK},
		// a dedicated-mode ztunnel: no metadata, validity beyond the cap
		{"dedicated", authed, &pb.IstioCertificateRequest{Csr: csrPEM(t, client1), ValidityDuration: 7 * 86400}, codes.OK},
		// no bearer token
		{"no token", context.Background(), &pb.IstioCertificateRequest{Csr: csrPEM(t, client1)}, codes.Unauthenticated},
		// a wrong bearer token
		{"wrong token", metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer nope"), &pb.IstioCertificateRequest{Csr: csrPEM(t, client1)}, codes.Unauthenticated},
		// not PEM at all
		{"garbage csr", authed, &pb.IstioCertificateRequest{Csr: "hello"}, codes.InvalidArgument},
		// another trust domain
		{"foreign trust domain", authed, &pb.IstioCertificateRequest{Csr: csrPEM(t, "spiffe://evil.local/ns/default/sa/client")}, codes.PermissionDenied},
		// two identities in one request
		{"two URIs", authed, &pb.IstioCertificateRequest{Csr: csrPEM(t, client1, "spiffe://cluster.local/ns/default/sa/server")}, codes.PermissionDenied},
		// the CSR names another identity than the impersonated one
		{"impersonation mismatch", authed, &pb.IstioCertificateRequest{Csr: csrPEM(t, client1), Metadata: imp("spiffe://cluster.local/ns/default/sa/server")}, codes.PermissionDenied},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(tc.ctx, 10*time.Second)
			defer cancel()
			resp, err := client.CreateCertificate(ctx, tc.req)
			if status.Code(err) != tc.wantCode {
				t.Fatalf("code %v (%v), want %v", status.Code(err), err, tc.wantCode)
			}
			if tc.wantCode != codes.OK {
				return
			}
			chain := resp.GetCertChain()
			if len(chain) != 2 || strings.TrimSpace(chain[1]) != strings.TrimSpace(string(ca.CertPEM())) {
				t.Fatalf("chain has %d elements, want [leaf, root]", len(chain))
			}
			blk, _ := pem.Decode([]byte(chain[0]))
			leaf, err := x509.ParseCertificate(blk.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth}}); err != nil {
				t.Fatalf("leaf does not chain to the lab root: %v", err)
			}
			if len(leaf.URIs) != 1 || leaf.URIs[0].String() != client1 {
				t.Fatalf("leaf URIs %v, want exactly %s", leaf.URIs, client1)
			}
			if life := time.Until(leaf.NotAfter); life > MaxValidity+time.Minute {
				t.Fatalf("leaf lives %v, more than the %v cap", life, MaxValidity)
			}
		})
	}
	got := srv.Issued()
	if len(got) != 2 || got[0].Impersonated != client1 || got[0].ClusterID != "lab" || got[1].Impersonated != "" {
		t.Fatalf("issued %+v", got)
	}

	// A client that trusts another root refuses the server: the serving
	// certificate really is checked.
	ctx, cancel := context.WithTimeout(authed, 10*time.Second)
	defer cancel()
	if _, err := dial(other.Pool()).CreateCertificate(ctx, &pb.IstioCertificateRequest{Csr: csrPEM(t, client1)}); status.Code(err) != codes.Unavailable {
		t.Fatalf("untrusted server: %v, want Unavailable", err)
	}
}
