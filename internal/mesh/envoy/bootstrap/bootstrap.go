// Package bootstrap renders the full static Envoy bootstrap of every proxy
// of a topology.Topology, as typed go-control-plane protos marshalled to
// indented JSON that Envoy 1.40 loads with -c.
//
// The configs follow the local lab's design (LAB.md §2, §5):
//
//   - sidecar: outbound 15001 (HTTP connection manager → a cluster of every
//     server sidecar's inbound, round robin, Istio-style mTLS with TLS 1.3
//     allowed, SNI and ALPN istio-http/1.1) and inbound 15006 (TLS required,
//     optional network RBAC before the HCM, → inbound|8080|| from 127.0.0.6);
//     plaintext when mTLS is off.
//   - ambient node proxy: per source pod an outbound listener whose
//     tcp_proxy picks a server replica per connection (at random, equal
//     weights), then tunnels to that replica's node proxy over HBONE
//     (HTTP/2 CONNECT over TLS 1.3 with the source workload's certificate,
//     :authority the replica's address); inbound HBONE 15008 terminates
//     CONNECT into an ORIGINAL_DST cluster keyed on :authority, restricted
//     to the node's pods, with optional HTTP RBAC.
//   - waypoint: connect_terminate → main_internal (L7 routing, round robin
//     over every replica) → connect_originate_nodeN, through internal
//     listeners, with optional HTTP RBAC on the source workload.
//   - gateway: a TLS-terminating ingress that calls the mesh as a client.
//
// Protocol tcp replaces every HTTP connection manager carrying app traffic
// with tcp_proxy. Every listener sets enable_reuse_port false, so a second
// process on the same address fails instead of silently sharing it, and
// every admin listens on its proxy's own loopback address.
package bootstrap

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/meshbench/meshbench/internal/mesh/topology"
)

// KeyPair is a certificate chain and its private key, as PEM file paths.
type KeyPair struct {
	CertFile string // PEM certificate chain, leaf first
	KeyFile  string // PEM private key
}

// CertPaths tells Render where the certificates are. Render only writes
// the paths into the configs; Envoy reads the files when it starts.
type CertPaths struct {
	// CAFile is the PEM bundle every mesh peer and the load generator trust.
	CAFile string
	// Workloads maps an identity to its SVID: a certificate whose only SAN
	// is the URI identity.SPIFFE().
	Workloads map[topology.Identity]KeyPair
	// Serving maps a proxy name to its TLS serving certificate, for proxies
	// with topology.Proxy.ServingHosts (the gateway): the certificate carries
	// those hosts as IP SANs, so the load generator can verify it.
	Serving map[string]KeyPair
}

// Render builds every proxy's bootstrap (see Build) and marshals each with
// Marshal. The map is keyed by topology.Proxy.Name; a topology without proxies
// gives an empty map.
func Render(topo *topology.Topology, certs CertPaths) (map[string][]byte, error) {
	bs, err := Build(topo, certs)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(bs))
	for _, name := range slices.Sorted(maps.Keys(bs)) {
		js, err := Marshal(bs[name])
		if err != nil {
			return nil, fmt.Errorf("rendering %s: %w", name, err)
		}
		out[name] = js
	}
	return out, nil
}

// Build returns every proxy's bootstrap as typed protos, keyed by proxy
// name, each checked with its protoc-gen-validate rules. It reports every
// missing certificate at once.
func Build(topo *topology.Topology, certs CertPaths) (map[string]*bootstrapv3.Bootstrap, error) {
	if topo == nil {
		return nil, errors.New("rendering Envoy configs: no topology")
	}
	if err := checkCerts(topo, certs); err != nil {
		return nil, err
	}
	out := make(map[string]*bootstrapv3.Bootstrap, len(topo.Proxies))
	for i := range topo.Proxies {
		p := &topo.Proxies[i]
		b := &builder{topo: topo, certs: certs, p: p, mode: topo.Options.Mode, tcp: topo.Options.Protocol == topology.ProtocolTCP}
		bs, err := b.build()
		if err != nil {
			return nil, fmt.Errorf("rendering %s: %w", p.Name, err)
		}
		if err := bs.ValidateAll(); err != nil {
			return nil, fmt.Errorf("rendering %s: invalid bootstrap: %w", p.Name, err)
		}
		out[p.Name] = bs
	}
	return out, nil
}

// Marshal writes b as indented JSON (two spaces, proto field names, a
// trailing newline). The output is byte-stable for equal input, unlike
// protojson's own indentation.
func Marshal(b *bootstrapv3.Bootstrap) ([]byte, error) {
	raw, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(b)
	if err != nil {
		return nil, err
	}
	var compact, out bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, err
	}
	if err := json.Indent(&out, compact.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// checkCerts reports every certificate the topology needs and certs lacks.
func checkCerts(topo *topology.Topology, certs CertPaths) error {
	var errs []error
	needCA := false
	for _, p := range topo.Proxies {
		for _, id := range p.Presents {
			needCA = true
			kp, ok := certs.Workloads[id]
			if !ok || kp.CertFile == "" || kp.KeyFile == "" {
				errs = append(errs, fmt.Errorf("no certificate and key for %s (%s), which %s presents", id, id.SPIFFE(), p.Name))
			}
		}
		if len(p.ServingHosts) > 0 {
			kp, ok := certs.Serving[p.Name]
			if !ok || kp.CertFile == "" || kp.KeyFile == "" {
				errs = append(errs, fmt.Errorf("no serving certificate and key for %s (hosts %v)", p.Name, p.ServingHosts))
			}
		}
	}
	if needCA && certs.CAFile == "" {
		errs = append(errs, errors.New("no CA bundle file: mesh peers need it to verify each other"))
	}
	return errors.Join(errs...)
}
