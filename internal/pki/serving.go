package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"
)

// IssueServing makes a TLS serving certificate for an ingress gateway: IP
// SANs for ips (what a load generator verifies when it dials an address)
// and no SPIFFE identity, signed by ca. The Workload's ID is zero.
func (ca *CA) IssueServing(name string, ips []netip.Addr, opts Options) (*Workload, error) {
	if len(ips) == 0 {
		return nil, errors.New("issuing serving certificate for " + name + ": no IP address given")
	}
	notBefore, notAfter, err := opts.window()
	if err != nil {
		return nil, fmt.Errorf("issuing serving certificate for %s: %w", name, err)
	}
	notAfter = minTime(notAfter, ca.Cert.NotAfter)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: name},
		NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true,
	}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.IP(ip.AsSlice()))
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("signing serving certificate for %s: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &Workload{Cert: cert, CA: ca, key: key}, nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
