package pki

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrPeerIdentity is wrapped by VerifySPIFFE's error when the peer's chain
// is valid but its SPIFFE ID is not one the Matcher accepts, or the peer's
// certificate carries no usable SPIFFE ID.
var ErrPeerIdentity = errors.New("peer SPIFFE identity not accepted")

// Matcher decides which peer SPIFFE IDs are accepted, like Envoy's
// match_typed_subject_alt_names string matchers (exact or prefix). The zero
// Matcher accepts nothing.
type Matcher struct {
	desc  string
	match func(uri string) bool
}

// MatchID accepts exactly id (Envoy's `exact`: secure naming on the client
// side, e.g. spiffe://cluster.local/ns/default/sa/server).
func MatchID(id SPIFFEID) Matcher {
	want := id.String()
	return Matcher{desc: want, match: func(uri string) bool { return uri == want }}
}

// MatchPrefix accepts every ID that starts with prefix (Envoy's `prefix`).
// End the prefix with '/': "spiffe://cluster.local" would also accept
// spiffe://cluster.local.evil/….
func MatchPrefix(prefix string) Matcher {
	return Matcher{desc: "prefix " + prefix, match: func(uri string) bool { return strings.HasPrefix(uri, prefix) }}
}

// MatchTrustDomain accepts every ID in trust domain td: the prefix
// spiffe://<td>/ (the lab's server-side rule).
func MatchTrustDomain(td string) Matcher {
	return MatchPrefix(scheme + td + "/")
}

// String describes what the matcher accepts, for error messages.
func (m Matcher) String() string {
	if m.match == nil {
		return "no identity"
	}
	return m.desc
}

// VerifySPIFFE returns a tls.Config.VerifyPeerCertificate callback for Go
// peers of the lab. It verifies the peer's chain against roots itself
// (intermediates from the peer's other certificates, validity at the time of
// the handshake, any extended key usage), then requires the leaf to be no CA
// and to carry exactly one URI SAN that is an Istio-style SPIFFE ID
// (ParseSPIFFEID) accepted by want. It ignores the verified chains Go passes
// in, which are empty when InsecureSkipVerify is set or ClientAuth is
// RequireAnyClientCert — the two settings URI-only certificates need.
//
// Go does not call VerifyPeerCertificate on resumed sessions. A Go client
// has no session cache unless one is set (ClientTLSConfig sets none), so it
// never resumes; a Go server resumes only sessions whose first handshake
// passed this same check.
func VerifySPIFFE(roots *x509.CertPool, want Matcher) func(rawCerts [][]byte, _ [][]*x509.Certificate) error {
	return func(rawCerts [][]byte, _ [][]*x509.Certificate) error {
		if len(rawCerts) == 0 {
			return fmt.Errorf("%w: the peer sent no certificate", ErrPeerIdentity)
		}
		certs := make([]*x509.Certificate, len(rawCerts))
		for i, raw := range rawCerts {
			c, err := x509.ParseCertificate(raw)
			if err != nil {
				return fmt.Errorf("reading peer certificate %d: %w", i, err)
			}
			certs[i] = c
		}
		leaf := certs[0]
		opts := x509.VerifyOptions{
			Roots:         roots,
			Intermediates: x509.NewCertPool(),
			CurrentTime:   time.Now(),
			KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
		}
		for _, c := range certs[1:] {
			opts.Intermediates.AddCert(c)
		}
		if _, err := leaf.Verify(opts); err != nil {
			return fmt.Errorf("verifying peer certificate chain: %w", err)
		}
		if leaf.IsCA {
			return fmt.Errorf("%w: the peer's certificate is a CA certificate", ErrPeerIdentity)
		}
		if len(leaf.URIs) != 1 {
			return fmt.Errorf("%w: the peer's certificate has %d URI SANs, want exactly 1", ErrPeerIdentity, len(leaf.URIs))
		}
		uri := leaf.URIs[0].String()
		if _, err := ParseSPIFFEID(uri); err != nil {
			return fmt.Errorf("%w: %w", ErrPeerIdentity, err)
		}
		if want.match == nil || !want.match(uri) {
			return fmt.Errorf("%w: peer is %s, want %s", ErrPeerIdentity, uri, want)
		}
		return nil
	}
}

// ServerTLSConfig returns a server configuration presenting w's certificate
// and requiring a client certificate that chains to w's CA and whose SPIFFE
// ID peer accepts (mutual TLS, TLS 1.2–1.3 as Istio's ISTIO_MUTUAL; Go
// negotiates 1.3 with Go and Envoy peers).
func (w *Workload) ServerTLSConfig(peer Matcher) *tls.Config {
	return &tls.Config{
		Certificates:          []tls.Certificate{w.TLSCertificate()},
		ClientAuth:            tls.RequireAnyClientCert, // chain and identity checked by VerifySPIFFE
		VerifyPeerCertificate: VerifySPIFFE(w.CA.Pool(), peer),
		MinVersion:            tls.VersionTLS12,
	}
}

// ClientTLSConfig returns a client configuration presenting w's certificate
// and accepting only a server that chains to w's CA and whose SPIFFE ID peer
// accepts (use MatchID for secure naming). Go's hostname check is switched
// off (InsecureSkipVerify) because the certificates carry no DNS names or IP
// addresses; VerifySPIFFE does the whole verification instead.
func (w *Workload) ClientTLSConfig(peer Matcher) *tls.Config {
	return &tls.Config{
		Certificates:          []tls.Certificate{w.TLSCertificate()},
		InsecureSkipVerify:    true, // #nosec G402 -- verified by VerifyPeerCertificate
		VerifyPeerCertificate: VerifySPIFFE(w.CA.Pool(), peer),
		MinVersion:            tls.VersionTLS12,
	}
}
