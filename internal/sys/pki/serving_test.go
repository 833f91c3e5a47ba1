package pki

import (
	"crypto/x509"
	"net/netip"
	"testing"
)

func TestIssueServing(t *testing.T) {
	ca, err := NewCA("cluster.local")
	if err != nil {
		t.Fatal(err)
	}
	w, err := ca.IssueServing("gateway", []netip.Addr{netip.MustParseAddr("127.0.4.1")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "127.0.4.1"}); err != nil {
		t.Fatalf("serving certificate does not verify for its IP: %v", err)
	}
	if _, err := w.Cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "127.0.4.2"}); err == nil {
		t.Fatal("serving certificate verified for another IP")
	}
	if _, err := ca.IssueServing("x", nil, Options{}); err == nil {
		t.Fatal("issued a serving certificate without an address")
	}
}
