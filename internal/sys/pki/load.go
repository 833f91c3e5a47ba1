package pki

import (
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
)

// LoadCA reads a CA written by WriteFiles (ca.pem and ca-key.pem), e.g. in
// a child process that signs with the parent's CA. A lab CA (common name
// CACommonName) gets its trust domain back from its organization.
func LoadCA(files CAFiles) (*CA, error) {
	certPEM, err := os.ReadFile(files.Cert)
	if err != nil {
		return nil, fmt.Errorf("loading CA: %w", err)
	}
	keyPEM, err := os.ReadFile(files.Key)
	if err != nil {
		return nil, fmt.Errorf("loading CA: %w", err)
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || cb.Type != "CERTIFICATE" || kb == nil || kb.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("loading CA %s, %s: allowed a PEM CERTIFICATE and a PEM PRIVATE KEY (PKCS #8)", files.Cert, files.Key)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("loading CA %s: %w", files.Cert, err)
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("loading CA key %s: %w", files.Key, err)
	}
	key, ok := k.(*ecdsa.PrivateKey)
	if !ok || !key.PublicKey.Equal(cert.PublicKey) {
		return nil, errors.New("loading CA: the key in " + files.Key + " is not the EC key of " + files.Cert)
	}
	if !cert.IsCA {
		return nil, errors.New("loading CA: " + files.Cert + " is not a CA certificate")
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	ca := &CA{Cert: cert, key: key, pool: pool}
	if cert.Subject.CommonName == CACommonName && len(cert.Subject.Organization) == 1 {
		ca.TrustDomain = cert.Subject.Organization[0]
	}
	return ca, nil
}
