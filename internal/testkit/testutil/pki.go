package testutil

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/meshbench/meshbench/internal/sys/pki"
)

// TestPKI is a throw-away CA with a server certificate for 127.0.0.1 and a
// client certificate, written as PEM files in a test's temp dir.
type TestPKI struct {
	CAFile, ServerCertFile, ServerKeyFile, ClientCertFile, ClientKeyFile string
	// OtherClientCertFile/KeyFile are signed by a different CA (rejected by
	// a server that trusts only CAFile).
	OtherClientCertFile, OtherClientKeyFile string
	CAPool                                  *x509.CertPool
	ServerCert                              tls.Certificate
}

// NewTestPKI creates the files under t.TempDir(). The certificates come
// from package pki (NewRootCA, IssueLeaf).
func NewTestPKI(t testing.TB) *TestPKI {
	t.Helper()
	dir := t.TempDir()
	ca, other := newCA(t, "meshbench test CA"), newCA(t, "another CA")
	server := leaf(t, ca, pki.LeafSpec{
		Subject:     pkix.Name{CommonName: "server"},
		DNSNames:    []string{"localhost"},
		IPs:         []netip.Addr{netip.MustParseAddr("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	client := leaf(t, ca, clientSpec("client"))
	intruder := leaf(t, other, clientSpec("intruder"))
	p := &TestPKI{CAPool: x509.NewCertPool(), ServerCert: server.TLSCertificate()}
	p.CAPool.AddCert(ca.Cert)
	p.CAFile = writeFile(t, dir, "ca.pem", ca.CertPEM())
	p.ServerCertFile, p.ServerKeyFile = writePair(t, dir, "server", server)
	p.ClientCertFile, p.ClientKeyFile = writePair(t, dir, "client", client)
	p.OtherClientCertFile, p.OtherClientKeyFile = writePair(t, dir, "other", intruder)
	return p
}

// ServerTLS returns a server configuration that requires a client
// certificate signed by the test CA (mTLS).
func (p *TestPKI) ServerTLS() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{p.ServerCert}, ClientCAs: p.CAPool,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
}

func newCA(t testing.TB, cn string) *pki.CA {
	t.Helper()
	ca, err := pki.NewRootCA(pkix.Name{CommonName: cn}, pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func clientSpec(cn string) pki.LeafSpec {
	return pki.LeafSpec{Subject: pkix.Name{CommonName: cn}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
}

func leaf(t testing.TB, ca *pki.CA, spec pki.LeafSpec) *pki.Workload {
	t.Helper()
	w, err := ca.IssueLeaf(spec, pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// writePair writes NAME.pem and NAME-key.pem and returns their paths.
func writePair(t testing.TB, dir, name string, w *pki.Workload) (certFile, keyFile string) {
	t.Helper()
	return writeFile(t, dir, name+".pem", w.CertPEM()), writeFile(t, dir, name+"-key.pem", w.KeyPEM())
}

func writeFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
