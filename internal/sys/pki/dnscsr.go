package pki

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"time"
)

// SignDNSCSR signs a PKCS #10 request for a DNS-named workload certificate,
// the way Linkerd's identity service does for its proxies: the request must
// carry a valid signature and name exactly name as its only DNS SAN (no
// URIs, IPs or e-mail addresses); the certificate keeps the request's
// public key, has subject CN name and that one DNS SAN, server and client
// authentication, and is valid as opts says but never past the CA's
// NotAfter. The CA signs it directly, so the CA's certificate alone is the
// chain a peer needs.
func (ca *CA) SignDNSCSR(csr *x509.CertificateRequest, name string, opts Options) (*x509.Certificate, error) {
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("checking the request's signature: %w", err)
	}
	if len(csr.DNSNames) != 1 || csr.DNSNames[0] != name || len(csr.URIs) != 0 || len(csr.IPAddresses) != 0 || len(csr.EmailAddresses) != 0 {
		return nil, fmt.Errorf("the request must name exactly the DNS name %q and nothing else, got DNS %v, URIs %v, IPs %v", name, csr.DNSNames, csr.URIs, csr.IPAddresses)
	}
	notBefore, notAfter, err := opts.window()
	if err != nil {
		return nil, err
	}
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	if !notAfter.After(notBefore) {
		return nil, fmt.Errorf("the CA expires at %s, before the certificate would start", ca.Cert.NotAfter.Format(time.RFC3339))
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		DNSNames:              []string{name},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, csr.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("signing certificate for %s: %w", name, err)
	}
	return x509.ParseCertificate(der)
}
