package pki

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net/netip"
)

// IssueServing makes a TLS serving certificate for an ingress gateway: IP
// SANs for ips (what a load generator verifies when it dials an address)
// and no SPIFFE identity, signed by ca. The Workload's ID is zero.
func (ca *CA) IssueServing(name string, ips []netip.Addr, opts Options) (*Workload, error) {
	if len(ips) == 0 {
		return nil, errors.New("issuing serving certificate for " + name + ": no IP address given")
	}
	return ca.IssueLeaf(LeafSpec{
		Subject:     pkix.Name{CommonName: name},
		IPs:         ips,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, opts)
}
