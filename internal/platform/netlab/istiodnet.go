package netlab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshbench/meshbench/internal/measure/probe"
	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/mesh/istio"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/mesh/ztunnel"
	"github.com/meshbench/meshbench/internal/platform/kube/labapi"
	"github.com/meshbench/meshbench/internal/platform/kube/policy"
	"github.com/meshbench/meshbench/internal/platform/local"
	"github.com/meshbench/meshbench/internal/report"
)

// The processes of a lab configured by istiod, as results name them.
const (
	IstiodName      = "istiod"
	IstiodComponent = "istiod"
	// LabAPIComponent is the lab's API server (etcd and kube-apiserver):
	// meshbench's own infrastructure, not the mesh's (a cluster's API
	// server is not sampled either), so sampled as overhead.
	LabAPIComponent = "lab API server"
)

// supportsIstiod returns why istiod cannot configure a topology with
// options o yet (nil: it can): sidecar, ambient or waypoint mode with the
// static app, over HTTP or TCP (not TCP through the waypoint), mTLS on
// or, with sidecars, off; the gateway with sidecars only; mode none
// needs no control plane.
func supportsIstiod(o topology.Options) []error {
	var errs []error
	switch o.Mode {
	case topology.ModeNone:
		if o.Gateway {
			// No mesh, no istiod: the gateway would be meshbench's
			// hand-rendered one, mixed into a plan with istiod's.
			return []error{errors.New("gateway with mesh none and control plane istiod: not yet (without a mesh istiod does not run, and the gateway would be meshbench's hand-rendered one); use --control-plane lab")}
		}
		return nil
	case topology.ModeSidecar, topology.ModeAmbient, topology.ModeWaypoint:
	default:
		errs = append(errs, fmt.Errorf("mesh %s with control plane istiod: istiod configures the lab's sidecars, ztunnels and waypoint only so far (mesh none, sidecar, ambient or waypoint); use --control-plane lab", o.Mode))
	}
	return errs
}

// istiodNet is a lab's sidecars or ztunnels configured by istiod
// (Substrate ControlPlane istiod): the API server, istiod and per
// sidecar pod pilot-agent and its Envoy (mode sidecar), or the nodes'
// ztunnels (mode ambient: the lab runs them), all stopped by the lab's
// Close.
type istiodNet struct {
	api *labapi.Server
	// apiUse is how the lab got api (its own, or the plan's shared one).
	apiUse apiUse
	d      *Istiod
	// ambient: istiod configures the nodes' ztunnels, not sidecars.
	ambient bool
	// envoys are each sidecar's Envoy (pilot-agent's child) by pod.
	envoys map[string]int
	// names and components are the topology's for each sidecar pod's
	// proxy (so results line up with the hand-rendered sidecars').
	names, components map[string]string
	stamp             string
	// gateway: istiod configures the lab's ingress gateway too (its
	// pod gatewayPod; mode sidecar).
	gateway bool
	// base is each sidecar's counters at the cell's start; wpBase the
	// waypoint's completed requests (ambient); gwBase the gateway's
	// completed requests and gwTLS its TLS handshakes.
	base                  map[string]podCounters
	wpBase, gwBase, gwTLS float64
	// wpTCPBase is the waypoint's TCP proxies' counters at the cell's
	// start (protocol tcp).
	wpTCPBase waypointTCPCounters
	// xdsBase are each pilot-agent's istiod connection counters at the
	// cell's start (agentConns), by pod.
	xdsBase map[string]agentConns
}

// upIstiod starts the lab's API server and istiod, and the sidecars
// from it, with the cell's PeerAuthentication and AuthorizationPolicies
// as on a cluster (policy.MeshObjects, policy.PolicyObjects).
func upIstiod(ctx context.Context, l *Lab, t *topology.Topology, s *Substrate, dir string) (*istiodNet, error) {
	use, err := s.labAPI(ctx, l, dir)
	if err != nil {
		return nil, err
	}
	api := use.srv
	opts := IstiodOptions{Build: s.Istio, Envoy: s.Envoy, API: api, Objects: cellObjects(t), Concurrency: t.Options.ProxyThreads, Protocol: t.Options.Protocol}
	for _, svc := range t.Services {
		if svc.Protocol == topology.AppGRPC {
			opts.GRPC = append(opts.GRPC, svc.Name)
		}
	}
	if gw := l.Pod(gatewayPod); gw != nil && t.ProxyByRole(topology.RoleGateway) != nil {
		// The load trusts the lab's PKI in dir/pki, as it does the
		// hand-rendered gateway's.
		cert, err := gatewayPKI(filepath.Join(dir, "pki"), gw.IP)
		if err != nil {
			return nil, err
		}
		opts.Gateway = &IstiodGateway{To: ServiceSpec{Name: t.Service.Name, Namespace: t.Service.Namespace, Port: t.Service.Port}, Cert: cert}
	}
	d, err := l.StartIstiod(ctx, opts)
	if err != nil {
		return nil, err
	}
	in := &istiodNet{api: api, apiUse: use, d: d, ambient: l.Opts.ZtunnelsFromXDS, gateway: opts.Gateway != nil, envoys: map[string]int{}, names: map[string]string{}, components: map[string]string{}, stamp: s.Istio.Stamp}
	for pod, a := range d.Agents {
		pid, err := childPID(a.PID, "envoy")
		if err != nil {
			return nil, fmt.Errorf("the Envoy of %s's pilot-agent: %w", pod, err)
		}
		in.envoys[pod] = pid
		if p := t.Sidecar(pod); p != nil {
			in.names[pod], in.components[pod] = p.Name, p.Component
		} else if gw := t.ProxyByRole(topology.RoleGateway); gw != nil && isIngress(l.Pod(pod)) {
			in.names[pod], in.components[pod] = gw.Name, gw.Component
		} else if wp := t.ProxyByRole(topology.RoleWaypoint); wp != nil && l.Pod(pod).Spec.Waypoint {
			in.names[pod], in.components[pod] = wp.Name, wp.Component
		} else {
			in.names[pod], in.components[pod] = pod+"-sidecar", pod+" sidecar"
		}
	}
	if _, err := d.WaitACKed(ctx, 60*time.Second); err != nil {
		return nil, err
	}
	return in, nil
}

// cellObjects are the cell's Istio objects as a cluster cell gets them:
// the PeerAuthentication and the ALLOW rules as AuthorizationPolicies.
func cellObjects(t *topology.Topology) func() ([]runtime.Object, error) {
	return func() ([]runtime.Object, error) {
		m, ok := mesh.Get(string(t.Options.Mode))
		if !ok {
			return nil, fmt.Errorf("no mesh descriptor for mode %s", t.Options.Mode)
		}
		c := policy.Cell{Mesh: m, Options: t.Options, AppNamespace: "default", LoadNamespace: "default",
			AppPort: topology.PortApp, LoadServiceAccount: topology.IdentityClient.ServiceAccount,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "meshbench"}}
		objs := policy.MeshObjects(c)
		pols, err := policy.PolicyObjects(c)
		return append(objs, pols...), err
	}
}

// childPID is the PID of ppid's child named comm (waiting up to 10 s).
func childPID(ppid int, comm string) (int, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		ents, err := os.ReadDir("/proc")
		if err != nil {
			return 0, err
		}
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
			open, shut := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
			if err != nil || open < 0 || shut < open {
				continue
			}
			// After "(comm)": the state, then the parent's PID.
			f := strings.Fields(string(b[shut+1:]))
			if len(f) > 1 && f[1] == strconv.Itoa(ppid) && string(b[open+1:shut]) == comm {
				return pid, nil
			}
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("no child %q of process %d", comm, ppid)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (in *istiodNet) pods() []string { return slices.Sorted(maps.Keys(in.envoys)) }

// targets: each sidecar's Envoy and pilot-agent as the sidecar (the
// istio-proxy container holds both on a cluster), istiod as the control
// plane, the API server as overhead.
func (in *istiodNet) targets() []sample.Target {
	var out []sample.Target
	for _, pod := range in.pods() {
		cat := sample.CategoryDataPlane
		if in.gateway && pod == gatewayPod {
			cat = sample.CategoryGateway // as the hand-rendered gateway
		}
		out = append(out,
			sample.Target{PID: in.envoys[pod], Name: in.names[pod], Component: in.components[pod], Category: cat},
			sample.Target{PID: in.d.agent(pod).PID, Name: in.names[pod] + local.AgentSuffix, Component: in.components[pod], Category: cat})
	}
	out = append(out, sample.Target{PID: in.d.proc().PID, Name: IstiodName, Component: IstiodComponent, Category: sample.CategoryControlPlane})
	etcd, api := in.api.PIDs()
	out = append(out,
		sample.Target{PID: api, Name: "lab kube-apiserver", Component: LabAPIComponent, Category: sample.CategoryOverhead},
		sample.Target{PID: etcd, Name: "lab etcd", Component: LabAPIComponent, Category: sample.CategoryOverhead})
	return out
}

// died says which of istiod's processes exited, except those a fault is
// restarting (restarting: "istiod", "agent/POD").
func (in *istiodNet) died(restarting map[string]bool) error {
	if p := in.d.proc(); p.Exited() && !restarting[restartIstiod] {
		return fmt.Errorf("istiod died (log %s)", p.LogFile)
	}
	for _, pod := range in.pods() {
		if a := in.d.agent(pod); a.Exited() && !restarting[restartAgent+pod] {
			return fmt.Errorf("pilot-agent of %s died (log %s)", pod, a.LogFile)
		}
	}
	return in.api.Died()
}

// manifest records which control plane configured the sidecars, and
// what the set-up cost.
func (in *istiodNet) manifest() map[string]any {
	etcdRSS, apiRSS, _ := in.api.Memory()
	what, ready := "sidecars: pilot-agent + upstream Envoy, xDS and certificates from istiod against the lab's API server", "sidecars_ready_s"
	if in.gateway {
		what = "sidecars and the gateway: pilot-agent + upstream Envoy, xDS and certificates from istiod against the lab's API server; the gateway as Istio's default profile runs it (pilot-agent proxy router, istio-ingressgateway), its listener and routes from an Istio Gateway and VirtualService, its serving certificate from a Secret over istiod's SDS"
	}
	if in.ambient {
		what, ready = "ztunnels: workloads, services and authorization from istiod's WDS (no local config file), certificates from istiod's CA, against the lab's API server; pods handed to ztunnel by meshbench's ZDS agent (istio-cni's part)", "ztunnels_ready_s"
		if l := in.d.lab; l.waypoint() != nil {
			what += "; the waypoint: a Gateway of class istio-waypoint, pilot-agent proxy waypoint + upstream Envoy, xDS and certificate from istiod"
		}
		if in.gateway {
			// "ztunnels and the gateway: …", as run's header reads it.
			what = "ztunnels and the gateway" + strings.TrimPrefix(what, "ztunnels") + "; " + ambientGatewayWhat
		}
	}
	return map[string]any{"control_plane": map[string]any{
		"name": ControlPlaneIstiod, "istio": in.stamp, "what": what,
		"api_server_ready_s": in.api.StartTime.Seconds(), "istiod_ready_s": in.d.StartTime.Seconds(), ready: in.d.SidecarsTime.Seconds(),
		"objects_s": in.d.ObjectsTime.Seconds(), "api_server_rss_bytes": etcdRSS + apiRSS, "api_server": in.apiUse.record(),
	}}
}

// podCounters are the counters of a sidecar the cell's verdict reads:
// the TLS handshakes its inbound listener accepted (Envoy's own counter
// on Istio's virtualInbound listener, 0.0.0.0:15006), the requests its
// inbound HTTP connection managers completed, the connections its
// inbound TCP proxies took (a port Istio keeps at L4) and the requests
// its outbound HTTP connection managers completed (the app's calls), and
// the connections the inbound listener accepted, TLS or not (cx).
type podCounters struct{ tls, http, tcp, out, cx float64 }

// since is c since base; a counter that went down (its Envoy restarted by
// a fault) counts from 0.
func (c podCounters) since(base podCounters) podCounters {
	d := func(v, b float64) float64 {
		if v < b {
			return v
		}
		return v - b
	}
	return podCounters{tls: d(c.tls, base.tls), http: d(c.http, base.http), tcp: d(c.tcp, base.tcp), out: d(c.out, base.out), cx: d(c.cx, base.cx)}
}

// add is c plus o.
func (c podCounters) add(o podCounters) podCounters {
	return podCounters{tls: c.tls + o.tls, http: c.http + o.http, tcp: c.tcp + o.tcp, out: c.out + o.out, cx: c.cx + o.cx}
}

// counters are each sidecar's podCounters.
func (in *istiodNet) counters(ctx context.Context, l *Lab) (map[string]podCounters, error) {
	out := map[string]podCounters{}
	var errs []error
	for _, pod := range in.pods() {
		p := l.Pod(pod)
		var c podCounters
		var e1, e2, e3, e4, e5 error
		c.tls, e1 = envoyCounter(ctx, p, inboundHandshakes)
		c.cx, e5 = envoyCounter(ctx, p, inboundConnections)
		c.http, e2 = envoySum(ctx, p, `^http\.inbound_.*\.`+requestsCompleted+`$`)
		c.tcp, e3 = envoySum(ctx, p, `^`+regexp.QuoteMeta(inboundTCP)+`.*\.downstream_cx_total$`)
		c.out, e4 = envoySum(ctx, p, `^http\.outbound_.*\.`+requestsCompleted+`$`)
		if err := errors.Join(e1, e2, e3, e4, e5); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", pod, err))
			continue
		}
		out[pod] = c
	}
	return out, errors.Join(errs...)
}

// waypointTCPCounters are the connections the waypoint's TCP proxies
// (waypointTCP) took and the bytes they carried both ways.
type waypointTCPCounters struct{ conns, bytes float64 }

// since is c since base; counters that went down (its Envoy restarted
// by a fault) count from 0.
func (c waypointTCPCounters) since(base waypointTCPCounters) waypointTCPCounters {
	if c.conns < base.conns || c.bytes < base.bytes {
		return c
	}
	return waypointTCPCounters{conns: c.conns - base.conns, bytes: c.bytes - base.bytes}
}

// waypointTCPStats reads the waypoint's TCP proxy counters.
func waypointTCPStats(ctx context.Context, wp *Pod) (waypointTCPCounters, error) {
	var c waypointTCPCounters
	prefix := `^` + regexp.QuoteMeta(waypointTCP) + `.*\.`
	conns, err := envoySum(ctx, wp, prefix+`downstream_cx_total$`)
	if err != nil {
		return c, fmt.Errorf("the waypoint: %w", err)
	}
	bytes, err := envoySum(ctx, wp, prefix+`downstream_cx_(rx|tx)_bytes_total$`)
	if err != nil {
		return c, fmt.Errorf("the waypoint: %w", err)
	}
	return waypointTCPCounters{conns: conns, bytes: bytes}, nil
}

// envoyRequests are the requests the HTTP connection managers of the
// Envoy in pod p completed (every http.*.downstream_rq_completed) less
// its admin's: meshbench's own reads of the admin must not count as
// traffic the proxy served.
func envoyRequests(ctx context.Context, p *Pod) (float64, error) {
	all, err := envoySum(ctx, p, `^http\..*\.`+requestsCompleted+`$`)
	admin, aerr := envoySum(ctx, p, `^http\.admin\.`+requestsCompleted+`$`)
	return all - admin, errors.Join(err, aerr)
}

// envoySum is the sum of the stats of the Envoy in pod p whose names
// match the regular expression filter.
func envoySum(ctx context.Context, p *Pod, filter string) (float64, error) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(cctx, http.MethodGet, "http://127.0.0.1:15000/stats?filter="+url.QueryEscape(filter), nil)
	resp, err := p.HTTPClient(false).Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	var total float64
	for _, line := range strings.Split(string(b), "\n") {
		if _, v, ok := strings.Cut(line, ": "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0, fmt.Errorf("%q: %w", line, err)
			}
			total += f
		}
	}
	return total, nil
}

// envoyCounter reads one counter from the Envoy admin in pod p (Istio's
// admin: 127.0.0.1:15000 in the pod).
func envoyCounter(ctx context.Context, p *Pod, name string) (float64, error) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(cctx, http.MethodGet, "http://127.0.0.1:15000/stats?filter=^"+strings.ReplaceAll(name, ".", `\.`)+"$", nil)
	resp, err := p.HTTPClient(false).Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok && k == name {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, nil // not yet counted
}

func (in *istiodNet) startInterval(ctx context.Context, l *Lab) error {
	var err error
	if in.xdsBase, err = in.agentConns(ctx, l); err != nil {
		return err
	}
	if in.gateway {
		if in.gwBase, in.gwTLS, err = in.gatewayCounters(ctx, l); err != nil {
			return err
		}
	}
	if in.ambient {
		if wp := l.waypoint(); wp != nil {
			if in.wpBase, err = envoyRequests(ctx, wp); err == nil && in.d.opts.Protocol == topology.ProtocolTCP {
				in.wpTCPBase, err = waypointTCPStats(ctx, wp)
			}
		}
		return err
	}
	in.base, err = in.counters(ctx, l)
	return err
}

// gatewayCounters are the requests the gateway's Envoy completed and the
// TLS handshakes its HTTPS listener accepted.
func (in *istiodNet) gatewayCounters(ctx context.Context, l *Lab) (requests, handshakes float64, err error) {
	gw := l.Pod(gatewayPod)
	// Its HTTPS server's connection manager (outbound_0.0.0.0_8443, as
	// istiod names it), not the admin's or the agent's.
	if requests, err = envoySum(ctx, gw, `^http\.outbound_.*\.`+requestsCompleted+`$`); err != nil {
		return 0, 0, fmt.Errorf("the gateway: %w", err)
	}
	handshakes, err = envoyCounter(ctx, gw, gatewayHandshakes)
	return requests, handshakes, err
}

// check is the cell's verdict from istiod's side: its ACK table (kept in
// rawDir), every sidecar ACKed; and the server sidecars' inbound TLS
// handshakes over the cell (STRICT mTLS: plaintext is refused).
func (in *istiodNet) check(ctx context.Context, l *Lab, t *topology.Topology, rawDir string) (local.MeshCheck, error) {
	mc := local.MeshCheck{Derived: map[string]float64{}}
	// At once in a cell with every proxy connected; after a fault killed
	// istiod or a proxy, once they have reconnected and ACKed again (or
	// the table as it is then, which the checks below judge).
	ps, err := in.d.WaitACKed(ctx, 30*time.Second)
	if ps == nil && err != nil {
		return mc, err
	}
	if err := os.MkdirAll(rawDir, 0o755); err != nil {
		return mc, err
	}
	var tb bytes.Buffer
	_ = report.SyncTable(&tb, istio.SyncRows(ps))
	if err := os.WriteFile(filepath.Join(rawDir, "istiod-acks.txt"), tb.Bytes(), 0o644); err != nil {
		return mc, err
	}
	who, whose := "sidecars", "sidecars'"
	if in.gateway {
		who, whose = "sidecars and gateway", "sidecars' and the gateway's"
	}
	if in.ambient {
		who, whose = "ztunnels", "ztunnels'"
		switch {
		case l.waypoint() != nil && in.gateway:
			whose = "ztunnels', the waypoint's and the gateway's"
		case l.waypoint() != nil:
			whose = "ztunnels' and the waypoint's"
		case in.gateway:
			whose = "ztunnels' and the gateway's"
		}
	}
	mc.Lines = append(mc.Lines, "istiod's ACK table (the "+whose+" config came from istiod):")
	for _, line := range strings.Split(strings.TrimRight(tb.String(), "\n"), "\n") {
		mc.Lines = append(mc.Lines, "  "+line)
	}
	if bad := istio.NotACKed(ps); len(bad) > 0 {
		mc.Invalid = append(mc.Invalid, "istiod: not ACKed: "+strings.Join(bad, "; "))
	}
	if want := len(in.envoys) + in.d.Ztunnels; len(ps) < want {
		mc.Invalid = append(mc.Invalid, fmt.Sprintf("istiod lists %d proxies, the lab runs %d %s", len(ps), want, who))
	}
	mc.Derived["istiod_proxies_acked"] = float64(len(ps) - len(istio.NotACKed(ps)))
	if err := in.checkProtocol(ctx, t, &mc); err != nil {
		return mc, err
	}
	if len(in.envoys) > 0 {
		conns, err := in.agentConns(ctx, l)
		if err != nil {
			return mc, err
		}
		var ended, failed float64
		for pod, c := range conns {
			d := c.sub(in.xdsBase[pod])
			ended += d.ended
			failed += d.failed
		}
		mc.Derived["istiod_agent_disconnects"] = ended
		mc.Derived["istiod_agent_connect_failures"] = failed
		mc.Lines = append(mc.Lines, fmt.Sprintf("pilot-agents' connections to istiod over the cell (their own istiod_connection_terminations and _failures): %.0f ended, %.0f attempts failed.", ended, failed))
	}
	if in.gateway {
		req, tls, err := in.gatewayCounters(ctx, l)
		if err != nil {
			return mc, err
		}
		req, tls = req-in.gwBase, tls-in.gwTLS
		mc.Derived["istiod_gateway_requests"], mc.Derived["istiod_gateway_tls_handshakes"] = req, tls
		mc.Lines = append(mc.Lines, gatewayLine(req, tls))
		if req <= 0 {
			mc.Invalid = append(mc.Invalid, "the gateway (config from istiod) completed no request over the cell")
		}
		if tls <= 0 {
			mc.Invalid = append(mc.Invalid, "the gateway (config from istiod) accepted no TLS handshake over the cell")
		}
	}
	if in.ambient {
		if wp := l.waypoint(); wp != nil {
			end, err := envoyRequests(ctx, wp)
			if err != nil {
				return mc, err
			}
			n := end - in.wpBase
			if n < 0 {
				// Its Envoy was restarted (a fault): counted from 0.
				n = end
			}
			mc.Derived["istiod_waypoint_requests"] = n
			if in.d.opts.Protocol == topology.ProtocolTCP {
				// At L4 the waypoint proxies connections (Envoy's
				// tcp_proxy), not requests.
				c, err := waypointTCPStats(ctx, wp)
				if err != nil {
					return mc, err
				}
				c = c.since(in.wpTCPBase)
				mc.Derived["istiod_waypoint_tcp_connections"], mc.Derived["istiod_waypoint_tcp_bytes"] = c.conns, c.bytes
				mc.Lines = append(mc.Lines, fmt.Sprintf("waypoint: its Envoy (pilot-agent proxy waypoint, config from istiod) proxied %.0f connections at L4 (TCP proxy, %.0f bytes both ways) over the cell.", c.conns, c.bytes))
				if c.conns <= 0 || c.bytes <= 0 {
					mc.Invalid = append(mc.Invalid, "the waypoint proxied no TCP connection over the cell")
				}
			} else {
				mc.Lines = append(mc.Lines, fmt.Sprintf("waypoint: its Envoy (pilot-agent proxy waypoint, config from istiod) completed %.0f requests over the cell.", n))
				if n <= 0 {
					mc.Invalid = append(mc.Invalid, "the waypoint completed no request over the cell")
				}
			}
		}
		return mc, in.checkZtunnels(ctx, l, rawDir, &mc)
	}
	end, err := in.counters(ctx, l)
	if err != nil {
		return mc, err
	}
	var d, life podCounters
	for _, p := range t.ServicePods(t.Service.Name) {
		d = d.add(end[p.Name].since(in.base[p.Name]))
		life = life.add(end[p.Name])
	}
	serverVerdict(t.Options, d, life, &mc)
	if t.Options.App == topology.AppFaces {
		facesVerdict(t, in.base, end, &mc)
	}
	return mc, nil
}

// facesVerdict says what the faces app's calls did over the cell: the
// requests the entry service's sidecars sent out (the app's calls, which
// its pod's capture gave its own sidecar), and per backend the requests
// (connections with protocol tcp) its sidecars took and their TLS
// handshakes. A caller that sent none or a backend that took none makes
// the cell invalid.
func facesVerdict(t *topology.Topology, base, end map[string]podCounters, mc *local.MeshCheck) {
	sum := func(svc string) podCounters {
		var d podCounters
		for _, p := range t.ServicePods(svc) {
			d = d.add(end[p.Name].since(base[p.Name]))
		}
		return d
	}
	line := fmt.Sprintf("faces: %s's sidecars sent %.0f requests out", t.Service.Name, sum(t.Service.Name).out)
	mc.Derived["istiod_faces_calls"] = sum(t.Service.Name).out
	if sum(t.Service.Name).out <= 0 {
		mc.Invalid = append(mc.Invalid, "faces: "+t.Service.Name+"'s sidecars sent no request out over the cell")
	}
	for _, b := range t.Svc(t.Service.Name).Backends {
		d := sum(b)
		took, what := d.http, "requests at L7"
		if t.Options.Protocol == topology.ProtocolTCP {
			took, what = d.tcp, "connections at L4"
		}
		line += fmt.Sprintf("; %s's sidecars took %.0f %s (%.0f TLS handshakes)", b, took, what, d.tls)
		if took <= 0 {
			mc.Invalid = append(mc.Invalid, fmt.Sprintf("faces: %s's sidecars took no %s over the cell", b, what))
		}
	}
	mc.Lines = append(mc.Lines, line+".")
}

// serverVerdict says what the server sidecars' counters over the cell
// (d) and since their Envoys started (life) show of the cell's mTLS and
// protocol, and makes the cell invalid where they contradict them: with
// mTLS on, TLS handshakes (STRICT refuses plaintext) — over the cell, or,
// when the cell's requests all rode connections opened before it (in its
// warm-up or an earlier cell on the same lab: the client sidecar pools
// them), a handshake for every connection the inbound listener ever
// accepted; with it off none (PeerAuthentication DISABLE: auto-mTLS sends
// plaintext); over HTTP requests at L7, over TCP none, connections at L4
// instead.
func serverVerdict(o topology.Options, d, life podCounters, mc *local.MeshCheck) {
	mc.Derived["istiod_server_tls_handshakes"] = d.tls
	mc.Derived["istiod_server_http_requests"] = d.http
	mc.Derived["istiod_server_tcp_connections"] = d.tcp
	if o.MTLS {
		switch {
		case d.tls > 0:
			mc.Lines = append(mc.Lines, fmt.Sprintf("mTLS: the server sidecars accepted %.0f TLS handshakes over the cell (STRICT PeerAuthentication: istiod's config refuses plaintext).", d.tls))
		case life.cx > 0 && life.tls >= life.cx:
			mc.Lines = append(mc.Lines, fmt.Sprintf("mTLS: the server sidecars accepted no new connection over the cell (its requests rode pooled connections opened before it); every one of the %.0f connections their inbound listener accepted since it started was a TLS handshake (STRICT PeerAuthentication: istiod's config refuses plaintext).", life.cx))
		case life.cx == 0:
			mc.Invalid = append(mc.Invalid, "the server sidecars accepted no TLS handshake over the cell, and no connection since they started")
			mc.Lines = append(mc.Lines, "mTLS: the server sidecars accepted no connection since they started.")
		default:
			mc.Invalid = append(mc.Invalid, fmt.Sprintf("the server sidecars accepted no TLS handshake over the cell, and %.0f of the %.0f connections their inbound listener accepted since it started were not TLS handshakes", life.cx-life.tls, life.cx))
			mc.Lines = append(mc.Lines, fmt.Sprintf("mTLS: the server sidecars accepted no TLS handshake over the cell; %.0f handshakes for %.0f connections since they started.", life.tls, life.cx))
		}
	} else {
		if d.tls > 0 {
			mc.Invalid = append(mc.Invalid, fmt.Sprintf("mtls false: the server sidecars accepted %.0f TLS handshakes over the cell, want none", d.tls))
		}
		mc.Lines = append(mc.Lines, fmt.Sprintf("mTLS off: the server sidecars accepted %.0f TLS handshakes over the cell (PeerAuthentication DISABLE: istiod's config sends and takes plaintext).", d.tls))
	}
	if o.Protocol == topology.ProtocolTCP {
		if d.http > 0 || d.tcp <= 0 {
			mc.Invalid = append(mc.Invalid, fmt.Sprintf("protocol tcp: the server sidecars completed %.0f requests at L7 and took %.0f TCP connections, want none at L7", d.http, d.tcp))
		}
		mc.Lines = append(mc.Lines, fmt.Sprintf("protocol tcp: the server sidecars took %.0f connections at L4 (TCP proxy) and completed %.0f requests at L7.", d.tcp, d.http))
		return
	}
	if d.http <= 0 {
		mc.Invalid = append(mc.Invalid, "the server sidecars completed no request over the cell")
	}
	mc.Lines = append(mc.Lines, fmt.Sprintf("protocol http: the server sidecars completed %.0f requests at L7.", d.http))
}

// checkZtunnels keeps each ztunnel's config dump in rawDir
// (ztunnel-NODE.config_dump.json) and says what it holds: the workloads
// istiod sent (their UIDs name istiod's cluster, not the lab's local
// config) and certificates whose root is istiod's; a ztunnel holding
// neither makes the cell invalid. mTLS between the ztunnels is in their
// counters (the cell's node-proxy stats, connection_security_policy).
func (in *istiodNet) checkZtunnels(ctx context.Context, l *Lab, rawDir string, mc *local.MeshCheck) error {
	root, err := in.d.rootCert(ctx, "istio-system")
	if err != nil {
		return err
	}
	for _, n := range l.Nodes {
		if n.Ztunnel == nil {
			continue
		}
		raw, err := n.Ztunnel.ConfigDump(ctx)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(rawDir, "ztunnel-"+n.Name+".config_dump.json"), raw, 0o644); err != nil {
			return err
		}
		sum, err := ztunnel.SummarizeDump(raw, istiodClusterID, root)
		if err != nil {
			return err
		}
		mc.Lines = append(mc.Lines, fmt.Sprintf("ztunnel-%s's config dump: %s", n.Name, sum))
		if sum.FromCluster == 0 {
			mc.Invalid = append(mc.Invalid, fmt.Sprintf("ztunnel-%s holds no workload from istiod", n.Name))
		}
		for id, ok := range sum.Certificates {
			if !ok {
				mc.Invalid = append(mc.Invalid, fmt.Sprintf("ztunnel-%s's certificate for %s is not from istiod's CA", n.Name, id))
			}
		}
	}
	return nil
}

// agentConns are a pilot-agent's own counters of its connection to
// istiod (pilot-agent's istiod_connection_terminations, every type, and
// istiod_connection_failures): its Envoy's xDS goes through it, so these
// count what istiod's absence did to the proxy's config stream.
type agentConns struct{ ended, failed float64 }

// sub is c since base; a counter that went down (pilot-agent restarted)
// counts from 0.
func (c agentConns) sub(base agentConns) agentConns {
	d := func(v, b float64) float64 {
		if v < b {
			return v
		}
		return v - b
	}
	return agentConns{ended: d(c.ended, base.ended), failed: d(c.failed, base.failed)}
}

// agentConns reads each pilot-agent's agentConns from its merged
// Prometheus endpoint (:15020/stats/prometheus in its pod), by pod.
func (in *istiodNet) agentConns(ctx context.Context, l *Lab) (map[string]agentConns, error) {
	out := map[string]agentConns{}
	var errs []error
	for _, pod := range in.pods() {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		text, err := probe.Get(cctx, l.Pod(pod).HTTPClient(false), "http://127.0.0.1:15020/stats/prometheus", 16<<20)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("pilot-agent of %s: %w", pod, err))
			continue
		}
		var c agentConns
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "#") {
				continue
			}
			i := strings.LastIndexByte(line, ' ')
			if i < 0 {
				continue
			}
			v, err := strconv.ParseFloat(line[i+1:], 64)
			if err != nil {
				continue
			}
			// istio_agent_…, with or without _total, whatever the
			// exporter's version names it.
			switch name := line[:strings.IndexAny(line+"{", "{ ")]; {
			case strings.Contains(name, "istiod_connection_terminations"):
				c.ended += v
			case strings.Contains(name, "istiod_connection_failures"):
				c.failed += v
			}
		}
		out[pod] = c
	}
	return out, errors.Join(errs...)
}
