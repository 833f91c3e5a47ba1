// Package linkerd puts pods in a Linkerd mesh made of the real
// linkerd2-proxy and the lab's own control plane: for every meshed pod
// (a network namespace) it installs Linkerd's proxy-init capture, serves
// the control plane on the pod's loopback (the proxy speaks plaintext gRPC
// to loopback only), writes the proxy's identity files and starts the
// proxy as its own user, and waits until every proxy is ready (certified
// by the control plane's identity service, its policies received).
//
// It knows nothing of how the pods were made: a lab substrate
// (internal/platform/netlab) hands it each pod's namespace, address and
// identity. Close stops every proxy and the control plane and removes the
// capture rules, so the pods can serve another cell.
//
// Sub-packages: controlplane (the four APIs on the published Go types of
// linkerd2-proxy-api) and proxy (the process, its identity files and its
// metrics).
package linkerd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/meshbench/meshbench/internal/mesh/capture"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/controlplane"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/proxy"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/sys/netns"
	"github.com/meshbench/meshbench/internal/sys/pki"
)

// ControlPort is where the control plane listens on every meshed pod's
// loopback (identity, destination and policy on one port).
const ControlPort = 8090

// ReadyTimeout bounds how long Up waits for all proxies to be ready. A
// proxy is ready in about 5 ms on an idle machine; the bound is for a
// loaded 2-core one starting many.
const ReadyTimeout = 60 * time.Second

// StopGrace is how long a proxy may drain after SIGTERM before it is
// killed.
const StopGrace = 5 * time.Second

// Pod is one pod as the substrate made it.
type Pod struct {
	Name     string
	Identity topology.Identity
	IP       netip.Addr
	// NS is the pod's network namespace (nil for a pod outside the lab's
	// namespaces; it must then not be meshed).
	NS *netns.NS
	// Meshed puts a linkerd2-proxy beside the pod.
	Meshed bool
	// Services are the services the pod backs, by name.
	Services []string
	// Ports are the app's ports (the proxy watches their inbound policy
	// from the start).
	Ports []int
	// Policies applies Options.Rules to the pod's inbound traffic.
	Policies bool
}

// Options describe a mesh.
type Options struct {
	// Proxy is the linkerd2-proxy binary (proxy.Find).
	Proxy string
	// Dir holds the proxies' identity files and logs.
	Dir string
	// CA is the trust anchor that signs the proxies' certificates.
	CA       *pki.CA
	Pods     []Pod
	Services []controlplane.Service
	// Rules are the ALLOW rules of pods with Policies (topology.Rules(N)).
	Rules []topology.Policy
	// ProfileNetworks are where IP targets get a service profile lookup
	// (the lab's subnet).
	ProfileNetworks []netip.Prefix
	// Cores is each proxy's LINKERD2_PROXY_CORES; 0 is the proxy's
	// default (one core).
	Cores int
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// Meshbench, when set, is the meshbench executable that runs the
	// control plane in a child process of its own (`meshbench
	// linkerd-control-plane`, ControlPlaneProcess), so its CPU and memory
	// are sampled apart; "" serves it in this process.
	Meshbench string
	// Controllers, when set, are Linkerd's own controllers instead of the
	// lab's stand-in: no stand-in runs (Services, Rules and Meshbench are
	// unused), CA is the trust anchor only.
	Controllers *Controllers
}

// Controllers are Linkerd's own identity, destination and policy
// controllers, which the caller runs in two pods of their own, each with
// a linkerd2-proxy, as Linkerd's chart does: the identity pod and the
// destination pod (destination and policy). Every meshed pod's proxy
// reaches each controller at its pod's IP (ControllerPorts) over TLS,
// verifying the pod's identity (IdentityName, DestinationName), as on a
// cluster, where the address is a headless service's name (the lab has
// no DNS); a controller pod's own proxy reaches its own controllers on
// its loopback in plaintext (Loopback), as the chart's localhost.:PORT.
type Controllers struct {
	// Token is pod's service-account token, which the proxy presents to
	// the identity controller (a TokenRequest with audience
	// identity.l5d.io, as the injector's projected volume holds it).
	Token func(ctx context.Context, p Pod) (string, error)
	// IdentityPod and DestinationPod are the IPs of the controllers'
	// pods.
	IdentityPod, DestinationPod netip.Addr
	// Loopback are the ports (of ControllerPorts) the proxies reach on
	// their own pod's loopback, in plaintext: set for a controller pod's
	// own proxy (the identity pod's 8080; the destination pod's 8086 and
	// 8090), as Linkerd's injector configures a control-plane pod's.
	Loopback []int
	// DefaultInboundPolicy and RequireTLSPorts are the proxies'
	// (proxy.Spec's): a controller pod's, as Linkerd's chart sets them
	// (all-unauthenticated; the identity pod's 8080 TLS only).
	DefaultInboundPolicy string
	RequireTLSPorts      []int
}

// IdentityName and DestinationName are the identities of Linkerd's
// identity pod (service account linkerd-identity) and of its destination
// and policy controllers' pod (service account linkerd-destination), as
// Linkerd's proxy injector names them in LINKERD2_PROXY_*_SVC_NAME
// (edge-26.8.3's charts/partials/templates/_proxy.tpl).
const (
	IdentityName    = "linkerd-identity.linkerd.serviceaccount.identity.linkerd.cluster.local"
	DestinationName = "linkerd-destination.linkerd.serviceaccount.identity.linkerd.cluster.local"
)

// ControllerPorts are the ports of Linkerd's controllers, as its chart
// serves them: identity 8080, destination 8086, policy 8090.
var ControllerPorts = struct{ Identity, Destination, Policy int }{8080, 8086, 8090}

// address is where a proxy reaches the controller serving port at pod
// (its pod's IP, verifying name over TLS), or on its own loopback in
// plaintext when port is one of c's Loopback ports (no name: the proxy
// speaks plaintext to loopback).
func (c *Controllers) address(pod netip.Addr, port int, name string) (netip.AddrPort, string) {
	if slices.Contains(c.Loopback, port) {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(port)), ""
	}
	return netip.AddrPortFrom(pod, uint16(port)), name
}

// Mesh is a running mesh.
type Mesh struct {
	Opts Options
	// ControlPlane is the lab's stand-in for Linkerd's control plane when
	// it runs in this process (Options.Meshbench ""): its CPU and memory
	// are this process's, never Linkerd's. nil with a child process.
	ControlPlane *controlplane.Server
	// Child is the control plane's own process (Options.Meshbench set),
	// nil when it runs in this process.
	Child *ControlPlaneProcess
	// Proxies by pod name.
	Proxies map[string]*proxy.Process
	// Logs are the proxies' log files by pod name.
	Logs map[string]string
	// Version is the proxy's, for the manifest.
	Version proxy.Version
	// ReadyIn is how long the proxies took, from the first start to the
	// last ready.
	ReadyIn time.Duration

	tokens map[string]string // identity token by workload ref
	mu     sync.Mutex
	undo   []func() error
}

func (o Options) validate() error {
	var errs []error
	if o.Proxy == "" {
		errs = append(errs, errors.New("linkerd: no linkerd2-proxy binary given"))
	}
	if o.Dir == "" {
		errs = append(errs, errors.New("linkerd: no directory given"))
	}
	if o.CA == nil {
		errs = append(errs, errors.New("linkerd: no CA given"))
	}
	if o.Cores < 0 {
		errs = append(errs, fmt.Errorf("linkerd: proxy cores %d: allowed 0 (the proxy's default) or more", o.Cores))
	}
	if c := o.Controllers; c != nil && (c.Token == nil || !c.IdentityPod.IsValid() || !c.DestinationPod.IsValid()) {
		errs = append(errs, errors.New("linkerd: Linkerd's controllers given without a token source or their pods' addresses"))
	}
	for _, p := range o.Pods {
		if p.Meshed && p.NS == nil {
			errs = append(errs, fmt.Errorf("linkerd: pod %s is meshed but has no network namespace", p.Name))
		}
	}
	return errors.Join(errs...)
}

// Up starts the control plane and a proxy beside every meshed pod and
// waits until all are ready; on error everything started is stopped.
func Up(ctx context.Context, o Options) (_ *Mesh, err error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	m := &Mesh{Opts: o, Proxies: map[string]*proxy.Process{}, Logs: map[string]string{}}
	defer func() {
		if err != nil {
			err = errors.Join(err, m.Close())
		}
	}()
	if m.Version, err = proxy.GetVersion(ctx, o.Proxy); err != nil {
		return nil, err
	}
	if o.Controllers != nil {
		return m, m.upControllers(ctx)
	}
	cfg := controlplane.Config{CA: o.CA, Services: o.Services, Rules: o.Rules, AdminPort: proxy.PortAdmin}
	for _, p := range o.Pods {
		cfg.Workloads = append(cfg.Workloads, controlplane.Workload{Name: p.Name, Identity: p.Identity, IP: p.IP,
			Meshed: p.Meshed, Services: p.Services, Policies: p.Policies})
	}
	if cfg.Tokens, err = controlplane.NewTokens(cfg.Workloads); err != nil {
		return nil, err
	}
	m.tokens = cfg.Tokens
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	if err := searchable(o.Dir, proxy.UID); err != nil {
		return nil, err
	}
	// The capture and a control-plane listener in every meshed pod, then
	// the control plane on all of them, then the proxies.
	var listeners []net.Listener
	m.onClose(func() error {
		for _, l := range listeners {
			_ = l.Close() // the server's Close may have closed it already
		}
		return nil
	})
	for _, p := range o.Pods {
		if p.Meshed {
			l, err := m.capture(p)
			if err != nil {
				return nil, fmt.Errorf("linkerd proxy for %s: %w", p.Name, err)
			}
			listeners = append(listeners, l)
		}
	}
	if o.Meshbench == "" {
		if m.ControlPlane, err = controlplane.New(cfg); err != nil {
			return nil, err
		}
		m.onClose(m.ControlPlane.Close)
		for _, l := range listeners {
			m.ControlPlane.Serve(l) // closed by the control plane's Close
		}
	} else {
		if m.Child, err = startControlPlane(ctx, o.Meshbench, o.Dir, cfg, listeners); err != nil {
			return nil, err
		}
		m.onClose(func() error { return m.Child.Stop(StopGrace) })
		for _, l := range listeners {
			_ = l.Close() // the child holds its own copies
		}
	}
	return m, m.startProxies(ctx)
}

// startProxies starts every meshed pod's proxy and waits until all are
// ready.
func (m *Mesh) startProxies(ctx context.Context) error {
	o := m.Opts
	start := time.Now()
	for _, p := range o.Pods {
		if p.Meshed {
			if err := m.attach(p); err != nil {
				return fmt.Errorf("linkerd proxy for %s: %w", p.Name, err)
			}
		}
	}
	wctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	errc := make(chan error, len(m.Proxies))
	for name, pr := range m.Proxies {
		go func() {
			if err := pr.Ready(wctx); err != nil {
				errc <- fmt.Errorf("%w; log %s:\n%s", err, m.Logs[name], proxy.Tail(m.Logs[name], 10))
				return
			}
			errc <- nil
		}()
	}
	var errs []error
	for range m.Proxies {
		errs = append(errs, <-errc)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	m.ReadyIn = time.Since(start)
	if o.Log != nil {
		fmt.Fprintf(o.Log, "linkerd: %d proxies ready in %v (%s)\n", len(m.Proxies), m.ReadyIn.Round(time.Millisecond), m.Version)
	}
	return nil
}

// upControllers meshes the pods with Linkerd's own controllers: the
// capture in every meshed pod and each proxy's token, then the proxies.
func (m *Mesh) upControllers(ctx context.Context) error {
	o := m.Opts
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return err
	}
	if err := searchable(o.Dir, proxy.UID); err != nil {
		return err
	}
	m.tokens = map[string]string{}
	for _, p := range o.Pods {
		if !p.Meshed {
			continue
		}
		if err := m.installCapture(p); err != nil {
			return fmt.Errorf("linkerd proxy for %s: %w", p.Name, err)
		}
		tok, err := o.Controllers.Token(ctx, p)
		if err != nil {
			return fmt.Errorf("linkerd proxy for %s: its token: %w", p.Name, err)
		}
		m.tokens[controlplane.Workload{Name: p.Name, Identity: p.Identity}.Ref()] = tok
	}
	return m.startProxies(ctx)
}

// controlAddr is the control plane's address on every meshed pod's
// loopback.
var controlAddr = netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), ControlPort)

// capture installs the capture in p's namespace and listens for the
// control plane on its loopback.
func (m *Mesh) capture(p Pod) (net.Listener, error) {
	if err := m.installCapture(p); err != nil {
		return nil, err
	}
	var lis net.Listener
	if err := p.NS.Do(func() (err error) {
		lis, err = net.Listen("tcp", controlAddr.String())
		return err
	}); err != nil {
		return nil, fmt.Errorf("control plane listener: %w", err)
	}
	return lis, nil
}

// installCapture installs proxy-init's capture in p's namespace.
func (m *Mesh) installCapture(p Pod) error {
	pi := capture.ProxyInit{ProxyUID: proxy.UID, InboundPort: proxy.PortInbound, OutboundPort: proxy.PortOutbound}
	if err := capture.Linkerd(p.NS, pi); err != nil {
		return err
	}
	m.onClose(func() error { return capture.RemoveLinkerd(p.NS, pi) })
	return nil
}

// attach writes p's identity files and starts its proxy.
func (m *Mesh) attach(p Pod) error {
	ctl := controlAddr
	ref := controlplane.Workload{Name: p.Name, Identity: p.Identity}.Ref()
	name := controlplane.Name(p.Identity)
	ids, err := proxy.WriteIdentity(filepath.Join(m.Opts.Dir, "identity-"+p.Name), name, m.tokens[ref], proxy.UID)
	if err != nil {
		return err
	}
	logPath := filepath.Join(m.Opts.Dir, "proxy-"+p.Name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	m.onClose(logf.Close)
	m.Logs[p.Name] = logPath
	spec := proxy.Spec{
		Bin: m.Opts.Proxy, NS: p.NS, Name: name, Workload: ref, ControlAddr: ctl,
		TrustAnchorsPEM: string(m.Opts.CA.CertPEM()), Identity: ids, InboundPorts: p.Ports,
		ProfileNetworks: m.Opts.ProfileNetworks, Cores: m.Opts.Cores, Log: logf,
	}
	if c := m.Opts.Controllers; c != nil {
		spec.IdentityAddr, spec.IdentitySvcName = c.address(c.IdentityPod, ControllerPorts.Identity, IdentityName)
		spec.DestinationAddr, spec.DestinationSvcName = c.address(c.DestinationPod, ControllerPorts.Destination, DestinationName)
		spec.PolicyAddr, spec.PolicySvcName = c.address(c.DestinationPod, ControllerPorts.Policy, DestinationName)
		spec.DefaultInboundPolicy, spec.RequireTLSPorts = c.DefaultInboundPolicy, c.RequireTLSPorts
	}
	pr, err := proxy.Start(spec)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.Proxies[p.Name] = pr
	m.mu.Unlock()
	return nil
}

// searchable checks that uid can reach files in dir: every directory on
// the way must be searchable by others (or owned by uid). The proxy runs
// as its own user and reads its identity files there.
func searchable(dir string, uid int) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for d := abs; ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return err
		}
		owner := -1
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			owner = int(sys.Uid)
		}
		if st.Mode().Perm()&0o001 == 0 && owner != uid {
			return fmt.Errorf("linkerd: directory %s (mode %v) is not searchable by the proxy's user %d, which reads its identity files under %s: allowed a directory every user can traverse (o+x)", d, st.Mode().Perm(), uid, abs)
		}
		if filepath.Dir(d) == d {
			return nil
		}
	}
}

func (m *Mesh) onClose(f func() error) {
	m.mu.Lock()
	m.undo = append(m.undo, f)
	m.mu.Unlock()
}

// Close stops every proxy (in parallel, each drained for up to StopGrace),
// then the control plane, and closes the logs. Safe to call twice.
func (m *Mesh) Close() error {
	m.mu.Lock()
	undo, proxies := m.undo, m.Proxies
	m.undo, m.Proxies = nil, map[string]*proxy.Process{}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, pr := range proxies {
		wg.Add(1)
		go func() { defer wg.Done(); _ = pr.Stop(StopGrace) }()
	}
	wg.Wait()
	var errs []error
	for i := len(undo) - 1; i >= 0; i-- {
		if err := undo[i](); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Stats scrapes every proxy's metrics (proxy.Stats), by pod name.
func (m *Mesh) Stats(ctx context.Context) (map[string]proxy.Stats, error) {
	m.mu.Lock()
	proxies := make(map[string]*proxy.Process, len(m.Proxies))
	maps.Copy(proxies, m.Proxies)
	m.mu.Unlock()
	out := map[string]proxy.Stats{}
	var errs []error
	for name, p := range proxies {
		s, err := p.Stats(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[name] = s
	}
	return out, errors.Join(errs...)
}

// Plaintext lists, sorted, what went without mTLS between meshed pods:
// "POD inbound N" or "POD outbound N" for every proxy that carried N
// requests in plaintext. Empty means every request a proxy carried was
// over mTLS, as a cell's verdict needs.
func Plaintext(stats map[string]proxy.Stats) []string {
	var out []string
	for name, s := range stats {
		if s.InboundPlain > 0 {
			out = append(out, fmt.Sprintf("%s inbound %.0f", name, s.InboundPlain))
		}
		if s.OutboundPlain > 0 {
			out = append(out, fmt.Sprintf("%s outbound %.0f", name, s.OutboundPlain))
		}
	}
	slices.Sort(out)
	return out
}
