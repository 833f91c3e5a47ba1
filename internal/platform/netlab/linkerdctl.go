package netlab

import (
	"context"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	appsv1 "k8s.io/api/apps/v1"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshbench/meshbench/internal/measure/probe"
	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/mesh/linkerd"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/proxy"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/release"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform/kube/labapi"
	"github.com/meshbench/meshbench/internal/platform/kube/policy"
	"github.com/meshbench/meshbench/internal/sys/pki"
	"github.com/meshbench/meshbench/internal/sys/process"
)

// ControlPlaneLinkerd is the control plane of Linkerd's own controllers
// (identity, destination, policy) against the lab's API server, for mode
// linkerd (LinkerdControllers).
const ControlPlaneLinkerd = "linkerd"

// linkerdNamespace is where Linkerd's chart installs its control plane.
const linkerdNamespace = "linkerd"

// The controllers' admin ports (readiness, metrics) on their pods'
// loopback; their gRPC ports are linkerd.ControllerPorts on every address
// of their pods.
const (
	identityAdminPort    = 9990
	destinationAdminPort = 9996
	policyAdminPort      = 9997
)

// identityPod and destinationPod are the controllers' pods' names (the
// destination and policy controllers take theirs as HOSTNAME: their
// leases' holder).
const (
	identityPod    = "linkerd-identity-lab"
	destinationPod = "linkerd-destination-lab"
)

// identityTrustRoots is where Linkerd's identity controller reads the
// trust anchors (a fixed path in its code: k8s.MountPathTrustRootsPEM,
// under /var/run, which is /run here).
const identityTrustRoots = "/run/linkerd/identity/trust-roots/ca-bundle.crt"

// identityAudience is the audience of the token a proxy presents to
// Linkerd's identity controller (its injector's projected volume; the
// controller's TokenReview asks for it).
const identityAudience = "identity.l5d.io"

// LinkerdControllersOptions start Linkerd's controllers on a lab.
type LinkerdControllersOptions struct {
	Build release.Build
	// API is the lab's API server; the lab's objects are created in it.
	API *labapi.Server
	// Objects, when set, are applied before the controllers start: a
	// cell's Server, AuthorizationPolicy and MeshTLSAuthentication
	// objects.
	Objects func() ([]runtime.Object, error)
	// Proxy is the linkerd2-proxy binary of the controllers' pods.
	Proxy string
}

// controllerPod is one of the controllers' pods as Linkerd's chart makes
// it: its name, service account, component label and containers, and
// here its address on the fabric bridge (x.y.0.idx; the nodes' uplinks
// are .11…) and the names of its namespace and veth.
type controllerPod struct {
	name, sa, component string
	containers          []string
	idx                 int
	ns, veth            string
	// loopback are the controllers' ports its proxy reaches on its own
	// loopback (the chart's localhost.:PORT), also the inbound ports its
	// proxy watches; requireTLS its proxy's
	// LINKERD2_PROXY_INBOUND_PORTS_REQUIRE_TLS (the chart's identity pod:
	// 8080, since it "cannot discover policies" before it is certified).
	loopback, requireTLS []int
}

// The identity pod (the identity controller) and the destination pod
// (the destination and policy controllers).
var (
	identityPodSpec = controllerPod{name: identityPod, sa: "linkerd-identity", component: "identity",
		containers: []string{"identity", "linkerd-proxy"}, idx: 4, ns: "li", veth: "liv",
		loopback: []int{linkerd.ControllerPorts.Identity}, requireTLS: []int{linkerd.ControllerPorts.Identity}}
	destinationPodSpec = controllerPod{name: destinationPod, sa: "linkerd-destination", component: "destination",
		containers: []string{"destination", "policy", "linkerd-proxy"}, idx: 5, ns: "ld", veth: "ldv",
		loopback: []int{linkerd.ControllerPorts.Destination, linkerd.ControllerPorts.Policy}}
)

// LinkerdControllers are Linkerd's identity, destination and policy
// controllers against the lab's API server, as Linkerd's chart runs them
// (its arguments): identity in a pod of its own, destination and policy
// in another, each pod with its own linkerd2-proxy; each proxy's
// certificate from the identity controller's issuer.
type LinkerdControllers struct {
	Identity, Destination, Policy *process.Child
	// Anchor is the trust anchor; its intermediate (the issuer, CN
	// identity.linkerd.cluster.local) is the identity controller's.
	Anchor *pki.CA
	// StartTime is from the start of StartLinkerdControllers until the
	// three controllers are ready (objects, CRDs and policies included);
	// Ready each controller's own time from its start to its readiness.
	StartTime time.Duration
	Ready     map[string]time.Duration
	// ObjectsTime is the part of StartTime before the controllers' start
	// (the lab's objects, CRDs and policies in the API server).
	ObjectsTime time.Duration
	lab         *Lab
	opts        LinkerdControllersOptions
	dir         string
	// cmds make each controller's command again, ready its readiness
	// URL (a restart: the same arguments, as a kubelet restarts a
	// container); mu guards them and the three processes, which a
	// fault's restart replaces (restart.go).
	cmds  map[string]func() *exec.Cmd
	ready map[string]string
	mu    sync.Mutex
	// IdentityPod and DestinationPod are the controllers' pods,
	// IdentityProxy and DestinationProxy their linkerd2-proxies.
	IdentityPod, DestinationPod     *Pod
	IdentityProxy, DestinationProxy *linkerd.Mesh
}

// StartLinkerdControllers makes the lab's objects in o.API as Linkerd's
// injector would have them (every pod meshed: labelled with the control
// plane's namespace, its linkerd-proxy container with the proxy's listen
// addresses), Linkerd's CRDs from its own install, the cell's policy
// objects, and starts the identity, destination and policy controllers
// in their pods with the arguments Linkerd's chart gives them, and the
// pods' proxies (identity's first: it certifies itself on its loopback).
// What it starts is stopped by the lab's Close. Controllers then lets
// linkerd.Up mesh the pods with them.
func (l *Lab) StartLinkerdControllers(ctx context.Context, o LinkerdControllersOptions) (*LinkerdControllers, error) {
	t0 := time.Now()
	dir, err := filepath.Abs(filepath.Join(l.Opts.Dir, "linkerd-controllers"))
	if err != nil {
		return nil, err
	}
	c := &LinkerdControllers{lab: l, opts: o, dir: dir, Ready: map[string]time.Duration{},
		cmds: map[string]func() *exec.Cmd{}, ready: map[string]string{}}
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return nil, err
	}
	kubeconfig, err := l.forwardAPI(o.API, dir)
	if err != nil {
		return nil, err
	}
	if o.Proxy == "" {
		return nil, errors.New("linkerd's controllers: no linkerd2-proxy binary for their pods")
	}
	if c.IdentityPod, err = l.controllerPod(o.API, identityPodSpec); err != nil {
		return nil, err
	}
	if c.DestinationPod, err = l.controllerPod(o.API, destinationPodSpec); err != nil {
		return nil, err
	}
	if err := o.API.Populate(ctx, l.linkerdObjects([]controllerPod{identityPodSpec, destinationPodSpec}, []*Pod{c.IdentityPod, c.DestinationPod})); err != nil {
		return nil, err
	}
	crds, err := release.CRDs(ctx, o.Build)
	if err != nil {
		return nil, err
	}
	if err := o.API.ApplyCRDs(ctx, crds); err != nil {
		return nil, err
	}
	if err := c.destinationDeployment(ctx); err != nil {
		return nil, err
	}
	if o.Objects != nil {
		objs, err := o.Objects()
		if err != nil {
			return nil, err
		}
		if err := o.API.Client.Apply(ctx, objs); err != nil {
			return nil, err
		}
	}
	issuerDir, anchorFile, err := c.certs()
	if err != nil {
		return nil, err
	}
	// The issuer's key is not kept with the results.
	l.sub.OnClose("Linkerd's identity issuer", func() error { return os.RemoveAll(issuerDir) })
	c.ObjectsTime = time.Since(t0)
	if err := c.start(ctx, kubeconfig, issuerDir, anchorFile); err != nil {
		return nil, err
	}
	if c.IdentityProxy, err = c.upPodProxy(ctx, c.IdentityPod, identityPodSpec); err != nil {
		return nil, err
	}
	if c.DestinationProxy, err = c.upPodProxy(ctx, c.DestinationPod, destinationPodSpec); err != nil {
		return nil, err
	}
	// Both pods' proxies stop together: each holds a connection to the
	// other (identity's policy watches at destination's; destination's
	// to identity's), and one stopped alone drains until its grace runs
	// out (proxy.StopGrace) while the other's streams stay open. Each
	// Mesh.Close is safe to call again.
	c.lab.sub.OnClose("Linkerd's controllers' pods' proxies", func() error {
		errs := make(chan error, 2)
		for _, m := range []*linkerd.Mesh{c.IdentityProxy, c.DestinationProxy} {
			go func() { errs <- m.Close() }()
		}
		return errors.Join(<-errs, <-errs)
	})
	c.StartTime = time.Since(t0)
	if l.Opts.Log != nil {
		fmt.Fprintf(l.Opts.Log, "Linkerd's controllers ready in %v (identity %v, destination %v, policy %v after their start)\n",
			c.StartTime.Round(time.Millisecond), c.Ready["identity"].Round(time.Millisecond),
			c.Ready["destination"].Round(time.Millisecond), c.Ready["policy"].Round(time.Millisecond))
	}
	return c, nil
}

// linkerdObjects are the lab as Kubernetes objects with every pod as
// Linkerd's proxy injector leaves it: label linkerd.io/control-plane-ns
// (what makes destination hint mTLS and HTTP/2 to it), the identity
// annotations, and a linkerd-proxy container whose environment holds the
// proxy's listen addresses (destination reads the inbound port there).
// The controllers' pods (specs[i] made pods[i]) are there as Linkerd's
// chart labels them, with their controllers' containers and their
// proxies.
func (l *Lab) linkerdObjects(specs []controllerPod, pods []*Pod) labapi.Objects {
	o := l.objects()
	o.Namespaces = []string{linkerdNamespace}
	for i, spec := range specs {
		pod := pods[i]
		o.Pods = append(o.Pods, labapi.Pod{Name: spec.name, Namespace: linkerdNamespace, ServiceAccount: spec.sa,
			Node: l.Nodes[0].Name, IP: pod.IP,
			Labels:     map[string]string{"linkerd.io/control-plane-component": spec.component, "linkerd.io/control-plane-ns": linkerdNamespace},
			Containers: spec.containers})
	}
	for i := range o.Pods {
		p := &o.Pods[i]
		p.Labels["linkerd.io/control-plane-ns"] = linkerdNamespace
		p.Labels["linkerd.io/workload-ns"] = p.Namespace
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations["linkerd.io/identity-mode"] = "default"
		p.Annotations["linkerd.io/proxy-version"] = release.ProxyVersion
		p.Annotations["linkerd.io/created-by"] = "meshbench (the lab stands in for linkerd/proxy-injector " + release.Version + ")"
		if p.Namespace != linkerdNamespace {
			p.Containers = []string{"app", "linkerd-proxy"}
		}
		env := func(name string, port int) corev1.EnvVar {
			return corev1.EnvVar{Name: name, Value: "0.0.0.0:" + strconv.Itoa(port)}
		}
		p.ContainerSpecs = map[string]corev1.Container{"linkerd-proxy": {
			Env: []corev1.EnvVar{
				env("LINKERD2_PROXY_INBOUND_LISTEN_ADDR", proxy.PortInbound),
				env("LINKERD2_PROXY_ADMIN_LISTEN_ADDR", proxy.PortAdmin),
				env("LINKERD2_PROXY_CONTROL_LISTEN_ADDR", proxy.PortControl),
			},
			Ports: []corev1.ContainerPort{{Name: "linkerd-proxy", ContainerPort: proxy.PortInbound}, {Name: "linkerd-admin", ContainerPort: proxy.PortAdmin}},
		}}
		// The app's ports: those of the services the pod backs.
		for _, s := range l.Opts.Services {
			if p.Labels[labelService+s.Name] == "true" {
				app := p.ContainerSpecs["app"]
				app.Ports = append(app.Ports, corev1.ContainerPort{Name: "http", ContainerPort: int32(s.TargetPort)})
				p.ContainerSpecs["app"] = app
			}
		}
	}
	return o
}

// destinationDeployment makes the Deployment linkerd-destination, which
// the policy controller fetches to own its Lease (no controller runs it
// here: it has no pods).
func (c *LinkerdControllers) destinationDeployment(ctx context.Context) error {
	labels := map[string]string{"linkerd.io/control-plane-component": "destination"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "linkerd-destination", Namespace: linkerdNamespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "destination", Image: "meshbench.invalid/lab-pod"}}},
			},
		},
	}
	_, err := c.opts.API.Client.Core.AppsV1().Deployments(linkerdNamespace).Create(ctx, d, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("deployment linkerd-destination: %w", err)
	}
	return nil
}

// certs makes the trust anchor and the identity issuer (EC P-256, the
// issuer an intermediate with path length 0, as Linkerd wants them) and
// writes the issuer as the identity controller reads it (crt.pem,
// key.pem: scheme linkerd.io/tls) and the anchor's certificate.
func (c *LinkerdControllers) certs() (issuerDir, anchorFile string, err error) {
	if c.Anchor, err = pki.NewTrustAnchor(pkix.Name{CommonName: "root.linkerd.cluster.local"}, pki.Options{}); err != nil {
		return "", "", err
	}
	issuer, err := c.Anchor.IssueIntermediate(pkix.Name{CommonName: "identity.linkerd.cluster.local"}, pki.Options{})
	if err != nil {
		return "", "", err
	}
	issuerDir = filepath.Join(c.dir, "issuer")
	files, err := issuer.WriteFiles(issuerDir)
	if err != nil {
		return "", "", err
	}
	anchorFile = filepath.Join(c.dir, "ca-bundle.crt")
	if err := errors.Join(os.Rename(files.Cert, filepath.Join(issuerDir, "crt.pem")), os.Rename(files.Key, filepath.Join(issuerDir, "key.pem")),
		os.WriteFile(anchorFile, c.Anchor.CertPEM(), 0o644)); err != nil {
		return "", "", err
	}
	return issuerDir, anchorFile, nil
}

// start starts the three controllers in their pods, each with the
// arguments Linkerd's chart (edge-26.8.3's `linkerd install`) gives it,
// and waits for their readiness.
func (c *LinkerdControllers) start(ctx context.Context, kubeconfig, issuerDir, anchorFile string) error {
	l := c.lab
	ctl := c.opts.Build.Path(release.Controller)
	lo := func(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
	ports := linkerd.ControllerPorts
	// The controllers listen on every address of their pods, as the
	// chart has them (":8080", ":8086"): their proxy's inbound hands each
	// connection on to its original destination, the pod's IP, and their
	// proxy reaches them on the pod's loopback. Their admin ports are on
	// the loopback only.
	grpc := func(port int) string { return "0.0.0.0:" + strconv.Itoa(port) }
	// identity reads the trust anchors at a fixed path: it starts in a
	// mount namespace of its own with a tmpfs on /run holding them (the
	// host's /run is untouched), inside its pod's network namespace.
	identity := func() *exec.Cmd {
		return exec.Command("/usr/bin/unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
			`mount -t tmpfs -o mode=0755 lab-linkerd /run && mkdir -p "$(dirname "$2")" && cp "$1" "$2" && shift 2 && exec "$@"`,
			"sh", anchorFile, identityTrustRoots,
			ctl, "identity", "-log-level=info", "-log-format=plain", "-controller-namespace="+linkerdNamespace,
			"-identity-trust-domain=cluster.local", "-identity-issuance-lifetime=24h0m0s", "-identity-clock-skew-allowance=20s",
			"-identity-scheme=linkerd.io/tls", "-enable-pprof=false", "-kube-apiclient-qps=100", "-kube-apiclient-burst=200",
			"-addr="+grpc(ports.Identity), "-admin-addr="+lo(identityAdminPort), "-issuer="+issuerDir, "-kubeconfig="+kubeconfig)
	}
	destination := func() *exec.Cmd {
		return exec.Command(ctl, "destination", "-controller-namespace="+linkerdNamespace,
			"-outbound-transport-mode=transport-header", "-enable-h2-upgrade=true", "-log-level=info", "-log-format=plain",
			"-enable-endpoint-slices=true", "-cluster-domain=cluster.local", "-identity-trust-domain=cluster.local",
			"-default-opaque-ports=25,587,3306,4444,5432,6379,9300,11211", "-enable-ipv6=false", "-enable-pprof=false",
			`--meshed-http2-client-params={"keep_alive":{"interval":{"seconds":10},"timeout":{"seconds":3},"while_idle":true}}`,
			"-addr="+grpc(ports.Destination), "-metrics-addr="+lo(destinationAdminPort), "-kubeconfig="+kubeconfig)
	}
	// The admission webhook is off: nothing calls it (no API server
	// webhook configuration), and it would need a serving certificate.
	policy := func() *exec.Cmd {
		return exec.Command(c.opts.Build.Path(release.PolicyController),
			"--admin-addr="+lo(policyAdminPort), "--control-plane-namespace="+linkerdNamespace, "--grpc-addr="+grpc(ports.Policy),
			"--admission-controller-disabled",
			"--cluster-networks="+l.Opts.Subnet.String(), "--identity-domain=cluster.local", "--cluster-domain=cluster.local",
			"--default-policy=all-unauthenticated", "--log-level=info", "--log-format=plain",
			"--default-opaque-ports=25,587,3306,4444,5432,6379,9300,11211", "--global-egress-network-namespace=linkerd-egress",
			"--probe-networks=0.0.0.0/0,::/0")
	}
	for _, s := range []struct {
		name  string
		cmd   func() *exec.Cmd
		env   []string
		ready string
	}{
		{"identity", identity, nil, "http://" + lo(identityAdminPort) + "/ready"},
		// destination and policy run in the destination pod on a
		// cluster and take its name for their leases.
		{"destination", destination, []string{"HOSTNAME=" + destinationPod}, "http://" + lo(destinationAdminPort) + "/ready"},
		{"policy", policy, []string{"HOSTNAME=" + destinationPod}, "http://" + lo(policyAdminPort) + "/ready"},
	} {
		c.cmds[s.name] = func() *exec.Cmd {
			cmd := s.cmd()
			cmd.Dir = c.dir
			cmd.Env = append(slices.Clone(s.env), "KUBECONFIG="+kubeconfig, "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME="+c.dir)
			return cmd
		}
		c.ready[s.name] = s.ready
		l.sub.OnClose("Linkerd's "+s.name+" controller", func() error {
			if p := c.proc(s.name); p != nil {
				p.Stop(5 * time.Second)
			}
			return nil
		})
		t := time.Now()
		if err := c.run(ctx, s.name); err != nil {
			return err
		}
		c.Ready[s.name] = time.Since(t)
	}
	return nil
}

// field is controller name's process field.
func (c *LinkerdControllers) field(name string) **process.Child {
	switch name {
	case "identity":
		return &c.Identity
	case "destination":
		return &c.Destination
	}
	return &c.Policy
}

// proc is controller name's process now.
func (c *LinkerdControllers) proc(name string) *process.Child {
	c.mu.Lock()
	defer c.mu.Unlock()
	return *c.field(name)
}

// run starts controller name's command and waits for its readiness.
func (c *LinkerdControllers) run(ctx context.Context, name string) error {
	ns := c.DestinationPod.NS
	if name == "identity" {
		ns = c.IdentityPod.NS
	}
	p, err := process.StartLogged("linkerd-"+name, filepath.Join(c.dir, "logs"), c.cmds[name](), ns.Do)
	if err != nil {
		return err
	}
	c.mu.Lock()
	*c.field(name) = p
	c.mu.Unlock()
	if err := p.WaitHTTP(ctx, ns.HTTPClient(2*time.Second, false), c.ready[name], 90*time.Second); err != nil {
		return fmt.Errorf("linkerd's %s controller: %w", name, err)
	}
	return nil
}

// Controllers are what linkerd.Up needs to mesh the lab's pods with the
// controllers: their pods' addresses and each pod's TokenRequest token
// (audience identity.l5d.io, bound to the pod), which the identity
// controller reviews.
func (c *LinkerdControllers) Controllers() *linkerd.Controllers {
	return &linkerd.Controllers{Token: c.token, IdentityPod: c.IdentityPod.IP, DestinationPod: c.DestinationPod.IP}
}

// token is pod p's TokenRequest token (audience identity.l5d.io, bound
// to the pod), which the identity controller reviews.
func (c *LinkerdControllers) token(ctx context.Context, p linkerd.Pod) (string, error) {
	api := c.opts.API.Client.Core.CoreV1()
	ns, sa := p.Identity.Namespace, p.Identity.ServiceAccount
	pod, err := api.Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	expiry := int64(24 * 3600)
	tok, err := api.ServiceAccounts(ns).CreateToken(ctx, sa, &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{
		Audiences: []string{identityAudience}, ExpirationSeconds: &expiry,
		BoundObjectRef: &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: pod.UID},
	}}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return tok.Status.Token, nil
}

// controllerPod makes one of the controllers' pods: a namespace on the
// fabric bridge at x.y.0.idx, routed to every node's pod subnet through
// that node's uplink, with a forwarder to the API server on its loopback
// (on a cluster the controllers' proxies skip the API server's ports
// outbound). The lab's Close removes it.
func (l *Lab) controllerPod(api *labapi.Server, spec controllerPod) (*Pod, error) {
	p := &Pod{Spec: PodSpec{Name: spec.name, Identity: topology.Identity{Namespace: linkerdNamespace, ServiceAccount: spec.sa}},
		IP: l.addr(0, spec.idx), Node: l.Nodes[0]}
	var err error
	if p.NS, err = l.sub.Namespace(spec.ns); err != nil {
		return nil, err
	}
	if err := l.sub.Veth(l.fbr, p.NS, spec.veth, "eth0", netip.PrefixFrom(p.IP, 24), false); err != nil {
		return nil, err
	}
	for j := range l.Nodes {
		if err := p.NS.Route("eth0", netip.PrefixFrom(l.addr(j+1, 0), 24), l.addr(0, 10+j+1)); err != nil {
			return nil, err
		}
	}
	return p, l.forwardAPIIn(p.NS, "pod "+spec.name, api)
}

// upPodProxy starts controller pod p's linkerd2-proxy as Linkerd's
// injector configures a control-plane pod's: proxy-init's capture, its
// certificate from the identity controller, and its own controllers on
// its loopback in plaintext (spec.loopback: the chart's localhost.:PORT;
// the identity pod's proxy so certifies itself), the other pod's at its
// IP over TLS, verifying its identity. Its inbound terminates the other
// proxies' TLS to its controllers' ports and hands them plaintext.
func (c *LinkerdControllers) upPodProxy(ctx context.Context, p *Pod, spec controllerPod) (*linkerd.Mesh, error) {
	tmp, err := os.MkdirTemp("", "meshbench-"+spec.name+"-")
	if err != nil {
		return nil, err
	}
	c.lab.sub.OnClose(spec.name+"'s proxy files", func() error { return os.RemoveAll(tmp) })
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, err
	}
	ctl := c.Controllers()
	// The chart's proxy settings for its controllers' pods: inbound
	// all-unauthenticated until the policy controller answers.
	ctl.Loopback, ctl.DefaultInboundPolicy, ctl.RequireTLSPorts = spec.loopback, "all-unauthenticated", spec.requireTLS
	pod := linkerd.Pod{Name: p.Spec.Name, Identity: p.Spec.Identity, IP: p.IP, NS: p.NS, Meshed: true, Ports: spec.loopback}
	m, err := linkerd.Up(ctx, linkerd.Options{Proxy: c.opts.Proxy, Dir: tmp, CA: c.Anchor, Pods: []linkerd.Pod{pod},
		ProfileNetworks: []netip.Prefix{c.lab.Opts.Subnet}, Controllers: ctl})
	if m != nil {
		c.lab.sub.OnClose(spec.name+"'s proxy", m.Close)
	}
	if err != nil {
		return nil, fmt.Errorf("%s's proxy: %w", spec.name, err)
	}
	return m, nil
}

// Died says which controller exited, except those named in except (being
// restarted).
func (c *LinkerdControllers) Died(except ...string) error {
	c.mu.Lock()
	procs := map[string]*process.Child{"identity": c.Identity, "destination": c.Destination, "policy": c.Policy}
	c.mu.Unlock()
	for name, p := range procs {
		if p != nil && p.Exited() && !slices.Contains(except, name) {
			return fmt.Errorf("linkerd's %s controller died (log %s)", name, p.LogFile)
		}
	}
	return nil
}

// PodsMetrics are the controllers' pods' proxies' admin /metrics, by
// pod name (identityPod, destinationPod).
func (c *LinkerdControllers) PodsMetrics(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	var errs []error
	for _, m := range []*linkerd.Mesh{c.IdentityProxy, c.DestinationProxy} {
		for pod, p := range m.Proxies {
			text, err := p.Metrics(ctx)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s's proxy: %w", pod, err))
				continue
			}
			out[pod] = text
		}
	}
	return out, errors.Join(errs...)
}

// PodsInbound are the controllers' pods' proxies' counters (PodsMetrics
// parsed), by pod name: their inbound requests, over TLS by client
// identity or in plaintext, are the proxies' requests to the
// controllers; their outbound control requests, those to the other
// pod's controllers.
func PodsInbound(metrics map[string]string) (map[string]proxy.Stats, error) {
	out := map[string]proxy.Stats{}
	var errs []error
	for pod, text := range metrics {
		s, err := proxy.ParseStats(strings.NewReader(text))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s's proxy: %w", pod, err))
			continue
		}
		out[pod] = s
	}
	return out, errors.Join(errs...)
}

// Certified is how many certificates the identity controller issued: its
// own gRPC counter of Certify calls answered OK (its admin /metrics).
func (c *LinkerdControllers) Certified(ctx context.Context) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	text, err := probe.Get(ctx, c.IdentityPod.NS.HTTPClient(5*time.Second, false), "http://127.0.0.1:"+strconv.Itoa(identityAdminPort)+"/metrics", 8<<20)
	if err != nil {
		return 0, fmt.Errorf("linkerd's identity controller's metrics: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return 0, fmt.Errorf("linkerd's identity controller's metrics: %w", err)
	}
	var n float64
	for _, m := range fams["grpc_server_handled_total"].GetMetric() {
		l := map[string]string{}
		for _, lp := range m.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		if l["grpc_method"] == "Certify" && l["grpc_code"] == "OK" {
			n += m.GetCounter().GetValue()
		}
	}
	return n, nil
}

// supportsLinkerdControllers returns why Linkerd's controllers cannot
// configure a topology with options o yet (nil: they can): mode linkerd,
// static or faces (faces' calls go to its backends' VIPs, which the
// caller's proxy-init capture hands to its proxy: destination resolves
// them as on a cluster); mode none needs no control plane; Linkerd's
// modes' own limits are supportsLinkerd's.
func supportsLinkerdControllers(o topology.Options) []error {
	var errs []error
	switch o.Mode {
	case topology.ModeNone, topology.ModeLinkerd:
	default:
		errs = append(errs, fmt.Errorf("mesh %s with control plane linkerd: Linkerd's controllers configure mesh linkerd only (and none); use --control-plane lab or istiod", o.Mode))
	}
	return errs
}

// startLinkerdControllers starts the lab's API server and Linkerd's
// controllers for topology t, with the cell's ALLOW rules as Server,
// AuthorizationPolicy and MeshTLSAuthentication objects, as a cluster
// cell applies them (policy.PolicyObjects). The lab's Close stops them.
func startLinkerdControllers(ctx context.Context, l *Lab, t *topology.Topology, s *Substrate, dir string) (apiUse, *LinkerdControllers, error) {
	use, err := s.labAPI(ctx, l, dir)
	if err != nil {
		return use, nil, err
	}
	c, err := l.StartLinkerdControllers(ctx, LinkerdControllersOptions{Build: s.Linkerd, API: use.srv, Objects: linkerdCellObjects(t), Proxy: s.LinkerdProxy})
	if err != nil {
		return use, nil, err
	}
	return use, c, nil
}

// linkerdCellObjects are the cell's Linkerd policy objects as a cluster
// cell gets them (none without policies).
func linkerdCellObjects(t *topology.Topology) func() ([]runtime.Object, error) {
	return func() ([]runtime.Object, error) {
		m, ok := mesh.Get(string(topology.ModeLinkerd))
		if !ok {
			return nil, errors.New("no linkerd mesh descriptor")
		}
		c := policy.Cell{Mesh: m, Options: t.Options, AppNamespace: "default", LoadNamespace: "default",
			AppPort: topology.PortApp, LoadServiceAccount: topology.IdentityClient.ServiceAccount,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "meshbench"}}
		objs := policy.MeshObjects(c)
		pols, err := policy.PolicyObjects(c)
		return append(objs, pols...), err
	}
}
