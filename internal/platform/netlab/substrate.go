package netlab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/meshbench/meshbench/internal/measure/sample"
	meshcapture "github.com/meshbench/meshbench/internal/mesh/capture"
	"github.com/meshbench/meshbench/internal/mesh/istio"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/release"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/mesh/ztunnel"
	"github.com/meshbench/meshbench/internal/platform/local"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/sys/netns"
	"github.com/meshbench/meshbench/internal/sys/userns"
)

// SubstrateName is the netns substrate's name in manifests and on the
// command line (--substrate netns).
const SubstrateName = "netns"

// Subnets are the /16s a lab on the substrate numbers from, the first
// one not in use on the host (10.99 and 10.244 belong to the real-node
// harness).
var Subnets = []netip.Prefix{netip.MustParsePrefix("10.98.0.0/16"), netip.MustParsePrefix("172.27.0.0/16")}

// Substrate runs the local lab's cells in network namespaces
// (local.Substrate): each topology node a namespace with a bridge, each
// pod a namespace on it; mode none with no proxy, mode ambient with
// Istio's real ztunnel per node (in-pod mode, the pods enrolled). The
// apps and the load generator run inside their pods' namespaces.
type Substrate struct {
	// Ztunnel is the ztunnel binary (ztunnel.Find); needed for ambient.
	Ztunnel string
	// LinkerdProxy is the linkerd2-proxy binary (proxy.Find); needed for
	// mode linkerd (netlab/linkerd.go).
	LinkerdProxy string
	// Meshbench is the meshbench executable that runs Linkerd's control
	// plane in a child process of its own (sampled apart); "" serves it
	// in this process (then meshbench's own CPU holds it).
	Meshbench string
	// Prefix, when set, starts the names of every lab's namespaces and
	// links (at most 6 bytes) instead of a free prefix picked at random;
	// Subnet, when set, is the /16 they number from instead of the first
	// free one of Subnets.
	Prefix string
	Subnet netip.Prefix
	// ControlPlane configures the sidecars: ControlPlaneLab ("" too), the
	// lab's hand-rendered Envoy configs and CA; ControlPlaneIstiod, the
	// real istiod against a lab API server of the lab's own, sidecars as
	// pilot-agent + Envoy (istiodnet.go). Istio is then the build istiod
	// and pilot-agent come from, Envoy the Envoy pilot-agent runs.
	//
	// ControlPlaneLinkerd configures mode linkerd's proxies with Linkerd's
	// own identity, destination and policy controllers (Linkerd, a build
	// of make linkerd-tools) against a lab API server of the lab's own,
	// instead of the lab's stand-in (linkerdctl.go).
	//
	// ControlPlaneAuto is ControlPlaneReal for the meshes whose build is
	// set (Istio, Linkerd) and ControlPlaneLab for the others;
	// ControlPlaneWhy then says, per mesh, which and why (the first line
	// of bench, every cell's manifest).
	ControlPlane    string
	Istio           istio.Build
	Envoy           string
	Linkerd         release.Build
	ControlPlaneWhy string
	// ShareAPI: the labs share one lab API server (a plan's: bench sets
	// it), started for the first lab whose control plane needs one, its
	// objects deleted at each lab's end, stopped by Close (sharedapi.go);
	// false: each lab starts and stops its own (a run).
	ShareAPI bool
	api      sharedAPI

	once      sync.Once
	stale     sync.Once
	zsum      string
	zversion  string
	zerr      error
	prefixRNG *rand.Rand
	mu        sync.Mutex
}

var _ local.Substrate = (*Substrate)(nil)

// Name is "netns".
func (s *Substrate) Name() string { return SubstrateName }

// Available returns why the substrate cannot be made here, or nil: it
// needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN in the host's namespaces),
// which it checks by making and deleting a named namespace, and, when
// capture is needed (a meshed mode), a kernel that takes the captures'
// nftables rules there (capture.Probe: rules go in over netlink, so no
// iptables command is needed).
func Available(capture bool) error {
	if os.Geteuid() != 0 {
		return errors.New("network namespaces need root here (running as uid " + fmt.Sprint(os.Geteuid()) +
			"; an explicit --substrate netns runs in an unprivileged user namespace where the kernel allows one)")
	}
	s := netns.New(fmt.Sprintf("mbq%d", os.Getpid()%1000))
	ns, err := s.Namespace("p")
	if err == nil && capture {
		if perr := meshcapture.Probe(ns); perr != nil {
			err = fmt.Errorf("the kernel does not take the mesh's capture rules (nftables with tproxy, redirect, ct and owner expressions): %w", perr)
		}
	} else if err != nil {
		err = fmt.Errorf("network namespaces cannot be made here: %w", err)
	}
	if cerr := s.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("network namespaces cannot be made here: %w", cerr)
	}
	return err
}

// Supports returns why a topology with options o cannot run on the
// substrate yet, or nil: every mode with the static app, with or without
// the gateway (not linkerd), and modes none, sidecar, ambient and linkerd
// with the faces app; never the attacker.
func (s *Substrate) Supports(o topology.Options) error {
	var errs []error
	switch o.Mode {
	case topology.ModeNone:
	case topology.ModeSidecar:
		if userns.Inside() {
			errs = append(errs, errors.New("mesh sidecar: in an unprivileged user namespace (not root) only your own uid and gid are mapped, not the sidecars' 1337; run as root, or use --substrate loopback"))
		}
	case topology.ModeAmbient, topology.ModeWaypoint:
		if s.Ztunnel == "" {
			errs = append(errs, fmt.Errorf("mesh %s on the netns substrate needs ztunnel: run make ztunnel, or give --ztunnel PATH", o.Mode))
		}
	case topology.ModeLinkerd:
		errs = append(errs, s.supportsLinkerd(o)...)
	default:
		errs = append(errs, fmt.Errorf("mesh %s: the netns substrate runs modes none, sidecar, ambient, waypoint and linkerd; use --substrate loopback", o.Mode))
	}
	if o.App == topology.AppFaces && (o.Mode == topology.ModeWaypoint || o.Gateway) {
		errs = append(errs, fmt.Errorf("app faces with mesh %s (gateway %v): the netns substrate runs faces without waypoint or gateway so far; use --substrate loopback", o.Mode, o.Gateway))
	}
	if o.App == topology.AppFaces && o.Mode == topology.ModeAmbient && o.Policies > 0 {
		errs = append(errs, fmt.Errorf("app faces with mesh ambient and policies %d: the netns substrate's ztunnel takes the static app's rules so far; use policies 0 or --substrate loopback", o.Policies))
	}
	if o.Attacker {
		errs = append(errs, errors.New("attacker: the netns substrate has no attacker pod yet; use --substrate loopback"))
	}
	switch s.ControlPlane {
	case ControlPlaneIstiod:
		errs = append(errs, supportsIstiod(o)...)
	case ControlPlaneLinkerd:
		errs = append(errs, supportsLinkerdControllers(o)...)
	case ControlPlaneReal, ControlPlaneAuto:
		switch o.Mode {
		case topology.ModeLinkerd:
			if s.LinkerdControllersRun() {
				errs = append(errs, supportsLinkerdControllers(o)...)
			}
		case topology.ModeNone:
		default:
			if s.IstiodRuns() {
				errs = append(errs, supportsIstiod(o)...)
			}
		}
	}
	return errors.Join(errs...)
}

// ztunnelInfo reads the binary's sha256 and version once.
func (s *Substrate) ztunnelInfo(ctx context.Context) (sum, version string, err error) {
	s.once.Do(func() {
		if s.zsum, s.zerr = ztunnel.FileSHA256(s.Ztunnel); s.zerr != nil {
			return
		}
		s.zversion, s.zerr = ztunnel.Version(ctx, s.Ztunnel)
	})
	return s.zsum, s.zversion, s.zerr
}

// freeName picks a subnet and a name prefix nobody on the host uses.
func (s *Substrate) freeName() (netip.Prefix, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Prefix != "" {
		sn := s.Subnet
		if !sn.IsValid() {
			sn = Subnets[0]
		}
		return sn, s.Prefix, nil
	}
	if s.prefixRNG == nil {
		s.prefixRNG = rand.New(rand.NewPCG(uint64(os.Getpid()), rand.Uint64()))
	}
	for _, sn := range Subnets {
		for range 50 {
			prefix := fmt.Sprintf("mb%03d", s.prefixRNG.IntN(1000))
			busy, err := netns.InUse(sn, prefix)
			if err != nil {
				return netip.Prefix{}, "", err
			}
			if !busy {
				return sn, prefix, nil
			}
		}
	}
	return netip.Prefix{}, "", errors.New("netns substrate: no free subnet and name prefix on this host")
}

// Up makes the namespaces of t (a node per topology node, a pod per pod),
// starts the ztunnels in ambient mode, and returns the topology as it
// runs there: pods at their namespaces' addresses, no Envoy (ztunnel is
// the node proxy), the load sent to each server pod as in mode none, the
// pods' capture carrying it through ztunnel. It runs upSteps in order;
// when a step after the namespaces were made fails, they are removed
// again.
func (s *Substrate) Up(ctx context.Context, t *topology.Topology, dir string, log io.Writer) (local.Network, *topology.Topology, error) {
	u := &upping{s: s, t: t, dir: dir, log: log, meshed: t.Options.Mode == topology.ModeAmbient || t.Options.Mode == topology.ModeWaypoint}
	for _, step := range upSteps {
		if err := step.do(u, ctx); err != nil {
			if u.lab != nil {
				u.lab.Close()
			}
			return nil, nil, err
		}
	}
	return u.net, &u.nt, nil
}

// upSteps bring a topology up on the substrate, in order.
var upSteps = []struct {
	name string
	do   func(*upping, context.Context) error
}{
	{"check", (*upping).check},              // the substrate runs the topology
	{"spec", (*upping).spec},                // the lab's nodes, pods and services
	{"ztunnel", (*upping).ztunnel},          // the ztunnel binary's sum and version (ambient)
	{"namespaces", (*upping).namespaces},    // the lab: namespaces, links, ztunnels
	{"addresses", (*upping).addresses},      // the pods at their namespaces' addresses, their calls
	{"sidecars", (*upping).sidecars},        // the sidecar Envoys in their pods
	{"load targets", (*upping).loadTargets}, // every server pod, and the services' VIPs
	{"waypoint", (*upping).waypoint},        // the waypoint's pod
	{"gateway", (*upping).gateway},          // the gateway's pod
	{"linkerd", (*upping).linkerd},          // Linkerd's proxies and control plane (mode linkerd)
	{"istiod", (*upping).istiod},            // the API server, istiod and its sidecars (control plane istiod)
}

// upping is a topology being brought up by upSteps.
type upping struct {
	s      *Substrate
	t      *topology.Topology
	dir    string
	log    io.Writer
	meshed bool // ambient or waypoint: pods enrolled in ztunnel
	o      Options
	// sum and version are the ztunnel binary's (ambient).
	sum, version string
	// lab is up once the namespaces are made (nil before); nt is the
	// topology as it runs in them; net what Up returns.
	lab *Lab
	nt  topology.Topology
	net *network
}

func (u *upping) check(context.Context) error { return u.s.Supports(u.t.Options) }

func (u *upping) spec(context.Context) error {
	t := u.t
	sidecars := t.Options.Mode == topology.ModeSidecar
	o := Options{Dir: filepath.Join(u.dir, "netns"), Log: u.log}
	if u.meshed {
		o.Ztunnel = u.s.Ztunnel
		o.Policies = t.Options.Policies
		o.ZtunnelWorkerThreads = t.Options.ProxyThreads
		// istiod configures and certifies the ztunnels (upIstiod).
		o.ZtunnelsFromXDS = u.istiodOn()
	}
	nodes := slices.Clone(t.Nodes)
	slices.SortFunc(nodes, func(a, b topology.Node) int { return a.Index - b.Index })
	index := map[int]int{} // topology node → lab node
	for i, n := range nodes {
		index[n.Index] = i
		o.Nodes = append(o.Nodes, NodeSpec{})
	}
	for _, p := range t.Pods {
		enrolled := u.meshed
		if u.istiodOn() && t.Options.Gateway && p.Role == topology.PodClient {
			// Behind istiod's gateway (not enrolled, as Istio's) the
			// load comes from outside the mesh, as the topology has it:
			// its ztunnel would carry it to the gateway in plaintext.
			enrolled = false
		}
		ps := PodSpec{Name: p.Name, Identity: p.Identity, Enrolled: enrolled, Sidecar: sidecars && t.Sidecar(p.Name) != nil,
			Policies: u.meshed && p.Role == topology.PodServer && t.Options.Policies > 0}
		if p.Service != "" {
			ps.Services = []string{p.Service}
		}
		i := index[p.Node]
		o.Nodes[i].Pods = append(o.Nodes[i].Pods, ps)
	}
	if wp := t.ProxyByRole(topology.RoleWaypoint); wp != nil {
		o.Nodes[index[wp.Node]].Pods = append(o.Nodes[index[wp.Node]].Pods, waypointSpec())
	}
	if gw := t.ProxyByRole(topology.RoleGateway); gw != nil {
		// istiod's gateway is not enrolled (Istio captures no gateway
		// pod): it sends HBONE to the ambient pods itself.
		o.Nodes[index[gw.Node]].Pods = append(o.Nodes[index[gw.Node]].Pods, gatewaySpec(u.meshed && !u.istiodOn()))
	}
	for _, svc := range t.Services {
		o.Services = append(o.Services, ServiceSpec{Name: svc.Name, Namespace: svc.Namespace, Port: svc.Port, TargetPort: svc.Port})
	}
	u.o = o
	return nil
}

func (u *upping) ztunnel(ctx context.Context) error {
	if !u.meshed {
		return nil
	}
	var err error
	u.sum, u.version, err = u.s.ztunnelInfo(ctx)
	return err
}

// namespaces brings the lab up under a free subnet and name prefix.
func (u *upping) namespaces(ctx context.Context) error {
	s := u.s
	s.stale.Do(func() { removeStale(u.log) })
	for attempt := 0; ; attempt++ {
		var err error
		if u.o.Subnet, u.o.Prefix, err = s.freeName(); err != nil {
			return err
		}
		lab, err := Up(ctx, u.o)
		if err == nil {
			u.lab = lab
			return nil
		}
		// Another lab may have taken the prefix between the check and
		// the first namespace: try another one, a few times.
		if attempt >= 2 || s.Prefix != "" || !errors.Is(err, os.ErrExist) {
			return err
		}
	}
}

func (u *upping) addresses(context.Context) error {
	u.nt = *u.t
	u.nt.Pods = slices.Clone(u.t.Pods)
	u.nt.Proxies = nil
	u.nt.LoadTargets = nil
	for i := range u.nt.Pods {
		u.nt.Pods[i].Addr = u.lab.Pod(u.nt.Pods[i].Name).IP
	}
	if err := callsOn(&u.nt, u.lab); err != nil {
		return err
	}
	if u.istiodSidecars() {
		// As on a cluster: an app calls the service's VIP, its pod's
		// capture hands the call to its own sidecar, which istiod told
		// where the service's pods are.
		viaVIPs(&u.nt, u.lab)
	}
	return nil
}

// sidecars: the sidecars stay Envoys, in their pods: outbound on the
// wildcard where istio-init's REDIRECT delivers the app's connections,
// inbound on the pod's IP (peers connect there and the capture hands it
// over), upstream from the pod's IP; the admin keeps its own loopback
// address inside the pod.
func (u *upping) sidecars(context.Context) error {
	if u.t.Options.Mode != topology.ModeSidecar || u.istiodSidecars() {
		return nil
	}
	for _, p := range u.t.Proxies {
		if p.Role != topology.RoleSidecar {
			continue
		}
		pod := u.lab.Pod(p.Pod)
		if pod == nil {
			return fmt.Errorf("sidecar %s of unknown pod %q", p.Name, p.Pod)
		}
		p.Addr = pod.IP
		p.Listeners = slices.Clone(p.Listeners)
		for i := range p.Listeners {
			port := p.Listeners[i].Addr.Port()
			switch p.Listeners[i].Kind {
			case topology.ListenerOutbound:
				p.Listeners[i].Addr = netip.AddrPortFrom(netip.IPv4Unspecified(), port)
			default:
				p.Listeners[i].Addr = netip.AddrPortFrom(pod.IP, port)
			}
		}
		u.nt.Proxies = append(u.nt.Proxies, p)
	}
	return nil
}

func (u *upping) loadTargets(context.Context) error {
	if u.istiodSidecars() || u.linkerdControllers() {
		// As on a cluster: the client calls the service's VIP, and its
		// sidecar balances over the endpoints istiod sent (a pod's own
		// IP is no service host to istiod: it would pass through, in
		// plaintext, which STRICT refuses); Linkerd's proxy over those
		// destination resolved for the service.
		svc := u.nt.Service
		u.nt.LoadTargets = []topology.LoadTarget{{URL: "http://" + netip.AddrPortFrom(u.lab.Services[svc.Name], uint16(svc.Port)).String() + "/"}}
		u.nt.InPod = &topology.InPod{VIPs: maps.Clone(u.lab.Services)}
		return nil
	}
	for _, p := range u.nt.ServicePods(u.nt.Service.Name) {
		u.nt.LoadTargets = append(u.nt.LoadTargets, topology.LoadTarget{URL: "http://" + p.AppAddr().String() + "/", Pod: p.Name})
	}
	u.nt.InPod = &topology.InPod{VIPs: maps.Clone(u.lab.Services)}
	return nil
}

func (u *upping) waypoint(context.Context) error {
	wp := u.t.ProxyByRole(topology.RoleWaypoint)
	if wp == nil {
		return nil
	}
	if u.istiodOn() {
		// pilot-agent starts the waypoint's Envoy (upIstiod): the load
		// goes to the entry service's VIP, which istiod tells the
		// client's ztunnel to send through the waypoint.
		vip, ok := u.nt.InPod.VIP(u.nt.Service)
		if !ok {
			return fmt.Errorf("service %s has no VIP on the netns lab", u.nt.Service.Name)
		}
		u.nt.LoadTargets = []topology.LoadTarget{{URL: "http://" + vip.String() + "/"}}
		return nil
	}
	return waypointTopology(u.lab, *wp, &u.nt)
}

func (u *upping) gateway(context.Context) error {
	gw := u.t.ProxyByRole(topology.RoleGateway)
	if gw == nil {
		return nil
	}
	if u.istiodOn() {
		// pilot-agent starts the gateway's Envoy, istiod configures it
		// (upIstiod): the load goes to its HTTPS listener.
		u.nt.LoadTargets = []topology.LoadTarget{{URL: gatewayURL(u.lab.Pod(gatewayPod))}}
		return nil
	}
	return gatewayTopology(u.lab, *gw, &u.nt)
}

// linkerd is the network Up returns, with Linkerd's proxies in mode
// linkerd; if they fail, the lab is removed here and its error said too.
func (u *upping) linkerd(ctx context.Context) error {
	u.net = &network{lab: u.lab, sum: u.sum, version: u.version, bin: u.s.Ztunnel, topo: &u.nt,
		sidecars: u.t.Options.Mode == topology.ModeSidecar}
	if u.s.ControlPlane == ControlPlaneAuto {
		u.net.cpWhy = u.s.ControlPlaneWhy
	}
	if u.t.Options.Mode != topology.ModeLinkerd {
		return nil
	}
	var err error
	var ctl *LinkerdControllers
	var api apiUse
	if u.linkerdControllers() {
		api, ctl, err = startLinkerdControllers(ctx, u.lab, u.t, u.s, u.dir)
	}
	if err == nil {
		u.net.linkerd, err = upLinkerd(ctx, u.lab, &u.nt, u.s.LinkerdProxy, u.s.Meshbench, u.dir, u.log, ctl, api)
	}
	if err != nil {
		err = errors.Join(err, u.lab.Close())
		u.lab = nil
		return err
	}
	return nil
}

// istiodSidecars: istiod configures this topology's sidecars (then the
// lab renders and starts no Envoy: pilot-agent starts them).
func (u *upping) istiodSidecars() bool {
	return u.s.IstiodRuns() && u.t.Options.Mode == topology.ModeSidecar
}

// linkerdControllers: Linkerd's own controllers configure this
// topology's proxies.
func (u *upping) linkerdControllers() bool {
	return u.s.LinkerdControllersRun() && u.t.Options.Mode == topology.ModeLinkerd
}

// IstiodRuns: istiod configures Istio's modes (sidecar, ambient,
// waypoint) on this substrate (control plane istiod or real; auto with
// an Istio build).
func (s *Substrate) IstiodRuns() bool {
	return s.ControlPlane == ControlPlaneIstiod || s.ControlPlane == ControlPlaneReal ||
		s.ControlPlane == ControlPlaneAuto && s.Istio.Dir != ""
}

// LinkerdControllersRun: Linkerd's own controllers configure mode
// linkerd's proxies on this substrate (control plane linkerd or real;
// auto with a Linkerd build).
func (s *Substrate) LinkerdControllersRun() bool {
	return s.ControlPlane == ControlPlaneLinkerd || s.ControlPlane == ControlPlaneReal ||
		s.ControlPlane == ControlPlaneAuto && s.Linkerd.Dir != ""
}

// istiodOn: istiod configures this topology's sidecars, or its
// ztunnels and waypoint.
func (u *upping) istiodOn() bool {
	switch u.t.Options.Mode {
	case topology.ModeSidecar, topology.ModeAmbient, topology.ModeWaypoint:
		return u.s.IstiodRuns()
	}
	return false
}

// istiod starts the lab's API server, istiod and the sidecars or the
// ztunnels from it; if they fail, the lab is removed here and its error
// said too.
func (u *upping) istiod(ctx context.Context) error {
	if !u.istiodOn() {
		return nil
	}
	var err error
	// The topology as planned names the sidecars (the one on the lab has
	// none: pilot-agent starts them).
	if u.net.istiod, err = upIstiod(ctx, u.lab, u.t, u.s, u.dir); err != nil {
		err = errors.Join(err, u.lab.Close())
		u.lab = nil
		return err
	}
	return nil
}

// network is a lab made by Substrate.Up (local.Network).
type network struct {
	lab          *Lab
	topo         *topology.Topology // as it runs on the lab
	sidecars     bool               // mode sidecar
	sum, version string
	bin          string
	// linkerd is the mesh of mode linkerd (netlab/linkerd.go), nil in
	// other modes.
	linkerd *linkerdNet
	// istiod is the control plane of sidecars or ztunnels configured by
	// istiod (istiodnet.go), nil otherwise.
	istiod *istiodNet
	// cpWhy is the Substrate's ControlPlaneWhy under control plane auto
	// (the manifest's control_plane_choice), "" otherwise.
	cpWhy string
	// base holds each ztunnel's scrape at the cell's start, by node name.
	mu   sync.Mutex
	base map[string]scrape
	// restarting are the processes a fault killed and Restart is starting
	// again ("node-proxy/POD", "sidecar/POD", restartIstiod, …), whose exit
	// Died ignores; mu also guards the ztunnels and Linkerd proxies
	// Restart replaces, and replaced (Replaced).
	restarting map[string]bool
	replaced   map[int]int
}

// scrape is one ztunnel's metrics at one time.
type scrape struct {
	text     string
	counters ztunnel.Counters
}

// scrapeAll reads every node ztunnel's metrics, by node name.
func (n *network) scrapeAll(ctx context.Context) (map[string]scrape, error) {
	out := map[string]scrape{}
	var errs []error
	for _, nd := range n.lab.Nodes {
		if nd.Ztunnel == nil {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		text, err := nd.Ztunnel.Metrics(cctx)
		cancel()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c, err := ztunnel.ParseMetrics(text)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", nd.Name, err))
			continue
		}
		out[nd.Name] = scrape{text: text, counters: c}
	}
	return out, errors.Join(errs...)
}

// StartInterval keeps every ztunnel's counters as the cell's base.
func (n *network) StartInterval(ctx context.Context) error {
	if n.linkerd != nil {
		return n.linkerd.startInterval(ctx)
	}
	if n.istiod != nil {
		if err := n.istiod.startInterval(ctx, n.lab); err != nil || !n.istiod.ambient {
			return err
		}
	}
	base, err := n.scrapeAll(ctx)
	n.mu.Lock()
	n.base = base
	n.mu.Unlock()
	return err
}

// Stats are every ztunnel's counters since StartInterval, by proxy name
// (ztunnel-NODE); the scrapes are kept in rawDir as NAME.start.txt and
// NAME.end.txt.
func (n *network) Stats(ctx context.Context, rawDir string) (map[string]results.NodeProxyStats, error) {
	end, err := n.scrapeAll(ctx)
	n.mu.Lock()
	base := n.base
	n.mu.Unlock()
	if len(end) == 0 {
		return nil, err
	}
	errs := []error{err}
	if werr := os.MkdirAll(rawDir, 0o755); werr != nil {
		errs = append(errs, werr)
	}
	out := map[string]results.NodeProxyStats{}
	for node, s := range end {
		name := "ztunnel-" + node
		b, ok := base[node]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: no scrape at the cell's start", name))
			continue
		}
		out[name] = s.counters.Sub(b.counters).Stats()
		errs = append(errs, os.WriteFile(filepath.Join(rawDir, name+".start.txt"), []byte(b.text), 0o644),
			os.WriteFile(filepath.Join(rawDir, name+".end.txt"), []byte(s.text), 0o644))
	}
	return out, errors.Join(errs...)
}

// EnvoyIn: a sidecar runs in its pod with Istio's group, which the pod's
// capture exempts.
func (n *network) EnvoyIn(p topology.Proxy) (func(func() error) error, int) {
	if pod := n.lab.Pod(p.Pod); pod != nil && p.Role == topology.RoleSidecar {
		return pod.NS.Do, SidecarID
	}
	if pod := n.lab.waypoint(); pod != nil && p.Role == topology.RoleWaypoint {
		return pod.NS.Do, 0
	}
	if pod := n.lab.Pod(gatewayPod); pod != nil && p.Role == topology.RoleGateway {
		return pod.NS.Do, 0
	}
	return nil, 0
}

func (n *network) Enter(pod string) func(func() error) error {
	p := n.lab.Pod(pod)
	if p == nil {
		return func(func() error) error { return fmt.Errorf("no pod %s on the netns substrate", pod) }
	}
	return p.NS.Do
}

// Proxies are the node ztunnels: data plane, component "node proxy
// nodeN" as the loopback lab's Envoy node proxies.
func (n *network) Proxies() []sample.Target {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []sample.Target
	for _, nd := range n.lab.Nodes {
		if nd.Ztunnel != nil {
			out = append(out, sample.Target{PID: nd.Ztunnel.PID(), Name: "ztunnel-" + nd.Name,
				Component: "node proxy " + nd.Name, Category: sample.CategoryDataPlane})
		}
	}
	if n.linkerd != nil {
		out = append(out, n.linkerd.targets()...)
	}
	if n.istiod != nil {
		out = append(out, n.istiod.targets()...)
	}
	return out
}

func (n *network) Died() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.linkerd != nil {
		if err := n.linkerd.died(n.restarting); err != nil {
			return err
		}
	}
	if n.istiod != nil {
		if err := n.istiod.died(n.restarting); err != nil {
			return err
		}
	}
	for _, nd := range n.lab.Nodes {
		if nd.Ztunnel == nil || n.restartingNode(nd) {
			continue
		}
		select {
		case <-nd.Ztunnel.Exited():
			return fmt.Errorf("ztunnel of %s died (log %s)", nd.Name, nd.Log)
		default:
		}
	}
	return nil
}

// restartingNode reports whether nd's ztunnel is being restarted (n.mu
// held).
func (n *network) restartingNode(nd *Node) bool {
	for _, p := range nd.Pods {
		if n.restarting["node-proxy/"+p.Spec.Name] {
			return true
		}
	}
	return false
}

func (n *network) Manifest() map[string]any {
	m := map[string]any{"netns": map[string]any{"prefix": n.lab.Opts.Prefix, "subnet": n.lab.Opts.Subnet.String(), "nodes": len(n.lab.Nodes)}}
	if n.sum != "" {
		m["ztunnel"] = map[string]any{"version": n.version, "sha256": n.sum, "path": n.bin}
	}
	if n.linkerd != nil {
		maps.Copy(m, n.linkerd.manifest())
	}
	if n.istiod != nil {
		maps.Copy(m, n.istiod.manifest())
	} else if n.sidecars {
		m["control_plane"] = map[string]any{"name": ControlPlaneLab, "what": "sidecars: Envoy configs rendered by meshbench from the topology, certificates from the lab's CA"}
	} else if n.topo.Options.Mode == topology.ModeAmbient {
		m["control_plane"] = map[string]any{"name": ControlPlaneLab, "what": "ztunnels: a local config file (LOCAL_XDS_PATH) rendered by meshbench from the topology, certificates from the lab's CA"}
	} else if n.topo.Options.Mode == topology.ModeWaypoint {
		m["control_plane"] = map[string]any{"name": ControlPlaneLab, "what": "ztunnels and the waypoint: a local config file (LOCAL_XDS_PATH) and the waypoint's Envoy config rendered by meshbench from the topology, certificates from the lab's CA"}
	}
	if n.cpWhy != "" {
		// What was asked and why each mesh got the control plane it got;
		// control_plane (and linkerd.control_plane) say what ran.
		m["control_plane_choice"] = map[string]any{"asked": ControlPlaneAuto, "why": n.cpWhy}
	}
	return m
}

// CheckMesh is Linkerd's mTLS verdict over the cell (local.MeshChecker);
// nothing to check in other modes.
func (n *network) CheckMesh(ctx context.Context, rawDir string) (local.MeshCheck, error) {
	if n.istiod != nil {
		mc, err := n.istiod.check(ctx, n.lab, n.topo, rawDir)
		if err == nil && n.istiod.ambient {
			err = n.ztunnelReconnects(ctx, &mc)
		}
		return mc, err
	}
	if n.linkerd == nil {
		return local.MeshCheck{}, nil
	}
	return n.linkerd.check(ctx, rawDir)
}

func (n *network) Close() error {
	var err error
	if n.linkerd != nil {
		err = n.linkerd.close()
	}
	return errors.Join(err, n.lab.Close())
}

// ztunnelReconnects adds to mc the ztunnels' xDS streams to istiod that
// ended over the cell (their own istio_xds_connection_terminations_total,
// every reason): what a kill:control-plane did to their config stream.
func (n *network) ztunnelReconnects(ctx context.Context, mc *local.MeshCheck) error {
	end, err := n.scrapeAll(ctx)
	if err != nil {
		return err
	}
	n.mu.Lock()
	base := n.base
	n.mu.Unlock()
	var total float64
	for node, s := range end {
		d := xdsTerminations(s.text) - xdsTerminations(base[node].text)
		if d < 0 {
			// ztunnel restarted (a fault): counted from 0.
			d = xdsTerminations(s.text)
		}
		total += d
	}
	mc.Derived["ztunnel_xds_terminations"] = total
	mc.Lines = append(mc.Lines, fmt.Sprintf("ztunnels' xDS streams to istiod that ended over the cell (their own istio_xds_connection_terminations_total): %.0f.", total))
	return nil
}

// xdsTerminations sums ztunnel's istio_xds_connection_terminations_total
// in a scrape of its metrics.
func xdsTerminations(text string) float64 {
	var total float64
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "istio_xds_connection_terminations") {
			continue
		}
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
				total += v
			}
		}
	}
	return total
}
