// Package netlab is the lab's substrate of network namespaces: nodes and
// pods as namespaces, as on a Kubernetes node, with Istio's ambient data
// path made of the real parts. Each node is a namespace with a bridge for
// its pods' veths and an uplink to a fabric bridge (in a namespace of its
// own) that routes the nodes to each other; each pod is a namespace with
// one veth on its node's bridge and a default route via the node. A
// shared-mode (in-pod) ztunnel runs in every node namespace, fed by the
// project's ZDS agent and the lab CA served over Istio's certificate API
// on the node's loopback; enrolled pods get Istio's in-pod capture.
//
// Nothing is added to the host's namespace except the links' transient
// creation: addresses and routes live in the lab's namespaces, so traffic
// cannot leave them (a node has no default route). Every name starts with
// the lab's prefix; Close removes everything, also after a half-way
// failure.
package netlab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/meshbench/meshbench/internal/mesh/capture"
	"github.com/meshbench/meshbench/internal/mesh/istio/ca"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/mesh/ztunnel"
	"github.com/meshbench/meshbench/internal/sys/netns"
	"github.com/meshbench/meshbench/internal/sys/pki"
)

// Limits of the addressing plan (one /24 per node inside the lab's /16).
const (
	MaxNodes      = 200
	MaxPodsOnNode = 200
	caPort        = 15012
	caToken       = "meshbench-lab"
	// SidecarID is the uid and gid a sidecar's capture exempts (Istio's
	// istio-proxy, 1337).
	SidecarID = 1337
	clusterID = "lab"
)

// PodSpec is one pod.
type PodSpec struct {
	Name     string
	Identity topology.Identity
	// Enrolled puts the pod in the mesh: in-pod capture, handed to its
	// node's ztunnel. A waypoint is a pod that is not enrolled.
	Enrolled bool
	// Policies applies the lab's ALLOW rules (Options.Policies) to the
	// pod's inbound traffic, enforced by ztunnel.
	Policies bool
	// Sidecar puts istio-init's capture in the pod for a sidecar running
	// with uid or gid SidecarID (the pod is not enrolled).
	Sidecar bool
	// Services are the services the pod backs, by name, with their
	// target port.
	Services []string
	// Waypoint makes the pod the lab's waypoint (not enrolled): ztunnel
	// sends the traffic of every service and of every pod that backs one
	// to it over HBONE (waypoint.go).
	Waypoint bool
}

// NodeSpec is one node and its pods.
type NodeSpec struct {
	Pods []PodSpec
}

// ServiceSpec is one service: a VIP and a port.
type ServiceSpec struct {
	Name       string
	Namespace  string
	Port       int // the VIP's port
	TargetPort int // the pods' port
}

// Options describe a lab.
type Options struct {
	// Prefix starts every link and namespace name (at most 6 bytes).
	Prefix string
	// Subnet is a /16 the lab numbers its nodes and pods from; it must
	// not be in use on the host.
	Subnet netip.Prefix
	// Ztunnel is the ztunnel binary (needed when a pod is enrolled).
	Ztunnel string
	// Dir holds the lab's files (PKI, ztunnel config, sockets, logs).
	Dir      string
	Nodes    []NodeSpec
	Services []ServiceSpec
	// Policies is the number of the lab's L4 ALLOW rules (topology.Rules).
	Policies int
	// ZtunnelWorkerThreads is every ztunnel's ZTUNNEL_WORKER_THREADS; 0
	// is ztunnel's default (2).
	ZtunnelWorkerThreads int
	// ZtunnelsFromXDS: Up writes no ztunnel config, makes no CA and
	// starts no ztunnel; a control plane configures and certifies them,
	// started by StartZtunnels once it serves (istiod: istiod.go).
	ZtunnelsFromXDS bool
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

// Lab is a running substrate.
type Lab struct {
	Opts     Options
	Nodes    []*Node
	Services map[string]netip.Addr // service name → VIP
	CA       *pki.CA
	// ZtunnelVersion is what `ztunnel version` prints, for the manifest.
	ZtunnelVersion string
	sub            *netns.Substrate
	// sockDir holds the ZDS sockets: a short path of its own under the
	// temp dir, as a unix socket's path is at most 107 bytes and the
	// lab's Dir may be deep in a results directory.
	sockDir string
	// fabric is the namespace routing the nodes to each other, fbr its
	// bridge (istiod runs there: istiod.go).
	fabric *netns.NS
	fbr    *netns.Bridge
}

// Node is one node namespace with its ztunnel.
type Node struct {
	Name    string // node1, node2…
	NS      *netns.NS
	Pods    []*Pod
	Ztunnel *ztunnel.Process // nil when no pod of the lab is enrolled
	Agent   *ztunnel.Agent
	CA      *ca.Server
	Log     string // ztunnel's log file
}

// Pod is one pod namespace.
type Pod struct {
	Spec PodSpec
	IP   netip.Addr
	NS   *netns.NS
	Node *Node
}

// Up brings a lab up; on error everything made so far is removed.
func Up(ctx context.Context, o Options) (_ *Lab, err error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	busy, err := netns.InUse(o.Subnet, o.Prefix)
	if err != nil {
		return nil, err
	}
	if busy {
		return nil, fmt.Errorf("lab substrate: %s or names starting %q are already in use on this host", o.Subnet, o.Prefix)
	}
	l := &Lab{Opts: o, sub: netns.New(o.Prefix), Services: map[string]netip.Addr{}}
	defer func() {
		if err != nil {
			err = errors.Join(err, l.Close())
		}
	}()
	// The owner record first, so it is removed last (owner.go).
	release, err := claim(o.Prefix, o.Dir)
	if err != nil {
		return nil, err
	}
	l.sub.OnClose("owner record of "+o.Prefix, release)
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	if !o.meshed() {
		// No pod in the mesh (the baseline): the same network, no ztunnel.
		return l, l.plumb()
	}
	if l.ZtunnelVersion, err = ztunnel.Version(ctx, o.Ztunnel); err != nil {
		return nil, err
	}
	if err := l.plumb(); err != nil {
		return nil, err
	}
	if l.sockDir, err = os.MkdirTemp("", "meshbench-zds-"); err != nil {
		return nil, err
	}
	l.sub.OnClose("socket directory "+l.sockDir, func() error { return os.RemoveAll(l.sockDir) })
	if o.ZtunnelsFromXDS {
		return l, nil // StartZtunnels, once the control plane serves them
	}
	if l.CA, err = pki.NewCA(topology.TrustDomain); err != nil {
		return nil, err
	}
	caFiles, err := l.CA.WriteFiles(filepath.Join(o.Dir, "pki"))
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(o.Dir, "ztunnel.yaml")
	if err := l.config().Write(cfgPath); err != nil {
		return nil, err
	}
	for _, n := range l.Nodes {
		if !n.enrolls() {
			// Nothing for a ztunnel to carry (the waypoint's node, an
			// app node without replicas): none runs, as no node proxy
			// runs there on loopback.
			continue
		}
		if err := l.serveCA(n); err != nil {
			return nil, err
		}
		if err := l.startNode(ctx, n, ztunnel.Spec{ConfigPath: cfgPath, CAAddress: fmt.Sprintf("https://127.0.0.1:%d", caPort),
			RootCAPath: caFiles.Cert, Token: caToken, ClusterID: clusterID}); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// StartZtunnels starts the ztunnel of every node with an enrolled pod,
// configured by a control plane (Options.ZtunnelsFromXDS): spec(n) gives
// node n's config source (Spec.XDS), CA, root and token; the lab adds the
// binary, namespace, ZDS agent and log. It returns once each ztunnel took
// its node's pods and is ready.
func (l *Lab) StartZtunnels(ctx context.Context, spec func(context.Context, *Node) (ztunnel.Spec, error)) error {
	for _, n := range l.Nodes {
		if !n.enrolls() {
			continue
		}
		s, err := spec(ctx, n)
		if err != nil {
			return err
		}
		if err := l.startNode(ctx, n, s); err != nil {
			return err
		}
	}
	return nil
}

func (o Options) validate() error {
	var errs []error
	if o.Prefix == "" || len(o.Prefix) > 6 {
		errs = append(errs, fmt.Errorf("lab prefix %q: allowed 1 to 6 bytes", o.Prefix))
	}
	if !o.Subnet.IsValid() || o.Subnet.Bits() != 16 || !o.Subnet.Addr().Is4() || !o.Subnet.Addr().IsPrivate() {
		errs = append(errs, fmt.Errorf("lab subnet %s: allowed a private IPv4 /16", o.Subnet))
	}
	if len(o.Nodes) == 0 || len(o.Nodes) > MaxNodes {
		errs = append(errs, fmt.Errorf("lab nodes %d: allowed 1 to %d", len(o.Nodes), MaxNodes))
	}
	for i, n := range o.Nodes {
		if len(n.Pods) > MaxPodsOnNode {
			errs = append(errs, fmt.Errorf("node %d has %d pods: allowed up to %d", i+1, len(n.Pods), MaxPodsOnNode))
		}
	}
	if o.Ztunnel == "" && o.meshed() {
		errs = append(errs, errors.New("no ztunnel binary given"))
	}
	if o.Policies < 0 || o.Policies > topology.MaxPolicies {
		errs = append(errs, fmt.Errorf("policies %d: allowed 0 to %d", o.Policies, topology.MaxPolicies))
	}
	return errors.Join(errs...)
}

// meshed reports whether a pod is enrolled: only then do the nodes run
// ztunnels.
func (o Options) meshed() bool {
	for _, n := range o.Nodes {
		for _, p := range n.Pods {
			if p.Enrolled {
				return true
			}
		}
	}
	return false
}

// addr is 10.x.<third>.<fourth> inside the lab's /16.
func (l *Lab) addr(third, fourth int) netip.Addr {
	b := l.Opts.Subnet.Addr().As4()
	b[2], b[3] = byte(third), byte(fourth)
	return netip.AddrFrom4(b)
}

// plumb makes the namespaces, bridges, links, routes and capture.
// Addressing: the fabric is x.y.0.0/24 (node i's uplink .10+i), node i's
// pods x.y.i.0/24 (bridge .1, pods .10…), service VIPs x.y.255.1….
func (l *Lab) plumb() error {
	s := l.sub
	fabric, err := s.Namespace("f")
	if err != nil {
		return err
	}
	fbr, err := s.BridgeIn(fabric, "fbr", netip.PrefixFrom(l.addr(0, 1), 24))
	if err != nil {
		return err
	}
	l.fabric, l.fbr = fabric, fbr
	for i := range l.Opts.Nodes {
		n := &Node{Name: fmt.Sprintf("node%d", i+1)}
		if n.NS, err = s.Namespace(fmt.Sprintf("n%d", i+1)); err != nil {
			return err
		}
		if err := s.Veth(fbr, n.NS, fmt.Sprintf("n%du", i+1), "uplink", netip.PrefixFrom(l.addr(0, 10+i+1), 24), false); err != nil {
			return err
		}
		if err := n.NS.Sysctl("net/ipv4/ip_forward", "1"); err != nil {
			return err
		}
		br, err := s.BridgeIn(n.NS, fmt.Sprintf("n%dbr", i+1), netip.PrefixFrom(l.addr(i+1, 1), 24))
		if err != nil {
			return err
		}
		for k, ps := range l.Opts.Nodes[i].Pods {
			p := &Pod{Spec: ps, IP: l.addr(i+1, 10+k), Node: n}
			if p.NS, err = s.Namespace(fmt.Sprintf("n%dp%d", i+1, k)); err != nil {
				return err
			}
			if err := s.Veth(br, p.NS, fmt.Sprintf("n%dv%d", i+1, k), "eth0", netip.PrefixFrom(p.IP, 24), true); err != nil {
				return err
			}
			if ps.Enrolled {
				if err := capture.InPod(p.NS); err != nil {
					return err
				}
			}
			if ps.Sidecar {
				if err := capture.IstioInit(p.NS, SidecarID, SidecarID); err != nil {
					return err
				}
			}
			n.Pods = append(n.Pods, p)
		}
		l.Nodes = append(l.Nodes, n)
	}
	// Every node routes every other node's pod subnet via its uplink.
	for i, n := range l.Nodes {
		for j := range l.Nodes {
			if i == j {
				continue
			}
			if err := n.NS.Route("uplink", netip.PrefixFrom(l.addr(j+1, 0), 24), l.addr(0, 10+j+1)); err != nil {
				return err
			}
		}
	}
	for i, svc := range l.Opts.Services {
		l.Services[svc.Name] = l.addr(255, i+1)
	}
	return nil
}

// config is ztunnel's local config for the whole lab.
func (l *Lab) config() ztunnel.Config {
	policies := ztunnel.Policies(topology.Rules(l.Opts.Policies), "default")
	var cfg ztunnel.Config
	cfg.Policies = policies
	hosts := map[string]ServiceSpec{}
	for _, svc := range l.Opts.Services {
		hosts[svc.Name] = svc
		cfg.Services = append(cfg.Services, ztunnel.Service{
			Name: svc.Name, Namespace: svc.Namespace, Hostname: hostname(svc),
			VIPs: []string{ztunnel.Addr(l.Services[svc.Name])}, Ports: map[int]int{svc.Port: svc.TargetPort},
		})
	}
	for _, n := range l.Nodes {
		for _, p := range n.Pods {
			proto := ztunnel.ProtocolTCP
			if p.Spec.Enrolled {
				proto = ztunnel.ProtocolHBONE
			}
			w := ztunnel.Workload{
				UID: p.uid(), Name: p.Spec.Name, Namespace: p.Spec.Identity.Namespace, ServiceAccount: p.Spec.Identity.ServiceAccount,
				WorkloadIPs: []string{p.IP.String()}, Protocol: proto, Node: n.Name, TrustDomain: topology.TrustDomain,
				Services: map[string]map[int]int{},
			}
			for _, name := range p.Spec.Services {
				if svc, ok := hosts[name]; ok {
					w.Services[svc.Namespace+"/"+hostname(svc)] = map[int]int{svc.Port: svc.TargetPort}
				}
			}
			if p.Spec.Policies {
				for _, a := range policies {
					w.AuthorizationPolicies = append(w.AuthorizationPolicies, a.Key())
				}
			}
			cfg.Workloads = append(cfg.Workloads, w)
		}
	}
	l.useWaypoint(&cfg)
	return cfg
}

func hostname(s ServiceSpec) string { return s.Name + "." + s.Namespace + ".svc.cluster.local" }

func (p *Pod) uid() string { return "lab//v1/Pod/" + p.Spec.Identity.Namespace + "/" + p.Spec.Name }

// serveCA serves the lab's CA on node n's loopback, for its ztunnel.
func (l *Lab) serveCA(n *Node) error {
	var lis net.Listener
	if err := n.NS.Do(func() (err error) {
		lis, err = net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", caPort))
		return err
	}); err != nil {
		return fmt.Errorf("CA listener on %s: %w", n.Name, err)
	}
	var err error
	if n.CA, err = ca.Serve(l.CA, lis, []netip.Addr{netip.MustParseAddr("127.0.0.1")}, caToken); err != nil {
		lis.Close()
		return err
	}
	l.sub.OnClose("CA of "+n.Name, n.CA.Close)
	return nil
}

// startNode starts node n's ZDS agent and ztunnel, whose config source
// and CA spec gives, and waits until ztunnel took the node's enrolled pods
// and is ready.
func (l *Lab) startNode(ctx context.Context, n *Node, spec ztunnel.Spec) error {
	var err error
	var pods []ztunnel.Pod
	for _, p := range n.Pods {
		if p.Spec.Enrolled {
			pods = append(pods, ztunnel.Pod{UID: p.uid(), Name: p.Spec.Name, Namespace: p.Spec.Identity.Namespace,
				ServiceAccount: p.Spec.Identity.ServiceAccount, NetnsPath: p.NS.Path()})
		}
	}
	if n.Agent, err = ztunnel.Listen(filepath.Join(l.sockDir, n.Name+"-zds.sock"), pods); err != nil {
		return err
	}
	l.sub.OnClose("ZDS agent of "+n.Name, n.Agent.Close)
	go n.Agent.Serve(context.Background())
	n.Log = filepath.Join(l.Opts.Dir, "ztunnel-"+n.Name+".log")
	logf, err := os.Create(n.Log)
	if err != nil {
		return err
	}
	l.sub.OnClose("log of "+n.Name, logf.Close)
	spec.Bin, spec.NS, spec.NodeName, spec.UDS, spec.Log = l.Opts.Ztunnel, n.NS, n.Name, n.Agent.Path, logf
	spec.WorkerThreads = l.Opts.ZtunnelWorkerThreads
	n.Ztunnel, err = ztunnel.Start(spec)
	if err != nil {
		return err
	}
	l.sub.OnClose("ztunnel of "+n.Name, func() error { return n.Ztunnel.Stop(5 * time.Second) })
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := n.Agent.Synced(wctx, n.Ztunnel.Exited()); err != nil {
		return fmt.Errorf("%s: %w (log %s)", n.Name, err, n.Log)
	}
	if err := n.Ztunnel.Ready(wctx); err != nil {
		return fmt.Errorf("%w (log %s)", err, n.Log)
	}
	if l.Opts.Log != nil {
		fmt.Fprintf(l.Opts.Log, "%s: ztunnel pid %d ready with %d pods\n", n.Name, n.Ztunnel.PID(), len(pods))
	}
	return nil
}

// Pod returns the pod named name, or nil.
func (l *Lab) Pod(name string) *Pod {
	for _, n := range l.Nodes {
		for _, p := range n.Pods {
			if p.Spec.Name == name {
				return p
			}
		}
	}
	return nil
}

// Close stops every process and removes every namespace and link; safe
// to call twice.
func (l *Lab) Close() error { return l.sub.Close() }

// Dial connects from inside the pod (its application's socket, which the
// pod's capture sees).
func (p *Pod) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return p.NS.Dial(ctx, network, addr)
}

// Listen opens a listener inside the pod.
func (p *Pod) Listen(network, addr string) (lis net.Listener, err error) {
	err = p.NS.Do(func() error {
		lis, err = net.Listen(network, addr)
		return err
	})
	return lis, err
}

// HTTPClient returns a client whose connections start in the pod.
func (p *Pod) HTTPClient(keepAlive bool) *http.Client {
	return p.NS.HTTPClient(10*time.Second, keepAlive)
}

// Start starts cmd inside the pod's namespace (it is sampled from /proc
// like any process).
func (p *Pod) Start(cmd *exec.Cmd) error { return p.NS.Do(cmd.Start) }
