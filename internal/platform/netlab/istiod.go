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
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshbench/meshbench/internal/mesh/istio"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/mesh/ztunnel"
	"github.com/meshbench/meshbench/internal/platform/kube/labapi"
	"github.com/meshbench/meshbench/internal/sys/netns"
	"github.com/meshbench/meshbench/internal/sys/process"
)

// The control planes that can configure the lab's sidecars: the lab's
// own hand-rendered configs (the default), or Istio's istiod against the
// lab's API server (StartIstiod).
const (
	ControlPlaneLab    = "lab"
	ControlPlaneIstiod = "istiod"
	// ControlPlaneReal: every mesh from its own real control plane
	// (Istio's modes from istiod, mode linkerd from Linkerd's controllers).
	ControlPlaneReal = "real"
	// ControlPlaneAuto: each mesh from its own real control plane where
	// the Substrate holds its build (Istio for Istio's modes, Linkerd for
	// mode linkerd), else the lab's own; the caller (bench) sets only the
	// builds that are complete here and says why in ControlPlaneWhy.
	ControlPlaneAuto = "auto"
)

// istiod's ports: the xDS and CA port the sidecars dial at the fabric's
// address, the rest on the fabric namespace's loopback (nothing outside
// the lab reaches them; two labs never collide).
const (
	istiodXDSPort  = 15012
	istiodHTTPPort = 8080
	istiodMonPort  = 15014
	apiForwardPort = 6443
	// istiodSAN is the name istiod's serving certificate carries and the
	// agents check (ISTIOD_SAN).
	istiodSAN = "istiod.istio-system.svc"
	// labelService marks a pod as backing a service: the service's
	// selector (the lab's pods have no app labels of their own).
	labelService = "lab.meshbench.io/"
	// ambientLabel enrols a pod in ambient (on its namespace on a
	// cluster; on the pod here), ambientRedirection is istio-cni's mark
	// that its capture is in place.
	ambientLabel       = "istio.io/dataplane-mode"
	ambientRedirection = "ambient.istio.io/redirection"
	// ztunnelSA is the node ztunnels' service account in istio-system,
	// which istiod's CA trusts to ask for its node's pods' certificates
	// (CA_TRUSTED_NODE_ACCOUNTS, as Istio's chart sets it).
	ztunnelSA = "ztunnel"
	// waypointGateway is the waypoint's Gateway (class istio-waypoint),
	// its Deployment, Service and service account, as istiod names them.
	waypointGateway = "waypoint"
	// istiodClusterID is the cluster istiod and its proxies name
	// (CLUSTER_ID): the prefix of the workload UIDs it sends.
	istiodClusterID = "Kubernetes"
	// requestsCompleted ends the HTTP connection managers' request
	// counters (the waypoint's verdict: traffic went through it).
	requestsCompleted = "downstream_rq_completed"
	// inboundHandshakes counts the TLS handshakes a sidecar accepted on
	// Istio's virtualInbound listener.
	inboundHandshakes = "listener.0.0.0.0_15006.ssl.handshake"
	// inboundConnections counts the connections that listener accepted,
	// TLS or not (with STRICT, each one a handshake when all is well).
	inboundConnections = "listener.0.0.0.0_15006.downstream_cx_total"
	// inboundTCP begins the stats of a sidecar's inbound TCP proxies
	// (stat prefix inbound|PORT||): a port Istio keeps at L4.
	inboundTCP = "tcp.inbound|"
	// waypointTCP begins the stats of the waypoint's TCP proxies (stat
	// prefix inbound-vip|PORT|tcp|HOST, a service Istio keeps at L4).
	waypointTCP = "tcp.inbound-vip|"
)

// IstiodEnv is what istiod is told so that upstream Envoy (not Istio's
// proxy build) accepts its config (../shared/ISTIO-FROM-SOURCE.md; the
// same knobs as the cluster's overlay, istio.OverlaySettings), besides
// its usual pod environment.
var IstiodEnv = []string{
	"PILOT_ENABLE_METADATA_EXCHANGE=false", // no istio.metadata_exchange filters
	"PILOT_ENABLE_ALPN_FILTER=false",       // no istio.alpn filter
}

// meshConfig is istiod's mesh config: Istio's built-in defaults, and no
// default metrics provider (the istio.stats filter upstream Envoy lacks).
const meshConfig = `trustDomain: cluster.local
rootNamespace: istio-system
enableAutoMtls: true
accessLogFile: ""
defaultConfig:
  discoveryAddress: %s
`

// IstiodOptions start istiod on a lab.
type IstiodOptions struct {
	Build istio.Build
	// Envoy is the Envoy binary pilot-agent runs (upstream Envoy).
	Envoy string
	// API is the lab's API server; the lab's objects are created in it.
	API *labapi.Server
	// Concurrency is each sidecar Envoy's worker threads (0: 1, as the
	// lab's own Envoys run, so the two control planes' sidecars differ
	// in their config only; Istio's injector sets 2 on a cluster).
	Concurrency int
	// Objects, when set, are applied before istiod starts (besides the
	// mesh-wide STRICT PeerAuthentication): a cell's policies.
	Objects func() ([]runtime.Object, error)
	// Protocol is what the services declare (as a cluster cell's
	// Service and container ports are named: http, or tcp-http with
	// protocol tcp, which Istio keeps at L4).
	Protocol topology.Protocol
	// GRPC are the services whose pods speak gRPC (the faces app's
	// color): their ports are named grpc (tcp-grpc with protocol tcp).
	GRPC []string
	// Gateway, when set, is the lab's ingress gateway (its pod
	// gatewayPod), configured by istiod as Istio's default profile runs
	// it (istiodgateway.go).
	Gateway *IstiodGateway
}

// Istiod is istiod running in the lab's fabric namespace and the
// sidecars it configures: pilot-agent + Envoy in each sidecar pod.
type Istiod struct {
	Proc *process.Child
	// Addr is where the sidecars reach istiod (xDS and CA): the fabric
	// bridge's address, port 15012.
	Addr netip.AddrPort
	// StartTime is from the start of StartIstiod to istiod's /ready;
	// SidecarsTime from then to every sidecar's readiness; ObjectsTime
	// the part of StartTime before istiod's own start (the lab's objects,
	// CRDs and policies in the API server).
	StartTime, SidecarsTime, ObjectsTime time.Duration
	// Agents are the pilot-agents by pod name.
	Agents map[string]*process.Child
	// Ztunnels is how many node ztunnels istiod configures (ambient:
	// the lab's Options.ZtunnelsFromXDS), started by StartIstiod too.
	Ztunnels int
	lab      *Lab
	opts     IstiodOptions
	dir      string
	// kubeconfig is istiod's; agentCmds make each pod's pilot-agent
	// command again (a restart: the same arguments, environment and
	// files, as a kubelet restarts a container).
	kubeconfig string
	agentCmds  map[string]func() *exec.Cmd
	// mu guards Proc, Agents and agentCmds: filled by the sidecars'
	// goroutines, replaced by a fault's restart (restart.go).
	mu sync.Mutex
}

// StartIstiod makes the lab's objects in o.API (namespaces, service
// accounts, nodes, pods with their netns IPs, services with their VIPs
// and EndpointSlices, Istio's CRDs from its install manifests, a
// mesh-wide STRICT PeerAuthentication), starts istiod in the fabric
// namespace against it, and in every sidecar pod (PodSpec.Sidecar)
// pilot-agent with the bootstrap it renders, its certificate from
// istiod's CA with a TokenRequest token. It returns once istiod and every
// sidecar are ready; what it starts is stopped by the lab's Close.
func (l *Lab) StartIstiod(ctx context.Context, o IstiodOptions) (*Istiod, error) {
	t0 := time.Now()
	if o.Concurrency == 0 {
		o.Concurrency = 1
	}
	// Absolute: istiod and the pilot-agents run in their own directories
	// and are handed paths under it (a run's results directory is
	// relative to where meshbench was started).
	dir, err := filepath.Abs(filepath.Join(l.Opts.Dir, "istiod"))
	if err != nil {
		return nil, err
	}
	d := &Istiod{lab: l, opts: o, dir: dir, Agents: map[string]*process.Child{}, agentCmds: map[string]func() *exec.Cmd{},
		Addr: netip.AddrPortFrom(l.fbr.Addr.Addr(), istiodXDSPort)}
	if err := os.MkdirAll(filepath.Join(d.dir, "logs"), 0o755); err != nil {
		return nil, err
	}
	// The fabric answers the pods (the nodes route to it already).
	for j := range l.Nodes {
		if err := l.fabric.Route(l.fbr.Name, netip.PrefixFrom(l.addr(j+1, 0), 24), l.addr(0, 10+j+1)); err != nil {
			return nil, fmt.Errorf("fabric route to node%d's pods: %w", j+1, err)
		}
	}
	kubeconfig, err := l.forwardAPI(o.API, d.dir)
	if err != nil {
		return nil, err
	}
	objects := l.objects()
	for i := range objects.Services {
		objects.Services[i].PortName = portName(o.Protocol, slices.Contains(o.GRPC, objects.Services[i].Name))
		if o.Gateway != nil && l.waypoint() != nil {
			// The gateway's calls through the waypoint, as the lab's
			// hand-rendered gateway makes them.
			objects.Services[i].Labels = map[string]string{ingressUseWaypoint: "true"}
		}
	}
	if err := o.API.Populate(ctx, objects); err != nil {
		return nil, err
	}
	crds, err := istio.CRDs(ctx, o.Build)
	if err != nil {
		return nil, err
	}
	wp := l.waypoint()
	if wp != nil {
		gw, err := istio.GatewayCRDs(o.Build)
		if err != nil {
			return nil, err
		}
		// The CRDs only (the bundle's ValidatingAdmissionPolicy guards
		// upgrades of a cluster's CRDs).
		for _, obj := range gw {
			if u, ok := obj.(*unstructured.Unstructured); ok && u.GetKind() == "CustomResourceDefinition" {
				crds = append(crds, u)
			}
		}
	}
	if err := o.API.ApplyCRDs(ctx, crds); err != nil {
		return nil, err
	}
	objs := []runtime.Object{strictMTLS()}
	if wp != nil {
		// The upstream-Envoy overlay's EnvoyFilters (mesh-wide, and
		// bound to the waypoint's Gateway), and the injector templates
		// istiod renders the waypoint's Deployment and Service from.
		efs, err := istio.EnvoyFilters()
		if err != nil {
			return nil, err
		}
		objs = append(append(objs, efs...), istio.WaypointEnvoyFilter(wp.Spec.Identity.Namespace, waypointGateway)...)
		config, values, err := istio.InjectorTemplates(ctx, o.Build)
		if err != nil {
			return nil, err
		}
		inject := filepath.Join(d.dir, "var", "lib", "istio", "inject")
		if err := os.MkdirAll(inject, 0o755); err != nil {
			return nil, err
		}
		if err := errors.Join(os.WriteFile(filepath.Join(inject, "config"), []byte(config), 0o644),
			os.WriteFile(filepath.Join(inject, "values"), []byte(values), 0o644)); err != nil {
			return nil, err
		}
	}
	if o.Gateway != nil {
		objs = append(objs, gatewayObjects(o.Gateway)...)
	}
	if o.Objects != nil {
		more, err := o.Objects()
		if err != nil {
			return nil, err
		}
		objs = append(objs, more...)
	}
	if err := o.API.Client.Apply(ctx, objs); err != nil {
		return nil, err
	}
	if o.Gateway != nil {
		// The gateway's Service: its endpoints are how istiod finds the
		// gateway pod's ports (the Gateway's 443 is the pods' 8443).
		if err := o.API.Endpoints(ctx, topology.IdentityIngress.Namespace, ingressName, 10*time.Second); err != nil {
			return nil, err
		}
	}
	d.ObjectsTime = time.Since(t0)
	if err := d.startIstiod(ctx, kubeconfig); err != nil {
		return nil, err
	}
	if wp != nil && l.Opts.ZtunnelsFromXDS {
		// istiod renders the waypoint's Service from its Gateway; the
		// endpoints of its pod are what makes the Gateway Programmed,
		// with the address ztunnel sends the services' traffic to.
		if err := o.API.Endpoints(ctx, wp.Spec.Identity.Namespace, waypointGateway, 60*time.Second); err != nil {
			return nil, err
		}
	}
	d.StartTime = time.Since(t0)
	t1 := time.Now()
	var errs []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range l.Nodes {
		for _, p := range n.Pods {
			if !p.Spec.Sidecar && !(p.Spec.Waypoint && l.Opts.ZtunnelsFromXDS) && !(o.Gateway != nil && isIngress(p)) {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := d.startSidecar(ctx, p); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if l.Opts.ZtunnelsFromXDS {
		if err := l.StartZtunnels(ctx, d.ztunnelSpec); err != nil {
			return nil, err
		}
	}
	d.SidecarsTime = time.Since(t1)
	if l.Opts.Log != nil {
		fmt.Fprintf(l.Opts.Log, "istiod ready in %v, %d pilot-agents (sidecars, waypoint) and %d ztunnels from it in %v\n",
			d.StartTime.Round(time.Millisecond), len(d.Agents), d.Ztunnels, d.SidecarsTime.Round(time.Millisecond))
	}
	return d, nil
}

// forwardAPI lets a control plane in the fabric namespace (istiod,
// Linkerd's controllers) reach the API server on the host's loopback: a
// listener on the fabric's 127.0.0.1 whose connections meshbench carries
// to the API server. It returns the control plane's kubeconfig (in dir),
// naming that listener.
func (l *Lab) forwardAPI(api *labapi.Server, dir string) (string, error) {
	if err := l.forwardAPIIn(l.fabric, "the fabric", api); err != nil {
		return "", err
	}
	data, err := os.ReadFile(api.Kubeconfig)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kubeconfig")
	fwd := strings.Replace(string(data), api.URL, "https://127.0.0.1:"+strconv.Itoa(apiForwardPort), 1)
	return path, os.WriteFile(path, []byte(fwd), 0o600)
}

// forwardAPIIn listens on ns's 127.0.0.1:apiForwardPort (where
// forwardAPI's kubeconfig points) and carries every connection to the
// API server; the lab's Close stops it.
func (l *Lab) forwardAPIIn(ns *netns.NS, where string, api *labapi.Server) error {
	var lis net.Listener
	if err := ns.Do(func() (err error) {
		lis, err = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(apiForwardPort))
		return err
	}); err != nil {
		return fmt.Errorf("API server forwarder in %s: %w", where, err)
	}
	target := strings.TrimPrefix(api.URL, "https://")
	var conns sync.WaitGroup
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer conns.Done()
				forward(c, target)
			}()
		}
	}()
	l.sub.OnClose("API server forwarder in "+where, func() error {
		err := lis.Close()
		<-done
		return err
	})
	return nil
}

// forward copies c to and from a new connection to target until either
// side closes.
func forward(c net.Conn, target string) {
	defer c.Close()
	up, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}

// objects are the lab as Kubernetes objects: every pod with its IP,
// identity and a label per service it backs (each service's selector),
// sidecar pods marked as Istio's injector marks them.
func (l *Lab) objects() labapi.Objects {
	o := labapi.Objects{Namespaces: []string{"istio-system"}}
	for _, n := range l.Nodes {
		o.Nodes = append(o.Nodes, n.Name)
		for _, p := range n.Pods {
			app := p.Spec.Name
			if len(p.Spec.Services) > 0 {
				app = p.Spec.Services[0]
			}
			labels := map[string]string{"app": app, "service.istio.io/canonical-name": app}
			containers := []string{"app"}
			if p.Spec.Sidecar {
				labels["security.istio.io/tlsMode"] = "istio"
				containers = append(containers, "istio-proxy")
			}
			if isIngress(p) {
				// As Istio's ingress gateway chart labels its pods.
				labels, containers = ingressLabels(), []string{"istio-proxy"}
			}
			if p.Spec.Waypoint {
				// As Istio's waypoint template labels its pods: its
				// Gateway's Service selects them.
				labels = map[string]string{"app": waypointGateway, "service.istio.io/canonical-name": waypointGateway,
					ambientLabel: "none", "gateway.networking.k8s.io/gateway-name": waypointGateway,
					"gateway.networking.k8s.io/gateway-class-name": "istio-waypoint", "gateway.istio.io/managed": "istio.io-mesh-controller"}
				containers = []string{"istio-proxy"}
				// Every service of the namespace through the waypoint,
				// as a cluster cell labels its app namespace.
				o.NamespaceLabels = map[string]map[string]string{p.Spec.Identity.Namespace: {"istio.io/use-waypoint": waypointGateway}}
			}
			var annotations map[string]string
			if p.Spec.Enrolled {
				// In ambient, as the namespace label enrols a pod and
				// istio-cni marks it once its capture is in place (which
				// makes it an HBONE workload to istiod).
				labels[ambientLabel] = "ambient"
				annotations = map[string]string{ambientRedirection: "enabled"}
			}
			for _, s := range p.Spec.Services {
				labels[labelService+s] = "true"
			}
			o.Pods = append(o.Pods, labapi.Pod{Name: p.Spec.Name, Namespace: p.Spec.Identity.Namespace,
				ServiceAccount: p.Spec.Identity.ServiceAccount, Node: n.Name, IP: p.IP, Labels: labels,
				Annotations: annotations, Containers: containers})
		}
		if l.Opts.ZtunnelsFromXDS && n.enrolls() {
			// The node's ztunnel, as Istio's DaemonSet runs it: the CA
			// gives it certificates for its own node's pods only.
			o.Pods = append(o.Pods, labapi.Pod{Name: ztunnelPod(n), Namespace: "istio-system", ServiceAccount: ztunnelSA,
				Node: n.Name, IP: l.ztunnelIP(n), Labels: map[string]string{"app": "ztunnel"}, Containers: []string{"istio-proxy"}})
		}
	}
	for _, s := range l.Opts.Services {
		o.Services = append(o.Services, labapi.Service{Name: s.Name, Namespace: s.Namespace, VIP: l.Services[s.Name],
			Port: s.Port, TargetPort: s.TargetPort, PortName: "http", Selector: map[string]string{labelService + s.Name: "true"}})
	}
	return o
}

// portName is the name of a service's and its pods' ports, from which
// Istio takes their protocol: http (grpc for a gRPC service), or
// tcp-http (tcp-grpc) with protocol tcp, as the kube platform names them.
func portName(p topology.Protocol, grpc bool) string {
	name := "http"
	if grpc {
		name = "grpc"
	}
	if p == topology.ProtocolTCP {
		return "tcp-" + name
	}
	return name
}

// ServiceCIDR is the range the lab's API server allocates VIPs from: the
// lab's VIPs are x.y.255.N, and the API server keeps the range's first
// address (x.y.254.1) for its own "kubernetes" Service.
func ServiceCIDR(subnet netip.Prefix) netip.Prefix {
	b := subnet.Addr().As4()
	b[2], b[3] = 254, 0
	return netip.PrefixFrom(netip.AddrFrom4(b), 23)
}

func strictMTLS() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "security.istio.io/v1", "kind": "PeerAuthentication",
		"metadata": map[string]any{"name": "default", "namespace": "istio-system"},
		"spec":     map[string]any{"mtls": map[string]any{"mode": "STRICT"}},
	}}
}

// startIstiod starts pilot-discovery in the fabric namespace and waits
// for its /ready; the lab's Close stops it (and whatever restarted it).
func (d *Istiod) startIstiod(ctx context.Context, kubeconfig string) error {
	mesh := filepath.Join(d.dir, "mesh.yaml")
	if err := os.WriteFile(mesh, fmt.Appendf(nil, meshConfig, d.Addr), 0o644); err != nil {
		return err
	}
	d.kubeconfig = kubeconfig
	d.lab.sub.OnClose("istiod", func() error {
		if p := d.proc(); p != nil {
			p.Stop(5 * time.Second)
		}
		return nil
	})
	return d.runIstiod(ctx)
}

// istiodCmd is istiod's command: its arguments and environment, the same
// at every start.
func (d *Istiod) istiodCmd() *exec.Cmd {
	l := d.lab
	lo := func(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
	cmd := exec.Command(d.opts.Build.Path("pilot-discovery"), "discovery",
		"--kubeconfig="+d.kubeconfig, "--meshConfig="+filepath.Join(d.dir, "mesh.yaml"), "--domain=cluster.local",
		"--secureGRPCAddr="+d.Addr.String(), "--httpAddr="+lo(istiodHTTPPort), "--httpsAddr="+lo(15017),
		"--grpcAddr="+lo(15010), "--monitoringAddr="+lo(istiodMonPort))
	cmd.Dir = d.dir
	cmd.Env = append([]string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + d.dir, "KUBECONFIG=" + d.kubeconfig,
		"POD_NAMESPACE=istio-system", "POD_NAME=istiod-lab", "REVISION=default", "CLUSTER_ID=" + istiodClusterID,
		"PILOT_CERT_PROVIDER=istiod", "JWT_POLICY=third-party-jwt", "ENABLE_CA_SERVER=true"}, IstiodEnv...)
	if l.Opts.ZtunnelsFromXDS {
		// As Istio's chart sets them for the ambient profile.
		cmd.Env = append(cmd.Env, "PILOT_ENABLE_AMBIENT=true", "CA_TRUSTED_NODE_ACCOUNTS=istio-system/"+ztunnelSA)
		if l.waypoint() != nil {
			// No istio.double_hbone filter state (Istio's proxy only),
			// as the cluster's overlay sets it (istio.OverlaySettings).
			cmd.Env = append(cmd.Env, "AMBIENT_ENABLE_MULTI_NETWORK_WAYPOINT=false")
		}
	}
	return cmd
}

// runIstiod starts istiod's command and waits for its /ready.
func (d *Istiod) runIstiod(ctx context.Context) error {
	l := d.lab
	p, err := process.StartLogged("istiod", filepath.Join(d.dir, "logs"), d.istiodCmd(), l.fabric.Do)
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.Proc = p
	d.mu.Unlock()
	hc := l.fabric.HTTPClient(2*time.Second, false)
	return p.WaitHTTP(ctx, hc, "http://127.0.0.1:"+strconv.Itoa(istiodHTTPPort)+"/ready", 90*time.Second)
}

// proc is istiod's process now.
func (d *Istiod) proc() *process.Child {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.Proc
}

// agent is pod's pilot-agent now (nil: none).
func (d *Istiod) agent(pod string) *process.Child {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.Agents[pod]
}

// startSidecar writes pod p's pilot-agent files (its TokenRequest token
// for istiod's CA, the root certificate istiod published, Istio's
// bootstrap template) and starts `pilot-agent proxy sidecar` in the pod,
// with group 1337 (the capture exempts it), then waits for its readiness.
func (d *Istiod) startSidecar(ctx context.Context, p *Pod) error {
	api := d.opts.API.Client.Core.CoreV1()
	ns, sa := p.Spec.Identity.Namespace, p.Spec.Identity.ServiceAccount
	dir := filepath.Join(d.dir, "pods", p.Spec.Name)
	for _, sub := range []string{"var/run/secrets/tokens", "var/run/secrets/istio", "var/lib/istio/envoy", "etc/istio/proxy", "etc/istio/pod"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return err
		}
	}
	podObj, err := api.Pods(ns).Get(ctx, p.Spec.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	tok, err := d.token(ctx, ns, sa, p.Spec.Name)
	if err != nil {
		return err
	}
	root, err := d.rootCert(ctx, ns)
	if err != nil {
		return err
	}
	tmpl, err := os.ReadFile(d.opts.Build.Path(istio.BootstrapFile))
	if err != nil {
		return err
	}
	kind, workload, owner := "sidecar", p.Spec.Name, "kubernetes://apis/v1/namespaces/"+ns+"/pods/"+p.Spec.Name
	if p.Spec.Waypoint {
		// A waypoint as Istio's template runs it (pilot-agent proxy
		// waypoint for the Deployment istiod rendered), with Istio's
		// bootstrap less the metadata_discovery extension upstream
		// Envoy lacks.
		kind, workload, owner = "waypoint", waypointGateway, "kubernetes://apis/apps/v1/namespaces/"+ns+"/deployments/"+waypointGateway
		if tmpl, err = istio.UpstreamBootstrap(tmpl); err != nil {
			return err
		}
	}
	if isIngress(p) {
		// The ingress gateway as Istio's chart runs it: pilot-agent
		// proxy router for Deployment istio-ingressgateway.
		kind, workload, owner = "router", ingressName, "kubernetes://apis/apps/v1/namespaces/"+ns+"/deployments/"+ingressName
	}
	var labels strings.Builder
	for k, v := range podObj.Labels {
		fmt.Fprintf(&labels, "%s=%q\n", k, v)
	}
	files := map[string][]byte{
		"var/run/secrets/tokens/istio-token":            []byte(tok),
		"var/run/secrets/istio/root-cert.pem":           []byte(root),
		"var/lib/istio/envoy/envoy_bootstrap_tmpl.json": tmpl,
		"etc/istio/pod/labels":                          []byte(labels.String()),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	var ports []string
	for _, s := range d.lab.Opts.Services {
		for _, name := range p.Spec.Services {
			if name == s.Name {
				ports = append(ports, fmt.Sprintf(`{"name":%q,"containerPort":%d,"protocol":"TCP"}`, portName(d.opts.Protocol, slices.Contains(d.opts.GRPC, s.Name)), s.TargetPort))
			}
		}
	}
	cmd := exec.Command(d.opts.Build.Path("pilot-agent"), "proxy", kind,
		"--domain", ns+".svc.cluster.local", "--proxyLogLevel=warning", "--log_output_level=default:info")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + dir,
		"POD_NAME=" + p.Spec.Name, "POD_NAMESPACE=" + ns, "INSTANCE_IP=" + p.IP.String(), "SERVICE_ACCOUNT=" + sa,
		"HOST_IP=" + d.lab.addr(p.nodeIndex()+1, 1).String(),
		"ISTIO_META_CLUSTER_ID=" + istiodClusterID, "ISTIO_META_MESH_ID=cluster.local", "TRUST_DOMAIN=" + topology.TrustDomain,
		"ISTIO_META_WORKLOAD_NAME=" + workload, "ISTIO_META_OWNER=" + owner,
		"ISTIO_META_INTERCEPTION_MODE=REDIRECT",
		"PILOT_CERT_PROVIDER=istiod", "JWT_POLICY=third-party-jwt", "CA_ADDR=" + d.Addr.String(), "ISTIOD_SAN=" + istiodSAN,
		// proxyStatsMatcher (Istio's own knob, as the proxy.istio.io/config
		// annotation sets it) adds the counters the lab's verdicts read
		// (mTLS handshakes, requests) to the few Istio's bootstrap keeps.
		fmt.Sprintf("PROXY_CONFIG={binaryPath: %q, discoveryAddress: %q, configPath: ./etc/istio/proxy, concurrency: %d, proxyStatsMatcher: {inclusionPrefixes: [%q, %q, %q, %q, %q], inclusionSuffixes: [%q]}}",
			d.opts.Envoy, d.Addr.String(), d.opts.Concurrency, inboundHandshakes, inboundConnections, gatewayHandshakes, inboundTCP, waypointTCP, requestsCompleted),
	}
	switch {
	case isIngress(p):
		cmd.Env = append(cmd.Env, "ISTIO_META_NODE_NAME="+p.Node.Name)
	case p.Spec.Waypoint:
		cmd.Env = append(cmd.Env, "ISTIO_META_SERVICE_ACCOUNT="+sa, "ISTIO_META_NODE_NAME="+p.Node.Name)
	default:
		cmd.Env = append(cmd.Env, "ISTIO_META_APP_CONTAINERS=app", "ISTIO_META_POD_PORTS=["+strings.Join(ports, ",")+"]")
		// Group 1337, user root (mk below): the capture exempts the
		// group, and root can run the cached binaries (under a home
		// directory uid 1337 cannot enter), as the lab's own sidecar
		// Envoys run.
	}
	// cmd is the template: an exec.Cmd runs once, so every start (the
	// first, a fault's restart) gets a fresh one from mk.
	env, dirOf := cmd.Env, cmd.Dir
	mk := func() *exec.Cmd {
		c := exec.Command(cmd.Path, cmd.Args[1:]...)
		c.Dir, c.Env = dirOf, env
		if !p.Spec.Waypoint {
			process.SetGid(c, SidecarID)
		}
		return c
	}
	d.mu.Lock()
	d.agentCmds[p.Spec.Name] = mk
	d.mu.Unlock()
	d.lab.sub.OnClose("pilot-agent of "+p.Spec.Name, func() error {
		if c := d.agent(p.Spec.Name); c != nil {
			c.Stop(5 * time.Second)
		}
		return nil
	})
	return d.runAgent(ctx, p)
}

// runAgent starts pod p's pilot-agent command and waits for its
// readiness (Envoy's, through pilot-agent's :15021).
func (d *Istiod) runAgent(ctx context.Context, p *Pod) error {
	d.mu.Lock()
	mk := d.agentCmds[p.Spec.Name]
	d.mu.Unlock()
	c, err := process.StartLogged("pilot-agent-"+p.Spec.Name, filepath.Join(d.dir, "logs"), mk(), p.NS.Do)
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.Agents[p.Spec.Name] = c
	d.mu.Unlock()
	return c.WaitHTTP(ctx, p.NS.HTTPClient(2*time.Second, false), "http://127.0.0.1:15021/healthz/ready", 90*time.Second)
}

// token is a TokenRequest token for service account ns/sa bound to pod
// ns/pod, audience istio-ca: what a kubelet mounts for pilot-agent and
// ztunnel, and what istiod's CA checks with a TokenReview.
func (d *Istiod) token(ctx context.Context, ns, sa, pod string) (string, error) {
	api := d.opts.API.Client.Core.CoreV1()
	podObj, err := api.Pods(ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	expiry := int64(24 * 3600)
	tok, err := api.ServiceAccounts(ns).CreateToken(ctx, sa, &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{
		Audiences: []string{"istio-ca"}, ExpirationSeconds: &expiry,
		BoundObjectRef: &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod, UID: podObj.UID},
	}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token of %s/%s: %w", ns, pod, err)
	}
	return tok.Status.Token, nil
}

// ztunnelPod is the name of node n's ztunnel pod (in istio-system).
func ztunnelPod(n *Node) string { return "ztunnel-" + n.Name }

// ztunnelIP is node n's ztunnel's address: the node namespace's own on
// its pods' bridge (ztunnel runs in the node namespace).
func (l *Lab) ztunnelIP(n *Node) netip.Addr { return l.addr(n.index()+1, 1) }

// ztunnelSpec is node n's ztunnel configured by istiod: WDS and
// certificates from istiod at the fabric's address, its token (bound to
// its ztunnel pod) and istiod's root in files of its own.
func (d *Istiod) ztunnelSpec(ctx context.Context, n *Node) (ztunnel.Spec, error) {
	dir := filepath.Join(d.dir, "ztunnels", n.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ztunnel.Spec{}, err
	}
	tok, err := d.token(ctx, "istio-system", ztunnelSA, ztunnelPod(n))
	if err != nil {
		return ztunnel.Spec{}, err
	}
	root, err := d.rootCert(ctx, "istio-system")
	if err != nil {
		return ztunnel.Spec{}, err
	}
	tokPath, rootPath := filepath.Join(dir, "istio-token"), filepath.Join(dir, "root-cert.pem")
	if err := os.WriteFile(tokPath, []byte(tok), 0o600); err != nil {
		return ztunnel.Spec{}, err
	}
	if err := os.WriteFile(rootPath, []byte(root), 0o644); err != nil {
		return ztunnel.Spec{}, err
	}
	d.Ztunnels++
	addr := "https://" + d.Addr.String()
	return ztunnel.Spec{CAAddress: addr, RootCAPath: rootPath, Token: tokPath, ClusterID: istiodClusterID,
		XDS: &ztunnel.XDS{Address: addr, Hostname: istiodSAN, PodName: ztunnelPod(n), PodNamespace: "istio-system",
			ServiceAccount: ztunnelSA, InstanceIP: d.lab.ztunnelIP(n).String()}}, nil
}

// rootCert is istiod's root certificate as it publishes it in every
// namespace (ConfigMap istio-ca-root-cert), waiting until it does.
func (d *Istiod) rootCert(ctx context.Context, ns string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		cm, err := d.opts.API.Client.Core.CoreV1().ConfigMaps(ns).Get(ctx, "istio-ca-root-cert", metav1.GetOptions{})
		if err == nil && cm.Data["root-cert.pem"] != "" {
			return cm.Data["root-cert.pem"], nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("istiod published no root certificate in namespace %s: %v", ns, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Syncz is istiod's ACK table: every connected proxy and, per xDS type,
// whether it ACKed the last push (istiod's /debug/syncz, as `istioctl x
// internal-debug syncz` gives it on a cluster).
func (d *Istiod) Syncz(ctx context.Context) ([]istio.ProxySync, error) {
	hc := d.lab.fabric.HTTPClient(5*time.Second, false)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(istiodMonPort)+"/debug/syncz", nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("istiod's syncz: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("istiod's syncz: %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	return istio.ParseSyncz(b)
}

// WaitACKed waits until istiod lists every sidecar and ztunnel and each has ACKed
// every type; on timeout it returns the last table and what is missing.
func (d *Istiod) WaitACKed(ctx context.Context, timeout time.Duration) ([]istio.ProxySync, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		ps, err := d.Syncz(ctx)
		var missing []string
		if err == nil {
			missing = istio.NotACKed(ps)
			if want := len(d.Agents) + d.Ztunnels; len(ps) < want {
				missing = append(missing, fmt.Sprintf("%d of %d proxies connected", len(ps), want))
			}
			if len(missing) == 0 {
				return ps, nil
			}
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = errors.New(strings.Join(missing, "; "))
			}
			return ps, fmt.Errorf("istiod's ACK table after %v: %w", timeout, err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// nodeIndex is the index of p's node in the lab.
func (p *Pod) nodeIndex() int { return p.Node.index() }

// index is n's index in the lab.
func (n *Node) index() int {
	i, _ := strconv.Atoi(strings.TrimPrefix(n.Name, "node"))
	return i - 1
}
