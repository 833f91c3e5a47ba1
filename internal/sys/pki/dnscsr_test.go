package pki

import (
	"crypto/x509"
	"net"
	"strings"
	"testing"
	"time"
)

// TestSignDNSCSR signs what Linkerd's proxy sends (one DNS SAN, the
// identity) and refuses everything else.
func TestSignDNSCSR(t *testing.T) {
	ca := newCA(t)
	const id = "client.default.serviceaccount.identity.linkerd.cluster.local"
	tests := []struct {
		name    string
		req     *x509.CertificateRequest
		wantErr string
	}{
		// the proxy's request: the identity as DNS SAN (and CN)
		{"identity", &x509.CertificateRequest{DNSNames: []string{id}}, ""},
		// another name than the one asked for
		{"other name", &x509.CertificateRequest{DNSNames: []string{"server.default.serviceaccount.identity.linkerd.cluster.local"}}, "exactly the DNS name"},
		// two names
		{"two", &x509.CertificateRequest{DNSNames: []string{id, "x.example"}}, "exactly the DNS name"},
		// a URI besides the name
		{"uri too", &x509.CertificateRequest{DNSNames: []string{id}, URIs: uris("spiffe://cluster.local/ns/default/sa/client")}, "exactly the DNS name"},
		// an IP besides the name
		{"ip too", &x509.CertificateRequest{DNSNames: []string{id}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}, "exactly the DNS name"},
		// no SAN at all
		{"none", &x509.CertificateRequest{}, "exactly the DNS name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cert, err := ca.SignDNSCSR(csr(t, tc.req), id, Options{Validity: time.Hour})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cert.Verify(x509.VerifyOptions{DNSName: id, Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
				t.Errorf("verify as client: %v", err)
			}
			if _, err := cert.Verify(x509.VerifyOptions{DNSName: id, Roots: ca.Pool()}); err != nil {
				t.Errorf("verify as server: %v", err)
			}
			if d := cert.NotAfter.Sub(cert.NotBefore); d != time.Hour+ClockSkew {
				t.Errorf("lifetime %v, want 1h + skew", d)
			}
		})
	}
	// A tampered request (signature no longer matches) is refused.
	r := csr(t, &x509.CertificateRequest{DNSNames: []string{id}})
	r.Signature[len(r.Signature)-1] ^= 0xff
	if _, err := ca.SignDNSCSR(r, id, Options{}); err == nil || !strings.Contains(err.Error(), "signature") {
		t.Errorf("tampered request: err = %v", err)
	}
}
