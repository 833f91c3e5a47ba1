package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"
)

func csr(t *testing.T, tmpl *x509.CertificateRequest) *x509.CertificateRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificateRequest(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func uris(s ...string) []*url.URL {
	var out []*url.URL
	for _, u := range s {
		p, _ := url.Parse(u)
		out = append(out, p)
	}
	return out
}

// TestSignCSR signs what ztunnel asks for and refuses everything else.
func TestSignCSR(t *testing.T) {
	ca := newCA(t)
	const client = "spiffe://cluster.local/ns/default/sa/client"
	tests := []struct {
		name    string
		req     *x509.CertificateRequest
		wantErr string
	}{
		// ztunnel's request: one URI SAN, empty subject
		{"spiffe", &x509.CertificateRequest{URIs: uris(client)}, ""},
		// another trust domain
		{"foreign", &x509.CertificateRequest{URIs: uris("spiffe://evil.local/ns/default/sa/client")}, "trust domain"},
		// two identities
		{"two", &x509.CertificateRequest{URIs: uris(client, "spiffe://cluster.local/ns/default/sa/server")}, "exactly one"},
		// a DNS name besides the URI
		{"dns too", &x509.CertificateRequest{URIs: uris(client), DNSNames: []string{"example.com"}}, "exactly one"},
		// an IP besides the URI
		{"ip too", &x509.CertificateRequest{URIs: uris(client), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}, "exactly one"},
		// not a SPIFFE ID
		{"https", &x509.CertificateRequest{URIs: uris("https://cluster.local/ns/default/sa/client")}, "spiffe"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id, cert, err := ca.SignCSR(csr(t, tc.req), Options{Validity: time.Hour})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if id.String() != client || len(cert.URIs) != 1 || cert.URIs[0].String() != client {
				t.Fatalf("id %s, URIs %v", id, cert.URIs)
			}
			if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
				t.Fatal(err)
			}
			if life := cert.NotAfter.Sub(cert.NotBefore); life > time.Hour+ClockSkew+time.Second {
				t.Errorf("lives %v, asked for 1h", life)
			}
		})
	}
	// A tampered request (its signature no longer matches) is refused.
	bad := csr(t, &x509.CertificateRequest{URIs: uris(client)})
	bad.Signature[len(bad.Signature)-1] ^= 0xff
	if _, _, err := ca.SignCSR(bad, Options{}); err == nil {
		t.Error("a request with a bad signature was signed")
	}
}
