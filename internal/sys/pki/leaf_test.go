package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

func newRootCA(t *testing.T, cn string) *CA {
	t.Helper()
	ca, err := NewRootCA(pkix.Name{CommonName: cn}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func issueLeaf(t *testing.T, ca *CA, spec LeafSpec) *Workload {
	t.Helper()
	w, err := ca.IssueLeaf(spec, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestNewRootCA(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	subject := pkix.Name{CommonName: "meshbench-kubetest-ca", Organization: []string{"meshbench"}}
	ca, err := NewRootCA(subject, Options{Now: now, Validity: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if c := ca.Cert; c.Subject.CommonName != subject.CommonName || !slices.Equal(c.Subject.Organization, subject.Organization) {
		t.Errorf("subject = %v, want %v", c.Subject, subject)
	}
	checkRoot(t, ca.Cert, now.Add(-ClockSkew), now.Add(2*time.Hour))
	if ca.TrustDomain != "" {
		t.Errorf("TrustDomain = %q, want none", ca.TrustDomain)
	}
	// It issues no SPIFFE identity, whether the ID names a trust domain or
	// not.
	for _, id := range []SPIFFEID{{"", "default", "client"}, {"cluster.local", "default", "client"}} {
		if _, err := ca.Issue(id, Options{}); err == nil {
			t.Errorf("Issue(%+v) by a root without a trust domain succeeded", id)
		}
	}
	// Refused: no common name, negative validity.
	if _, err := NewRootCA(pkix.Name{Organization: []string{"x"}}, Options{}); err == nil || !strings.Contains(err.Error(), "no common name") {
		t.Errorf("NewRootCA without a common name: %v, want an error", err)
	}
	if _, err := NewRootCA(subject, Options{Validity: -time.Hour}); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("NewRootCA with a negative validity: %v, want an error", err)
	}
}

func TestIssueLeaf(t *testing.T) {
	ca := newRootCA(t, "test CA")
	otherCA := newRootCA(t, "test CA") // same name, different key: not trusted
	server, client := x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth
	uri, err := url.Parse("spiffe://cluster.local/ns/default/sa/both")
	if err != nil {
		t.Fatal(err)
	}
	type use struct {
		name  string // the name verified (DNSName); "" for none
		usage x509.ExtKeyUsage
		ok    bool
	}
	tests := []struct {
		desc string
		spec LeafSpec
		uses []use
	}{
		{
			// A serving certificate (kubetest's apiserver, testutil's server):
			// valid for its DNS names and IPs, as a server only.
			desc: "server",
			spec: LeafSpec{
				Subject:     pkix.Name{CommonName: "kube-apiserver"},
				DNSNames:    []string{"localhost", "kubernetes.default.svc"},
				IPs:         []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback(), netip.MustParseAddr("10.0.0.1")},
				ExtKeyUsage: []x509.ExtKeyUsage{server},
			},
			uses: []use{
				{"localhost", server, true},
				{"kubernetes.default.svc", server, true},
				{"127.0.0.1", server, true},
				{"::1", server, true},
				{"10.0.0.1", server, true},
				{"example.com", server, false}, // not one of its names
				{"127.0.0.2", server, false},
				{"", client, false}, // not a client certificate
			},
		},
		{
			// A client certificate (kubetest's admin): subject kept whole,
			// no SAN, valid as a client only.
			desc: "client",
			spec: LeafSpec{
				Subject:     pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}},
				ExtKeyUsage: []x509.ExtKeyUsage{client},
			},
			uses: []use{{"", client, true}, {"", server, false}},
		},
		{
			// Both usages, a URI SAN only and an empty subject (like Issue's).
			desc: "both",
			spec: LeafSpec{URIs: []*url.URL{uri}, ExtKeyUsage: []x509.ExtKeyUsage{server, client}},
			uses: []use{{"", client, true}, {"", server, true}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			w := issueLeaf(t, ca, tt.spec)
			c := w.Cert
			for _, u := range tt.uses {
				chains, err := c.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: u.name, KeyUsages: []x509.ExtKeyUsage{u.usage}})
				if (err == nil) != u.ok {
					t.Errorf("Verify(name %q, usage %v) error = %v, want ok %v", u.name, u.usage, err, u.ok)
				}
				if err == nil && (len(chains) != 1 || len(chains[0]) != 2 || !chains[0][1].Equal(ca.Cert)) {
					t.Errorf("chain = %v, want leaf → CA", chains)
				}
			}
			// Another root with the same name does not verify it.
			if _, err := c.Verify(x509.VerifyOptions{Roots: otherCA.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err == nil {
				t.Error("the leaf verified against another CA")
			}
			if c.Subject.String() != tt.spec.Subject.String() {
				t.Errorf("subject = %q, want %q", c.Subject, tt.spec.Subject)
			}
			if !slices.Equal(c.ExtKeyUsage, tt.spec.ExtKeyUsage) || c.KeyUsage != x509.KeyUsageDigitalSignature {
				t.Errorf("ExtKeyUsage %v, KeyUsage %b; want %v, digitalSignature", c.ExtKeyUsage, c.KeyUsage, tt.spec.ExtKeyUsage)
			}
			if c.IsCA || !c.BasicConstraintsValid {
				t.Errorf("IsCA %v, BasicConstraintsValid %v; want a non-CA leaf", c.IsCA, c.BasicConstraintsValid)
			}
			if pub, ok := c.PublicKey.(*ecdsa.PublicKey); !ok || pub.Curve != elliptic.P256() {
				t.Errorf("leaf key is %T, want EC P-256", c.PublicKey)
			}
			if w.ID != (SPIFFEID{}) || w.CA != ca {
				t.Errorf("ID %+v, CA %p; want zero, %p", w.ID, w.CA, ca)
			}
			if _, err := tls.X509KeyPair(w.CertPEM(), w.KeyPEM()); err != nil {
				t.Errorf("X509KeyPair: %v", err)
			}
		})
	}
}

// TestIssueLeafHandshake runs Go's own TLS verification (server name and
// both extended key usages) over leaves of a NewRootCA root, as testutil's
// mTLS server and the test cluster's components use them.
func TestIssueLeafHandshake(t *testing.T) {
	ca := newRootCA(t, "test CA")
	otherCA := newRootCA(t, "other CA")
	serverSpec := LeafSpec{Subject: pkix.Name{CommonName: "server"}, DNSNames: []string{"localhost"},
		IPs: []netip.Addr{netip.MustParseAddr("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	clientSpec := LeafSpec{Subject: pkix.Name{CommonName: "client"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	srv := issueLeaf(t, ca, serverSpec)
	cli := issueLeaf(t, ca, clientSpec)
	serverOnly := issueLeaf(t, ca, LeafSpec{Subject: pkix.Name{CommonName: "not-a-client"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	clientOnly := issueLeaf(t, ca, LeafSpec{Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	intruder := issueLeaf(t, otherCA, clientSpec)

	tests := []struct {
		desc       string
		server     *Workload
		client     *Workload
		serverName string
		wantErr    string // substring of the server's or the client's error; "" for success
	}{
		// The right pair, by DNS name and by IP.
		{"mutual TLS by name", srv, cli, "localhost", ""},
		{"mutual TLS by IP", srv, cli, "127.0.0.1", ""},
		// The server's certificate is not for that name.
		{"wrong server name", srv, cli, "example.com", "not example.com"},
		// A server-only certificate is refused as a client's.
		{"client without client usage", srv, serverOnly, "localhost", "incompatible key usage"},
		// A client-only certificate is refused as a server's.
		{"server without server usage", clientOnly, cli, "localhost", "incompatible key usage"},
		// A client of another CA is refused.
		{"client of another CA", srv, intruder, "localhost", "unknown authority"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			serverCfg := &tls.Config{Certificates: []tls.Certificate{tt.server.TLSCertificate()},
				ClientCAs: ca.Pool(), ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
			clientCfg := &tls.Config{RootCAs: ca.Pool(), ServerName: tt.serverName, MinVersion: tls.VersionTLS12,
				// Sends its certificate whatever CAs the server names, so that
				// the server is the one to refuse it.
				GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
					c := tt.client.TLSCertificate()
					return &c, nil
				}}
			_, serverErr, clientErr := handshake(t, serverCfg, clientCfg)
			if tt.wantErr == "" {
				if serverErr != nil || clientErr != nil {
					t.Errorf("server error %v, client error %v; want none", serverErr, clientErr)
				}
				return
			}
			if !strings.Contains(fmt.Sprint(serverErr, clientErr), tt.wantErr) {
				t.Errorf("server error %v, client error %v; want one containing %q", serverErr, clientErr, tt.wantErr)
			}
		})
	}
}

func TestIssueLeafRefuses(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ca, err := NewRootCA(pkix.Name{CommonName: "test CA"}, Options{Now: now, Validity: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	serverAuth := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	tests := []struct {
		spec    LeafSpec
		opts    Options
		wantErr string
	}{
		// No name at all.
		{spec: LeafSpec{ExtKeyUsage: serverAuth}, opts: Options{Now: now}, wantErr: "neither a subject nor a subject alternative name"},
		// No extended key usage: it would be valid for anything.
		{spec: LeafSpec{Subject: pkix.Name{CommonName: "x"}}, opts: Options{Now: now}, wantErr: "no extended key usage"},
		// A zero IP address.
		{spec: LeafSpec{DNSNames: []string{"x"}, IPs: []netip.Addr{{}}, ExtKeyUsage: serverAuth}, opts: Options{Now: now}, wantErr: "invalid (zero) IP address"},
		// Made after the CA expired.
		{spec: LeafSpec{Subject: pkix.Name{CommonName: "x"}, ExtKeyUsage: serverAuth}, opts: Options{Now: now.Add(3 * time.Hour)}, wantErr: "before the certificate would start"},
		// A negative validity.
		{spec: LeafSpec{Subject: pkix.Name{CommonName: "x"}, ExtKeyUsage: serverAuth}, opts: Options{Now: now, Validity: -time.Hour}, wantErr: "negative"},
	}
	for _, tt := range tests {
		if _, err := ca.IssueLeaf(tt.spec, tt.opts); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("IssueLeaf(%+v) error = %v, want %q", tt.spec, err, tt.wantErr)
		}
	}
	// The default validity (24 h) is capped at the CA's NotAfter.
	w, err := ca.IssueLeaf(LeafSpec{Subject: pkix.Name{CommonName: "x"}, ExtKeyUsage: serverAuth}, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if !w.Cert.NotAfter.Equal(ca.Cert.NotAfter) || !w.Cert.NotBefore.Equal(now.Add(-ClockSkew)) {
		t.Errorf("leaf valid %v – %v, want %v – %v", w.Cert.NotBefore, w.Cert.NotAfter, now.Add(-ClockSkew), ca.Cert.NotAfter)
	}
}
