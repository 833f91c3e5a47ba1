package pki

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"strings"
	"testing"
	"time"
)

// TestIssueIntermediate checks the trust anchor / issuer pair Linkerd's
// identity needs: the issuer verifies against the anchor as a CA with
// path length 0, a leaf it signs verifies through it, it cannot outlive
// the anchor, and neither a lab root nor the issuer signs another CA.
func TestIssueIntermediate(t *testing.T) {
	now := time.Now()
	anchor, err := NewTrustAnchor(pkix.Name{CommonName: "root.linkerd.cluster.local"}, Options{Validity: 48 * time.Hour, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if !anchor.Cert.IsCA || anchor.Cert.MaxPathLen != 1 || anchor.Cert.Issuer.CommonName != "root.linkerd.cluster.local" {
		t.Errorf("anchor: CA %v, path length %d, issuer %q; want a self-signed CA with path length 1", anchor.Cert.IsCA, anchor.Cert.MaxPathLen, anchor.Cert.Issuer.CommonName)
	}
	issuer, err := anchor.IssueIntermediate(pkix.Name{CommonName: "identity.linkerd.cluster.local"}, Options{Validity: 72 * time.Hour, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if !issuer.Cert.IsCA || !issuer.Cert.MaxPathLenZero || issuer.Cert.Issuer.CommonName != "root.linkerd.cluster.local" {
		t.Errorf("issuer: CA %v, path length zero %v, issuer %q", issuer.Cert.IsCA, issuer.Cert.MaxPathLenZero, issuer.Cert.Issuer.CommonName)
	}
	if !issuer.Cert.NotAfter.Equal(anchor.Cert.NotAfter) {
		t.Errorf("issuer valid until %v, past its anchor's %v", issuer.Cert.NotAfter, anchor.Cert.NotAfter)
	}
	if _, err := issuer.Cert.Verify(x509.VerifyOptions{Roots: anchor.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		t.Errorf("issuer does not verify against the anchor: %v", err)
	}
	leaf, err := issuer.IssueLeaf(LeafSpec{DNSNames: []string{"client.default.serviceaccount.identity.linkerd.cluster.local"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	inter := x509.NewCertPool()
	inter.AddCert(issuer.Cert)
	if _, err := leaf.Cert.Verify(x509.VerifyOptions{Roots: anchor.Pool(), Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		t.Errorf("a leaf of the issuer does not verify through it: %v", err)
	}
	// Neither the issuer nor a lab root signs another CA.
	if _, err := issuer.IssueIntermediate(pkix.Name{CommonName: "deeper"}, Options{}); err == nil || !strings.Contains(err.Error(), "path length 0") {
		t.Errorf("an intermediate under the issuer: %v; want refused", err)
	}
	lab, err := NewCA("cluster.local")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lab.IssueIntermediate(pkix.Name{CommonName: "x"}, Options{}); err == nil {
		t.Error("the lab CA signed an intermediate CA; want refused")
	}
	if _, err := NewTrustAnchor(pkix.Name{}, Options{}); err == nil {
		t.Error("a trust anchor without a common name; want refused")
	}
}
