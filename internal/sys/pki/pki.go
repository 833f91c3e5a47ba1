// Package pki makes the local lab's certificates: an EC P-256 root CA and
// Istio-style workload certificates (X.509 SVIDs) whose only subject
// alternative name is the URI spiffe://<trust-domain>/ns/<ns>/sa/<sa>.
// Envoy checks them with match_typed_subject_alt_names (san_type URI); Go
// peers check them with VerifySPIFFE, since Go's own hostname verification
// has no name to check against.
//
// NewRootCA and IssueLeaf make general roots and leaves as well (any
// subject, DNS names, IP addresses, server and/or client use): those of the
// test cluster (kubetest) and of throw-away test PKIs (testutil).
//
// Keys never leave memory except through WriteFiles, which writes them with
// mode 0600, and KeyPEM. Nothing here rotates certificates: a run's
// certificates are made at its start and outlive it (DefaultValidity).
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Certificate lifetimes.
const (
	// DefaultValidity is how long certificates stay valid when
	// Options.Validity is 0: 24 h, longer than any lab run.
	DefaultValidity = 24 * time.Hour
	// ClockSkew is how far before its creation a certificate becomes valid
	// (NotBefore = creation − 5 min), so peers whose clocks lag a little
	// accept it.
	ClockSkew = 5 * time.Minute
	// CACommonName is the subject common name of every lab root CA.
	CACommonName = "meshbench lab CA"
)

// File modes used by WriteFiles.
const (
	CertFileMode os.FileMode = 0o644 // certificates and CA bundles
	KeyFileMode  os.FileMode = 0o600 // private keys
	DirMode      os.FileMode = 0o700 // directories WriteFiles creates
)

// Options tune a certificate. The zero value gives the defaults.
type Options struct {
	// Validity is how long the certificate stays valid after Now; 0 means
	// DefaultValidity. A workload certificate never outlives its CA: its
	// NotAfter is capped at the CA's.
	Validity time.Duration
	// Now is the creation time; the zero value means time.Now(). The
	// certificate is valid from Now − ClockSkew.
	Now time.Time
}

func (o Options) window() (notBefore, notAfter time.Time, err error) {
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	validity := o.Validity
	if validity == 0 {
		validity = DefaultValidity
	}
	if validity < 0 {
		return time.Time{}, time.Time{}, fmt.Errorf("certificate validity %v is negative", validity)
	}
	return now.Add(-ClockSkew), now.Add(validity), nil
}

// CA is a self-signed EC P-256 root: the lab's, for one trust domain
// (NewCA), or a general one (NewRootCA). It is safe for concurrent use (the
// Issue methods only read it).
type CA struct {
	// TrustDomain is the only trust domain this CA issues identities in;
	// empty for a NewRootCA root, which issues none.
	TrustDomain string
	// Cert is the root certificate (the lab's: CN CACommonName, O
	// TrustDomain).
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

// NewCA makes a root CA for trustDomain (e.g. "cluster.local") valid for
// DefaultValidity (24 h).
func NewCA(trustDomain string) (*CA, error) {
	return NewCAWithOptions(trustDomain, Options{})
}

// NewCAWithOptions makes a root CA for trustDomain with the given validity
// and creation time.
func NewCAWithOptions(trustDomain string, opts Options) (*CA, error) {
	if err := validateTrustDomain(trustDomain); err != nil {
		return nil, fmt.Errorf("making lab CA: %w", err)
	}
	ca, err := newRoot("lab CA", pkix.Name{CommonName: CACommonName, Organization: []string{trustDomain}}, opts)
	if err != nil {
		return nil, err
	}
	ca.TrustDomain = trustDomain
	return ca, nil
}

// NewRootCA makes a self-signed EC P-256 root CA named subject (which needs
// a common name), valid as opts says (24 h by default), for certificates
// other than the lab's SPIFFE ones: a test cluster's, a test's. It has no
// trust domain, so Issue refuses every SPIFFE ID; IssueLeaf and
// IssueServing sign with it. Like the lab CA it signs leaves only (path
// length 0).
func NewRootCA(subject pkix.Name, opts Options) (*CA, error) {
	if subject.CommonName == "" {
		return nil, errors.New("making CA: the subject has no common name")
	}
	return newRoot(fmt.Sprintf("CA %q", subject.CommonName), subject, opts)
}

// newRoot makes a self-signed root CA named subject, with no trust domain;
// what names it in errors.
func newRoot(what string, subject pkix.Name, opts Options) (*CA, error) {
	return newSignedCA(what, subject, opts, nil, 0, x509.KeyUsageDigitalSignature)
}

// Pool returns a certificate pool holding only this CA, for
// tls.Config.RootCAs/ClientCAs and VerifySPIFFE. Callers must not modify it.
func (ca *CA) Pool() *x509.CertPool { return ca.pool }

// CertPEM returns the CA certificate PEM-encoded: the trust bundle peers
// need.
func (ca *CA) CertPEM() []byte { return certPEM(ca.Cert.Raw) }

// Workload is a leaf certificate, its key, and the CA that signed it: one
// workload's SPIFFE identity (Issue), or a general leaf (IssueLeaf,
// IssueServing) whose ID is zero.
type Workload struct {
	// ID is the identity in the certificate's only SAN; zero for a general
	// leaf.
	ID SPIFFEID
	// Cert is the leaf certificate.
	Cert *x509.Certificate
	// CA is the issuing CA, whose certificate is the workload's trust
	// bundle.
	CA  *CA
	key *ecdsa.PrivateKey
}

// Issue makes an EC P-256 certificate for id, signed by ca. Its only subject
// alternative name is the URI id.String() (no DNS names, IP addresses or
// e-mail addresses), its subject is empty as in Istio (so the SAN extension
// is critical), its extended key usage is server and client authentication,
// and it is no CA. An empty id.TrustDomain means the CA's; another trust
// domain than the CA's is refused.
func (ca *CA) Issue(id SPIFFEID, opts Options) (*Workload, error) {
	if id.TrustDomain == "" {
		id.TrustDomain = ca.TrustDomain
	}
	if err := id.Validate(); err != nil {
		return nil, fmt.Errorf("issuing certificate for %s: %w", id, err)
	}
	if id.TrustDomain != ca.TrustDomain {
		return nil, fmt.Errorf("issuing certificate for %s: the CA issues identities in trust domain %q only", id, ca.TrustDomain)
	}
	uri, err := url.Parse(id.String())
	if err != nil {
		return nil, fmt.Errorf("issuing certificate for %s: %w", id, err)
	}
	w, err := ca.issueLeaf(id.String(), LeafSpec{
		URIs:        []*url.URL{uri},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}, opts)
	if err != nil {
		return nil, err
	}
	w.ID = id
	return w, nil
}

// LeafSpec describes a general leaf certificate for IssueLeaf: its names
// and what it may be used for.
type LeafSpec struct {
	// Subject is the certificate's subject, e.g. CN admin, O system:masters
	// for a Kubernetes client. It may be empty when there is a subject
	// alternative name (the SAN extension is then critical).
	Subject pkix.Name
	// DNSNames, IPs and URIs are the subject alternative names, the names a
	// server certificate is verified for.
	DNSNames []string
	IPs      []netip.Addr
	URIs     []*url.URL
	// ExtKeyUsage is what the certificate may be used for:
	// x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth or both. At
	// least one is required (without any, Go would accept the certificate
	// for every use).
	ExtKeyUsage []x509.ExtKeyUsage
}

// name is what names the certificate in errors: its common name, else its
// first SAN, else its whole subject; "" when it has no name at all.
func (s LeafSpec) name() string {
	switch {
	case s.Subject.CommonName != "":
		return s.Subject.CommonName
	case len(s.URIs) > 0:
		return s.URIs[0].String()
	case len(s.DNSNames) > 0:
		return s.DNSNames[0]
	case len(s.IPs) > 0:
		return s.IPs[0].String()
	}
	return s.Subject.String()
}

// IssueLeaf makes an EC P-256 leaf certificate for spec, signed by ca: no
// CA, key usage digitalSignature, extended key usage spec.ExtKeyUsage,
// valid as opts says but never past the CA's NotAfter. The Workload's ID is
// zero. It refuses a spec without any name (subject or SAN), without an
// extended key usage, or with an invalid IP address.
func (ca *CA) IssueLeaf(spec LeafSpec, opts Options) (*Workload, error) {
	name := spec.name()
	if name == "" {
		return nil, errors.New("issuing certificate: neither a subject nor a subject alternative name given")
	}
	if len(spec.ExtKeyUsage) == 0 {
		return nil, fmt.Errorf("issuing certificate for %s: no extended key usage given (server or client authentication)", name)
	}
	return ca.issueLeaf(name, spec, opts)
}

// issueLeaf signs spec without checking its names or usages; name names the
// certificate in errors.
func (ca *CA) issueLeaf(name string, spec LeafSpec, opts Options) (*Workload, error) {
	notBefore, notAfter, err := opts.window()
	if err != nil {
		return nil, fmt.Errorf("issuing certificate for %s: %w", name, err)
	}
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	if !notAfter.After(notBefore) {
		return nil, fmt.Errorf("issuing certificate for %s: the CA expires at %s, before the certificate would start", name, ca.Cert.NotAfter.Format(time.RFC3339))
	}
	ips := make([]net.IP, 0, len(spec.IPs))
	for _, ip := range spec.IPs {
		if !ip.IsValid() {
			return nil, fmt.Errorf("issuing certificate for %s: invalid (zero) IP address", name)
		}
		ips = append(ips, net.IP(ip.AsSlice()))
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("making key for %s: %w", name, err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               spec.Subject,
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           spec.ExtKeyUsage,
		BasicConstraintsValid: true,
		IsCA:                  false,
		DNSNames:              spec.DNSNames,
		IPAddresses:           ips,
		URIs:                  spec.URIs,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("signing certificate for %s: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("reading back certificate for %s: %w", name, err)
	}
	return &Workload{Cert: cert, CA: ca, key: key}, nil
}

// CertPEM returns the leaf certificate PEM-encoded (the whole chain a peer
// needs: the CA signs leaves directly).
func (w *Workload) CertPEM() []byte { return certPEM(w.Cert.Raw) }

// KeyPEM returns the private key PEM-encoded as PKCS #8 ("PRIVATE KEY"),
// which Envoy (BoringSSL) and Go both read.
func (w *Workload) KeyPEM() []byte {
	der, err := x509.MarshalPKCS8PrivateKey(w.key)
	if err != nil { // cannot happen for a P-256 key
		panic("pki: marshalling a P-256 key: " + err.Error())
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// TLSCertificate returns the certificate and key for tls.Config.Certificates.
func (w *Workload) TLSCertificate() tls.Certificate {
	return tls.Certificate{Certificate: [][]byte{w.Cert.Raw}, PrivateKey: w.key, Leaf: w.Cert}
}

// CAFiles are the paths (CA).WriteFiles wrote.
type CAFiles struct {
	Cert string `json:"cert"` // DIR/ca.pem, mode 0644
	Key  string `json:"key"`  // DIR/ca-key.pem, mode 0600
}

// Bundle groups the files an Envoy TLS context of one workload needs:
// tls_certificates[].certificate_chain and .private_key, and
// validation_context.trusted_ca.
type Bundle struct {
	CertChain  string `json:"cert_chain"`  // DIR/NAME.pem: the leaf certificate, mode 0644
	PrivateKey string `json:"private_key"` // DIR/NAME-key.pem: its key, mode 0600
	TrustedCA  string `json:"trusted_ca"`  // DIR/NAME-ca.pem: the CA bundle, mode 0644
}

// WriteFiles writes ca.pem (mode 0644) and ca-key.pem (mode 0600) into dir,
// creating dir with mode 0700 if needed. Each file is written whole (temp
// file + rename) and gets exactly its mode, whatever the umask or an older
// file's mode.
func (ca *CA) WriteFiles(dir string) (CAFiles, error) {
	der, err := x509.MarshalPKCS8PrivateKey(ca.key)
	if err != nil {
		return CAFiles{}, fmt.Errorf("writing lab CA: %w", err)
	}
	files := CAFiles{Cert: filepath.Join(dir, "ca.pem"), Key: filepath.Join(dir, "ca-key.pem")}
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return CAFiles{}, fmt.Errorf("writing lab CA: %w", err)
	}
	if err := writeFileAtomic(files.Cert, ca.CertPEM(), CertFileMode); err != nil {
		return CAFiles{}, fmt.Errorf("writing lab CA: %w", err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	if err := writeFileAtomic(files.Key, keyPEM, KeyFileMode); err != nil {
		return CAFiles{}, fmt.Errorf("writing lab CA: %w", err)
	}
	return files, nil
}

// WriteFiles writes NAME.pem (certificate, 0644), NAME-key.pem (key, 0600)
// and NAME-ca.pem (the issuing CA's certificate, 0644) into dir, creating
// dir with mode 0700 if needed, and returns their paths. name is a plain
// file name such as "server-0-sidecar". Each workload gets its own copy of
// the CA bundle, so workloads of different CAs can share a directory.
func (w *Workload) WriteFiles(dir, name string) (Bundle, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		return Bundle{}, fmt.Errorf("writing certificate files for %s: name %q must be a plain file name", w.ID, name)
	}
	b := Bundle{
		CertChain:  filepath.Join(dir, name+".pem"),
		PrivateKey: filepath.Join(dir, name+"-key.pem"),
		TrustedCA:  filepath.Join(dir, name+"-ca.pem"),
	}
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return Bundle{}, fmt.Errorf("writing certificate files for %s: %w", w.ID, err)
	}
	for _, f := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{
		{b.CertChain, w.CertPEM(), CertFileMode},
		{b.PrivateKey, w.KeyPEM(), KeyFileMode},
		{b.TrustedCA, w.CA.CertPEM(), CertFileMode},
	} {
		if err := writeFileAtomic(f.path, f.data, f.mode); err != nil {
			return Bundle{}, fmt.Errorf("writing certificate files for %s: %w", w.ID, err)
		}
	}
	return b, nil
}

// writeFileAtomic writes data to a temp file in path's directory (created
// 0600 by os.CreateTemp, so a key is never readable by others, even
// briefly), sets mode, and renames it over path.
func writeFileAtomic(path string, data []byte, mode os.FileMode) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(mode); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

func certPEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// newSerial returns a random serial number in [1, 2^127] (RFC 5280:
// positive, at most 20 octets).
func newSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("making certificate serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}
