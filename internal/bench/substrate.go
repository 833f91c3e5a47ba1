package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/meshbench/meshbench/internal/mesh/envoy"
	"github.com/meshbench/meshbench/internal/mesh/istio"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/proxy"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/release"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/mesh/ztunnel"
	"github.com/meshbench/meshbench/internal/platform/kube/install"
	"github.com/meshbench/meshbench/internal/platform/kube/labapi"
	"github.com/meshbench/meshbench/internal/platform/local"
	"github.com/meshbench/meshbench/internal/platform/netlab"
	"github.com/meshbench/meshbench/internal/sys/toolbin"
)

// The --substrate values.
const (
	SubstrateAuto     = "auto"
	SubstrateNetns    = netlab.SubstrateName
	SubstrateLoopback = local.SubstrateLoopback
)

// ChooseSubstrate picks the substrate for cells with mesh options opts
// (one substrate for all: a plan never mixes them). It returns nil for
// loopback, and a line saying why when auto fell back to loopback. It
// checks what the cells need (root or a user namespace, a kernel that
// takes the capture rules, ztunnel, linkerd2-proxy) before anything is
// made. Asking for netns where it cannot run them is a usage error of
// one line: for what the substrate does not run and for what this
// machine lacks alike.
//
// Mesh linkerd runs only on netns: where netns cannot run it, the choice
// is a usage error naming why, never a fall-back.
func ChooseSubstrate(choice, ztunnelFlag, linkerdFlag string, opts []topology.Options) (local.Substrate, string, error) {
	needLinkerd, needZtunnel, needCapture := false, false, false
	for _, o := range opts {
		needLinkerd = needLinkerd || o.Mode == topology.ModeLinkerd
		needZtunnel = needZtunnel || o.Mode == topology.ModeAmbient || o.Mode == topology.ModeWaypoint
		needCapture = needCapture || o.Mode != topology.ModeNone
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
		return nil, "", &UsageError{Err: errors.New(oneLine(errors.Join(unsupported...)))}
	}
	if err := netlab.Available(needCapture); err != nil {
		why = append(why, err)
	}
	if len(why) == 0 && len(unsupported) == 0 {
		return sub, "", nil
	}
	if choice == SubstrateNetns {
		return nil, "", &UsageError{Err: fmt.Errorf("--substrate netns: %s", oneLine(errors.Join(why...)))}
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
// $MESHBENCH_ENVOY (through getenv), .tools/envoy, PATH. Without one the
// cells cannot run: a usage error of one line, before anything is made.
func FindEnvoy(ctx context.Context, flag string, getenv func(string) string) (*envoy.Binary, error) {
	exe, _ := os.Executable()
	wd, _ := os.Getwd()
	bin, err := envoy.FindContext(ctx, envoy.FindOptions{Flag: flag, ProjectDir: wd, Executable: exe, Getenv: getenv})
	if err != nil {
		return nil, &UsageError{Err: errors.New(oneLine(err))}
	}
	return bin, nil
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

// LabLine says, in one line, where a local plan's cells run and, for
// each mesh of modes, what in it is the real product and what stands in:
// the first thing `bench` prints, so no result is read as a real mesh's
// that is not. sub is the chosen substrate (nil: loopback) and bin the
// Envoy the lab runs (nil when none).
func LabLine(sub local.Substrate, modes []topology.Mode, bin *envoy.Binary) string {
	envoyName := "Envoy"
	if bin != nil && bin.Version != "" {
		envoyName += " " + bin.Version
	}
	short := func(path string) string {
		sum, err := toolbin.FileSHA256(path)
		if err != nil || len(sum) < 12 {
			return ""
		}
		return ", sha256 " + sum[:12] + "…"
	}
	var ns *netlab.Substrate
	if n, ok := sub.(*netlab.Substrate); ok {
		ns = n
	}
	var parts []string
	lastIstio := -1
	for _, m := range modes {
		var what string
		switch {
		case m == topology.ModeNone:
			what = "no proxy"
		case ns == nil && m == topology.ModeSidecar:
			what = "real " + envoyName + " sidecars, called directly (no capture on loopback)"
		case ns == nil && m == topology.ModeAmbient:
			what = envoyName + " STANDS IN for ztunnel"
		case ns == nil && m == topology.ModeWaypoint:
			what = envoyName + " STANDS IN for ztunnel; a real " + envoyName + " waypoint"
		case m == topology.ModeSidecar && ns.IstiodRuns():
			what = "real " + envoyName + " sidecars (and ingress gateway, in gateway cells: Istio's istio-ingressgateway) run by pilot-agent, configured and certified by the real istiod (" + ns.Istio.Stamp + ") on a lab API server, istio-init's capture"
		case m == topology.ModeSidecar:
			what = "real " + envoyName + " sidecars, istio-init's capture"
		case m == topology.ModeAmbient && ns.IstiodRuns():
			what = "real ztunnel (Istio's" + short(ns.Ztunnel) + "), in-pod capture, configured (WDS) and certified by the real istiod (" + ns.Istio.Stamp + ") on a lab API server (and ingress gateway, in gateway cells: Istio's istio-ingressgateway, from istiod, sending HBONE)"
		case m == topology.ModeAmbient:
			what = "real ztunnel (Istio's" + short(ns.Ztunnel) + "), in-pod capture"
		case m == topology.ModeWaypoint && ns.IstiodRuns():
			what = "real ztunnel and a real " + envoyName + " waypoint run by pilot-agent, both configured and certified by the real istiod (" + ns.Istio.Stamp + ") on a lab API server (a Gateway of class istio-waypoint; and ingress gateway, in gateway cells: Istio's istio-ingressgateway, from istiod, through the waypoint)"
		case m == topology.ModeWaypoint:
			what = "real ztunnel and a real " + envoyName + " waypoint"
		case m == topology.ModeLinkerd && ns.LinkerdControllersRun():
			what = "real linkerd2-proxy (Linkerd's" + short(ns.LinkerdProxy) + "), proxy-init's capture, configured and certified by Linkerd's real controllers (" +
				release.Version + ": identity, destination, policy) on a lab API server"
		case m == topology.ModeLinkerd:
			what = "real linkerd2-proxy (Linkerd's" + short(ns.LinkerdProxy) + "), proxy-init's capture; its control plane: the lab's stand-in"
		default:
			what = "see the mesh's docs"
		}
		parts = append(parts, string(m)+": "+what)
		if m == topology.ModeSidecar || m == topology.ModeAmbient || m == topology.ModeWaypoint {
			lastIstio = len(parts) - 1
		}
	}
	if lastIstio >= 0 && (ns == nil || !ns.IstiodRuns()) {
		// After the last of Istio's modes: what stands in for istiod.
		parts[lastIstio] += "; in Istio's modes istiod is not run (config from the topology, certificates from the lab's CA)"
	}
	where := "the netns substrate (pods as network namespaces)"
	if ns == nil {
		where = "the loopback substrate (127.0.N.x, no network namespaces)"
	}
	return "on " + where + ": " + strings.Join(parts, "; ")
}

// The --control-plane values: who configures the lab's proxies. lab is
// meshbench's own (hand-rendered Envoy configs; the stand-in for
// Linkerd's control plane); the others name the mesh's real control
// plane, each for its own mesh's cells.
const (
	ControlPlaneLab     = netlab.ControlPlaneLab
	ControlPlaneIstiod  = netlab.ControlPlaneIstiod
	ControlPlaneLinkerd = netlab.ControlPlaneLinkerd
	// ControlPlaneReal: every mesh from its own real control plane,
	// Istio's modes from istiod, mode linkerd from Linkerd's controllers.
	ControlPlaneReal = netlab.ControlPlaneReal
	// ControlPlaneAuto: each mesh from its own real control plane when
	// everything it needs is here (root, the netns substrate, its builds
	// and the lab API server's binaries), else the lab's own; the first
	// line says which and why (ControlPlaneNote).
	ControlPlaneAuto = netlab.ControlPlaneAuto
)

// UseControlPlane sets which control plane configures the lab's sidecars
// on sub (choice "" or lab: meshbench's hand-rendered Envoy configs;
// istiod: the real istiod against a lab API server) and checks, before
// anything is made, that every cell of opts can run so: a usage error of
// one line otherwise. envoyBin is the Envoy pilot-agent runs ("" when no
// cell runs one); hops is whether the cells time their hops (from the
// lab's own Envoys' access logs, which istiod's sidecars do not write).
func UseControlPlane(sub local.Substrate, choice string, opts []topology.Options, envoyBin string, hops bool) error {
	switch choice {
	case "", ControlPlaneLab:
		return nil
	case ControlPlaneIstiod:
	case ControlPlaneLinkerd:
		return useLinkerdControllers(sub, opts)
	case ControlPlaneReal:
		return useRealControlPlanes(sub, opts, envoyBin, hops)
	case ControlPlaneAuto:
		useAutoControlPlanes(sub, opts, envoyBin, hops, os.Geteuid() == 0)
		return nil
	default:
		return usagef("--control-plane %q: allowed: lab (meshbench renders the sidecars' and ztunnels' configs, its stand-in serves Linkerd's proxies), "+
			"istiod (the real istiod against a lab API server; netns substrate, mesh sidecar, ambient or waypoint), "+
			"linkerd (Linkerd's real controllers against a lab API server; netns substrate, mesh linkerd), "+
			"real (each mesh from its own: istiod for sidecar, ambient and waypoint, Linkerd's controllers for linkerd; netns substrate), "+
			"auto (real for each mesh whose control plane is built here, as root on the netns substrate; else lab)", choice)
	}
	if hops {
		return usagef("--control-plane istiod with --hops: not yet (hop timing reads the lab's own Envoys' access logs; istiod's sidecars log none); leave one out")
	}
	ns, ok := sub.(*netlab.Substrate)
	if !ok {
		return usagef("--control-plane istiod: runs only on the netns substrate (root; --substrate netns), not on loopback")
	}
	b, err := istio.Open(istio.DefaultDir())
	if err != nil {
		return usagef("--control-plane istiod: %v", err)
	}
	if _, _, err := labapi.Check(); err != nil {
		return usagef("--control-plane istiod: %v", err)
	}
	ns.ControlPlane, ns.Istio, ns.Envoy = ControlPlaneIstiod, b, envoyBin
	var bad []error
	seen := map[string]bool{}
	for _, o := range opts {
		if err := ns.Supports(o); err != nil && !seen[err.Error()] {
			seen[err.Error()] = true
			bad = append(bad, err)
		}
	}
	if len(bad) > 0 {
		return &UsageError{Err: errors.New(oneLine(errors.Join(bad...)))}
	}
	return nil
}

// useLinkerdControllers is UseControlPlane's linkerd: Linkerd's own
// identity, destination and policy controllers (make linkerd-tools)
// configure mode linkerd's proxies on the netns substrate.
func useLinkerdControllers(sub local.Substrate, opts []topology.Options) error {
	ns, ok := sub.(*netlab.Substrate)
	if !ok {
		return usagef("--control-plane linkerd: runs only on the netns substrate (root; --substrate netns), not on loopback")
	}
	b, err := release.Open(release.DefaultDir())
	if err != nil {
		return usagef("--control-plane linkerd: %v", err)
	}
	if _, _, err := labapi.Check(); err != nil {
		return usagef("--control-plane linkerd: %v", err)
	}
	ns.ControlPlane, ns.Linkerd = ControlPlaneLinkerd, b
	var bad []error
	seen := map[string]bool{}
	for _, o := range opts {
		if err := ns.Supports(o); err != nil && !seen[err.Error()] {
			seen[err.Error()] = true
			bad = append(bad, err)
		}
	}
	if len(bad) > 0 {
		return &UsageError{Err: errors.New(oneLine(errors.Join(bad...)))}
	}
	return nil
}

// useRealControlPlanes is UseControlPlane's real: every mesh of opts
// from its own real control plane, istiod for Istio's modes, Linkerd's
// controllers for mode linkerd (mode none needs none). It checks only
// what the plan's meshes need, all before anything starts, and refuses
// with one line naming every missing part.
func useRealControlPlanes(sub local.Substrate, opts []topology.Options, envoyBin string, hops bool) error {
	ns, ok := sub.(*netlab.Substrate)
	if !ok {
		return usagef("--control-plane real: runs only on the netns substrate (root; --substrate netns), not on loopback")
	}
	var needIstio, needLinkerd bool
	for _, o := range opts {
		switch o.Mode {
		case topology.ModeSidecar, topology.ModeAmbient, topology.ModeWaypoint:
			needIstio = true
		case topology.ModeLinkerd:
			needLinkerd = true
		}
	}
	var bad []error
	seen := map[string]bool{}
	add := func(err error) {
		if err != nil && !seen[err.Error()] {
			seen[err.Error()] = true
			bad = append(bad, err)
		}
	}
	if needIstio && hops {
		add(errors.New("--control-plane real with --hops and Istio's modes: not yet (hop timing reads the lab's own Envoys' access logs; istiod's sidecars log none); leave one out"))
	}
	var ib istio.Build
	if needIstio {
		b, err := istio.Open(istio.DefaultDir())
		if err != nil {
			add(fmt.Errorf("--control-plane real (istiod for mesh sidecar, ambient, waypoint): %w", err))
		}
		ib = b
	}
	var lb release.Build
	if needLinkerd {
		b, err := release.Open(release.DefaultDir())
		if err != nil {
			add(fmt.Errorf("--control-plane real (Linkerd's controllers for mesh linkerd): %w", err))
		}
		lb = b
	}
	if needIstio || needLinkerd {
		if _, _, err := labapi.Check(); err != nil {
			add(fmt.Errorf("--control-plane real: %w", err))
		}
	}
	if len(bad) > 0 {
		return &UsageError{Err: errors.New(oneLine(errors.Join(bad...)))}
	}
	ns.ControlPlane, ns.Istio, ns.Envoy, ns.Linkerd = ControlPlaneReal, ib, envoyBin, lb
	for _, o := range opts {
		add(ns.Supports(o))
	}
	if len(bad) > 0 {
		return &UsageError{Err: errors.New(oneLine(errors.Join(bad...)))}
	}
	return nil
}

// useAutoControlPlanes is UseControlPlane's auto: real (as
// useRealControlPlanes) for each mesh of opts whose real control plane
// can configure every one of its cells here, the lab's own for the
// others, never a refusal. On netns it sets sub's ControlPlane to auto,
// the builds of the meshes that run real, and ControlPlaneWhy: per mesh,
// which control plane and why. root is whether meshbench runs as root
// (the lab API server and the control planes' service accounts need it).
func useAutoControlPlanes(sub local.Substrate, opts []topology.Options, envoyBin string, hops, root bool) {
	ns, ok := sub.(*netlab.Substrate)
	if !ok {
		return // loopback: the lab's own (ControlPlaneNote says why)
	}
	var istioModes []string
	var istioOpts, linkerdOpts []topology.Options
	for _, o := range opts {
		switch o.Mode {
		case topology.ModeSidecar, topology.ModeAmbient, topology.ModeWaypoint:
			if !slices.Contains(istioModes, string(o.Mode)) {
				istioModes = append(istioModes, string(o.Mode))
			}
			istioOpts = append(istioOpts, o)
		case topology.ModeLinkerd:
			linkerdOpts = append(linkerdOpts, o)
		}
	}
	ns.ControlPlane, ns.Envoy, ns.Istio, ns.Linkerd = ControlPlaneAuto, envoyBin, istio.Build{}, release.Build{}
	if len(istioOpts) == 0 && len(linkerdOpts) == 0 {
		ns.ControlPlaneWhy = ""
		return
	}
	var apiErr error
	if _, _, err := labapi.Check(); err != nil {
		apiErr = err
	}
	// why is "" when the real control plane can configure every cell
	// of cells (root, the API server's binaries, its build opened, every
	// cell supported), else all that is missing, so that one read says
	// everything to install.
	why := func(cells []topology.Options, open func() error, probe *netlab.Substrate) string {
		var missing []string
		if !root {
			missing = append(missing, "not root (the lab API server and the control planes run as root)")
		}
		if apiErr != nil {
			missing = append(missing, apiErr.Error())
		}
		if err := open(); err != nil {
			missing = append(missing, err.Error())
		}
		if len(missing) > 0 {
			return strings.Join(missing, ", and ")
		}
		for _, o := range cells {
			if err := probe.Supports(o); err != nil {
				return oneLine(err)
			}
		}
		return ""
	}
	var parts []string
	if len(istioOpts) > 0 {
		var b istio.Build
		w := "with --hops, which reads the lab's own Envoys' access logs (istiod's sidecars log none)"
		if !hops {
			w = why(istioOpts, func() (err error) { b, err = istio.Open(istio.DefaultDir()); return err },
				&netlab.Substrate{Ztunnel: "ztunnel", ControlPlane: ControlPlaneIstiod})
		}
		// In the meshes' own order, not the cells' (which the plan's seed
		// shuffles), so the line reads the same on every run.
		order := []string{string(topology.ModeSidecar), string(topology.ModeAmbient), string(topology.ModeWaypoint)}
		slices.SortFunc(istioModes, func(a, b string) int { return slices.Index(order, a) - slices.Index(order, b) })
		names := strings.Join(istioModes, ", ")
		if w == "" {
			ns.Istio = b
			parts = append(parts, names+": the real istiod (built here)")
		} else {
			parts = append(parts, names+": meshbench's own configs, not istiod's ("+w+")")
		}
	}
	if len(linkerdOpts) > 0 {
		var b release.Build
		w := why(linkerdOpts, func() (err error) { b, err = release.Open(release.DefaultDir()); return err },
			&netlab.Substrate{LinkerdProxy: "linkerd2-proxy", ControlPlane: ControlPlaneLinkerd})
		if w == "" {
			ns.Linkerd = b
			parts = append(parts, "linkerd: Linkerd's real controllers (installed here)")
		} else {
			parts = append(parts, "linkerd: the lab's stand-in for Linkerd's control plane ("+w+")")
		}
	}
	ns.ControlPlaneWhy = "control plane auto: " + strings.Join(parts, "; ")
}

// ControlPlaneNote is what --control-plane choice chose on sub for the
// plan's meshes, and why, "" unless choice is auto: the end of bench's
// first line and a line of run's.
func ControlPlaneNote(sub local.Substrate, choice string, modes []topology.Mode) string {
	if choice != ControlPlaneAuto {
		return ""
	}
	if ns, ok := sub.(*netlab.Substrate); ok {
		return ns.ControlPlaneWhy
	}
	for _, m := range modes {
		if m != topology.ModeNone {
			return "control plane auto: meshbench's own for every mesh (the real control planes run only on the netns substrate)"
		}
	}
	return ""
}
