package pki

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"os"
	"path/filepath"
	"testing"
)

// TestLoadCA: a CA written by WriteFiles loads back and signs what the
// original's pool verifies; a lab CA keeps its trust domain; a key of
// another CA is refused.
func TestLoadCA(t *testing.T) {
	dir := t.TempDir()
	lab, err := NewCA("cluster.local")
	if err != nil {
		t.Fatal(err)
	}
	files, err := lab.WriteFiles(filepath.Join(dir, "lab"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := LoadCA(files)
	if err != nil {
		t.Fatal(err)
	}
	if got.TrustDomain != "cluster.local" || !got.Cert.Equal(lab.Cert) {
		t.Errorf("loaded trust domain %q, same cert %v", got.TrustDomain, got.Cert.Equal(lab.Cert))
	}
	w, err := got.IssueLeaf(LeafSpec{DNSNames: []string{"x.example"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Cert.Verify(x509.VerifyOptions{DNSName: "x.example", Roots: lab.Pool()}); err != nil {
		t.Errorf("a leaf of the loaded CA does not verify against the original: %v", err)
	}
	other, err := NewRootCA(pkix.Name{CommonName: "other"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ofiles, err := other.WriteFiles(filepath.Join(dir, "other"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(ofiles.Key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(files.Key, key, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCA(files); err == nil {
		t.Error("a CA certificate with another CA's key loaded")
	}
}
