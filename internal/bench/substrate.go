package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/meshbench/meshbench/internal/mesh/envoy"
	"github.com/meshbench/meshbench/internal/mesh/istio"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/proxy"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/release"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/mesh/ztunnel"
	"github.com/meshbench/meshbench/internal/platform/kube/install"
	"github.com/meshbench/meshbench/internal/platform/local"
	"github.com/meshbench/meshbench/internal/platform/netlab"
)

// The --substrate values.
const (
	SubstrateAuto     = "auto"
	SubstrateNetns    = netlab.SubstrateName
	SubstrateLoopback = local.SubstrateLoopback
)

// ChooseSubstrate picks the substrate for cells with mesh options opts
// (one substrate for all: a plan never mixes them). It returns nil for
// loopback, and a line saying why when auto fell back to loopback.
// Asking for netns where it cannot run them is an error: a usage error for
// what the substrate does not run, a plain one for what this machine lacks.
//
// Mesh linkerd runs only on netns: where netns cannot run it, the choice
// is a usage error naming why, never a fall-back.
func ChooseSubstrate(choice, ztunnelFlag, linkerdFlag string, opts []topology.Options) (local.Substrate, string, error) {
	needLinkerd := false
	for _, o := range opts {
		needLinkerd = needLinkerd || o.Mode == topology.ModeLinkerd
	}
	switch choice {
	case SubstrateLoopback:
		if needLinkerd {
			return nil, "", &UsageError{Err: errors.New("--mesh linkerd: runs only on the netns substrate (the real linkerd2-proxy in network namespaces; the loopback lab has no imitation of it), not with --substrate loopback")}
		}
		return nil, "", nil
	case SubstrateNetns, SubstrateAuto:
	default:
		return nil, "", &UsageError{Err: fmt.Errorf("--substrate %q: allowed: auto, netns, loopback", choice)}
	}
	needZtunnel := false
	for _, o := range opts {
		needZtunnel = needZtunnel || o.Mode == topology.ModeAmbient || o.Mode == topology.ModeWaypoint
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
	if choice == SubstrateNetns && len(unsupported) > 0 {
		return nil, "", &UsageError{Err: errors.Join(unsupported...)}
	}
	if err := netlab.Available(needZtunnel || needLinkerd); err != nil {
		why = append(why, err)
	}
	if len(why) == 0 && len(unsupported) == 0 {
		return sub, "", nil
	}
	if choice == SubstrateNetns {
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

// NeedsEnvoy reports whether a local cell with options o runs an Envoy:
// any mesh mode or a gateway on loopback; on netns, where ztunnel is the
// ambient node proxy, the sidecars, the waypoint and the gateway.
func NeedsEnvoy(o topology.Options, sub local.Substrate) bool {
	if o.Gateway {
		return true
	}
	if sub == nil {
		return o.Mode != topology.ModeNone && o.Mode != topology.ModeLinkerd
	}
	return o.Mode == topology.ModeSidecar || o.Mode == topology.ModeWaypoint
}

// FindEnvoy finds the Envoy binary the local lab runs: --envoy (flag),
// $MESHBENCH_ENVOY (through getenv), .tools/envoy, PATH.
func FindEnvoy(ctx context.Context, flag string, getenv func(string) string) (*envoy.Binary, error) {
	exe, _ := os.Executable()
	wd, _ := os.Getwd()
	return envoy.FindContext(ctx, envoy.FindOptions{Flag: flag, ProjectDir: wd, Executable: exe, Getenv: getenv})
}

// IstioInstall is how --install-mesh installs Istio with --istio-build
// DIR (build): the build's istioctl, meshbench's images and the
// upstream-Envoy overlay, recording the Envoy build (found as the lab
// finds it, the one `meshbench image istio` packs) as the measured proxy.
// Nil without --istio-build.
func IstioInstall(ctx context.Context, build string, installMesh bool, envoyFlag string, getenv func(string) string) (*install.MeshInstall, error) {
	if build == "" {
		return nil, nil
	}
	if !installMesh {
		return nil, usagef("--istio-build %s: needs --install-mesh (the overlay is applied only when meshbench installs its own Istio images)", build)
	}
	b, err := istio.Open(build)
	if err != nil {
		return nil, usagef("--istio-build: %v", err)
	}
	bin, err := FindEnvoy(ctx, envoyFlag, getenv)
	if err != nil {
		return nil, err
	}
	return install.IstioBuilt(b, "", "", bin.Build)
}

// LinkerdInstall is how --install-mesh installs Linkerd with
// --linkerd-build DIR (build): the build's linkerd CLI, meshbench's
// images, and the identity from --linkerd-certs (certs) or a pair
// meshbench makes (install.LinkerdBuilt; Done removes it). Nil without
// --linkerd-build.
func LinkerdInstall(build, certs string, installMesh bool) (*install.MeshInstall, error) {
	if build == "" {
		if certs != "" {
			return nil, usagef("--linkerd-certs %s: needs --linkerd-build (meshbench installs its own Linkerd images with them)", certs)
		}
		return nil, nil
	}
	if !installMesh {
		return nil, usagef("--linkerd-build %s: needs --install-mesh (the build's linkerd installs Linkerd)", build)
	}
	b, err := release.Open(build)
	if err != nil {
		return nil, usagef("--linkerd-build: %v", err)
	}
	mi, err := install.LinkerdBuilt(b, "", "", certs)
	if err != nil {
		return nil, usagef("--linkerd-certs: %v", err)
	}
	return mi, nil
}
