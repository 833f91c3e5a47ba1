package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
)

// NewTrustAnchor makes a self-signed EC P-256 root CA named subject (which
// needs a common name) that signs one level of intermediate CAs (path
// length 1), valid as opts says: a mesh's trust anchor whose issuer
// (IssueIntermediate) signs the workloads, as Linkerd's identity wants
// them (its step-cli recipe's root-ca profile). It has no trust domain.
func NewTrustAnchor(subject pkix.Name, opts Options) (*CA, error) {
	if subject.CommonName == "" {
		return nil, errors.New("making trust anchor: the subject has no common name")
	}
	return newSignedCA(fmt.Sprintf("trust anchor %q", subject.CommonName), subject, opts, nil, 1, 0)
}

// IssueIntermediate makes an EC P-256 CA named subject, signed by ca,
// that signs leaves only (path length 0), valid as opts says but never
// beyond ca: an identity issuer (Linkerd's step-cli intermediate-ca
// profile). ca must allow intermediates (NewTrustAnchor).
func (ca *CA) IssueIntermediate(subject pkix.Name, opts Options) (*CA, error) {
	if subject.CommonName == "" {
		return nil, errors.New("making intermediate CA: the subject has no common name")
	}
	if ca.Cert.MaxPathLenZero || (ca.Cert.MaxPathLen == 0 && ca.Cert.BasicConstraintsValid) {
		return nil, fmt.Errorf("making intermediate CA %q: CA %q signs leaves only (path length 0)", subject.CommonName, ca.Cert.Subject.CommonName)
	}
	return newSignedCA(fmt.Sprintf("intermediate CA %q", subject.CommonName), subject, opts, ca, 0, 0)
}

// newSignedCA makes an EC P-256 CA named subject with the given path length
// and key usages besides signing certificates and CRLs, self-signed when
// parent is nil, else signed by parent (and valid no longer than it).
func newSignedCA(what string, subject pkix.Name, opts Options, parent *CA, pathLen int, usage x509.KeyUsage) (*CA, error) {
	notBefore, notAfter, err := opts.window()
	if err != nil {
		return nil, fmt.Errorf("making %s: %w", what, err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("making %s key: %w", what, err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               subject,
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLen:            pathLen,
		MaxPathLenZero:        pathLen == 0,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | usage,
	}
	signer, signerCert := key, tmpl
	if parent != nil {
		if tmpl.NotAfter.After(parent.Cert.NotAfter) {
			tmpl.NotAfter = parent.Cert.NotAfter
		}
		signer, signerCert = parent.key, parent.Cert
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, &key.PublicKey, signer)
	if err != nil {
		return nil, fmt.Errorf("signing %s certificate: %w", what, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("reading back %s certificate: %w", what, err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &CA{Cert: cert, key: key, pool: pool}, nil
}
