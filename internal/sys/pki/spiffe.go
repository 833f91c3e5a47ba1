package pki

import (
	"errors"
	"fmt"
	"strings"
)

// SPIFFE ID limits (SPIFFE-ID specification, sections 2.1 and 2.3).
const (
	// MaxTrustDomainLen is the longest trust domain name accepted, in bytes.
	MaxTrustDomainLen = 255
	// MaxIDLen is the longest SPIFFE ID accepted, in bytes.
	MaxIDLen = 2048
)

const scheme = "spiffe://"

// SPIFFEID is an Istio-style workload identity,
// spiffe://<TrustDomain>/ns/<Namespace>/sa/<ServiceAccount>. The trust domain
// is lowercase letters, digits, '.', '-' and '_'; namespace and service
// account are letters, digits, '.', '-' and '_', and neither is "." nor "..".
type SPIFFEID struct {
	TrustDomain    string // e.g. "cluster.local"
	Namespace      string // Kubernetes namespace, e.g. "default"
	ServiceAccount string // Kubernetes service account, e.g. "client"
}

// String returns the URI form, spiffe://<td>/ns/<ns>/sa/<sa>. It does not
// validate: call Validate for that.
func (id SPIFFEID) String() string {
	return scheme + id.TrustDomain + "/ns/" + id.Namespace + "/sa/" + id.ServiceAccount
}

// Validate reports whether id can be written as a SPIFFE ID that
// ParseSPIFFEID reads back unchanged.
func (id SPIFFEID) Validate() error {
	if err := validateTrustDomain(id.TrustDomain); err != nil {
		return err
	}
	if err := validateSegment("namespace", id.Namespace); err != nil {
		return err
	}
	if err := validateSegment("service account", id.ServiceAccount); err != nil {
		return err
	}
	if n := len(id.String()); n > MaxIDLen {
		return fmt.Errorf("SPIFFE ID is %d bytes long, at most %d are allowed", n, MaxIDLen)
	}
	return nil
}

// ParseSPIFFEID reads an Istio-style SPIFFE ID,
// spiffe://<trust-domain>/ns/<namespace>/sa/<service-account>, exactly: the
// scheme is lowercase "spiffe", there is no port, user, query, fragment,
// percent-encoding, empty or dot segment, or trailing slash, and the path
// has exactly the four segments ns/<ns>/sa/<sa>. What it accepts, String
// writes back byte for byte.
func ParseSPIFFEID(s string) (SPIFFEID, error) {
	id, err := parseSPIFFEID(s)
	if err != nil {
		return SPIFFEID{}, fmt.Errorf("parsing SPIFFE ID %q: %w", s, err)
	}
	return id, nil
}

func parseSPIFFEID(s string) (SPIFFEID, error) {
	if len(s) > MaxIDLen {
		return SPIFFEID{}, fmt.Errorf("%d bytes long, at most %d are allowed", len(s), MaxIDLen)
	}
	rest, ok := strings.CutPrefix(s, scheme)
	if !ok {
		return SPIFFEID{}, errors.New(`must start with "spiffe://"`)
	}
	td, path, ok := strings.Cut(rest, "/")
	if !ok {
		return SPIFFEID{}, errors.New("no path: want spiffe://<trust-domain>/ns/<namespace>/sa/<service-account>")
	}
	if err := validateTrustDomain(td); err != nil {
		return SPIFFEID{}, err
	}
	parts := strings.Split(path, "/")
	if len(parts) != 4 || parts[0] != "ns" || parts[2] != "sa" {
		return SPIFFEID{}, errors.New("path must be /ns/<namespace>/sa/<service-account>")
	}
	id := SPIFFEID{TrustDomain: td, Namespace: parts[1], ServiceAccount: parts[3]}
	if err := validateSegment("namespace", id.Namespace); err != nil {
		return SPIFFEID{}, err
	}
	if err := validateSegment("service account", id.ServiceAccount); err != nil {
		return SPIFFEID{}, err
	}
	return id, nil
}

func validateTrustDomain(td string) error {
	if td == "" {
		return errors.New("empty trust domain")
	}
	if len(td) > MaxTrustDomainLen {
		return fmt.Errorf("trust domain is %d bytes long, at most %d are allowed", len(td), MaxTrustDomainLen)
	}
	for i := 0; i < len(td); i++ {
		c := td[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '_') {
			return fmt.Errorf("trust domain %q: character %q is not allowed (lowercase letters, digits, '.', '-', '_')", td, c)
		}
	}
	return nil
}

func validateSegment(what, seg string) error {
	switch seg {
	case "":
		return fmt.Errorf("empty %s", what)
	case ".", "..":
		return fmt.Errorf("%s %q is not allowed", what, seg)
	}
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '_') {
			return fmt.Errorf("%s %q: character %q is not allowed (letters, digits, '.', '-', '_')", what, seg, c)
		}
	}
	return nil
}
