package cli

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/meshbench/meshbench/internal/bench"
	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/proxy"
	"github.com/meshbench/meshbench/internal/mesh/ztunnel"
	"github.com/meshbench/meshbench/internal/results"
)

// The --substrate values.
const (
	substrateAuto     = bench.SubstrateAuto
	substrateNetns    = bench.SubstrateNetns
	substrateLoopback = bench.SubstrateLoopback
)

// substrateFlags are `run`'s and `bench`'s choice of the local lab's
// network.
type substrateFlags struct {
	substrate, ztunnel, linkerdProxy, controlPlane string
}

func (s *substrateFlags) add(fl *pflag.FlagSet) {
	fl.StringVar(&s.substrate, "substrate", substrateAuto, "the local lab's network: netns (nodes and pods as network namespaces, Istio's real ztunnel for ambient, Linkerd's real proxy for linkerd; needs root), "+
		"loopback (127.0.N.x addresses, Envoy standing in for ztunnel), or auto (netns when it can be made and runs every mode asked for, else loopback)")
	fl.StringVar(&s.ztunnel, "ztunnel", "", "ztunnel binary for the netns substrate (default: $"+ztunnel.EnvBinary+", .tools/ztunnel/ztunnel, ../shared/bin/ztunnel)")
	addLinkerdProxyFlag(fl, &s.linkerdProxy)
	addControlPlaneFlag(fl, &s.controlPlane)
}

// addControlPlaneFlag adds --control-plane: who configures the lab's
// sidecars and ztunnels.
func addControlPlaneFlag(fl *pflag.FlagSet, p *string) {
	fl.StringVar(p, "control-plane", bench.ControlPlaneLab, "who configures the lab's proxies: lab (meshbench renders the sidecars' and ztunnels' configs from the topology, certificates from the lab's CA; "+
		"its stand-in serves Linkerd's proxies), istiod "+
		"(the real istiod from make istio-tools against a lab API server of etcd + kube-apiserver from make k8s-tools; sidecars are pilot-agent + Envoy, ztunnels take istiod's WDS and CA; netns substrate, mesh none, sidecar, ambient or waypoint; the gateway with sidecar, ambient or waypoint, not with none) "+
		"linkerd (Linkerd's real identity, destination and policy controllers from make linkerd-tools against that API server; netns substrate, mesh none or linkerd, static app) "+
		"or real (every mesh from its own real control plane in one plan: istiod for sidecar, ambient and waypoint, Linkerd's controllers for linkerd, none for none; needs only what the plan's meshes use)")
}

// addLinkerdProxyFlag adds --linkerd-proxy, the binary of mode linkerd.
func addLinkerdProxyFlag(fl *pflag.FlagSet, p *string) {
	fl.StringVar(p, "linkerd-proxy", "", "linkerd2-proxy binary for mesh linkerd on the netns substrate (default: $"+proxy.EnvBinary+
		", .tools/linkerd2-proxy/linkerd2-proxy, ../shared/bin/linkerd2-proxy when its sha256 matches)")
}

// substrateNote ends run's header line: the substrate, and on netns the
// ztunnel that ran ("" for results without one).
func substrateNote(m *results.RunManifest) string {
	if m == nil {
		return ""
	}
	sub, _ := m.Options["substrate"].(string)
	if sub == "" {
		return ""
	}
	out := ", substrate " + sub
	if z, ok := m.Options["ztunnel"].(map[string]any); ok {
		if sum, _ := z["sha256"].(string); len(sum) >= 12 {
			out += " (Istio's ztunnel, sha256 " + sum[:12] + "…)"
		}
	}
	if cp, ok := m.Options["control_plane"].(map[string]any); ok {
		// What the control plane configured: "sidecars" or "ztunnels",
		// the manifest's what up to its colon.
		what, _ := cp["what"].(string)
		who, _, _ := strings.Cut(what, ":")
		if who == "" {
			who = "sidecars"
		}
		switch name, _ := cp["name"].(string); name {
		case bench.ControlPlaneIstiod:
			stamp, _ := cp["istio"].(string)
			out += " (" + who + " configured by the real istiod, " + strings.TrimPrefix(stamp, "istio=") + ", on the lab's API server)"
		case bench.ControlPlaneLab:
			// Linkerd's stand-in is said with the proxy below.
			how := map[string]string{"sidecars": "Envoy configs", "ztunnels": "local config file",
				"ztunnels and the waypoint": "local config file and waypoint Envoy config"}[who]
			if how != "" {
				out += " (" + who + " configured by meshbench's hand-rendered " + how + ", not istiod)"
			}
		case bench.ControlPlaneLinkerd:
			v, _ := cp["linkerd"].(string)
			out += " (Linkerd's proxies configured by Linkerd's real controllers, " + v + ", on the lab's API server)"
		}
	}
	if l, ok := m.Options["linkerd"].(map[string]any); ok {
		if p, ok := l["proxy"].(map[string]any); ok {
			if sum, _ := p["sha256"].(string); len(sum) >= 12 {
				rel, _ := p["release"].(string)
				cpl := "the lab's stand-in"
				if cp, ok := m.Options["control_plane"].(map[string]any); ok && cp["name"] == bench.ControlPlaneLinkerd {
					cpl = "Linkerd's controllers"
				}
				out += " (linkerd2-proxy " + rel + ", sha256 " + sum[:12] + "…; control plane: " + cpl + ")"
			}
		}
	}
	return out
}

// meshFlagHelp is --mesh's help: the local modes, and those only clusters
// run.
func meshFlagHelp() string {
	h := "mesh mode: " + strings.Join(mesh.Names(true), ", ") + " (linkerd: netns substrate only)"
	if c := mesh.ClusterOnly(); len(c) > 0 {
		h += " (kube also: " + strings.Join(c, ", ") + ")"
	}
	return h
}

// oneLine joins a joined error's lines with "; ".
func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }
