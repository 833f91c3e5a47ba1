package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/meshbench/meshbench/internal/linkerd/proxy"
	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/meshes"
	"github.com/meshbench/meshbench/internal/platform/local"
	"github.com/meshbench/meshbench/internal/platform/netlab"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/ztunnel"
)

// The --substrate values.
const (
	substrateAuto     = "auto"
	substrateNetns    = netlab.SubstrateName
	substrateLoopback = local.SubstrateLoopback
)

// substrateFlags are `run`'s and `bench`'s choice of the local lab's
// network.
type substrateFlags struct {
	substrate, ztunnel, linkerdProxy string
}

func (s *substrateFlags) add(fl *pflag.FlagSet) {
	fl.StringVar(&s.substrate, "substrate", substrateAuto, "the local lab's network: netns (nodes and pods as network namespaces, Istio's real ztunnel for ambient, Linkerd's real proxy for linkerd; needs root), "+
		"loopback (127.0.N.x addresses, Envoy standing in for ztunnel), or auto (netns when it can be made and runs every mode asked for, else loopback)")
	fl.StringVar(&s.ztunnel, "ztunnel", "", "ztunnel binary for the netns substrate (default: $"+ztunnel.EnvBinary+", .tools/ztunnel/ztunnel, ../shared/bin/ztunnel)")
	addLinkerdProxyFlag(fl, &s.linkerdProxy)
}

// addLinkerdProxyFlag adds --linkerd-proxy, the binary of mode linkerd.
func addLinkerdProxyFlag(fl *pflag.FlagSet, p *string) {
	fl.StringVar(p, "linkerd-proxy", "", "linkerd2-proxy binary for mesh linkerd on the netns substrate (default: $"+proxy.EnvBinary+
		", .tools/linkerd2-proxy/linkerd2-proxy, ../shared/bin/linkerd2-proxy when its sha256 matches)")
}

// chooseSubstrate picks the substrate for cells with mesh options opts
// (one substrate for all: a plan never mixes them). It returns nil for
// loopback, and a line saying why when auto fell back to loopback.
// Asking for netns where it cannot run them is an error: a usage error for
// what the substrate does not run, a plain one for what this machine lacks.
//
// Mesh linkerd runs only on netns: where netns cannot run it, the choice
// is a usage error naming why, never a fall-back.
func chooseSubstrate(choice, ztunnelFlag, linkerdFlag string, opts []mesh.Options) (local.Substrate, string, error) {
	needLinkerd := false
	for _, o := range opts {
		needLinkerd = needLinkerd || o.Mode == mesh.ModeLinkerd
	}
	switch choice {
	case substrateLoopback:
		if needLinkerd {
			return nil, "", &UsageError{Err: errors.New("--mesh linkerd: runs only on the netns substrate (the real linkerd2-proxy in network namespaces; the loopback lab has no imitation of it), not with --substrate loopback")}
		}
		return nil, "", nil
	case substrateNetns, substrateAuto:
	default:
		return nil, "", &UsageError{Err: fmt.Errorf("--substrate %q: allowed: auto, netns, loopback", choice)}
	}
	needZtunnel := false
	for _, o := range opts {
		needZtunnel = needZtunnel || o.Mode == mesh.ModeAmbient || o.Mode == mesh.ModeWaypoint
	}
	sub := &netlab.Substrate{}
	var why []error
	if needZtunnel {
		wd, _ := os.Getwd()
		bin, err := ztunnel.Find(ztunnelFlag, wd)
		if err != nil {
			why = append(why, err)
		}
		sub.Ztunnel = bin
	}
	if needLinkerd {
		wd, _ := os.Getwd()
		bin, err := proxy.Find(linkerdFlag, wd)
		if err != nil {
			why = append(why, err)
		}
		sub.LinkerdProxy = bin
		// The control plane runs as `meshbench linkerd-control-plane`, a
		// process of its own sampled apart.
		if exe, err := os.Executable(); err == nil {
			sub.Meshbench = exe
		}
	}
	var unsupported []error
	seen := map[string]bool{}
	// What the substrate runs, a missing ztunnel aside (Find said that).
	modes := &netlab.Substrate{Ztunnel: "ztunnel", LinkerdProxy: "linkerd2-proxy"}
	for _, o := range opts {
		if err := modes.Supports(o); err != nil && !seen[err.Error()] {
			seen[err.Error()] = true
			unsupported = append(unsupported, err)
		}
	}
	if choice == substrateNetns && len(unsupported) > 0 {
		return nil, "", &UsageError{Err: errors.Join(unsupported...)}
	}
	if err := netlab.Available(needZtunnel || needLinkerd); err != nil {
		why = append(why, err)
	}
	if len(why) == 0 && len(unsupported) == 0 {
		return sub, "", nil
	}
	if choice == substrateNetns {
		return nil, "", fmt.Errorf("--substrate netns: %w", errors.Join(why...))
	}
	reason := errors.Join(append(why, unsupported...)...)
	if needLinkerd {
		return nil, "", &UsageError{Err: fmt.Errorf("--mesh linkerd: runs only on the netns substrate, which cannot run this here (%s)", oneLine(reason))}
	}
	return nil, fmt.Sprintf("substrate: loopback, the network namespaces cannot run this here (%s)", oneLine(reason)), nil
}

// oneLine joins a joined error's lines with "; ".
func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }

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
	if l, ok := m.Options["linkerd"].(map[string]any); ok {
		if p, ok := l["proxy"].(map[string]any); ok {
			if sum, _ := p["sha256"].(string); len(sum) >= 12 {
				rel, _ := p["release"].(string)
				out += " (linkerd2-proxy " + rel + ", sha256 " + sum[:12] + "…; control plane: the lab's stand-in)"
			}
		}
	}
	return out
}

// needsEnvoy reports whether a local cell with options o runs an Envoy:
// any mesh mode or a gateway on loopback; on netns, where ztunnel is the
// ambient node proxy, the sidecars, the waypoint and the gateway.
func needsEnvoy(o mesh.Options, sub local.Substrate) bool {
	if o.Gateway {
		return true
	}
	if sub == nil {
		return o.Mode != mesh.ModeNone && o.Mode != mesh.ModeLinkerd
	}
	return o.Mode == mesh.ModeSidecar || o.Mode == mesh.ModeWaypoint
}

// meshFlagHelp is --mesh's help: the local modes, and those only clusters
// run.
func meshFlagHelp() string {
	h := "mesh mode: " + strings.Join(meshes.Names(true), ", ") + " (linkerd: netns substrate only)"
	if c := meshes.ClusterOnly(); len(c) > 0 {
		h += " (kube also: " + strings.Join(c, ", ") + ")"
	}
	return h
}
