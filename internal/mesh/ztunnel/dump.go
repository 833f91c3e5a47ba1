package ztunnel

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
)

// DumpSummary is what a ztunnel holds, from its admin /config_dump: how
// many workloads, services and authorization policies, how many of the
// workloads a control plane of cluster ClusterID sent (their UIDs start
// "ClusterID//", as istiod names them; the lab's local config names them
// "lab//…"), and its certificates.
type DumpSummary struct {
	Workloads, Services, Policies int
	// FromCluster are the workloads whose UID starts "ClusterID//".
	FromCluster int
	// Certificates are the identities ztunnel holds a certificate for
	// ("spiffe://…"), with whether the certificate's root is the root
	// SummarizeDump was given (the control plane's CA).
	Certificates map[string]bool
}

// SummarizeDump reads a ztunnel's config dump; clusterID names the
// control plane's workloads, rootPEM is its CA's root.
func SummarizeDump(raw []byte, clusterID, rootPEM string) (DumpSummary, error) {
	var d struct {
		Workloads []struct {
			UID string `json:"uid"`
		} `json:"workloads"`
		Services     []json.RawMessage `json:"services"`
		Policies     []json.RawMessage `json:"policies"`
		Certificates []struct {
			Identity  string `json:"identity"`
			State     string `json:"state"`
			RootCerts []struct {
				PEM string `json:"pem"`
			} `json:"rootCerts"`
		} `json:"certificates"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return DumpSummary{}, fmt.Errorf("ztunnel's config dump: %w", err)
	}
	s := DumpSummary{Workloads: len(d.Workloads), Services: len(d.Services), Policies: len(d.Policies), Certificates: map[string]bool{}}
	for _, w := range d.Workloads {
		if strings.HasPrefix(w.UID, clusterID+"//") {
			s.FromCluster++
		}
	}
	roots := ders(rootPEM)
	for _, c := range d.Certificates {
		ok := false
		for _, r := range c.RootCerts {
			// ztunnel dumps each certificate as the base64 of its PEM.
			text, err := base64.StdEncoding.DecodeString(r.PEM)
			if err != nil {
				text = []byte(r.PEM)
			}
			for _, der := range ders(string(text)) {
				ok = ok || slices.ContainsFunc(roots, func(b []byte) bool { return bytes.Equal(b, der) })
			}
		}
		s.Certificates[c.Identity] = ok
	}
	return s, nil
}

// ders are the DER bytes of every PEM block in text.
func ders(text string) [][]byte {
	var out [][]byte
	rest := []byte(text)
	for {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return out
		}
		out = append(out, b.Bytes)
	}
}

// String is the summary on one line.
func (s DumpSummary) String() string {
	var certs []string
	for id, ok := range s.Certificates {
		if !ok {
			id += " (another root)"
		}
		certs = append(certs, id)
	}
	slices.Sort(certs)
	return fmt.Sprintf("%d workloads (%d from the control plane), %d services, %d authorization policies; certificates: %s",
		s.Workloads, s.FromCluster, s.Services, s.Policies, strings.Join(certs, ", "))
}
