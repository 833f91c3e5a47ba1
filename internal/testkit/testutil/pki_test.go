package testutil

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"testing"
)

func TestNewTestPKI(t *testing.T) {
	p := NewTestPKI(t)
	roots := x509.NewCertPool()
	caPEM, err := os.ReadFile(p.CAFile)
	if err != nil || !roots.AppendCertsFromPEM(caPEM) {
		t.Fatalf("reading the CA file: %v", err)
	}
	// Each pair loads and verifies (or not) against the CA file, for its use.
	for _, tt := range []struct {
		cert, key string
		name      string // the name the certificate must be valid for; "" for none
		usage     x509.ExtKeyUsage
		wantOK    bool
	}{
		{p.ServerCertFile, p.ServerKeyFile, "127.0.0.1", x509.ExtKeyUsageServerAuth, true},
		{p.ServerCertFile, p.ServerKeyFile, "localhost", x509.ExtKeyUsageServerAuth, true},
		{p.ClientCertFile, p.ClientKeyFile, "", x509.ExtKeyUsageClientAuth, true},
		// Signed by another CA.
		{p.OtherClientCertFile, p.OtherClientKeyFile, "", x509.ExtKeyUsageClientAuth, false},
	} {
		pair, err := tls.LoadX509KeyPair(tt.cert, tt.key)
		if err != nil {
			t.Fatal(err)
		}
		_, err = pair.Leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: tt.name, KeyUsages: []x509.ExtKeyUsage{tt.usage}})
		if (err == nil) != tt.wantOK {
			t.Errorf("%s: Verify error = %v, want ok %v", tt.cert, err, tt.wantOK)
		}
	}
	if _, err := p.ServerCert.Leaf.Verify(x509.VerifyOptions{Roots: p.CAPool, DNSName: "127.0.0.1"}); err != nil {
		t.Errorf("ServerCert does not verify against CAPool: %v", err)
	}
	if cfg := p.ServerTLS(); cfg.ClientAuth != tls.RequireAndVerifyClientCert || cfg.ClientCAs != p.CAPool {
		t.Errorf("ServerTLS does not require a client certificate of the test CA")
	}
}
