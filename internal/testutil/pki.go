package testutil

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
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

// NewTestPKI creates the files under t.TempDir().
func NewTestPKI(t testing.TB) *TestPKI {
	t.Helper()
	dir := t.TempDir()
	caKey, caCert, caDER := newCA(t, "meshbench test CA")
	otherKey, otherCert, _ := newCA(t, "another CA")
	p := &TestPKI{CAPool: x509.NewCertPool()}
	p.CAPool.AddCert(caCert)
	p.CAFile = writePEM(t, dir, "ca.pem", "CERTIFICATE", caDER)
	sDER, sKey := leaf(t, caCert, caKey, "server", true)
	p.ServerCertFile = writePEM(t, dir, "server.pem", "CERTIFICATE", sDER)
	p.ServerKeyFile = writeKey(t, dir, "server-key.pem", sKey)
	cDER, cKey := leaf(t, caCert, caKey, "client", false)
	p.ClientCertFile = writePEM(t, dir, "client.pem", "CERTIFICATE", cDER)
	p.ClientKeyFile = writeKey(t, dir, "client-key.pem", cKey)
	oDER, oKey := leaf(t, otherCert, otherKey, "intruder", false)
	p.OtherClientCertFile = writePEM(t, dir, "other.pem", "CERTIFICATE", oDER)
	p.OtherClientKeyFile = writeKey(t, dir, "other-key.pem", oKey)
	var err error
	p.ServerCert, err = tls.LoadX509KeyPair(p.ServerCertFile, p.ServerKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// ServerTLS returns a server configuration that requires a client
// certificate signed by the test CA (mTLS).
func (p *TestPKI) ServerTLS() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{p.ServerCert}, ClientCAs: p.CAPool,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
}

func newCA(t testing.TB, cn string) (*ecdsa.PrivateKey, *x509.Certificate, []byte) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return key, cert, der
}

func leaf(t testing.TB, ca *x509.Certificate, caKey *ecdsa.PrivateKey, cn string, server bool) ([]byte, *ecdsa.PrivateKey) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.DNSNames = []string{"localhost"}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return der, key
}

func writePEM(t testing.TB, dir, name, typ string, der []byte) string {
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeKey(t testing.TB, dir, name string, key *ecdsa.PrivateKey) string {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return writePEM(t, dir, name, "EC PRIVATE KEY", der)
}
