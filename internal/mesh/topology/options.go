// Package topology describes meshbench's mesh modes as data, with no I/O: which
// proxies a topology needs, on which loopback "node" and address each pod
// and proxy lives, which identity each certificate carries, which ALLOW
// rules apply, and which URLs the load generator must hit.
//
// The address plan follows the local lab's design (LAB.md §1): node N owns
// 127.0.N.0/24, its node proxy sits at 127.0.N.1 and its pods at 127.0.N.10,
// .11, …; every process keeps Istio's port numbers (admin 15000, outbound
// 15001, inbound 15006, HBONE 15008, app 8080, gateway 8443). Plan turns
// Options into a Topology; the renderer (internal/mesh/envoy/bootstrap) and the
// lab runner read only the Topology.
package topology

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/meshbench/meshbench/internal/mesh"
)

// Mode is how the mesh carries traffic from the client to the app.
type Mode string

// The mesh modes meshbench runs locally.
const (
	// ModeNone sends the load straight to the app replicas: the baseline.
	ModeNone Mode = "none"
	// ModeSidecar puts an Envoy sidecar beside every pod (Istio "legacy"):
	// client sidecar ═mTLS═▶ server sidecar ─▶ app.
	ModeSidecar Mode = "sidecar"
	// ModeAmbient runs one L4 node proxy per node (Envoy as ztunnel):
	// client ─▶ node proxy ═HBONE═▶ destination node proxy ─▶ app.
	ModeAmbient Mode = "ambient"
	// ModeWaypoint is ambient plus an L7 waypoint for the server service:
	// client ─▶ node proxy ═HBONE═▶ waypoint ═HBONE═▶ node proxy ─▶ app.
	ModeWaypoint Mode = "waypoint"
	// ModeLinkerd puts Linkerd's real proxy (linkerd2-proxy) beside every
	// pod, with the lab's own stand-in for Linkerd's control plane: client
	// ─▶ client proxy ═mTLS═▶ server proxy ─▶ app. It runs only on the
	// netns substrate (internal/platform/netlab): the proxy needs its
	// pod's network namespace and proxy-init's capture. The topology has
	// no Envoy: the load and the apps call the pods as in mode none and
	// the capture hands the connections to the proxies.
	ModeLinkerd Mode = "linkerd"
)

// Modes lists the Envoy modes, in the order help texts show them: what
// every substrate runs, the mesh axis of a plan that names none. Mode
// ModeLinkerd is local too, on the netns substrate only (LocalModes).
var Modes = []Mode{ModeNone, ModeSidecar, ModeAmbient, ModeWaypoint}

// LocalModes lists every mode the local lab runs, in display order.
var LocalModes = []Mode{ModeNone, ModeSidecar, ModeAmbient, ModeWaypoint, ModeLinkerd}

// Direct reports whether the topology of mode m has no Envoy between the
// client and the app (none; linkerd, whose proxies the pods' capture
// reaches): the load and the apps call the pods' addresses.
func (m Mode) Direct() bool { return m == ModeNone || m == ModeLinkerd }

// App is the application the mesh carries.
type App string

// The applications a topology can carry.
const (
	// AppStatic is the built-in static HTTP server (615-byte body), one
	// replica per server pod: one service, "server".
	AppStatic App = "static"
	// AppFaces is a Faces-like app of three services, each with Replicas
	// pods: "face" (the entry the load calls) calls "smiley" over HTTP and
	// "color" over gRPC for every request, each hop through the mesh.
	AppFaces App = "faces"
)

// Apps lists every App, in the order help texts show them.
var Apps = []App{AppStatic, AppFaces}

// Protocol is how the proxies treat the application traffic.
type Protocol string

// The protocols proxies can speak to the app.
const (
	// ProtocolHTTP parses HTTP in every L7 proxy (sidecars, waypoint,
	// gateway): HTTP connection manager, routes, per-request load balancing.
	ProtocolHTTP Protocol = "http"
	// ProtocolTCP keeps every proxy at L4: tcp_proxy instead of the HTTP
	// connection manager, per-connection load balancing.
	ProtocolTCP Protocol = "tcp"
)

// Placement is where the client pod runs relative to the app's pods.
type Placement string

// The placements.
const (
	// PlacementCrossNode puts the client on a node of its own, the app on
	// the app nodes: every request crosses nodes (the default, "").
	PlacementCrossNode Placement = "cross-node"
	// PlacementSameNode puts the client on the first app node, beside the
	// app's first pod: a node proxy carries both ends of a request.
	PlacementSameNode Placement = "same-node"
)

// Placements lists the placements as plans and flags write them.
var Placements = []Placement{PlacementCrossNode, PlacementSameNode}

// Limits of Options.
const (
	// MaxAppNodes is the largest Options.Nodes: node numbers stay below 255
	// with the client node, a waypoint node and a gateway node beside them.
	MaxAppNodes = 250
	// MaxPodsPerNode is how many pod addresses a node has: 127.0.N.10 to
	// 127.0.N.254.
	MaxPodsPerNode = 245
	// MaxPolicies is the largest Options.Policies.
	MaxPolicies = 1000
	// MaxProxyThreads is the largest Options.ProxyThreads.
	MaxProxyThreads = 256
)

// Options chooses a topology. DefaultOptions gives a valid starting point;
// the zero value is not valid (Replicas and Nodes must be at least 1).
type Options struct {
	// Mode is the mesh mode.
	Mode Mode
	// App is the application; "" means AppStatic.
	App App
	// Replicas is the number of pods of every service of the app (faces:
	// that many face, smiley and color pods each); all app pods must fit
	// in MaxPodsPerNode × Nodes. Each service's pods are spread round-robin
	// over the app nodes.
	Replicas int
	// Nodes is the number of app nodes, 1 to MaxAppNodes. The client, the
	// waypoint and the gateway each get a node of their own besides.
	Nodes int
	// Policies is the number of L4 ALLOW rules, 0 to MaxPolicies: the first
	// four are LAB.md §(e)'s (see Rules), more add rules of the same shape
	// for other identities. 0 means no authorization filter at all. Needs a
	// mesh mode and mTLS.
	Policies int
	// Gateway sends the load through a TLS-terminating ingress gateway on
	// its own node instead of from a client pod inside the mesh.
	Gateway bool
	// Protocol is how proxies treat the app traffic; "" means ProtocolHTTP.
	Protocol Protocol
	// MTLS secures sidecar-to-sidecar traffic. false renders the sidecar
	// pair in plaintext, for comparison; ambient and waypoint modes always
	// use mTLS (HBONE). Mode none ignores it.
	MTLS bool
	// Attacker adds the attacker pod (identity default/attacker) on the
	// client node with its own outbound path to the server, so a run can
	// prove that the policies deny it. Needs a mesh mode.
	Attacker bool
	// ProxyThreads is every proxy's worker threads: Envoy's --concurrency
	// (sidecars, waypoint, gateway, and Envoy standing in for ztunnel),
	// ztunnel's ZTUNNEL_WORKER_THREADS, linkerd2-proxy's
	// LINKERD2_PROXY_CORES; 0 leaves the lab's defaults (Envoy 1, ztunnel
	// 2, linkerd2-proxy 1). 0 to MaxProxyThreads.
	ProxyThreads int
	// Placement is where the client pod runs: PlacementCrossNode ("" too)
	// or PlacementSameNode (on the first app node, with the app's first
	// pod; not with a gateway).
	Placement Placement
	// LoopbackNet is the second octet of every address of the lab:
	// 127.<LoopbackNet>.<node>.<host>. 0, the default, gives LAB.md's
	// 127.0.N.x; other values let two labs run side by side (tests of
	// different packages, say). Istio's 127.0.0.6 is the same for all.
	LoopbackNet uint8
}

// DefaultOptions returns one static replica on one app node, no mesh,
// HTTP, mTLS on (for when a mesh mode is chosen), no policies, no gateway.
func DefaultOptions() Options {
	return Options{Mode: ModeNone, App: AppStatic, Replicas: 1, Nodes: 1, Protocol: ProtocolHTTP, MTLS: true}
}

// OptionError is one problem found by Options.Validate. Field names the
// option as the CLI spells its flag ("mode", "replicas", …).
type OptionError struct {
	Field string // option name, e.g. "replicas"
	Value string // the rejected value as the user would write it
	Want  string // what is allowed, or why the value cannot work
}

// Error returns one line: "FIELD VALUE: WANT".
func (e *OptionError) Error() string {
	return fmt.Sprintf("%s %s: %s", e.Field, e.Value, e.Want)
}

// Validate reports every problem with o at once (joined with errors.Join,
// each a *OptionError on one line), or nil.
func (o Options) Validate() error {
	var errs []error
	bad := func(field, value, want string) {
		errs = append(errs, &OptionError{Field: field, Value: value, Want: want})
	}
	modeOK := true
	switch o.Mode {
	case ModeNone, ModeSidecar, ModeAmbient, ModeWaypoint, ModeLinkerd:
	default:
		if m, ok := mesh.Get(string(o.Mode)); ok && !m.Local { // a mesh only clusters run
			modeOK = false
			bad("mode", m.Name, m.NoLocal)
			break
		}
		modeOK = false
		bad("mode", strconv.Quote(string(o.Mode)), "allowed: "+joinModes())
	}
	appOK := true
	switch o.App {
	case "", AppStatic, AppFaces:
	default:
		appOK = false
		bad("app", strconv.Quote(string(o.App)), "allowed: static, faces")
	}
	switch o.Protocol {
	case "", ProtocolHTTP, ProtocolTCP:
	default:
		bad("protocol", strconv.Quote(string(o.Protocol)), "allowed: http, tcp")
	}
	nodesOK := o.Nodes >= 1 && o.Nodes <= MaxAppNodes
	if !nodesOK {
		bad("nodes", strconv.Itoa(o.Nodes), fmt.Sprintf("allowed: 1 to %d app nodes", MaxAppNodes))
	}
	switch {
	case o.Replicas < 1:
		bad("replicas", strconv.Itoa(o.Replicas), "allowed: 1 or more")
	case nodesOK && appOK && o.Replicas*o.servicesPerApp() > MaxPodsPerNode*o.Nodes:
		k := o.servicesPerApp()
		bad("replicas", strconv.Itoa(o.Replicas), fmt.Sprintf("allowed: 1 to %d on %d app nodes (%d pod addresses per node, %d service(s) of app %s); add nodes",
			MaxPodsPerNode*o.Nodes/k, o.Nodes, MaxPodsPerNode, k, o.withDefaults().App))
	}
	policiesOK := false
	switch {
	case o.Policies < 0 || o.Policies > MaxPolicies:
		bad("policies", strconv.Itoa(o.Policies), fmt.Sprintf("allowed: 0 to %d ALLOW rules", MaxPolicies))
	case o.Policies > 0 && o.Mode == ModeNone:
		bad("policies", strconv.Itoa(o.Policies), "need a mesh mode (sidecar, ambient or waypoint) to enforce them")
	case o.Policies > 0 && o.Mode == ModeSidecar && !o.MTLS:
		bad("policies", strconv.Itoa(o.Policies), "need mtls: the rules match the peer certificate's identity")
	default:
		policiesOK = true
	}
	if !o.MTLS && (o.Mode == ModeAmbient || o.Mode == ModeWaypoint) {
		bad("mtls", "false", "only sidecar mode has a plaintext variant; HBONE is always mTLS")
	}
	if o.Mode == ModeLinkerd {
		if !o.MTLS {
			bad("mtls", "false", "Linkerd's mTLS between meshed pods is always on")
		}
		if o.Gateway {
			bad("gateway", "true", "mesh linkerd has no ingress gateway in the lab; use a mesh of Istio's for --gateway")
		}
		if o.Attacker {
			bad("attacker", "true", "mesh linkerd has no attacker pod in the lab yet (a foreign identity's refusal is tested in internal/linkerd)")
		}
	}
	if o.ProxyThreads < 0 || o.ProxyThreads > MaxProxyThreads {
		bad("proxy_threads", strconv.Itoa(o.ProxyThreads), fmt.Sprintf("allowed: 1 to %d worker threads per proxy (0: each proxy's default)", MaxProxyThreads))
	}
	switch o.Placement {
	case "", PlacementCrossNode:
	case PlacementSameNode:
		if o.Gateway {
			bad("placement", string(o.Placement), "the load enters through the gateway's own node: placement applies to a client pod in the mesh")
		}
	default:
		bad("placement", strconv.Quote(string(o.Placement)), "allowed: cross-node, same-node")
	}
	if o.Attacker && o.Mode == ModeNone {
		bad("attacker", "true", "needs a mesh mode (sidecar, ambient or waypoint): without one nothing stands between the attacker and the app")
	}
	if modeOK && appOK && policiesOK && o.Policies > 0 {
		if err := o.checkRulesAllowTraffic(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func joinModes() string {
	s := make([]string, len(LocalModes))
	for i, m := range LocalModes {
		s[i] = string(m)
	}
	return strings.Join(s, ", ")
}

// AppPods is how many app pods the options run: Replicas for every
// service of the app.
func (o Options) AppPods() int { return o.Replicas * o.servicesPerApp() }

// servicesPerApp is how many services (each with Replicas pods) the app has.
func (o Options) servicesPerApp() int {
	if o.App == AppFaces {
		return 3
	}
	return 1
}

// withDefaults fills the fields whose zero value means a default.
func (o Options) withDefaults() Options {
	if o.App == "" {
		o.App = AppStatic
	}
	if o.Protocol == "" {
		o.Protocol = ProtocolHTTP
	}
	return o
}

// flow is one hop that the ALLOW rules must let through: a peer identity
// reaching the server on its app port.
type flow struct {
	from Identity
	why  string
}

// requiredFlows lists the peers the server side sees on the benchmark's
// own path; the ALLOW rules must allow each of them.
func (o Options) requiredFlows() []flow {
	var fs []flow
	src := flow{IdentityClient, "the client"}
	if o.Gateway {
		src = flow{IdentityIngress, "the gateway"}
	}
	fs = append(fs, src)
	if o.Mode == ModeWaypoint {
		fs = append(fs, flow{IdentityWaypoint, "the waypoint"})
	}
	if o.App == AppFaces {
		fs = append(fs, flow{IdentityFace, "face's calls to smiley and color"})
	}
	return fs
}

// checkRulesAllowTraffic rejects a rule count whose rules would deny the
// benchmark's own traffic, and says how many rules would work.
func (o Options) checkRulesAllowTraffic() error {
	allowed := func(n int) []flow {
		var denied []flow
		rules := RulesFor(o.withDefaults().App, n)
		for _, f := range o.requiredFlows() {
			ok := false
			for _, r := range rules {
				if r.Allows(f.from, PortApp) {
					ok = true
					break
				}
			}
			if !ok {
				denied = append(denied, f)
			}
		}
		return denied
	}
	denied := allowed(o.Policies)
	if len(denied) == 0 {
		return nil
	}
	least := 0
	for n := 1; n <= len(defaultRules)+1; n++ {
		if len(allowed(n)) == 0 {
			least = n
			break
		}
	}
	dest := "server"
	if o.App == AppFaces {
		dest = "app's services"
	}
	who := make([]string, len(denied))
	for i, f := range denied {
		who[i] = fmt.Sprintf("%s (%s)", f.why, f.from)
	}
	return &OptionError{Field: "policies", Value: strconv.Itoa(o.Policies),
		Want: fmt.Sprintf("no rule allows %s to reach the %s; use 0 or at least %d", strings.Join(who, " or "), dest, least)}
}
