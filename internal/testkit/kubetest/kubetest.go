// Package kubetest runs a real, throw-away Kubernetes control plane for
// tests: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
// metrics-server (so metrics.k8s.io answers, as on a real cluster), and
// nodes: kwok's (simulated nodes that run pods instantly and serve their
// metrics and logs) or, with Options.RealNodes, real ones (package nodes:
// containerd, runc, kubelet, kube-proxy, CoreDNS, each node in its own
// network namespace) running real containers of meshbench's image.
// Everything listens on 127.0.0.1 only (with real nodes, the apiserver on
// the cluster's bridge address), on ports chosen at start, so several test
// packages can each run their own cluster at once.
//
// The binaries are built from the Go module proxy by `make k8s-tools`
// (hack/k8s/build-tools.sh, hack/k8s/build-nodes.sh); etcd is Debian's
// etcd-server. Test packages share one cluster through Main and Require.
package kubetest

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/meshbench/meshbench/internal/testkit/nodes"
)

// Versions of the pinned tools; hack/k8s/build-tools.sh builds the same.
const (
	KubernetesVersion    = "v1.36.3"
	KwokVersion          = "v0.8.0"
	MetricsServerVersion = "v0.9.0"
)

// BinEnv names the environment variable that overrides the binaries' dir.
const BinEnv = "MESHBENCH_K8S_BIN"

// MetricResolution is metrics-server's scrape interval here: the lowest it
// accepts (10s; it also insists that --kubelet-request-timeout is at most
// 90% of it). A new pod shows in metrics.k8s.io after about three scrapes:
// kwok's CPU counter for it reads 0 at the first one, which metrics-server
// discards, and a CPU rate needs two more points. Expect 20–40 s.
const MetricResolution = 10 * time.Second

// Kwok annotations that set a pod's simulated usage (read by the
// usage-from-annotation ClusterResourceUsage): a CPU and a memory quantity.
const (
	AnnotationUsageCPU    = "kwok.x-k8s.io/usage-cpu"
	AnnotationUsageMemory = "kwok.x-k8s.io/usage-memory"
)

const (
	metricsServiceName      = "metrics-server"
	metricsServiceNamespace = "kube-system"
	metricsAPIService       = "v1beta1.metrics.k8s.io"
	serviceCIDR             = "10.0.0.0/24"
	// Pod IPs that kwok hands out. Nothing ever sends traffic to them:
	// there is no kube-proxy and no container behind a pod.
	podCIDR = "10.244.0.0/16"
)

// ErrNoBinaries is returned (wrapped) by Start when the Kubernetes binaries
// or etcd are missing.
var ErrNoBinaries = errors.New("kubernetes test binaries not found")

// DefaultBinDir is where `make k8s-tools` puts the binaries when
// MESHBENCH_K8S_BIN is not set.
func DefaultBinDir() string {
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "meshbench", "k8s",
		fmt.Sprintf("%s-kwok%s-ms%s", KubernetesVersion, strings.TrimPrefix(KwokVersion, "v"), strings.TrimPrefix(MetricsServerVersion, "v")))
}

// BinDir is MESHBENCH_K8S_BIN if set, else DefaultBinDir.
func BinDir() string {
	if d := os.Getenv(BinEnv); d != "" {
		return d
	}
	return DefaultBinDir()
}

var builtBinaries = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok", "metrics-server"}

// findBinaries checks that everything Start runs is in place.
func findBinaries() (binDir, etcd string, err error) {
	binDir = BinDir()
	var missing []string
	for _, b := range builtBinaries {
		if fi, err := os.Stat(filepath.Join(binDir, b)); err != nil || fi.Mode()&0o111 == 0 {
			missing = append(missing, b)
		}
	}
	for _, f := range []string{"stages.yaml", "metrics-resource.yaml", "usage-from-annotation.yaml", "crds"} {
		if _, err := os.Stat(filepath.Join(binDir, "kwok-manifests", f)); err != nil {
			missing = append(missing, "kwok-manifests/"+f)
		}
	}
	if len(missing) > 0 {
		return "", "", fmt.Errorf("%w: %s missing in %s (run `make k8s-tools`, or set %s to a directory it built)",
			ErrNoBinaries, strings.Join(missing, ", "), binDir, BinEnv)
	}
	etcd, err = exec.LookPath("etcd")
	if err != nil {
		return "", "", fmt.Errorf("%w: etcd is not on PATH (run `make k8s-tools`, which installs Debian's etcd-server)", ErrNoBinaries)
	}
	return binDir, etcd, nil
}

// Options configure Start. The zero value is usable.
type Options struct {
	// Nodes is the number of nodes (default 2): kwok's, named
	// kwok-node-0..N-1, or real ones named PREFIX-node-0..N-1.
	Nodes int
	// Dir holds the PKI, kubeconfig, etcd data and logs. Default: a new
	// temporary dir, removed by Stop (unless KeepDir).
	Dir string
	// KeepDir keeps a default (temporary) Dir after Stop, for its logs.
	KeepDir bool
	// Log gets one line per step of Start and Stop (default: discarded).
	// The components' own output always goes to files under Dir/logs.
	Log io.Writer
	// RealNodes runs Nodes real nodes (package nodes: containerd, runc,
	// kubelet, kube-proxy, each node in its own network namespace on a
	// bridge of this cluster's, and CoreDNS) instead of kwok's: pods run
	// real containers. It needs root, writable cgroups and `make
	// k8s-tools`; the apiserver then listens on the bridge address.
	RealNodes bool
	// Meshbench is a static meshbench binary (CGO_ENABLED=0) packed as
	// MeshbenchImage onto the real nodes; required with RealNodes.
	Meshbench string
}

// Ports are the loopback ports a cluster listens on, all chosen at Start.
type Ports struct {
	EtcdClient, EtcdPeer, APIServer, ControllerManager, Scheduler, Kwok, MetricsServer int
}

// Cluster is a running control plane. Its fields are read-only.
type Cluster struct {
	Dir        string // the cluster's files: pki/, logs/, etcd/, kubeconfig
	BinDir     string // kubectl, kube-apiserver, ... (see BinDir)
	Kubeconfig string // path of a self-contained kubeconfig
	// Context (client certificate, O=system:masters) is the kubeconfig's
	// current context; TokenContext uses the static bearer Token.
	Context, TokenContext string
	Token                 string
	Server                string // https://127.0.0.1:PORT
	CAFile                string // the cluster CA (PEM)
	Nodes                 []string
	Ports                 Ports
	// NodeIP is the address of every node's kubelet endpoint with kwok's
	// nodes: a 10.254.x.y on lo when Start could add one, else 127.0.0.1
	// (see nodeAddress); empty with real nodes (each has its own IP on the
	// cluster's bridge). NodeProxy says whether the API server's node proxy
	// (/api/v1/nodes/NODE/proxy/...) reaches the nodes: always with real
	// nodes, with kwok's only on a 10.254.x.y, since it refuses loopback
	// addresses.
	NodeIP    string
	NodeProxy bool
	// Real is the real nodes (Options.RealNodes), nil with kwok's.
	Real *nodes.Nodes

	log     io.Writer
	t0      time.Time    // when start began, for step
	httpc   *http.Client // admin client for the API, kwok and health checks
	etcdBin string
	pki     *clusterPKI
	ownDir  bool
	keepDir bool
	nodeIP  nodeAddress

	mu      sync.Mutex
	procs   []*proc
	stopped bool
	podLogs map[string]map[string]string // "ns/pod" -> container -> CRI log file

	realNodes bool
	nodesBin  string   // nodes.BinDir()
	meshbench string   // Options.Meshbench
	net       *realNet // the real nodes' network
}

// Start brings up a cluster and returns once its nodes are Ready and
// metrics.k8s.io is Available. If it fails, everything it started is
// stopped again. An error wrapping ErrNoBinaries means the tools are not
// built. Start takes about 5–10 s on two cores.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	binDir, etcd, err := findBinaries()
	if err != nil {
		return nil, err
	}
	if o.Nodes <= 0 {
		o.Nodes = 2
	}
	if o.RealNodes {
		if err := nodes.Check(nodes.BinDir()); err != nil {
			return nil, err
		}
		if o.Meshbench == "" {
			return nil, errors.New("kubetest: Options.Meshbench (a static meshbench binary) is required with RealNodes")
		}
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	dir, ownDir := o.Dir, false
	if dir == "" {
		if dir, err = os.MkdirTemp("", "kubetest-"); err != nil {
			return nil, err
		}
		ownDir = true
	} else if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		c := &Cluster{
			Dir: dir, BinDir: binDir, Kubeconfig: filepath.Join(dir, "kubeconfig"),
			Context: ContextCert, TokenContext: ContextToken,
			log: o.Log, etcdBin: etcd, ownDir: ownDir, keepDir: o.KeepDir,
			podLogs:   map[string]map[string]string{},
			realNodes: o.RealNodes, nodesBin: nodes.BinDir(), meshbench: o.Meshbench,
		}
		var err error
		if o.RealNodes {
			if c.net, err = makeRealNet(o.Nodes); err != nil {
				return nil, fmt.Errorf("kubetest: %w", err)
			}
			for i := range o.Nodes {
				c.Nodes = append(c.Nodes, fmt.Sprintf("%s-node-%d", c.net.prefix, i))
			}
		} else {
			for i := range o.Nodes {
				c.Nodes = append(c.Nodes, fmt.Sprintf("kwok-node-%d", i))
			}
		}
		err = c.start(ctx)
		if err == nil {
			return c, nil
		}
		if rerr := c.stopRealNodes(); rerr != nil {
			err = errors.Join(err, rerr)
		}
		c.stopProcs()
		if c.httpc != nil {
			c.httpc.CloseIdleConnections()
		}
		// A chosen port can be taken by someone else before the
		// component binds it; new ports fix that.
		if errors.Is(err, errPortInUse) && attempt < 3 && ctx.Err() == nil {
			c.logf("a port was taken before it could be bound; retrying with new ports")
			continue
		}
		return nil, fmt.Errorf("kubetest: starting the cluster (files in %s): %w", dir, err)
	}
}

func (c *Cluster) logf(format string, args ...any) {
	fmt.Fprintf(c.log, "kubetest: "+format+"\n", args...)
}

// step logs a step of start with the time since start began.
func (c *Cluster) step(format string, args ...any) {
	c.logf("%5.1fs "+format, append([]any{time.Since(c.t0).Seconds()}, args...)...)
}

// starting is a cluster being started by start's steps: what they share.
type starting struct {
	c      *Cluster
	logDir string
	// apiAddr is the apiserver's address; apiIPs and servingIPs the SANs
	// of its certificate and of the components' serving certificate.
	apiAddr            netip.Addr
	apiIPs, servingIPs []netip.Addr
	etcdClient         string
	// The components started so far.
	etcd, api, kcm, sched, kwok, ms *proc
}

// startStep is a named step of start.
type startStep struct {
	name string
	do   func(*starting, context.Context) error
}

// startSteps start every cluster, in order; then kwokSteps (simulated
// nodes) or realNodeSteps follow. A step that fails is named in Start's
// error.
var startSteps = []startStep{
	{"files", (*starting).files},                  // an empty etcd and log directory: a retry must not see the failed attempt's data
	{"ports", (*starting).ports},                  // free ports for every component
	{"addresses", (*starting).addresses},          // the apiserver's and the nodes' addresses
	{"pki", (*starting).pki},                      // the cluster's certificates, the kubeconfig, an admin client
	{"etcd", (*starting).startEtcd},               // etcd, healthy
	{"apiserver", (*starting).startAPIServer},     // kube-apiserver, ready
	{"controllers", (*starting).startControllers}, // kube-controller-manager and kube-scheduler started
}

// kwokSteps finish a cluster of kwok's simulated nodes.
var kwokSteps = []startStep{
	{"kwok CRDs", (*starting).kwokCRDs},                 // kwok's CRDs established
	{"controllers ready", (*starting).controllersReady}, // kube-controller-manager and kube-scheduler healthy
	{"kwok", (*starting).startKwok},                     // kwok, healthy
	{"metrics-server", (*starting).startMetricsServer},  // metrics-server started
	{"objects", (*starting).applyObjects},               // the nodes, kwok's metrics, the metrics APIService
	{"nodes ready", (*starting).kwokNodesReady},         // every node Ready
	{"kwok warm-up", (*starting).warmUpKwok},            // kwok's pod cache warmed up
	{"metrics API", (*starting).metricsAPIReady},        // metrics.k8s.io Available
}

// realNodeSteps finish a cluster of real nodes (startRealRest).
var realNodeSteps = []startStep{
	{"real nodes", func(s *starting, ctx context.Context) error {
		return s.c.startRealRest(ctx, s.logDir, s.kcm, s.sched)
	}},
}

func (c *Cluster) start(ctx context.Context) error {
	c.t0 = time.Now()
	s := &starting{c: c, logDir: filepath.Join(c.Dir, "logs")}
	rest := kwokSteps
	if c.realNodes {
		rest = realNodeSteps
	}
	for _, step := range slices.Concat(startSteps, rest) {
		if err := step.do(s, ctx); err != nil {
			return fmt.Errorf("%s: %w", step.name, err)
		}
	}
	return nil
}

// files starts from an empty etcd: a retry must not see the failed
// attempt's data.
func (s *starting) files(context.Context) error {
	for _, d := range []string{"etcd", "logs", "podlogs"} {
		if err := os.RemoveAll(filepath.Join(s.c.Dir, d)); err != nil {
			return err
		}
	}
	return os.MkdirAll(s.logDir, 0o755)
}

func (s *starting) ports(context.Context) error {
	ports, err := freePorts(7)
	if err != nil {
		return err
	}
	s.c.Ports = Ports{ports[0], ports[1], ports[2], ports[3], ports[4], ports[5], ports[6]}
	return nil
}

// addresses: with real nodes the apiserver listens on the bridge address
// (the nodes reach it from their namespaces), and the kubelets serve with
// the cluster's serving cert: both need those IPs as SANs. kwok's nodes
// get an address on lo that the node proxy accepts (kwok's kubelet
// endpoint listens there, with the serving cert).
func (s *starting) addresses(context.Context) error {
	c := s.c
	s.apiAddr = netip.MustParseAddr("127.0.0.1")
	if c.net != nil {
		s.apiAddr = c.net.gateway()
		s.apiIPs = []netip.Addr{s.apiAddr}
		s.servingIPs = append([]netip.Addr{s.apiAddr}, c.net.nodeIPs...)
		c.NodeIP, c.NodeProxy = "", true
		return nil
	}
	var addrErr error
	c.nodeIP, addrErr = addNodeAddress(c.Ports.Kwok)
	c.NodeIP, c.NodeProxy = c.nodeIP.ip.String(), addrErr == nil
	if addrErr != nil {
		c.step("nodes on 127.0.0.1, no node proxy: %v", addrErr)
	}
	s.servingIPs = []netip.Addr{c.nodeIP.ip}
	return nil
}

// pki makes the cluster's certificates and kubeconfig, and the client
// that checks the apiserver (as admin) and the components that serve
// with the cluster-CA-signed serving cert.
func (s *starting) pki(context.Context) error {
	c := s.c
	var err error
	if c.pki, err = newPKI(filepath.Join(c.Dir, "pki"), s.apiIPs, s.servingIPs); err != nil {
		return fmt.Errorf("generating the PKI: %w", err)
	}
	c.Token, c.CAFile = c.pki.token, c.pki.caCert
	c.Server = "https://" + net.JoinHostPort(s.apiAddr.String(), strconv.Itoa(c.Ports.APIServer))
	if err := c.pki.writeKubeconfig(c.Kubeconfig, c.Server); err != nil {
		return err
	}
	caPool := x509.NewCertPool()
	caPool.AppendCertsFromPEM(c.pki.caPEM)
	admin, err := tls.LoadX509KeyPair(c.pki.adminCert, c.pki.adminKey)
	if err != nil {
		return err
	}
	c.httpc = &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: caPool, Certificates: []tls.Certificate{admin}},
	}}
	return nil
}

func (s *starting) startEtcd(ctx context.Context) error {
	c := s.c
	etcdPeer := "http://" + hostPort(c.Ports.EtcdPeer)
	s.etcdClient = "http://" + hostPort(c.Ports.EtcdClient)
	etcd, err := c.startProc(s.logDir, "etcd", c.etcdBin,
		"--name=kubetest", "--data-dir="+filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls="+s.etcdClient, "--advertise-client-urls="+s.etcdClient,
		"--listen-peer-urls="+etcdPeer, "--initial-advertise-peer-urls="+etcdPeer,
		"--initial-cluster=kubetest="+etcdPeer,
		// Test data is disposable; fsync only costs time.
		"--unsafe-no-fsync", "--quota-backend-bytes=2147483648")
	if err != nil {
		return err
	}
	s.etcd = etcd
	return c.waitHTTP(ctx, etcd, s.etcdClient+"/health", 30*time.Second)
}

func (s *starting) startAPIServer(ctx context.Context) error {
	c, p := s.c, s.c.pki
	reconciler := "none"
	if s.apiAddr.IsPrivate() {
		reconciler = "lease"
	}
	api, err := c.startProc(s.logDir, "kube-apiserver", c.bin("kube-apiserver"),
		"--etcd-servers="+s.etcdClient,
		"--bind-address="+s.apiAddr.String(), "--advertise-address="+s.apiAddr.String(), "--secure-port="+strconv.Itoa(c.Ports.APIServer),
		"--cert-dir="+filepath.Join(c.Dir, "apiserver"),
		"--service-cluster-ip-range="+serviceCIDR,
		"--tls-cert-file="+p.apiserverCert, "--tls-private-key-file="+p.apiserverKey,
		"--client-ca-file="+p.caCert, "--token-auth-file="+p.tokenFile,
		"--service-account-key-file="+p.saPub, "--service-account-signing-key-file="+p.saKey,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--authorization-mode=Node,RBAC", "--allow-privileged=true",
		// The aggregation layer (metrics.k8s.io) authenticates to
		// metrics-server with the front-proxy client cert.
		"--requestheader-client-ca-file="+p.fpCACert, "--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file="+p.fpClientCert, "--proxy-client-key-file="+p.fpClientKey,
		// pods/log, exec, ...: reach kwok's kubelet endpoint at the node's
		// InternalIP (127.0.0.1; its Hostname is "localhost", which can
		// resolve to ::1 where kwok does not listen) and verify its cert.
		"--kubelet-preferred-address-types=InternalIP",
		"--kubelet-certificate-authority="+p.caCert,
		"--kubelet-client-certificate="+p.adminCert, "--kubelet-client-key="+p.adminKey,
		// The "kubernetes" Service cannot get 127.0.0.1 as an endpoint
		// (loopback is rejected), so do not keep trying and logging it;
		// with real nodes the apiserver is on the nodes' bridge, and pods
		// that talk to it in-cluster (istiod, operators) need that
		// endpoint: the default lease reconciler keeps it.
		"--endpoint-reconciler-type="+reconciler,
		// Admission webhooks and aggregated APIs served by pods (istiod's
		// sidecar injector) are called at a ready endpoint's pod IP (the
		// host routes every node's pod CIDR), not at the Service's DNS
		// name, which this machine's resolver does not know.
		"--enable-aggregator-routing="+strconv.FormatBool(reconciler == "lease"),
		// Debian's etcd 3.4.23 lacks RequestWatchProgress (the apiserver
		// wants ≥ 3.4.31). With the WatchList feature on (the default
		// since 1.34), the apiserver turns every watch from
		// resourceVersion 0 or "" with bookmarks into a watch-list
		// request and, lacking that etcd feature, ends it at once with an
		// error. kwok watches exactly so, and its informers then backed
		// off exponentially: new pods waited 2 s, 15 s, 44 s, ... before
		// kwok ran them. Without WatchList such watches are served
		// normally, and watch-list clients fall back to LIST, as
		// client-go does on its own.
		"--feature-gates=WatchList=false")
	if err != nil {
		return err
	}
	s.api = api
	return c.waitHTTP(ctx, api, c.Server+"/readyz", 120*time.Second)
}

// startControllers starts kube-controller-manager and kube-scheduler:
// Deployments, Jobs, EndpointSlices, ServiceAccounts, scheduling.
func (s *starting) startControllers(context.Context) error {
	c, p := s.c, s.c.pki
	common := []string{
		"--kubeconfig=" + c.Kubeconfig, "--authentication-kubeconfig=" + c.Kubeconfig, "--authorization-kubeconfig=" + c.Kubeconfig,
		"--bind-address=127.0.0.1", "--tls-cert-file=" + p.servingCert, "--tls-private-key-file=" + p.servingKey,
		"--leader-elect=false",
	}
	kcmArgs := common
	if c.realNodes {
		// A real node whose kubelet stops goes NotReady after 10 s,
		// not the default 50 s (its kubelet renews its lease every
		// 2.5 s, see package nodes), so tests of a node failing are
		// quick.
		kcmArgs = append(slices.Clone(common), "--node-monitor-grace-period=10s")
	}
	var err error
	s.kcm, err = c.startProc(s.logDir, "kube-controller-manager", c.bin("kube-controller-manager"), append(kcmArgs,
		"--secure-port="+strconv.Itoa(c.Ports.ControllerManager),
		"--service-account-private-key-file="+p.saKey, "--root-ca-file="+p.caCert,
		"--use-service-account-credentials=false", "--controllers=*",
		"--service-cluster-ip-range="+serviceCIDR)...)
	if err != nil {
		return err
	}
	s.sched, err = c.startProc(s.logDir, "kube-scheduler", c.bin("kube-scheduler"), append(common,
		"--secure-port="+strconv.Itoa(c.Ports.Scheduler))...)
	return err
}

func (s *starting) kwokManifests() string { return filepath.Join(s.c.BinDir, "kwok-manifests") }

// kwokCRDs: kwok's CRDs (Metric, ResourceUsage, Logs, ...) must be
// established before kwok starts watching them and before objects of
// those kinds are applied. This overlaps with kcm and the scheduler
// starting.
func (s *starting) kwokCRDs(ctx context.Context) error {
	c, m := s.c, s.kwokManifests()
	if _, err := c.kubectl(ctx, nil, "apply", "-f", filepath.Join(m, "crds")); err != nil {
		return fmt.Errorf("applying kwok's CRDs: %w", err)
	}
	crdFiles, err := os.ReadDir(filepath.Join(m, "crds"))
	if err != nil {
		return err
	}
	if err := s.api.waitReady(ctx, 60*time.Second, func(ctx context.Context) error {
		return c.checkConditions(ctx, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "Established", len(crdFiles))
	}); err != nil {
		return fmt.Errorf("waiting for kwok's CRDs: %w", err)
	}
	c.step("kwok CRDs established")
	return nil
}

func (s *starting) controllersReady(ctx context.Context) error {
	c := s.c
	if err := c.waitHTTP(ctx, s.kcm, "https://"+hostPort(c.Ports.ControllerManager)+"/healthz", 60*time.Second); err != nil {
		return err
	}
	return c.waitHTTP(ctx, s.sched, "https://"+hostPort(c.Ports.Scheduler)+"/healthz", 60*time.Second)
}

// startKwok: one process simulates every node (the kubelet's status
// updates, pod lifecycle through the fast stages, and the kubelet's HTTPS
// endpoint for /metrics/resource and /containerLogs).
func (s *starting) startKwok(ctx context.Context) error {
	c, p := s.c, s.c.pki
	kwok, err := c.startProc(s.logDir, "kwok", c.bin("kwok"),
		"--kubeconfig="+c.Kubeconfig, "--config="+filepath.Join(s.kwokManifests(), "stages.yaml"),
		// Only the nodes Start creates (and any a test adds with
		// this annotation), as kwokctl does.
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--node-name=localhost", "--node-ip="+c.NodeIP, "--node-port="+strconv.Itoa(c.Ports.Kwok),
		"--server-address="+c.kwokHostPort(),
		"--cidr="+podCIDR,
		"--tls-cert-file="+p.servingCert, "--tls-private-key-file="+p.servingKey,
		"--enable-crds=Metric,ClusterResourceUsage,ResourceUsage,Logs,ClusterLogs")
	if err != nil {
		return err
	}
	s.kwok = kwok
	return c.waitHTTP(ctx, kwok, "https://"+c.kwokHostPort()+"/healthz", 60*time.Second)
}

func (s *starting) startMetricsServer(context.Context) error {
	var err error
	s.ms, err = s.c.startMetricsServer(s.logDir)
	return err
}

// applyObjects applies the nodes, kwok's metrics (its CPU counters
// primed) and the metrics APIService.
func (s *starting) applyObjects(ctx context.Context) error {
	c, m := s.c, s.kwokManifests()
	manifests, err := c.manifests()
	if err != nil {
		return err
	}
	metricsResource, err := os.ReadFile(filepath.Join(m, "metrics-resource.yaml"))
	if err != nil {
		return err
	}
	if metricsResource, err = primeCPUCounters(metricsResource); err != nil {
		return err
	}
	metricsResourceFile := filepath.Join(c.Dir, "metrics-resource.yaml")
	if err := os.WriteFile(metricsResourceFile, metricsResource, 0o644); err != nil {
		return err
	}
	if _, err := c.kubectl(ctx, manifests, "apply",
		"-f", metricsResourceFile, "-f", filepath.Join(m, "usage-from-annotation.yaml"), "-f", "-"); err != nil {
		return fmt.Errorf("applying nodes, kwok metrics and the metrics APIService: %w", err)
	}
	c.step("nodes, kwok metrics and the metrics APIService applied")
	return nil
}

// kwokNodesReady: Ready nodes mean kwok manages them.
func (s *starting) kwokNodesReady(ctx context.Context) error {
	c := s.c
	if err := s.kwok.waitReady(ctx, 60*time.Second, func(ctx context.Context) error {
		return c.checkConditions(ctx, "/api/v1/nodes?labelSelector=type%3Dkwok", "Ready", len(c.Nodes))
	}); err != nil {
		return err
	}
	c.step("%d kwok nodes Ready", len(c.Nodes))
	return nil
}

func (s *starting) warmUpKwok(ctx context.Context) error {
	if err := s.c.warmUpKwok(ctx, s.kwok); err != nil {
		return err
	}
	s.c.step("kwok's pod cache warmed up")
	return nil
}

// metricsAPIReady: an Available APIService means the aggregator reaches
// metrics-server through the ExternalName Service and trusts its
// certificate.
func (s *starting) metricsAPIReady(ctx context.Context) error {
	c := s.c
	if err := s.ms.waitReady(ctx, 120*time.Second, func(ctx context.Context) error {
		return c.checkConditions(ctx, "/apis/apiregistration.k8s.io/v1/apiservices?fieldSelector=metadata.name%3D"+metricsAPIService, "Available", 1)
	}); err != nil {
		return err
	}
	c.step("metrics.k8s.io Available; cluster ready (apiserver %s, kubeconfig %s)", c.Server, c.Kubeconfig)
	return nil
}

// startMetricsServer starts metrics-server: it scrapes every node's
// /metrics/resource (kwok's shared endpoint, or the real kubelets) and
// serves metrics.k8s.io through the aggregation layer.
func (c *Cluster) startMetricsServer(logDir string) (*proc, error) {
	p := c.pki
	return c.startProc(logDir, "metrics-server", c.bin("metrics-server"),
		"--secure-port="+strconv.Itoa(c.Ports.MetricsServer), "--bind-address="+c.metricsServerAddr(),
		"--cert-dir="+filepath.Join(c.Dir, "metrics-server"),
		"--kubeconfig="+c.Kubeconfig, "--authentication-kubeconfig="+c.Kubeconfig, "--authorization-kubeconfig="+c.Kubeconfig,
		"--tls-cert-file="+p.servingCert, "--tls-private-key-file="+p.servingKey,
		// A kwok node is 127.0.0.1 at kwok's port (the node's
		// kubeletEndpoint), its path from the node annotation; a real
		// node is its InternalIP at the kubelet's port.
		"--kubelet-preferred-address-types=InternalIP", "--kubelet-use-node-status-port",
		"--kubelet-certificate-authority="+p.caCert,
		"--metric-resolution="+MetricResolution.String(), "--kubelet-request-timeout=5s")
}

func (c *Cluster) bin(name string) string { return filepath.Join(c.BinDir, name) }

// metricsServerAddr is where metrics-server listens: the host's loopback,
// or with real nodes the nodes' bridge address, where the aggregator's
// endpoint routing (see the apiserver's flags) can reach it.
func (c *Cluster) metricsServerAddr() string {
	if c.net != nil {
		return c.net.gateway().String()
	}
	return "127.0.0.1"
}

func (c *Cluster) startProc(logDir, name, bin string, args ...string) (*proc, error) {
	p, err := startProc(name, logDir, bin, args...)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	return p, nil
}

// waitHTTP polls url until it answers 200.
func (c *Cluster) waitHTTP(ctx context.Context, p *proc, url string, timeout time.Duration) error {
	err := p.waitReady(ctx, timeout, func(ctx context.Context) error {
		_, err := c.apiRequest(ctx, http.MethodGet, url, nil, http.StatusOK)
		return err
	})
	if err == nil {
		c.step("%s ready (pid %d)", p.Name, p.PID)
	}
	return err
}

// cumulativeCPU matches the CPU counters (container, pod, node) in kwok's
// metrics-resource.yaml.
var cumulativeCPU = regexp.MustCompile(`value: '((?:pod|node)\.CumulativeUsage\("cpu"[^']*\))'`)

// primeCPUCounters adds one nanosecond of CPU to kwok's CPU counters. kwok
// starts a counter at exactly 0 on its first scrape, and metrics-server
// discards a point whose CPU counter is 0, so a new pod's first scrape was
// wasted and its metrics took a scrape longer (10 s) to appear. The rate
// metrics-server computes is unchanged.
func primeCPUCounters(yaml []byte) ([]byte, error) {
	if n := len(cumulativeCPU.FindAll(yaml, -1)); n != 3 {
		return nil, fmt.Errorf("kwok's metrics-resource.yaml has %d CPU counters where kubetest expects 3 (container, pod, node); check primeCPUCounters against it", n)
	}
	return cumulativeCPU.ReplaceAll(yaml, []byte(`value: '$1 + 1e-9'`)), nil
}

// warmUpPod is the pod warmUpKwok runs and deletes.
const warmUpPod = "kubetest-warmup"

// warmUpKwok runs one pod through kwok's metrics endpoint and deletes it.
// kwok builds its pod cache lazily, on the first scrape that finds a pod
// on a node, and serves no pod metrics until that cache has synced: the
// first pods a test started were missing from the first scrape, which
// delayed their metrics by another 10 s.
func (c *Cluster) warmUpKwok(ctx context.Context, kwok *proc) error {
	node := c.Nodes[0]
	pod, err := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": warmUpPod, "namespace": "kube-system"},
		"spec": map[string]any{
			"nodeName":                      node, // no need to wait for the scheduler
			"terminationGracePeriodSeconds": 0,
			"containers":                    []any{map[string]any{"name": "warmup", "image": "kubetest.invalid/warmup"}},
		},
	})
	if err != nil {
		return err
	}
	podsPath := "/api/v1/namespaces/kube-system/pods"
	// Admission wants kube-system's default ServiceAccount, which
	// kube-controller-manager creates a moment after it starts.
	if err := kwok.waitReady(ctx, 60*time.Second, func(ctx context.Context) error {
		_, err := c.apiRequest(ctx, http.MethodPost, c.Server+podsPath, pod, http.StatusCreated, http.StatusConflict)
		return err
	}); err != nil {
		return fmt.Errorf("creating the kwok warm-up pod: %w", err)
	}
	metricsURL := "https://" + c.kwokHostPort() + "/metrics/nodes/" + node + "/metrics/resource"
	if err := kwok.waitReady(ctx, 60*time.Second, func(ctx context.Context) error {
		body, err := c.apiRequest(ctx, http.MethodGet, metricsURL, nil, http.StatusOK)
		if err != nil {
			return err
		}
		if !strings.Contains(string(body), `pod="`+warmUpPod+`"`) {
			return errors.New("kwok's metrics do not show the warm-up pod yet")
		}
		return nil
	}); err != nil {
		return err
	}
	// Deleted at once (grace period 0): nothing runs it.
	_, err = c.apiRequest(ctx, http.MethodDelete, c.Server+podsPath+"/"+warmUpPod+"?gracePeriodSeconds=0", nil, http.StatusOK, http.StatusAccepted)
	return err
}

// apiRequest does one request with the admin client and returns the body
// if the status is one of ok.
func (c *Cluster) apiRequest(ctx context.Context, method, url string, body []byte, ok ...int) ([]byte, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.httpc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(ok, resp.StatusCode) {
		return nil, fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, truncate(strings.TrimSpace(string(b)), 300))
	}
	return b, nil
}

// checkConditions GETs a list from the API and reports an error unless it
// has want items, each with condition cond True.
func (c *Cluster) checkConditions(ctx context.Context, path, cond string, want int) error {
	body, err := c.apiRequest(ctx, http.MethodGet, c.Server+path, nil, http.StatusOK)
	if err != nil {
		return err
	}
	var list struct {
		Items []struct {
			Metadata struct{ Name string }
			Status   struct {
				Conditions []struct{ Type, Status, Message string }
			}
		}
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	if len(list.Items) != want {
		return fmt.Errorf("GET %s: %d items, want %d", path, len(list.Items), want)
	}
	for _, it := range list.Items {
		ok := false
		for _, cnd := range it.Status.Conditions {
			if cnd.Type == cond {
				if cnd.Status != "True" {
					return fmt.Errorf("%s: %s=%s: %s", it.Metadata.Name, cond, cnd.Status, cnd.Message)
				}
				ok = true
			}
		}
		if !ok {
			return fmt.Errorf("%s: no %s condition yet", it.Metadata.Name, cond)
		}
	}
	return nil
}

// manifests returns the Node objects and metrics-server's registration as
// a kubectl List.
func (c *Cluster) manifests() ([]byte, error) {
	type obj = map[string]any
	var items []any
	for _, n := range c.Nodes {
		if c.realNodes {
			break // real kubelets register their own Node objects
		}
		capacity := obj{"cpu": "32", "memory": "256Gi", "pods": "110"}
		items = append(items, obj{
			"apiVersion": "v1", "kind": "Node",
			"metadata": obj{
				"name": n,
				"annotations": obj{
					// kwok's marker, and where metrics-server finds
					// this node's metrics on kwok's shared endpoint.
					"kwok.x-k8s.io/node":                   "fake",
					"metrics.k8s.io/resource-metrics-path": "/metrics/nodes/" + n + "/metrics/resource",
				},
				"labels": obj{
					"kubernetes.io/hostname": n, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
					"type": "kwok", "node.meshbench.dev/kwok": "true",
				},
			},
			"status": obj{"capacity": capacity, "allocatable": capacity},
		})
	}
	// The aggregator resolves an ExternalName Service to NAME:PORT, the
	// one way to reach a process on the host's loopback: a ClusterIP
	// Service needs kube-proxy, and Endpoints may not be loopback.
	svc := obj{
		"apiVersion": "v1", "kind": "Service",
		"metadata": obj{"name": metricsServiceName, "namespace": metricsServiceNamespace},
		"spec": obj{
			"type": "ExternalName", "externalName": "localhost",
			"ports": []any{obj{"name": "https", "port": c.Ports.MetricsServer}},
		},
	}
	if c.net != nil {
		// Real nodes: the apiserver routes to endpoints (so that it
		// reaches webhooks in pods), which needs a Service with
		// Endpoints: metrics-server's, on the bridge address.
		svc["spec"] = obj{"ports": []any{obj{"name": "https", "port": c.Ports.MetricsServer}}}
		items = append(items, obj{
			"apiVersion": "v1", "kind": "Endpoints",
			"metadata": obj{"name": metricsServiceName, "namespace": metricsServiceNamespace},
			"subsets": []any{obj{
				"addresses": []any{obj{"ip": c.metricsServerAddr()}},
				"ports":     []any{obj{"name": "https", "port": c.Ports.MetricsServer}},
			}},
		})
	}
	items = append(items, svc, obj{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": obj{"name": metricsAPIService},
		"spec": obj{
			"group": "metrics.k8s.io", "version": "v1beta1",
			"groupPriorityMinimum": 100, "versionPriority": 100,
			"caBundle": c.pki.caPEM, // []byte marshals as base64, as the API wants
			"service":  obj{"name": metricsServiceName, "namespace": metricsServiceNamespace, "port": c.Ports.MetricsServer},
		},
	})
	return json.Marshal(obj{"apiVersion": "v1", "kind": "List", "items": items})
}

// Kubectl runs the built kubectl against the cluster (context Context) and
// returns its stdout; the error carries its stderr.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) ([]byte, error) {
	return c.kubectl(ctx, nil, args...)
}

// KubectlStdin is Kubectl with stdin, e.g. for `apply -f -`.
func (c *Cluster) KubectlStdin(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	if stdin == nil {
		stdin = []byte{}
	}
	return c.kubectl(ctx, stdin, args...)
}

func (c *Cluster) kubectl(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	full := append([]string{
		"--kubeconfig=" + c.Kubeconfig, "--context=" + c.Context,
		// Its own discovery cache, not ~/.kube/cache.
		"--cache-dir=" + filepath.Join(c.Dir, "kubectl-cache"),
	}, args...)
	return runCmd(ctx, stdin, c.bin("kubectl"), full...)
}

// Processes lists the running components in start order.
func (c *Cluster) Processes() []Process {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Process, len(c.procs))
	for i, p := range c.procs {
		out[i] = p.info()
	}
	return out
}

// LogFile is the path of a component's log, e.g. LogFile("kube-apiserver").
func (c *Cluster) LogFile(component string) string {
	return filepath.Join(c.Dir, "logs", component+".log")
}

// KeepDir keeps Dir (and its logs) after Stop even if Start created it.
func (c *Cluster) KeepDir() {
	c.mu.Lock()
	c.keepDir = true
	c.mu.Unlock()
}

// Stop stops every component in reverse start order, each with SIGTERM to
// its process group, SIGKILL after 10 s, and waits for each to exit. Then it
// removes Dir if Start created it. It reports components that had already
// exited on their own. Safe to call more than once.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return nil
	}
	c.stopped = true
	procs := c.procs
	c.mu.Unlock()

	var errs []error
	for _, p := range procs {
		if p.Exited() {
			errs = append(errs, p.failure(p.Name+" had exited before Stop", exitError(p.Err())))
		}
	}
	// The nodes first: their kubelets and kube-proxies talk to the
	// control plane until they stop.
	if err := c.stopRealNodes(); err != nil {
		errs = append(errs, err)
	}
	c.stopProcs()
	if c.httpc != nil {
		c.httpc.CloseIdleConnections()
	}
	c.mu.Lock()
	remove := c.ownDir && !c.keepDir
	c.mu.Unlock()
	if remove {
		if err := os.RemoveAll(c.Dir); err != nil {
			errs = append(errs, err)
		}
	} else {
		c.logf("cluster files kept in %s", c.Dir)
	}
	return errors.Join(errs...)
}

func (c *Cluster) stopProcs() {
	c.mu.Lock()
	procs := c.procs
	c.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		p := procs[i]
		t0 := time.Now()
		if p.stop() {
			c.logf("%s (pid %d) killed after %v", p.Name, p.PID, stopGrace)
		} else {
			c.logf("%s (pid %d) stopped in %.1fs", p.Name, p.PID, time.Since(t0).Seconds())
		}
	}
	if err := c.nodeIP.release(); err != nil {
		c.logf("warning: %v", err)
	}
}

func hostPort(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// kwokHostPort is where kwok (every node's kubelet endpoint) listens.
func (c *Cluster) kwokHostPort() string {
	return net.JoinHostPort(c.NodeIP, strconv.Itoa(c.Ports.Kwok))
}

// freePorts returns n distinct free TCP ports on 127.0.0.1. The listeners
// are held until all are chosen so the ports differ; another process may
// still take one before it is bound (Start then retries).
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("choosing a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
