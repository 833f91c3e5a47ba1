package bootstrap

import (
	"fmt"
	"net/netip"

	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/sys/pki"
)

// Certs are a topology's certificate files, as Build and Render take them
// (Paths), with the CA and the workload certificates they hold, for
// clients that talk to the proxies.
type Certs struct {
	Paths     CertPaths
	CA        *pki.CA
	Workloads map[topology.Identity]*pki.Workload
}

// WriteCerts issues into dir a CA for topology.TrustDomain, an SVID for every
// identity of t (and of extra), and a serving certificate for every proxy
// with ServingHosts (their IP literals as IP SANs), and writes them as PEM
// files: the lab's PKI.
func WriteCerts(t *topology.Topology, dir string, extra ...topology.Identity) (*Certs, error) {
	ca, err := pki.NewCA(topology.TrustDomain)
	if err != nil {
		return nil, err
	}
	return WriteCertsFrom(ca, t, dir, extra...)
}

// WriteCertsFrom is WriteCerts with the CA given: the Envoys of a lab
// whose other proxies already trust ca (the netns substrate's ztunnels).
func WriteCertsFrom(ca *pki.CA, t *topology.Topology, dir string, extra ...topology.Identity) (*Certs, error) {
	caFiles, err := ca.WriteFiles(dir)
	if err != nil {
		return nil, err
	}
	c := &Certs{CA: ca, Workloads: map[topology.Identity]*pki.Workload{},
		Paths: CertPaths{CAFile: caFiles.Cert, Workloads: map[topology.Identity]KeyPair{}, Serving: map[string]KeyPair{}}}
	for _, id := range append(append([]topology.Identity(nil), t.Identities...), extra...) {
		if _, done := c.Workloads[id]; done {
			continue
		}
		w, err := ca.Issue(pki.SPIFFEID{TrustDomain: topology.TrustDomain, Namespace: id.Namespace, ServiceAccount: id.ServiceAccount}, pki.Options{})
		if err != nil {
			return nil, err
		}
		kp, err := writePair(w, dir, id.Namespace+"-"+id.ServiceAccount)
		if err != nil {
			return nil, err
		}
		c.Workloads[id], c.Paths.Workloads[id] = w, kp
	}
	for _, p := range t.Proxies {
		if len(p.ServingHosts) == 0 {
			continue
		}
		var ips []netip.Addr
		for _, h := range p.ServingHosts {
			a, err := netip.ParseAddr(h)
			if err != nil {
				return nil, fmt.Errorf("proxy %s: serving host %q: not an IP literal", p.Name, h)
			}
			ips = append(ips, a)
		}
		w, err := ca.IssueServing(p.Name, ips, pki.Options{})
		if err != nil {
			return nil, err
		}
		if c.Paths.Serving[p.Name], err = writePair(w, dir, p.Name+"-serving"); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func writePair(w *pki.Workload, dir, name string) (KeyPair, error) {
	b, err := w.WriteFiles(dir, name)
	if err != nil {
		return KeyPair{}, err
	}
	return KeyPair{CertFile: b.CertChain, KeyFile: b.PrivateKey}, nil
}
