package pki

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseSPIFFEID(t *testing.T) {
	tests := []struct {
		in      string
		want    SPIFFEID
		wantErr string // substring of the error; "" when the input is valid
	}{
		// The lab's identities.
		{in: "spiffe://cluster.local/ns/default/sa/client", want: SPIFFEID{"cluster.local", "default", "client"}},
		{in: "spiffe://cluster.local/ns/istio-system/sa/ztunnel-node1", want: SPIFFEID{"cluster.local", "istio-system", "ztunnel-node1"}},
		// Segments may hold upper case, dots and underscores (SPIFFE allows them).
		{in: "spiffe://td_1.example/ns/A.b_c/sa/X-9", want: SPIFFEID{"td_1.example", "A.b_c", "X-9"}},
		// Scheme is lowercase only.
		{in: "SPIFFE://cluster.local/ns/default/sa/client", wantErr: `must start with "spiffe://"`},
		{in: "https://cluster.local/ns/default/sa/client", wantErr: `must start with "spiffe://"`},
		{in: "", wantErr: `must start with "spiffe://"`},
		// No path at all, or a bare trust domain with a slash.
		{in: "spiffe://cluster.local", wantErr: "no path"},
		{in: "spiffe://cluster.local/", wantErr: "path must be"},
		// Trust domain: lowercase, no port, no user info.
		{in: "spiffe://Cluster.local/ns/default/sa/client", wantErr: `character 'C'`},
		{in: "spiffe://cluster.local:443/ns/default/sa/client", wantErr: `character ':'`},
		{in: "spiffe://me@cluster.local/ns/default/sa/client", wantErr: `character '@'`},
		{in: "spiffe:///ns/default/sa/client", wantErr: "empty trust domain"},
		// Path shape: exactly ns/<ns>/sa/<sa>.
		{in: "spiffe://cluster.local/ns/default", wantErr: "path must be"},
		{in: "spiffe://cluster.local/ns/default/sa/client/", wantErr: "path must be"},
		{in: "spiffe://cluster.local/ns/default/sa/client/x", wantErr: "path must be"},
		{in: "spiffe://cluster.local/sa/client/ns/default", wantErr: "path must be"},
		{in: "spiffe://cluster.local//ns/default/sa/client", wantErr: "path must be"},
		// Empty and dot segments.
		{in: "spiffe://cluster.local/ns//sa/client", wantErr: "empty namespace"},
		{in: "spiffe://cluster.local/ns/default/sa/", wantErr: "empty service account"},
		{in: "spiffe://cluster.local/ns/../sa/client", wantErr: `namespace ".." is not allowed`},
		{in: "spiffe://cluster.local/ns/default/sa/.", wantErr: `service account "." is not allowed`},
		// Query, fragment and percent-encoding are not allowed.
		{in: "spiffe://cluster.local/ns/default/sa/client?x=1", wantErr: `character '?'`},
		{in: "spiffe://cluster.local/ns/default/sa/client#f", wantErr: `character '#'`},
		{in: "spiffe://cluster.local/ns/de%66ault/sa/client", wantErr: `character '%'`},
		// Too long a trust domain.
		{in: "spiffe://" + strings.Repeat("a", 256) + "/ns/d/sa/c", wantErr: "at most 255"},
		// Too long an ID.
		{in: "spiffe://cluster.local/ns/d/sa/" + strings.Repeat("c", 2048), wantErr: "at most 2048"},
	}
	for _, tt := range tests {
		got, err := ParseSPIFFEID(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseSPIFFEID(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseSPIFFEID(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseSPIFFEID(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
		if s := got.String(); s != tt.in {
			t.Errorf("String() = %q, want %q", s, tt.in)
		}
	}
}

func FuzzParseSPIFFEID(f *testing.F) {
	for _, s := range []string{
		"spiffe://cluster.local/ns/default/sa/client",
		"spiffe://cluster.local/ns/istio-system/sa/ztunnel-node1",
		"spiffe://cluster.local/ns/default/sa/client/",
		"spiffe://cluster.local:80/ns/default/sa/client",
		"spiffe://cluster.local/ns/%2e%2e/sa/client",
		"spiffe://a/ns/./sa/..",
		"spiffe://",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseSPIFFEID(s)
		if err != nil {
			return
		}
		// What is accepted is written back byte for byte, validates, and
		// parses again to the same ID.
		if got := id.String(); got != s {
			t.Fatalf("ParseSPIFFEID(%q).String() = %q", s, got)
		}
		if err := id.Validate(); err != nil {
			t.Fatalf("ParseSPIFFEID(%q) accepted an ID that Validate refuses: %v", s, err)
		}
		// net/url reads it the same way (what x509 stores in the SAN).
		u, err := url.Parse(s)
		if err != nil {
			t.Fatalf("url.Parse(%q): %v", s, err)
		}
		if u.Scheme != "spiffe" || u.Host != id.TrustDomain || u.Path != "/ns/"+id.Namespace+"/sa/"+id.ServiceAccount ||
			u.RawQuery != "" || u.Fragment != "" || u.User != nil || u.String() != s {
			t.Fatalf("url.Parse(%q) = %#v, disagrees with %+v", s, u, id)
		}
	})
}

func TestSPIFFEIDValidate(t *testing.T) {
	tests := []struct {
		id      SPIFFEID
		wantErr string
	}{
		// A valid ID.
		{id: SPIFFEID{"cluster.local", "default", "server"}},
		// Each part is checked.
		{id: SPIFFEID{"", "default", "server"}, wantErr: "empty trust domain"},
		{id: SPIFFEID{"cluster.local", "", "server"}, wantErr: "empty namespace"},
		{id: SPIFFEID{"cluster.local", "default", "a/b"}, wantErr: `character '/'`},
	}
	for _, tt := range tests {
		err := tt.id.Validate()
		if (err == nil) != (tt.wantErr == "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%+v.Validate() = %v, want error containing %q", tt.id, err, tt.wantErr)
		}
	}
}

func newCA(t *testing.T) *CA {
	t.Helper()
	ca, err := NewCA("cluster.local")
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func issue(t *testing.T, ca *CA, ns, sa string) *Workload {
	t.Helper()
	w, err := ca.Issue(SPIFFEID{TrustDomain: ca.TrustDomain, Namespace: ns, ServiceAccount: sa}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestNewCA(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ca, err := NewCAWithOptions("cluster.local", Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if cn := ca.Cert.Subject.CommonName; cn != CACommonName {
		t.Errorf("CA common name %q, want %q", cn, CACommonName)
	}
	checkRoot(t, ca.Cert, now.Add(-ClockSkew), now.Add(24*time.Hour))
	for _, td := range []string{"", "Cluster.local", "a/b"} {
		if _, err := NewCA(td); err == nil {
			t.Errorf("NewCA(%q) succeeded, want an error", td)
		}
	}
	if _, err := NewCAWithOptions("cluster.local", Options{Validity: -time.Hour}); err == nil {
		t.Error("negative validity accepted")
	}
}

// checkRoot checks that c is a self-signed EC P-256 root that signs leaves
// only, valid from notBefore to notAfter.
func checkRoot(t *testing.T, c *x509.Certificate, notBefore, notAfter time.Time) {
	t.Helper()
	if !c.IsCA || !c.BasicConstraintsValid || !c.MaxPathLenZero || c.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Errorf("CA certificate: IsCA %v, BasicConstraintsValid %v, MaxPathLenZero %v, KeyUsage %b; want a root that signs leaves", c.IsCA, c.BasicConstraintsValid, c.MaxPathLenZero, c.KeyUsage)
	}
	if pub, ok := c.PublicKey.(*ecdsa.PublicKey); !ok || pub.Curve != elliptic.P256() {
		t.Errorf("CA key is %T, want EC P-256", c.PublicKey)
	}
	if !c.NotBefore.Equal(notBefore) || !c.NotAfter.Equal(notAfter) {
		t.Errorf("CA valid %v – %v, want %v – %v", c.NotBefore, c.NotAfter, notBefore, notAfter)
	}
	if err := c.CheckSignatureFrom(c); err != nil {
		t.Errorf("CA is not self-signed: %v", err)
	}
}

func TestIssue(t *testing.T) {
	ca := newCA(t)
	id := SPIFFEID{"cluster.local", "default", "server"}
	w, err := ca.Issue(id, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := w.Cert
	// The chain verifies against the CA, for both server and client use.
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		chains, err := c.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{usage}})
		if err != nil {
			t.Fatalf("verifying the leaf for usage %v: %v", usage, err)
		}
		if len(chains) != 1 || len(chains[0]) != 2 || !chains[0][1].Equal(ca.Cert) {
			t.Errorf("chain = %v, want leaf → CA", chains)
		}
	}
	// The only SAN is the URI.
	if len(c.URIs) != 1 || c.URIs[0].String() != "spiffe://cluster.local/ns/default/sa/server" {
		t.Errorf("URI SANs = %v, want exactly spiffe://cluster.local/ns/default/sa/server", c.URIs)
	}
	if len(c.DNSNames)+len(c.IPAddresses)+len(c.EmailAddresses) != 0 {
		t.Errorf("other SANs: DNS %v, IP %v, e-mail %v; want none", c.DNSNames, c.IPAddresses, c.EmailAddresses)
	}
	// Empty subject, so the SAN extension is critical (RFC 5280 4.2.1.6).
	if len(c.RawSubject) == 0 || c.Subject.String() != "" {
		t.Errorf("subject = %q, want empty", c.Subject)
	}
	sanOID := asn1.ObjectIdentifier{2, 5, 29, 17}
	var sans int
	for _, e := range c.Extensions {
		if e.Id.Equal(sanOID) {
			sans++
			if !e.Critical {
				t.Error("SAN extension is not critical")
			}
		}
	}
	if sans != 1 {
		t.Errorf("%d SAN extensions, want 1", sans)
	}
	if c.IsCA || !c.BasicConstraintsValid {
		t.Errorf("IsCA %v, BasicConstraintsValid %v; want a non-CA leaf", c.IsCA, c.BasicConstraintsValid)
	}
	if c.KeyUsage != x509.KeyUsageDigitalSignature {
		t.Errorf("KeyUsage = %b, want digitalSignature only", c.KeyUsage)
	}
	if len(c.ExtKeyUsage) != 2 || c.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth || c.ExtKeyUsage[1] != x509.ExtKeyUsageClientAuth {
		t.Errorf("ExtKeyUsage = %v, want server and client auth", c.ExtKeyUsage)
	}
	if pub, ok := c.PublicKey.(*ecdsa.PublicKey); !ok || pub.Curve != elliptic.P256() {
		t.Errorf("leaf key is %T, want EC P-256", c.PublicKey)
	}
	if w.ID != id {
		t.Errorf("ID = %+v, want %+v", w.ID, id)
	}
	// The certificate and key make a usable TLS pair.
	if _, err := tls.X509KeyPair(w.CertPEM(), w.KeyPEM()); err != nil {
		t.Errorf("X509KeyPair: %v", err)
	}
}

func TestIssueValidity(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ca, err := NewCAWithOptions("cluster.local", Options{Now: now, Validity: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	id := SPIFFEID{Namespace: "default", ServiceAccount: "client"} // trust domain taken from the CA
	tests := []struct {
		opts          Options
		wantNotAfter  time.Time
		wantErrSubstr string
	}{
		// One hour: inside the CA's lifetime.
		{opts: Options{Now: now, Validity: time.Hour}, wantNotAfter: now.Add(time.Hour)},
		// The default 24 h is capped at the CA's NotAfter.
		{opts: Options{Now: now}, wantNotAfter: now.Add(2 * time.Hour)},
		// Made after the CA expired: refused.
		{opts: Options{Now: now.Add(3 * time.Hour)}, wantErrSubstr: "before the certificate would start"},
	}
	for _, tt := range tests {
		w, err := ca.Issue(id, tt.opts)
		if tt.wantErrSubstr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErrSubstr) {
				t.Errorf("Issue(%+v) error = %v, want %q", tt.opts, err, tt.wantErrSubstr)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if !w.Cert.NotAfter.Equal(tt.wantNotAfter) || !w.Cert.NotBefore.Equal(tt.opts.Now.Add(-ClockSkew)) {
			t.Errorf("Issue(%+v): valid %v – %v, want NotAfter %v", tt.opts, w.Cert.NotBefore, w.Cert.NotAfter, tt.wantNotAfter)
		}
		if w.ID.TrustDomain != "cluster.local" {
			t.Errorf("trust domain %q, want the CA's", w.ID.TrustDomain)
		}
	}
}

func TestIssueRefuses(t *testing.T) {
	ca := newCA(t)
	tests := []struct {
		id      SPIFFEID
		wantErr string
	}{
		// Another trust domain than the CA's.
		{id: SPIFFEID{"example.org", "default", "client"}, wantErr: `trust domain "cluster.local" only`},
		// Invalid parts.
		{id: SPIFFEID{"cluster.local", "", "client"}, wantErr: "empty namespace"},
		{id: SPIFFEID{"cluster.local", "default", "a b"}, wantErr: `character ' '`},
	}
	for _, tt := range tests {
		if _, err := ca.Issue(tt.id, Options{}); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("Issue(%+v) error = %v, want %q", tt.id, err, tt.wantErr)
		}
	}
}

func TestWriteFiles(t *testing.T) {
	ca := newCA(t)
	w := issue(t, ca, "default", "server")
	dir := filepath.Join(t.TempDir(), "certs")

	caFiles, err := ca.WriteFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := w.WriteFiles(dir, "server-0")
	if err != nil {
		t.Fatal(err)
	}
	// A pre-existing, too-open key file is replaced by one with mode 0600.
	if err := os.Chmod(b.PrivateKey, 0o666); err != nil {
		t.Fatal(err)
	}
	if b, err = w.WriteFiles(dir, "server-0"); err != nil {
		t.Fatal(err)
	}
	want := map[string]os.FileMode{
		caFiles.Cert:                   0o644,
		caFiles.Key:                    0o600,
		b.CertChain:                    0o644,
		b.PrivateKey:                   0o600,
		b.TrustedCA:                    0o644,
		filepath.Join(dir, "ca.pem"):   0o644,
		filepath.Join(dir, "server-0"): 0, // not written
	}
	for path, mode := range want {
		st, err := os.Stat(path)
		if mode == 0 {
			if err == nil {
				t.Errorf("%s exists", path)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, want %v", path, st.Mode().Perm(), mode)
		}
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("directory mode: %v, %v; want 0700", st.Mode().Perm(), err)
	}
	if b.CertChain != filepath.Join(dir, "server-0.pem") || b.PrivateKey != filepath.Join(dir, "server-0-key.pem") || b.TrustedCA != filepath.Join(dir, "server-0-ca.pem") {
		t.Errorf("bundle = %+v", b)
	}
	// No temp files are left behind.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 5 {
		t.Errorf("%d files in %s, want 5: %v", len(entries), dir, entries)
	}
	// The files load: the pair with Go's TLS, the bundles as the CA.
	if _, err := tls.LoadX509KeyPair(b.CertChain, b.PrivateKey); err != nil {
		t.Errorf("LoadX509KeyPair: %v", err)
	}
	if _, err := tls.LoadX509KeyPair(caFiles.Cert, caFiles.Key); err != nil {
		t.Errorf("LoadX509KeyPair(CA): %v", err)
	}
	for _, path := range []string{b.TrustedCA, caFiles.Cert} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		block, rest := pem.Decode(data)
		if block == nil || block.Type != "CERTIFICATE" || len(bytes.TrimSpace(rest)) != 0 || !bytes.Equal(block.Bytes, ca.Cert.Raw) {
			t.Errorf("%s does not hold exactly the CA certificate", path)
		}
	}
	// Names that are not plain file names are refused.
	for _, name := range []string{"", ".", "..", "a/b", `a\b`} {
		if _, err := w.WriteFiles(dir, name); err == nil {
			t.Errorf("WriteFiles(%q) succeeded", name)
		}
	}
}

// handshake runs one mutual-TLS handshake over TCP on 127.0.0.1 and returns
// the client's connection state and each side's error (the client's
// includes the first read, where a TLS 1.3 client learns that the server
// refused its certificate).
func handshake(t *testing.T, serverCfg, clientCfg *tls.Config) (state tls.ConnectionState, serverErr, clientErr error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		tc := tls.Server(conn, serverCfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			done <- err
			return
		}
		_, err = tc.Write([]byte("ok\n"))
		done <- err
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	tc := tls.Client(conn, clientCfg)
	clientErr = tc.HandshakeContext(ctx)
	if clientErr == nil {
		buf := make([]byte, 3)
		if _, err := io.ReadFull(tc, buf); err != nil {
			clientErr = err
		} else if string(buf) != "ok\n" {
			clientErr = errors.New("unexpected answer " + string(buf))
		}
		state = tc.ConnectionState()
	}
	conn.Close() // unblocks a server still waiting for the client
	return state, <-done, clientErr
}

func TestMutualTLSHandshake(t *testing.T) {
	ca := newCA(t)
	otherCA := newCA(t) // same trust domain, different key: not trusted
	client := issue(t, ca, "default", "client")
	server := issue(t, ca, "default", "server")
	attacker := issue(t, ca, "default", "attacker")
	forgedClient := issue(t, otherCA, "default", "client") // the right name from the wrong CA
	forgedServer := issue(t, otherCA, "default", "server")

	tests := []struct {
		name         string
		server       *Workload
		serverAccept Matcher
		client       *Workload
		clientAccept Matcher
		serverErr    string // substring of the server's error; "" for success
		clientErr    bool
		// clientTrustsAnything makes the client accept any server, as an
		// attacker's client would, so the server's check is what is tested.
		clientTrustsAnything bool
	}{
		{name: "exact identities", server: server, serverAccept: MatchID(client.ID),
			client: client, clientAccept: MatchID(server.ID)},
		{name: "server accepts the trust domain (the lab's server side)", server: server, serverAccept: MatchTrustDomain("cluster.local"),
			client: client, clientAccept: MatchID(server.ID)},
		{name: "server accepts a prefix", server: server, serverAccept: MatchPrefix("spiffe://cluster.local/ns/default/"),
			client: client, clientAccept: MatchID(server.ID)},
		{name: "another identity of the same CA is refused by the server", server: server, serverAccept: MatchID(client.ID),
			client: attacker, clientAccept: MatchID(server.ID), serverErr: "peer is spiffe://cluster.local/ns/default/sa/attacker, want spiffe://cluster.local/ns/default/sa/client", clientErr: true},
		{name: "a certificate of another CA is refused by the server", server: server, serverAccept: MatchTrustDomain("cluster.local"),
			client: forgedClient, clientAccept: MatchID(server.ID), serverErr: "certificate signed by unknown authority", clientErr: true,
			clientTrustsAnything: true},
		{name: "the zero Matcher accepts nothing", server: server, serverAccept: Matcher{},
			client: client, clientAccept: MatchID(server.ID), serverErr: "want no identity", clientErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clientCfg := tt.client.ClientTLSConfig(tt.clientAccept)
			if tt.clientTrustsAnything {
				clientCfg.VerifyPeerCertificate = nil
			}
			state, serverErr, clientErr := handshake(t, tt.server.ServerTLSConfig(tt.serverAccept), clientCfg)
			if tt.serverErr == "" {
				if serverErr != nil || clientErr != nil {
					t.Fatalf("server error %v, client error %v; want success", serverErr, clientErr)
				}
				if state.Version != tls.VersionTLS13 {
					t.Errorf("negotiated %s, want TLS 1.3", tls.VersionName(state.Version))
				}
				if len(state.PeerCertificates) == 0 || state.PeerCertificates[0].URIs[0].String() != tt.server.ID.String() {
					t.Errorf("client saw peer %v", state.PeerCertificates)
				}
				return
			}
			if serverErr == nil || !strings.Contains(serverErr.Error(), tt.serverErr) {
				t.Errorf("server error = %v, want one containing %q", serverErr, tt.serverErr)
			}
			if tt.clientErr && clientErr == nil {
				t.Error("the client's connection succeeded after the server refused it")
			}
		})
	}

	// Secure naming on the client side: a server presenting another
	// identity, or the right identity from another CA, is refused by the
	// client before it sends anything.
	clientSide := []struct {
		name    string
		server  *Workload
		wantErr string
	}{
		{name: "impersonating server of the same CA", server: attacker, wantErr: "peer is spiffe://cluster.local/ns/default/sa/attacker"},
		{name: "server of another CA", server: forgedServer, wantErr: "certificate signed by unknown authority"},
	}
	for _, tt := range clientSide {
		t.Run(tt.name, func(t *testing.T) {
			serverCfg := tt.server.ServerTLSConfig(MatchTrustDomain("cluster.local"))
			serverCfg.ClientAuth = tls.RequestClientCert // the server itself is lenient here
			_, _, clientErr := handshake(t, serverCfg, client.ClientTLSConfig(MatchID(server.ID)))
			if clientErr == nil || !strings.Contains(clientErr.Error(), tt.wantErr) {
				t.Errorf("client error = %v, want one containing %q", clientErr, tt.wantErr)
			}
		})
	}
}

// TestVerifySPIFFE covers what a lab CA never issues but a peer could send.
func TestVerifySPIFFE(t *testing.T) {
	ca := newCA(t)
	client := issue(t, ca, "default", "client")
	verify := VerifySPIFFE(ca.Pool(), MatchTrustDomain("cluster.local"))

	// sign makes a leaf from tmpl signed by the lab CA.
	sign := func(tmpl *x509.Certificate) []byte {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.SerialNumber = big.NewInt(7)
		tmpl.NotBefore = time.Now().Add(-time.Hour)
		tmpl.NotAfter = time.Now().Add(time.Hour)
		tmpl.BasicConstraintsValid = true
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
		if err != nil {
			t.Fatal(err)
		}
		return der
	}
	uri := func(s string) []*url.URL { u, _ := url.Parse(s); return []*url.URL{u} }
	two := append(uri("spiffe://cluster.local/ns/default/sa/a"), uri("spiffe://cluster.local/ns/default/sa/b")...)

	tests := []struct {
		name    string
		certs   [][]byte
		wantErr string // "" for success
	}{
		{name: "a lab certificate", certs: [][]byte{client.Cert.Raw}},
		{name: "no certificate", certs: nil, wantErr: "sent no certificate"},
		{name: "garbage", certs: [][]byte{[]byte("not DER")}, wantErr: "reading peer certificate 0"},
		{name: "no URI SAN (a DNS name only)", certs: [][]byte{sign(&x509.Certificate{DNSNames: []string{"server"}})}, wantErr: "has 0 URI SANs"},
		{name: "two URI SANs", certs: [][]byte{sign(&x509.Certificate{URIs: two})}, wantErr: "has 2 URI SANs"},
		{name: "a URI that is not an Istio SPIFFE ID", certs: [][]byte{sign(&x509.Certificate{URIs: uri("spiffe://cluster.local/workload")})}, wantErr: "path must be"},
		{name: "another trust domain", certs: [][]byte{sign(&x509.Certificate{URIs: uri("spiffe://cluster.local.evil/ns/default/sa/client")})}, wantErr: "want prefix spiffe://cluster.local/"},
		{name: "a CA certificate as leaf", certs: [][]byte{sign(&x509.Certificate{IsCA: true, KeyUsage: x509.KeyUsageCertSign, URIs: uri("spiffe://cluster.local/ns/default/sa/client")})}, wantErr: "is a CA certificate"},
		{name: "the CA itself", certs: [][]byte{ca.Cert.Raw}, wantErr: "is a CA certificate"},
	}
	for _, tt := range tests {
		err := verify(tt.certs, nil)
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: error = %v, want one containing %q", tt.name, err, tt.wantErr)
		}
	}
	// Identity failures are recognisable; chain failures keep x509's type.
	if err := VerifySPIFFE(ca.Pool(), MatchID(SPIFFEID{"cluster.local", "default", "server"}))([][]byte{client.Cert.Raw}, nil); !errors.Is(err, ErrPeerIdentity) {
		t.Errorf("wrong identity: %v, want ErrPeerIdentity", err)
	}
	var unknown x509.UnknownAuthorityError
	if err := VerifySPIFFE(newCA(t).Pool(), MatchTrustDomain("cluster.local"))([][]byte{client.Cert.Raw}, nil); !errors.As(err, &unknown) {
		t.Errorf("foreign CA: %v, want x509.UnknownAuthorityError", err)
	}
}
