package topology

import (
	"fmt"
	"net/netip"
)

// Istio's port numbers, kept by every process of the lab (LAB.md §1).
const (
	PortApp              = 8080  // the app's port on its pod address
	PortMonitoring       = 9090  // Prometheus; only named by rule allow-monitoring
	PortGateway          = 8443  // the ingress gateway's HTTPS listener
	PortAdmin            = 15000 // every Envoy's admin, on its own address
	PortOutbound         = 15001 // outbound: sidecar, node proxy to the service
	PortOutboundWaypoint = 15002 // node proxy to the service via its waypoint
	PortInbound          = 15006 // sidecar inbound (mTLS from peers)
	PortHBONE            = 15008 // HBONE: node proxy inbound, waypoint
)

// Host numbers inside a node's 127.0.N.0/24.
const (
	// NodeProxyHost is the node proxy's host number: 127.0.N.1. A
	// waypoint, which has a node of its own, sits there too.
	NodeProxyHost = 1
	// FirstPodHost is the first pod's host number: 127.0.N.10.
	FirstPodHost = 10
	// AttackerHost is the attacker pod's host number on the client node,
	// 127.0.1.20 as in LAB.md.
	AttackerHost = 20
	// ClientNode is the client's (the load generator's) node number.
	ClientNode = 1
)

// InboundPassthroughSource is the source address of a sidecar's connections
// to its own app, as in Istio.
var InboundPassthroughSource = netip.AddrFrom4([4]byte{127, 0, 0, 6})

// nodeAddr returns 127.<net>.<node>.<host>.
func nodeAddr(net uint8, node, host int) netip.Addr {
	return netip.AddrFrom4([4]byte{127, net, byte(node), byte(host)})
}

// NodeRole says what a node hosts.
type NodeRole string

// The node roles.
const (
	NodeClient   NodeRole = "client"   // node 1: the client pod (load generator) and the attacker
	NodeApp      NodeRole = "app"      // nodes 2..K+1: server replicas
	NodeWaypoint NodeRole = "waypoint" // the waypoint (waypoint mode)
	NodeGateway  NodeRole = "gateway"  // the ingress gateway
)

// Node is one loopback "node": a /24 of 127.0.0.0/8.
type Node struct {
	Index  int          // N in 127.0.N.0/24, 1..254
	Name   string       // "node<N>"
	Prefix netip.Prefix // 127.0.N.0/24 (127.<LoopbackNet>.N.0/24)
	Role   NodeRole     // what the node hosts
}

// PodRole says what a pod runs.
type PodRole string

// The pod roles.
const (
	PodClient   PodRole = "client"   // the load generator
	PodServer   PodRole = "server"   // an app replica
	PodAttacker PodRole = "attacker" // a mesh workload no policy allows
)

// Pod is one workload with its own address.
type Pod struct {
	Name     string     // "client", "attacker", "server-0", "face-0", "smiley-1", …
	Role     PodRole    // what the pod runs
	Service  string     // the service an app pod belongs to; "" for client pods
	Replica  int        // an app pod's index among its service's pods
	Node     int        // the node's index
	Addr     netip.Addr // 127.0.N.10, .11, … (the attacker: 127.0.1.20)
	AppPort  int        // the port the app listens on; 0 for client pods
	Identity Identity   // the pod's service account
	// Calls are the backend services the pod's app calls and the address
	// it must call each at (its sidecar's or node proxy's outbound
	// listener, or a backend pod directly in mode none).
	Calls []Call
}

// Call is one backend an app pod calls.
type Call struct {
	Service string         // the backend service
	Addr    netip.AddrPort // where the pod's app sends the calls
}

// AppAddr returns Addr:AppPort; only meaningful for server pods.
func (p Pod) AppAddr() netip.AddrPort { return netip.AddrPortFrom(p.Addr, uint16(p.AppPort)) }

// ProxyRole says what kind of proxy a Proxy is.
type ProxyRole string

// The proxy roles.
const (
	RoleSidecar   ProxyRole = "sidecar"
	RoleNodeProxy ProxyRole = "node-proxy"
	RoleWaypoint  ProxyRole = "waypoint"
	RoleGateway   ProxyRole = "gateway"
)

// Category groups components for resource accounting.
type Category string

// The component categories.
const (
	CategoryDataPlane Category = "data-plane" // sidecars, node proxies, waypoints
	CategoryGateway   Category = "gateway"    // the ingress gateway
)

// ListenerKind says what traffic a listener takes.
type ListenerKind string

// The listener kinds.
const (
	// ListenerOutbound takes plaintext from a local workload to the server
	// service (sidecar 15001, node proxy 15001).
	ListenerOutbound ListenerKind = "outbound"
	// ListenerOutboundWaypoint takes plaintext from a local workload to the
	// server service's waypoint (node proxy 15002).
	ListenerOutboundWaypoint ListenerKind = "outbound-waypoint"
	// ListenerInbound takes mTLS (or plaintext with mtls off) from peers
	// for the sidecar's own app (sidecar 15006).
	ListenerInbound ListenerKind = "inbound"
	// ListenerHBONE terminates HBONE: mTLS, HTTP/2 CONNECT (node proxy and
	// waypoint 15008).
	ListenerHBONE ListenerKind = "hbone"
	// ListenerGateway terminates the load generator's TLS (gateway 8443).
	ListenerGateway ListenerKind = "gateway"
)

// Listener is one address a proxy binds besides its admin.
type Listener struct {
	// Name is the Envoy listener name ("virtualOutbound", "virtualInbound",
	// "outbound_client", "hbone_inbound", "connect_terminate", …).
	Name string
	// Kind says what traffic the listener takes.
	Kind ListenerKind
	// Addr is the address it binds (a pod's address for a node proxy's
	// outbound listeners: no capture, so each source pod gets its own).
	Addr netip.AddrPort
	// Source names the pod (or the gateway) whose traffic an outbound
	// listener of a node proxy carries; "" elsewhere.
	Source string
	// Service is the destination service of an outbound listener; "" on
	// the others.
	Service string
	// Identities are every identity an HBONE listener presents, one TLS
	// filter chain each, chosen by the SNI the peer sends (HBONESNI): a
	// node proxy answers for every identity of its node's pods. Identity
	// is the first of them.
	Identities []Identity
	// Identity is the identity this listener's traffic is secured with: the
	// one presented to peers on inbound, HBONE and gateway-facing mesh hops,
	// and the source workload's on outbound listeners (a node proxy
	// presents its pods' certificates). Zero when the listener's traffic is
	// plaintext only.
	Identity Identity
}

// Proxy is one Envoy process.
type Proxy struct {
	// Name is unique in the topology: "client-sidecar", "server-0-sidecar",
	// "ztunnel-node2", "waypoint", "gateway".
	Name string
	// Role is the kind of proxy.
	Role ProxyRole
	// Node is the index of the node it runs on.
	Node int
	// Addr is the address it originates connections from and binds its
	// admin and listeners on (node proxies also bind listeners on their
	// pods' addresses).
	Addr netip.Addr
	// Admin is Addr:15000.
	Admin netip.AddrPort
	// Listeners are every listener address it binds, admin excluded.
	Listeners []Listener
	// Pod is the pod a sidecar belongs to; "" for other roles.
	Pod string
	// Identity is the proxy's own identity: its pod's for a sidecar, its
	// own service account for the others.
	Identity Identity
	// Presents lists every identity whose certificate the proxy loads, in a
	// stable order. A node proxy presents its workloads' identities
	// (impersonation), not its own.
	Presents []Identity
	// ServingHosts are the names (IP literals) the proxy's TLS serving
	// certificate must carry for the load generator to verify it: the
	// gateway's address. Empty for the other roles.
	ServingHosts []string
	// Component labels the proxy in results: "client sidecar", "server
	// sidecar", "node proxy node2", "waypoint", "gateway".
	Component string
	// Category groups it for resource accounting.
	Category Category
}

// Binds returns the admin address and every listener address.
func (p *Proxy) Binds() []netip.AddrPort {
	out := []netip.AddrPort{p.Admin}
	for _, l := range p.Listeners {
		out = append(out, l.Addr)
	}
	return out
}

// Listener returns the proxy's first listener of kind k, or nil.
func (p *Proxy) Listener(k ListenerKind) *Listener {
	for i := range p.Listeners {
		if p.Listeners[i].Kind == k {
			return &p.Listeners[i]
		}
	}
	return nil
}

// LoadTarget is one URL the load generator hits.
type LoadTarget struct {
	// URL is http://ADDR/ or, through the gateway, https://ADDR/.
	URL string
	// Proxy is the proxy the request enters; "" when it goes straight to
	// an app replica.
	Proxy string
	// Pod is the app replica a direct target reaches; "" otherwise.
	Pod string
}

// AppProtocol is what an app speaks on its port.
type AppProtocol string

// The app protocols.
const (
	AppHTTP AppProtocol = "http" // HTTP/1.1 (and h2c)
	AppGRPC AppProtocol = "grpc" // gRPC: HTTP/2 only
)

// Service is one service of the app, with Options.Replicas pods.
type Service struct {
	Name      string      // "server"; faces: "face", "smiley", "color"
	Namespace string      // "default"
	Port      int         // the app port, 8080
	Protocol  AppProtocol // what its pods speak
	// Serve is the `meshbench serve` kind its pods run: static, face, grpc.
	Serve string
	// Component labels its app processes in results: "app static" (the
	// static app's one service), "app face", "app smiley", "app color".
	Component string
	Identity  Identity // its pods' service account
	// Backends are the services its pods call for every request.
	Backends []string
	// Outbound is the port of the outbound listener for this service on a
	// calling pod's address (15001 for the entry service, 15011, 15021 for
	// the next ones): without traffic capture each destination service needs
	// its own listener. OutboundWaypoint is the same to the waypoint.
	Outbound, OutboundWaypoint uint16
	// Suffix tells the names of per-service objects apart: "" for the entry
	// service (so a one-service topology keeps Istio's plain names),
	// "_<name>" for the others.
	Suffix string
}

// Host returns Kubernetes' DNS name, server.default.svc.cluster.local.
func (s Service) Host() string { return s.Name + "." + s.Namespace + ".svc." + TrustDomain }

// HBONESNI is the TLS server name a node proxy or the waypoint sends on an
// HBONE connection to a peer that must present id, so that a node proxy
// hosting pods of several services picks the right certificate (the
// in-pod ztunnel knows the destination pod instead).
func HBONESNI(id Identity) string {
	return id.ServiceAccount + "." + id.Namespace + ".hbone." + TrustDomain
}

// appServices lists the services of app, entry service first.
func appServices(app App) []Service {
	svc := func(i int, name string, proto AppProtocol, serve string, id Identity, backends ...string) Service {
		s := Service{Name: name, Namespace: "default", Port: PortApp, Protocol: proto, Serve: serve, Identity: id,
			Backends: backends, Outbound: uint16(PortOutbound + 10*i), OutboundWaypoint: uint16(PortOutboundWaypoint + 10*i),
			Component: "app " + name}
		if i > 0 {
			s.Suffix = "_" + name
		}
		return s
	}
	if app == AppFaces {
		return []Service{svc(0, "face", AppHTTP, "face", IdentityFace, "smiley", "color"),
			svc(1, "smiley", AppHTTP, "static", IdentitySmiley), svc(2, "color", AppGRPC, "grpc", IdentityColor)}
	}
	s := svc(0, "server", AppHTTP, "static", IdentityServer)
	s.Component = "app static"
	return []Service{s}
}

// Topology is everything a lab run starts and wires, as plain data.
type Topology struct {
	// Options are the validated options, defaults filled in.
	Options Options
	// Service is the entry service: the one the load generator calls.
	Service Service
	// Services are every service of the app, the entry service first.
	Services []Service
	// Nodes lists the nodes in use, by Index.
	Nodes []Node
	// Pods lists the client pod, the attacker (if any) and the app pods,
	// service by service, each in replica order.
	Pods []Pod
	// Proxies lists every Envoy: the sidecars (the client side's, then one
	// per replica) or the node proxies (by node, only nodes with something
	// to carry), then the waypoint and the gateway.
	Proxies []Proxy
	// LoadTargets are the URLs the load generator must spread its
	// connections over.
	LoadTargets []LoadTarget
	// AttackTargets are the URLs through which the attacker pod reaches the
	// server; empty unless Options.Attacker.
	AttackTargets []LoadTarget
	// Identities lists every identity the lab issues a certificate for.
	Identities []Identity
	// Policies are the ALLOW rules; empty when there are none.
	Policies []Policy
	// InPod is set by a substrate of network namespaces, where HBONE ends
	// at each pod's own address (Istio's in-pod ztunnel): nil on loopback.
	InPod *InPod
}

// Pod returns the named pod, or nil.
func (t *Topology) Pod(name string) *Pod {
	for i := range t.Pods {
		if t.Pods[i].Name == name {
			return &t.Pods[i]
		}
	}
	return nil
}

// Proxy returns the named proxy, or nil.
func (t *Topology) Proxy(name string) *Proxy {
	for i := range t.Proxies {
		if t.Proxies[i].Name == name {
			return &t.Proxies[i]
		}
	}
	return nil
}

// Svc returns the named service, or nil.
func (t *Topology) Svc(name string) *Service {
	for i := range t.Services {
		if t.Services[i].Name == name {
			return &t.Services[i]
		}
	}
	return nil
}

// ServicePods returns the pods of the named service in replica order.
func (t *Topology) ServicePods(name string) []Pod {
	var out []Pod
	for _, p := range t.Pods {
		if p.Role == PodServer && p.Service == name {
			out = append(out, p)
		}
	}
	return out
}

// ServerPods returns every app pod (all services) in order.
func (t *Topology) ServerPods() []Pod {
	var out []Pod
	for _, p := range t.Pods {
		if p.Role == PodServer {
			out = append(out, p)
		}
	}
	return out
}

// Sidecar returns the sidecar of the named pod, or nil.
func (t *Topology) Sidecar(pod string) *Proxy {
	for i := range t.Proxies {
		if t.Proxies[i].Role == RoleSidecar && t.Proxies[i].Pod == pod {
			return &t.Proxies[i]
		}
	}
	return nil
}

// NodeProxy returns the node proxy of node n, or nil.
func (t *Topology) NodeProxy(n int) *Proxy {
	for i := range t.Proxies {
		if t.Proxies[i].Role == RoleNodeProxy && t.Proxies[i].Node == n {
			return &t.Proxies[i]
		}
	}
	return nil
}

// ProxyByRole returns the first proxy of role r (the waypoint, the
// gateway), or nil.
func (t *Topology) ProxyByRole(r ProxyRole) *Proxy {
	for i := range t.Proxies {
		if t.Proxies[i].Role == r {
			return &t.Proxies[i]
		}
	}
	return nil
}

// Plan validates opts and lays out the topology. It does no I/O. The
// layout is a list of named steps (planSteps), each adding one part of the
// topology to what the steps before it laid out.
func Plan(opts Options) (*Topology, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	p := &planner{o: opts.withDefaults()}
	for _, step := range planSteps {
		p.run(step.name, step.do)
	}
	return p.t, nil
}

// run runs step name. The steps cannot fail on valid options; one that
// panics (a bug) says which step it was.
func (p *planner) run(name string, do func(*planner)) {
	defer func() {
		if r := recover(); r != nil {
			panic(fmt.Sprintf("topology.Plan: step %s: %v", name, r))
		}
	}()
	do(p)
}

// planSteps lay a topology out, in order.
var planSteps = []struct {
	name string
	do   func(*planner)
}{
	{"nodes", (*planner).nodes},              // the client's, the app nodes, the waypoint's, the gateway's
	{"pods", (*planner).pods},                // the client, the attacker, the replicas round-robin
	{"sources", (*planner).sources},          // who sends to which service inside the mesh
	{"sidecars", (*planner).sidecars},        // mode sidecar
	{"node proxies", (*planner).nodeProxies}, // modes ambient and waypoint, and the waypoint
	{"gateway", (*planner).gateway},          // the ingress gateway
	{"calls", (*planner).calls},              // where each app replica reaches its backends
	{"load targets", (*planner).loadTargets}, // where the load (and the attacker) sends
	{"identities", (*planner).identities},    // every identity, and the policies
}

// planner is a topology being laid out by planSteps.
type planner struct {
	o Options
	t *Topology
	// waypointNode and gatewayNode are their nodes (0: none);
	// gatewayAddr the gateway's address.
	waypointNode, gatewayNode int
	gatewayAddr               netip.Addr
	// from are the workloads with an outbound path, one per destination
	// service.
	from []source
}

// source is a workload that sends to a service from inside the mesh.
type source struct {
	name     string
	node     int
	addr     netip.Addr
	identity Identity
	service  string
}

func (p *planner) at(node, host int) netip.Addr { return nodeAddr(p.o.LoopbackNet, node, host) }

// nodes: the client's, K app nodes, then the waypoint's and the gateway's.
func (p *planner) nodes() {
	p.t = &Topology{Options: p.o, Services: appServices(p.o.App)}
	p.t.Service = p.t.Services[0]
	addNode := func(role NodeRole) int {
		n := len(p.t.Nodes) + 1
		p.t.Nodes = append(p.t.Nodes, Node{Index: n, Name: fmt.Sprintf("node%d", n),
			Prefix: netip.PrefixFrom(p.at(n, 0), 24), Role: role})
		return n
	}
	addNode(NodeClient)
	for range p.o.Nodes {
		addNode(NodeApp)
	}
	if p.o.Mode == ModeWaypoint {
		p.waypointNode = addNode(NodeWaypoint)
	}
	if p.o.Gateway {
		p.gatewayNode = addNode(NodeGateway)
	}
}

// pods: the client, the attacker, then each service's replicas
// round-robin over the app nodes, each node's addresses handed out in
// order.
func (p *planner) pods() {
	o, t := p.o, p.t
	t.Pods = append(t.Pods, Pod{Name: "client", Role: PodClient, Node: ClientNode, Addr: p.at(ClientNode, FirstPodHost), Identity: IdentityClient})
	if o.Attacker {
		t.Pods = append(t.Pods, Pod{Name: "attacker", Role: PodAttacker, Node: ClientNode,
			Addr: p.at(ClientNode, AttackerHost), Identity: IdentityAttacker})
	}
	nextHost := map[int]int{}
	for _, svc := range t.Services {
		for i := range o.Replicas {
			node := 2 + i%o.Nodes
			host := FirstPodHost + nextHost[node]
			nextHost[node]++
			t.Pods = append(t.Pods, Pod{Name: fmt.Sprintf("%s-%d", svc.Name, i), Role: PodServer, Service: svc.Name, Replica: i, Node: node,
				Addr: p.at(node, host), AppPort: PortApp, Identity: svc.Identity})
		}
	}
}

// sources: the gateway's address, and who sends traffic to which service
// from inside the mesh.
func (p *planner) sources() {
	o, t := p.o, p.t
	if o.Gateway {
		p.gatewayAddr = p.at(p.gatewayNode, FirstPodHost)
	}
	if !o.Gateway {
		c := t.Pod("client")
		p.from = append(p.from, source{c.Name, c.Node, c.Addr, c.Identity, t.Service.Name})
	}
	if o.Attacker {
		a := t.Pod("attacker")
		p.from = append(p.from, source{a.Name, a.Node, a.Addr, a.Identity, t.Service.Name})
	}
	if o.Gateway && o.Mode != ModeSidecar {
		p.from = append(p.from, source{"gateway", p.gatewayNode, p.gatewayAddr, IdentityIngress, t.Service.Name})
	}
	for _, pod := range t.ServerPods() {
		for _, b := range t.Svc(pod.Service).Backends {
			p.from = append(p.from, source{pod.Name, pod.Node, pod.Addr, pod.Identity, b})
		}
	}
}

// sidecars (mode sidecar): client-side sidecars first, then one per app
// pod, each with its inbound listener, then every source's outbound
// listener.
func (p *planner) sidecars() {
	o, t := p.o, p.t
	if o.Mode != ModeSidecar {
		return
	}
	sidecars := map[string]int{} // pod → index in t.Proxies
	sidecarOf := func(pod *Pod) *Proxy {
		if i, ok := sidecars[pod.Name]; ok {
			return &t.Proxies[i]
		}
		component := pod.Name + " sidecar"
		if pod.Role == PodServer {
			component = pod.Service + " sidecar"
		}
		sidecars[pod.Name] = len(t.Proxies)
		t.Proxies = append(t.Proxies, Proxy{Name: pod.Name + "-sidecar", Role: RoleSidecar, Node: pod.Node, Addr: pod.Addr,
			Admin: netip.AddrPortFrom(pod.Addr, PortAdmin), Pod: pod.Name, Identity: pod.Identity,
			Presents: presents(o.MTLS, pod.Identity), Component: component, Category: CategoryDataPlane})
		return &t.Proxies[len(t.Proxies)-1]
	}
	for _, s := range p.from {
		if pod := t.Pod(s.name); pod != nil && pod.Role != PodServer {
			sidecarOf(pod)
		}
	}
	for _, pod := range t.ServerPods() {
		sc := sidecarOf(t.Pod(pod.Name))
		sc.Listeners = append(sc.Listeners, Listener{Name: "virtualInbound", Kind: ListenerInbound,
			Addr: netip.AddrPortFrom(pod.Addr, PortInbound), Identity: secured(o.MTLS, pod.Identity)})
	}
	for _, s := range p.from {
		svc := t.Svc(s.service)
		sc := sidecarOf(t.Pod(s.name))
		sc.Listeners = append(sc.Listeners, Listener{Name: "virtualOutbound" + svc.Suffix, Kind: ListenerOutbound,
			Addr: netip.AddrPortFrom(s.addr, svc.Outbound), Service: svc.Name, Identity: secured(o.MTLS, s.identity)})
	}
}

// nodeProxies (modes ambient and waypoint): a node proxy per node with
// listeners (the outbound of its node's sources, HBONE in where it has app
// pods), then the waypoint.
func (p *planner) nodeProxies() {
	o, t := p.o, p.t
	if o.Mode != ModeAmbient && o.Mode != ModeWaypoint {
		return
	}
	for _, node := range t.Nodes {
		if node.Role == NodeWaypoint {
			continue
		}
		np := Proxy{Name: "ztunnel-" + node.Name, Role: RoleNodeProxy, Node: node.Index,
			Addr: p.at(node.Index, NodeProxyHost), Identity: NodeProxyIdentity(node.Index),
			Component: "node proxy " + node.Name, Category: CategoryDataPlane}
		np.Admin = netip.AddrPortFrom(np.Addr, PortAdmin)
		for _, s := range p.from {
			if s.node != node.Index {
				continue
			}
			svc := t.Svc(s.service)
			kind, port, prefix := ListenerOutbound, svc.Outbound, "outbound_"
			if o.Mode == ModeWaypoint {
				kind, port, prefix = ListenerOutboundWaypoint, svc.OutboundWaypoint, "outbound_waypoint_"
			}
			np.Listeners = append(np.Listeners, Listener{Name: prefix + s.name + svc.Suffix, Kind: kind,
				Addr: netip.AddrPortFrom(s.addr, port), Source: s.name, Service: svc.Name, Identity: s.identity})
			np.Presents = appendIdentity(np.Presents, s.identity)
		}
		// HBONE in, on app nodes with pods (more nodes than replicas
		// leaves some empty), presenting the pods' identities.
		var ids []Identity
		for _, pod := range t.ServerPods() {
			if pod.Node == node.Index {
				ids = appendIdentity(ids, pod.Identity)
				np.Presents = appendIdentity(np.Presents, pod.Identity)
			}
		}
		if len(ids) > 0 {
			np.Listeners = append(np.Listeners, Listener{Name: "hbone_inbound", Kind: ListenerHBONE,
				Addr: netip.AddrPortFrom(np.Addr, PortHBONE), Identity: ids[0], Identities: ids})
		}
		if len(np.Listeners) > 0 {
			t.Proxies = append(t.Proxies, np)
		}
	}
	if o.Mode == ModeWaypoint {
		addr := p.at(p.waypointNode, NodeProxyHost)
		t.Proxies = append(t.Proxies, Proxy{Name: "waypoint", Role: RoleWaypoint, Node: p.waypointNode, Addr: addr,
			Admin: netip.AddrPortFrom(addr, PortAdmin),
			Listeners: []Listener{{Name: "connect_terminate", Kind: ListenerHBONE,
				Addr: netip.AddrPortFrom(addr, PortHBONE), Identity: IdentityWaypoint, Identities: []Identity{IdentityWaypoint}}},
			Identity: IdentityWaypoint, Presents: []Identity{IdentityWaypoint},
			Component: "waypoint", Category: CategoryDataPlane})
	}
}

// gateway: the TLS-terminating ingress gateway, when there is one.
func (p *planner) gateway() {
	o := p.o
	if !o.Gateway {
		return
	}
	gw := Proxy{Name: "gateway", Role: RoleGateway, Node: p.gatewayNode, Addr: p.gatewayAddr,
		Admin:     netip.AddrPortFrom(p.gatewayAddr, PortAdmin),
		Listeners: []Listener{{Name: "gateway_https", Kind: ListenerGateway, Addr: netip.AddrPortFrom(p.gatewayAddr, PortGateway)}},
		Identity:  IdentityIngress, ServingHosts: []string{p.gatewayAddr.String()},
		Component: "gateway", Category: CategoryGateway}
	// The gateway presents its mesh identity when it calls sidecars
	// itself; in ambient modes its node proxy does that for it.
	if o.Mode == ModeSidecar && o.MTLS {
		gw.Presents = []Identity{IdentityIngress}
	}
	p.t.Proxies = append(p.t.Proxies, gw)
}

// outboundOf is where source src reaches service: its outbound listener's
// address and the proxy that has it.
func (p *planner) outboundOf(src, service string) (netip.AddrPort, string) {
	o, t := p.o, p.t
	for _, px := range t.Proxies {
		if (o.Mode == ModeSidecar && px.Role == RoleSidecar && px.Pod == src) || (px.Role == RoleNodeProxy) {
			for _, l := range px.Listeners {
				if (l.Kind == ListenerOutbound || l.Kind == ListenerOutboundWaypoint) && l.Service == service &&
					(o.Mode == ModeSidecar || l.Source == src) {
					return l.Addr, px.Name
				}
			}
		}
	}
	panic("mesh: no outbound listener for " + src + " to " + service)
}

// calls: where each app replica reaches each of its backends.
func (p *planner) calls() {
	t := p.t
	for i := range t.Pods {
		pod := &t.Pods[i]
		if pod.Role != PodServer {
			continue
		}
		for _, b := range t.Svc(pod.Service).Backends {
			var addr netip.AddrPort
			if p.o.Mode.Direct() {
				// No Envoy to balance: replica i calls replica i of each
				// backend (a fixed spread, as kube-proxy's per-connection
				// choice is for few long-lived connections).
				addr = t.ServicePods(b)[pod.Replica].AppAddr()
			} else {
				addr, _ = p.outboundOf(pod.Name, b)
			}
			pod.Calls = append(pod.Calls, Call{Service: b, Addr: addr})
		}
	}
}

// loadTargets: where the load enters (the gateway, every replica of the
// entry service without a mesh, or the client's outbound), and where the
// attacker sends.
func (p *planner) loadTargets() {
	o, t := p.o, p.t
	switch {
	case o.Gateway:
		gw := t.ProxyByRole(RoleGateway)
		t.LoadTargets = []LoadTarget{{URL: "https://" + gw.Listener(ListenerGateway).Addr.String() + "/", Proxy: gw.Name}}
	case o.Mode.Direct():
		for _, pod := range t.ServicePods(t.Service.Name) {
			t.LoadTargets = append(t.LoadTargets, LoadTarget{URL: "http://" + pod.AppAddr().String() + "/", Pod: pod.Name})
		}
	default:
		addr, proxy := p.outboundOf("client", t.Service.Name)
		t.LoadTargets = []LoadTarget{{URL: "http://" + addr.String() + "/", Proxy: proxy}}
	}
	if o.Attacker {
		addr, proxy := p.outboundOf("attacker", t.Service.Name)
		t.AttackTargets = []LoadTarget{{URL: "http://" + addr.String() + "/", Proxy: proxy}}
	}
}

// identities: the workloads', the node proxies', the gateway's and
// monitoring's (rule allow-monitoring); then the policies.
func (p *planner) identities() {
	t := p.t
	t.Identities = []Identity{IdentityClient}
	for _, svc := range t.Services {
		t.Identities = append(t.Identities, svc.Identity)
	}
	t.Identities = append(t.Identities, IdentityWaypoint, IdentityAttacker)
	for _, px := range t.Proxies {
		if px.Role == RoleNodeProxy {
			t.Identities = append(t.Identities, px.Identity)
		}
	}
	t.Identities = append(t.Identities, IdentityIngress, IdentityMonitoring)
	t.Policies = RulesFor(p.o.App, p.o.Policies)
}

// presents is the identity list of a sidecar: its own, unless plaintext.
func presents(mtls bool, id Identity) []Identity {
	if !mtls {
		return nil
	}
	return []Identity{id}
}

// secured is id, or the zero Identity when the traffic is plaintext.
func secured(mtls bool, id Identity) Identity {
	if !mtls {
		return Identity{}
	}
	return id
}

func appendIdentity(list []Identity, id Identity) []Identity {
	for _, x := range list {
		if x == id {
			return list
		}
	}
	return append(list, id)
}
