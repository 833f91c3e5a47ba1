package netlab

import (
	"context"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/mesh/linkerd"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/controlplane"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/proxy"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/release"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform/kube/labapi"
	"github.com/meshbench/meshbench/internal/platform/local"
	"github.com/meshbench/meshbench/internal/sys/pki"
	"github.com/meshbench/meshbench/internal/sys/process"
)

// linkerdNet is Linkerd on a lab made by Substrate.Up (mode linkerd): the
// real linkerd2-proxy beside every pod, the lab's control plane.
type linkerdNet struct {
	mesh *linkerd.Mesh
	// dir holds the proxies' identity files and logs while they run: a
	// directory of its own under the temp dir, which the proxy's user can
	// traverse (a results directory under /root cannot be); logDir is
	// where the logs are copied at Close.
	dir, logDir string
	bin         string
	// components are the pods' components in results ("client sidecar",
	// "server sidecar"), by pod name.
	components map[string]string
	// topo is the cell's topology (faces: who calls which backend).
	topo *topology.Topology

	// ctl and api are Linkerd's own controllers and the lab's API server
	// (Substrate ControlPlane linkerd; the lab's Close stops them), nil
	// with the lab's stand-in.
	ctl    *LinkerdControllers
	api    *labapi.Server
	apiUse apiUse

	mu   sync.Mutex
	base map[string]proxy.Stats
	// expect are the identities each pod's proxy must see its peers with
	// over mTLS: server pods their clients', the client its servers'.
	expectIn, expectOut map[string][]string
}

// upLinkerd meshes every pod of lab with Linkerd for topology t: with
// Linkerd's own controllers when ctl is set (api is then the lab's API
// server they run against), else with the lab's stand-in.
func upLinkerd(ctx context.Context, lab *Lab, t *topology.Topology, bin, meshbench, dir string, log io.Writer, ctl *LinkerdControllers, use apiUse) (_ *linkerdNet, err error) {
	tmp, err := os.MkdirTemp("", "meshbench-linkerd-")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, errors.Join(err, os.RemoveAll(tmp))
	}
	ln := &linkerdNet{dir: tmp, logDir: filepath.Join(dir, "linkerd"), bin: bin, components: map[string]string{},
		expectIn: map[string][]string{}, expectOut: map[string][]string{}, ctl: ctl, api: use.srv, apiUse: use, topo: t}
	defer func() {
		if err != nil {
			err = errors.Join(err, os.RemoveAll(tmp))
		}
	}()
	ca := lab.CA
	if ca == nil {
		if ca, err = pki.NewRootCA(pkix.Name{CommonName: "root.linkerd.cluster.local"}, pki.Options{}); err != nil {
			return nil, err
		}
	}
	o := linkerd.Options{Proxy: bin, Dir: tmp, CA: ca, Rules: t.Policies, ProfileNetworks: []netip.Prefix{lab.Opts.Subnet}, Log: log,
		Meshbench: meshbench, Cores: t.Options.ProxyThreads}
	if ctl != nil {
		o.CA, o.Controllers, o.Meshbench = ctl.Anchor, ctl.Controllers(), ""
	}
	for _, svc := range t.Services {
		o.Services = append(o.Services, controlplane.Service{Name: svc.Name, Namespace: svc.Namespace, VIP: lab.Services[svc.Name],
			Port: svc.Port, TargetPort: svc.Port})
	}
	policies := t.Options.Policies > 0
	for _, p := range t.Pods {
		np := lab.Pod(p.Name)
		if np == nil {
			return nil, fmt.Errorf("linkerd: no pod %s in the lab", p.Name)
		}
		lp := linkerd.Pod{Name: p.Name, Identity: p.Identity, IP: np.IP, NS: np.NS, Meshed: true,
			Policies: policies && p.Role == topology.PodServer}
		component := p.Name + " sidecar"
		if p.Role == topology.PodServer {
			lp.Services, lp.Ports = []string{p.Service}, []int{p.AppPort}
			component = p.Service + " sidecar"
		}
		ln.components[p.Name] = component
		o.Pods = append(o.Pods, lp)
	}
	// Who calls whom over mTLS: the client calls the entry service; each
	// server pod calls its service's backends (faces: face calls smiley
	// and color).
	name := func(id topology.Identity) string { return controlplane.Name(id) }
	client := t.Pod(loadPodName)
	for _, p := range t.ServicePods(t.Service.Name) {
		ln.expectOut[client.Name] = appendOnce(ln.expectOut[client.Name], name(p.Identity))
		ln.expectIn[p.Name] = appendOnce(ln.expectIn[p.Name], name(client.Identity))
	}
	for _, p := range t.ServerPods() {
		for _, b := range t.Svc(p.Service).Backends {
			for _, q := range t.ServicePods(b) {
				ln.expectOut[p.Name] = appendOnce(ln.expectOut[p.Name], name(q.Identity))
				ln.expectIn[q.Name] = appendOnce(ln.expectIn[q.Name], name(p.Identity))
			}
		}
	}
	if ln.mesh, err = linkerd.Up(ctx, o); err != nil {
		return nil, err
	}
	return ln, nil
}

// loadPodName is the pod the load runs in (local's loadPod).
const loadPodName = "client"

func appendOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// proxyName is the process name of pod's proxy in results.
func proxyName(pod string) string { return pod + "-linkerd-proxy" }

// targets are the proxies, data plane, components as the Envoy sidecars'
// ("client sidecar", "server sidecar") so tables compare them.
func (ln *linkerdNet) targets() []sample.Target {
	var out []sample.Target
	for _, pod := range slices.Sorted(maps.Keys(ln.mesh.Proxies)) {
		out = append(out, sample.Target{PID: ln.mesh.Proxies[pod].PID(), Name: proxyName(pod),
			Component: ln.components[pod], Category: sample.CategoryDataPlane})
	}
	if c := ln.mesh.Child; c != nil {
		out = append(out, sample.Target{PID: c.PID(), Name: ControlPlaneName, Component: ControlPlaneComponent,
			Category: sample.CategoryControlPlane})
	}
	if c := ln.ctl; c != nil {
		for _, p := range []*process.Child{c.proc("identity"), c.proc("destination"), c.proc("policy")} {
			out = append(out, sample.Target{PID: p.PID, Name: p.Name, Component: LinkerdControllersComponent, Category: sample.CategoryControlPlane})
		}
		for _, pp := range []struct {
			m         *linkerd.Mesh
			pod, name string
		}{{c.IdentityProxy, identityPod, LinkerdIdentityProxyName}, {c.DestinationProxy, destinationPod, LinkerdControllersProxyName}} {
			if p := pp.m.Proxies[pp.pod]; p != nil {
				out = append(out, sample.Target{PID: p.PID(), Name: pp.name, Component: LinkerdControllersProxyComponent,
					Category: sample.CategoryControlPlane})
			}
		}
		etcd, api := ln.api.PIDs()
		out = append(out,
			sample.Target{PID: api, Name: "lab kube-apiserver", Component: LabAPIComponent, Category: sample.CategoryOverhead},
			sample.Target{PID: etcd, Name: "lab etcd", Component: LabAPIComponent, Category: sample.CategoryOverhead})
	}
	return out
}

// LinkerdControllersComponent is the component of Linkerd's own
// controllers in results (processes linkerd-identity,
// linkerd-destination, linkerd-policy).
const LinkerdControllersComponent = "control plane (Linkerd's controllers)"

// LinkerdIdentityProxyName, LinkerdControllersProxyName and
// LinkerdControllersProxyComponent name the identity pod's and the
// destination pod's own linkerd2-proxies in results: control plane, in
// rows of their own.
const (
	LinkerdIdentityProxyName         = "linkerd-identity-linkerd-proxy"
	LinkerdControllersProxyName      = "linkerd-destination-linkerd-proxy"
	LinkerdControllersProxyComponent = "control plane (Linkerd's controllers' proxies)"
)

// ControlPlaneName and ControlPlaneComponent name the control plane's
// process in results: the lab's stand-in, never Linkerd's.
const (
	ControlPlaneName      = "linkerd-control-plane"
	ControlPlaneComponent = "control plane (lab stand-in for Linkerd's)"
)

// died says which of Linkerd's processes exited, except those being
// restarted (by "sidecar/POD").
func (ln *linkerdNet) died(restarting map[string]bool) error {
	if c := ln.mesh.Child; c != nil {
		select {
		case <-c.Exited():
			return fmt.Errorf("the Linkerd control plane (lab stand-in) died (log %s)", c.Log)
		default:
		}
	}
	if ln.ctl != nil {
		var except []string
		if restarting[restartLinkerdControllers] {
			except = []string{"destination", "policy"}
		}
		if err := ln.ctl.Died(except...); err != nil {
			return err
		}
		if err := ln.api.Died(); err != nil {
			return err
		}
	}
	for pod, p := range ln.mesh.Proxies {
		if restarting["sidecar/"+pod] {
			continue
		}
		select {
		case <-p.Exited():
			return fmt.Errorf("linkerd2-proxy of %s died (log %s)", pod, ln.mesh.Logs[pod])
		default:
		}
	}
	return nil
}

func (ln *linkerdNet) manifest() map[string]any {
	v := ln.mesh.Version
	l := map[string]any{
		"proxy":                 map[string]any{"release": v.Release, "git_sha": v.GitSHA, "date": v.Date, "sha256": v.SHA256, "path": ln.bin},
		"control_plane":         "the lab's stand-in for Linkerd's control plane (meshbench's internal/linkerd/controlplane), not Linkerd's",
		"ready_in":              ln.mesh.ReadyIn.String(),
		"control_plane_process": ln.mesh.Child != nil,
		"identity_dir":          ln.dir,
	}
	m := map[string]any{"linkerd": l}
	if c := ln.ctl; c != nil {
		l["control_plane"] = LinkerdControllersWhat
		etcdRSS, apiRSS, _ := ln.api.Memory()
		cp := map[string]any{"name": ControlPlaneLinkerd, "linkerd": release.Version, "build": c.opts.Build.Describe(),
			"what":               LinkerdControllersWhat,
			"api_server_ready_s": ln.api.StartTime.Seconds(), "controllers_ready_s": c.StartTime.Seconds(),
			"proxies_ready_s": ln.mesh.ReadyIn.Seconds(), "api_server_rss_bytes": etcdRSS + apiRSS,
			"objects_s": c.ObjectsTime.Seconds(), "api_server": ln.apiUse.record()}
		for name, d := range c.Ready {
			cp[name+"_ready_s"] = d.Seconds()
		}
		m["control_plane"] = cp
	} else {
		m["control_plane"] = map[string]any{"name": ControlPlaneLab, "what": LinkerdStandInWhat}
	}
	return m
}

// LinkerdStandInWhat says in the manifest what configured the proxies
// with --control-plane lab: the lab's stand-in, not Linkerd's controllers.
const LinkerdStandInWhat = "Linkerd's proxies: the lab's stand-in for Linkerd's control plane (meshbench's internal/mesh/linkerd/controlplane: identity, destination and policy from the topology), not Linkerd's controllers"

// LinkerdControllersWhat says in the manifest what configured the
// proxies with --control-plane linkerd.
const LinkerdControllersWhat = "Linkerd's own identity, destination and policy controllers (" + release.Version +
	") against the lab's API server: every proxy's certificate from the identity controller (TokenRequest token, audience identity.l5d.io), " +
	"its endpoints and profiles from destination, its policies from the policy controller. The controllers run in two pods of their own as " +
	"Linkerd's chart has them, each with its own linkerd2-proxy: identity at the lab's x.y.0.4 (service account linkerd-identity; its proxy " +
	"certified by its own controller on the pod's loopback, as the chart's localhost.:8080), destination and policy at x.y.0.5 (service account " +
	"linkerd-destination). Every proxy reaches them at those IPs over TLS, verifying linkerd-identity.linkerd.serviceaccount.identity.linkerd.cluster.local " +
	"and linkerd-destination.linkerd.serviceaccount.identity.linkerd.cluster.local (on a cluster the addresses are headless services' names; the lab " +
	"has no DNS); the pods' proxies terminate that TLS (their inbound counters, per cell: every request over TLS, none in plaintext). " +
	"Client identities: " + ClientIDNote

// startInterval keeps every proxy's counters as the cell's base.
func (ln *linkerdNet) startInterval(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	base, err := ln.mesh.Stats(cctx)
	ln.mu.Lock()
	ln.base = base
	ln.mu.Unlock()
	return err
}

// check verifies the cell's mTLS from the proxies' own counters since
// startInterval: every request they carried over mTLS, the client's
// proxy reaching the servers with their identities and each server's
// proxy seeing the client's.
func (ln *linkerdNet) check(ctx context.Context, rawDir string) (local.MeshCheck, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var errs []error
	end := map[string]proxy.Stats{}
	if err := os.MkdirAll(rawDir, 0o755); err != nil {
		errs = append(errs, err)
	}
	for pod, p := range ln.mesh.Proxies {
		text, err := p.Metrics(cctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, os.WriteFile(filepath.Join(rawDir, proxyName(pod)+".end.txt"), []byte(text), 0o644))
		s, err := proxy.ParseStats(strings.NewReader(text))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		end[pod] = s
	}
	ln.mu.Lock()
	base := ln.base
	ln.mu.Unlock()
	cell := map[string]proxy.Stats{}
	for pod, s := range end {
		cell[pod] = s.Sub(base[pod])
	}
	mc := Verdict(cell, ln.expectIn, ln.expectOut)
	if ln.topo != nil && ln.topo.Options.App == topology.AppFaces {
		facesLinkerd(ln.topo, cell, &mc)
	}
	if ln.ctl != nil {
		mc, errs = ln.controllersCheck(ctx, mc, end, rawDir, errs)
		controlRequests(&mc, cell)
	}
	return mc, errors.Join(errs...)
}

// controlRequests adds to mc the requests (gRPC streams) the proxies
// opened to the destination and policy controllers over the cell, from
// their own control_request_total: a proxy opens them at its start and
// again after a controller went away (a kill:control-plane's
// reconnections).
func controlRequests(mc *local.MeshCheck, cell map[string]proxy.Stats) {
	var dst, pol float64
	for _, s := range cell {
		dst += controlTo(s, linkerd.ControllerPorts.Destination)
		pol += controlTo(s, linkerd.ControllerPorts.Policy)
	}
	mc.Derived["linkerd_destination_requests"] = dst
	mc.Derived["linkerd_policy_requests"] = pol
	mc.Lines = append(mc.Lines, fmt.Sprintf("The proxies opened %.0f requests to the destination controller and %.0f to the policy controller over the cell (their control_request_total: 0 when nothing reconnected).", dst, pol))
}

// controllersCheck adds to mc the proof that Linkerd's controllers
// configured the proxies: the diagnostics table from each proxy's
// metrics at the cell's end (kept in rawDir as linkerd-diagnostics.txt)
// and the identity controller's count of certificates issued; the cell
// is invalid when a proxy got no identity or no policy from them.
func (ln *linkerdNet) controllersCheck(ctx context.Context, mc local.MeshCheck, end map[string]proxy.Stats, rawDir string, errs []error) (local.MeshCheck, []error) {
	rows := diagnosticsRows(end, func(pod string) string {
		if p := ln.mesh.Proxies[pod]; p != nil {
			return p.Spec.Name
		}
		return ""
	}, time.Now())
	table := diagnosticsTable(rows)
	certified, err := ln.ctl.Certified(ctx)
	if err != nil {
		errs = append(errs, err)
	}
	head := fmt.Sprintf("Linkerd's controllers configured the proxies (each proxy's own metrics; the identity controller issued %.0f certificates):", certified)
	mc.Lines = append(mc.Lines, head)
	for _, line := range strings.Split(strings.TrimRight(table, "\n"), "\n") {
		mc.Lines = append(mc.Lines, "  "+line)
	}
	mc.Invalid = append(mc.Invalid, diagnosticsInvalid(rows)...)
	// The controllers' pods' own proxies have certificates too.
	want := float64(len(rows)) + 2
	if certified < want {
		mc.Invalid = append(mc.Invalid, fmt.Sprintf("Linkerd's identity controller issued %.0f certificates for %.0f proxies", certified, want))
	}
	if mc.Derived == nil {
		mc.Derived = map[string]float64{}
	}
	mc.Derived["linkerd_controller_certificates"] = certified
	// The controllers' pods' proxies' metrics are kept with the cell.
	texts, err := ln.ctl.PodsMetrics(ctx)
	errs = append(errs, err)
	for pod, text := range texts {
		errs = append(errs, os.WriteFile(filepath.Join(rawDir, pod+"-linkerd-proxy.end.txt"), []byte(text), 0o644))
	}
	pods, err := PodsInbound(texts)
	errs = append(errs, err)
	proof := controllersProof(pods, rows)
	mc.Lines, mc.Invalid = append(mc.Lines, proof.Lines...), append(mc.Invalid, proof.Invalid...)
	mc.Derived["linkerd_controllers_inbound_tls"] = proof.InboundTLS[destinationPod]
	mc.Derived["linkerd_controllers_inbound_plain"] = proof.InboundPlain[destinationPod]
	mc.Derived["linkerd_identity_inbound_tls"] = proof.InboundTLS[identityPod]
	mc.Derived["linkerd_identity_inbound_plain"] = proof.InboundPlain[identityPod]
	errs = append(errs, os.WriteFile(filepath.Join(rawDir, "linkerd-diagnostics.txt"), []byte(head+"\n"+table+strings.Join(proof.Lines, "\n")+"\n"), 0o644))
	return mc, errs
}

// facesLinkerd says what the faces app's calls did over the cell from
// the proxies' own counters: per backend, the requests the entry
// service's proxies sent it over mTLS (to its pods' identities) and the
// requests its proxies took over mTLS from the callers' identities, and
// what they took in plaintext. A backend that took nothing over mTLS, or
// anything in plaintext, makes the cell invalid.
func facesLinkerd(t *topology.Topology, cell map[string]proxy.Stats, mc *local.MeshCheck) {
	// A service's replicas share its identity: each counter is read once
	// per pod and per distinct peer identity, never once per peer pod.
	ids := func(pods []topology.Pod) []string {
		var out []string
		for _, p := range pods {
			if n := controlplane.Name(p.Identity); !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
		return out
	}
	callers := t.ServicePods(t.Service.Name)
	callerIDs := ids(callers)
	var parts []string
	for _, b := range t.Svc(t.Service.Name).Backends {
		var sent, took, plain float64
		backends := t.ServicePods(b)
		for _, q := range backends {
			s := cell[q.Name]
			plain += s.InboundPlain
			for _, id := range callerIDs {
				took += s.ClientIDs[id]
			}
		}
		for _, c := range callers {
			for _, id := range ids(backends) {
				sent += cell[c.Name].ServerIDs[id]
			}
		}
		mc.Derived["linkerd_faces_"+b+"_sent"] = sent
		mc.Derived["linkerd_faces_"+b+"_took"] = took
		mc.Derived["linkerd_faces_"+b+"_plain"] = plain
		parts = append(parts, fmt.Sprintf("%s's proxies sent %s %.0f requests over mTLS, %s's proxies took %.0f from %s's identity over mTLS and %.0f in plaintext",
			t.Service.Name, b, sent, b, took, t.Service.Name, plain))
		if took <= 0 {
			mc.Invalid = append(mc.Invalid, fmt.Sprintf("faces: %s's proxies took no request from %s over mTLS in the cell", b, t.Service.Name))
		}
		if plain > 0 {
			mc.Invalid = append(mc.Invalid, fmt.Sprintf("faces: %s's proxies took %.0f requests in plaintext", b, plain))
		}
	}
	mc.Lines = append(mc.Lines, "faces: "+strings.Join(parts, "; ")+".")
}

// Verdict is the cell's mTLS check from every proxy's counters over the
// cell (by pod): what carried requests in plaintext, peers missing from
// the identities seen, requests the policies denied.
func Verdict(cell map[string]proxy.Stats, expectIn, expectOut map[string][]string) local.MeshCheck {
	var tls, plain, denied float64
	out := local.MeshCheck{Lines: []string{"Linkerd proxies (their own request counters over the cell):",
		fmt.Sprintf("  %-28s %12s %12s %12s %12s %8s", "proxy", "in mTLS", "in plain", "out mTLS", "out plain", "denied")}}
	for _, pod := range slices.Sorted(maps.Keys(cell)) {
		s := cell[pod]
		d := 0.0
		for _, v := range s.Denied {
			d += v
		}
		tls += s.InboundTLS + s.OutboundTLS
		plain += s.InboundPlain + s.OutboundPlain
		denied += d
		out.Lines = append(out.Lines, fmt.Sprintf("  %-28s %12.0f %12.0f %12.0f %12.0f %8.0f", proxyName(pod), s.InboundTLS, s.InboundPlain, s.OutboundTLS, s.OutboundPlain, d))
		for _, id := range expectIn[pod] {
			if s.ClientIDs[id] == 0 {
				out.Invalid = append(out.Invalid, fmt.Sprintf("mTLS not verified: %s's proxy saw no request from %s over mTLS in the cell", pod, id))
			}
		}
		for _, id := range expectOut[pod] {
			if s.ServerIDs[id] == 0 {
				out.Invalid = append(out.Invalid, fmt.Sprintf("mTLS not verified: %s's proxy sent no request to %s over mTLS in the cell", pod, id))
			}
		}
	}
	for _, pod := range slices.Sorted(maps.Keys(expectIn)) {
		if _, ok := cell[pod]; !ok {
			out.Invalid = append(out.Invalid, fmt.Sprintf("mTLS not verified: no counters from %s's proxy", pod))
		}
	}
	if pt := linkerd.Plaintext(cell); len(pt) > 0 {
		out.Invalid = append(out.Invalid, "mTLS not verified: plaintext through the Linkerd proxies: "+strings.Join(pt, ", "))
	}
	if tls == 0 {
		out.Invalid = append(out.Invalid, "mTLS not verified: the Linkerd proxies carried no request over mTLS in the cell")
	}
	out.Derived = map[string]float64{"linkerd_mtls_requests": tls, "linkerd_plaintext_requests": plain, "linkerd_denied_requests": denied}
	if len(out.Invalid) == 0 {
		out.Lines = append(out.Lines, fmt.Sprintf("mTLS verified: all %.0f requests the Linkerd proxies carried were mutual TLS (tls=\"true\"), with the peers' identities (client_id, server_id).", tls))
	}
	return out
}

// close stops the proxies and the control plane, keeps the proxies' logs
// in logDir and removes the temporary directory.
func (ln *linkerdNet) close() error {
	err := ln.mesh.Close()
	var errs []error
	if len(ln.mesh.Logs) > 0 {
		errs = append(errs, os.MkdirAll(ln.logDir, 0o755))
	}
	logs := map[string]string{}
	for pod, path := range ln.mesh.Logs {
		logs[proxyName(pod)+".log"] = path
	}
	if c := ln.mesh.Child; c != nil {
		logs[ControlPlaneName+".log"] = c.Log
	}
	for name, path := range logs {
		if b, rerr := os.ReadFile(path); rerr == nil {
			errs = append(errs, os.WriteFile(filepath.Join(ln.logDir, name), b, 0o644))
		}
	}
	return errors.Join(append([]error{err, os.RemoveAll(ln.dir)}, errs...)...)
}

// supportsLinkerd says why mode linkerd with options o cannot run on the
// substrate.
func (s *Substrate) supportsLinkerd(o topology.Options) []error {
	var errs []error
	if s.LinkerdProxy == "" {
		errs = append(errs, errors.New("mesh linkerd needs linkerd2-proxy: run make linkerd-proxy, or give --linkerd-proxy PATH"))
	}
	if o.Protocol == topology.ProtocolTCP {
		errs = append(errs, errors.New("mesh linkerd with protocol tcp: Linkerd in the lab carries HTTP (its opaque ports are not wired); use protocol http"))
	}
	if o.Gateway {
		errs = append(errs, errors.New("mesh linkerd with the gateway: the lab's gateway is an Istio ingress Envoy, none is wired for Linkerd; leave the gateway off"))
	}
	return errs
}
