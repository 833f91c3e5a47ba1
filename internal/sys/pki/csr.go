package pki

import (
	"crypto/rand"
	"crypto/x509"
	"fmt"
	"time"
)

// SignCSR signs a PKCS #10 request for a SPIFFE workload certificate, the
// way Istio's CA does for ztunnel: the request must carry a valid signature
// and exactly one SAN, a URI naming a SPIFFE ID in ca's trust domain; the
// certificate keeps the request's public key and that URI unchanged (ztunnel
// checks the leaf names exactly the identity it asked for), has an empty
// subject, server and client authentication, and is valid as opts says but
// never past the CA's NotAfter. It returns the ID and the certificate.
func (ca *CA) SignCSR(csr *x509.CertificateRequest, opts Options) (SPIFFEID, *x509.Certificate, error) {
	if err := csr.CheckSignature(); err != nil {
		return SPIFFEID{}, nil, fmt.Errorf("checking the request's signature: %w", err)
	}
	if len(csr.URIs) != 1 || len(csr.DNSNames) != 0 || len(csr.IPAddresses) != 0 || len(csr.EmailAddresses) != 0 {
		return SPIFFEID{}, nil, fmt.Errorf("the request must name exactly one SPIFFE URI and nothing else, got URIs %v, DNS %v, IPs %v", csr.URIs, csr.DNSNames, csr.IPAddresses)
	}
	id, err := ParseSPIFFEID(csr.URIs[0].String())
	if err != nil {
		return SPIFFEID{}, nil, err
	}
	if id.TrustDomain != ca.TrustDomain {
		return id, nil, fmt.Errorf("%s is outside the CA's trust domain %q", id, ca.TrustDomain)
	}
	notBefore, notAfter, err := opts.window()
	if err != nil {
		return id, nil, err
	}
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	if !notAfter.After(notBefore) {
		return id, nil, fmt.Errorf("the CA expires at %s, before the certificate would start", ca.Cert.NotAfter.Format(time.RFC3339))
	}
	serial, err := newSerial()
	if err != nil {
		return id, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		URIs:                  csr.URIs,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, csr.PublicKey, ca.key)
	if err != nil {
		return id, nil, fmt.Errorf("signing certificate for %s: %w", id, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return id, nil, err
	}
	return id, cert, nil
}
