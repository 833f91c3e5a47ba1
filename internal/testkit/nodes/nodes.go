// Package nodes runs real Kubernetes nodes on this machine for tests and
// demos: per node a network namespace joined to a bridge (package netns),
// containerd with Debian's runc and CNI bridge plugin, a kubelet and a
// kube-proxy (nftables mode); and one CoreDNS on the bridge address as the
// cluster DNS. The control plane is someone else's (internal/testkit/kubetest):
// Start gets its kubeconfig and the certificates the kubelets serve with.
//
// What this machine needs, each found the hard way (see the README's
// "Real nodes" decision): kubelet 1.36 runs on cgroup v1 only with
// failCgroupV1: false; root lacks CAP_SYS_RESOURCE, so containerd must
// restrict the sandboxes' oom_score_adj; every kubelet has its own
// cgroupRoot (made here in every v1 hierarchy), containerd root, state,
// socket and runc root; a node lives in its own network namespace (its IP
// on a veth, never loopback), which also keeps each kube-proxy's nftables
// tables apart; nothing is pulled from a registry (images are imported
// from tarballs, the sandbox image pinned).
//
// Stop removes everything: the node processes, the pods' processes (by
// the nodes' cgroups), containerd's shims (they outlive containerd), the
// mounts under Dir, and the cgroups. The network plumbing goes with the
// netns.Substrate the caller closes.
package nodes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/meshbench/meshbench/internal/sys/netns"
)

// Versions hack/k8s/build-nodes.sh builds.
const (
	KubernetesVersion = "v1.36.3"
	ContainerdVersion = "v2.4.2"
	CoreDNSVersion    = "v1.14.7"
)

// BinEnv overrides the directory of the node binaries.
const BinEnv = "MESHBENCH_NODES_BIN"

// Binaries Start runs from BinDir.
var Binaries = []string{"kubelet", "kube-proxy", "containerd", "ctr", "containerd-shim-runc-v2", "coredns", "pause"}

// Debian's pieces: runc, the CNI plugins (bridge, host-local, loopback)
// and nft, which kube-proxy's nftables mode runs.
const (
	RuncBin   = "/usr/sbin/runc"
	CNIBinDir = "/usr/lib/cni"
	NftBin    = "/usr/sbin/nft"
)

// The well-known node paths a CNI installer and a node agent expect (an
// istio-cni DaemonSet's hostPath volumes, ztunnel's socket), as containerd
// and the kubelet see them in the node's own mount namespace.
const (
	NodeCNIConfDir = "/etc/cni/net.d"
	NodeCNIBinDir  = "/opt/cni/bin"
	NodeNetnsDir   = "/var/run/netns"
)

// HostDirs are the node's own directories (relative to Node.Dir) and the
// well-known paths they are bind-mounted on in the node's mount
// namespace: containerd and the kubelet start there, so a hostPath volume
// of a pod (resolved by the kubelet, mounted by runc) names the node's
// directory, as on a machine of its own, and two nodes' istio-cni agents
// or ztunnels never see each other's files. The pods' netns files are
// there too (containerd makes them under /var/run/netns), on a shared
// mount, so a node agent's HostToContainer volume sees them appear.
var HostDirs = []struct{ Dir, Path string }{
	{"cni", NodeCNIConfDir},
	{"cni-bin", NodeCNIBinDir},
	{"netns", NodeNetnsDir},
	{"ztunnel", "/var/run/ztunnel"},
	{"istio-cni", "/var/run/istio-cni"},
}

// Unshare and Nsenter (util-linux) make and enter a node's mount namespace.
const (
	UnshareBin = "/usr/bin/unshare"
	NsenterBin = "/usr/bin/nsenter"
)

// ErrMissing is returned (wrapped) by Check when a prerequisite is missing.
var ErrMissing = errors.New("real nodes cannot run here")

// DefaultBinDir is where `make k8s-tools` puts the node binaries.
func DefaultBinDir() string {
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "meshbench", "k8s", fmt.Sprintf("nodes-%s-containerd%s-coredns%s",
		KubernetesVersion, strings.TrimPrefix(ContainerdVersion, "v"), strings.TrimPrefix(CoreDNSVersion, "v")))
}

// BinDir is MESHBENCH_NODES_BIN if set, else DefaultBinDir.
func BinDir() string {
	if d := os.Getenv(BinEnv); d != "" {
		return d
	}
	return DefaultBinDir()
}

// cgroupHierarchies are the cgroup v1 hierarchies a kubelet's cgroupRoot
// must exist in ("unified" is only cleaned up: runc may make dirs there).
var cgroupHierarchies = []string{"cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "blkio", "pids", "systemd"}

// Check reports every missing prerequisite at once: root, writable cgroup
// v1 hierarchies, Debian's runc, CNI plugins and nft, the built binaries.
func Check(binDir string) error {
	var miss []string
	if os.Geteuid() != 0 {
		miss = append(miss, "root (network namespaces, cgroups, mounts)")
	}
	for _, h := range cgroupHierarchies {
		if err := syscall.Access(filepath.Join("/sys/fs/cgroup", h), 2 /* W_OK */); err != nil {
			miss = append(miss, "a writable cgroup v1 hierarchy /sys/fs/cgroup/"+h)
			break
		}
	}
	for _, f := range []string{RuncBin, filepath.Join(CNIBinDir, "bridge"), filepath.Join(CNIBinDir, "host-local"), filepath.Join(CNIBinDir, "loopback"), NftBin} {
		if _, err := os.Stat(f); err != nil {
			miss = append(miss, f+" (Debian: runc containernetworking-plugins nftables)")
		}
	}
	for _, f := range []string{UnshareBin, NsenterBin} {
		if _, err := os.Stat(f); err != nil {
			miss = append(miss, f+" (Debian: util-linux)")
		}
	}
	for _, b := range Binaries {
		if fi, err := os.Stat(filepath.Join(binDir, b)); err != nil || fi.Mode()&0o111 == 0 {
			miss = append(miss, filepath.Join(binDir, b)+" (make k8s-tools)")
		}
	}
	if len(miss) > 0 {
		return fmt.Errorf("%w: missing %s", ErrMissing, strings.Join(miss, "; "))
	}
	return nil
}

// Config describes the nodes to start.
type Config struct {
	// Prefix names everything (node names PREFIX-node-I, netns, links,
	// cgroups); unique on the machine (the caller picks it).
	Prefix string
	Dir    string // the nodes' files (configs, logs, containerd and kubelet roots)
	BinDir string
	// Net is where the nodes' namespaces and veths are made; Bridge (in
	// the host's namespace, in Net) is their L2 segment and its address
	// their gateway and the cluster DNS address.
	Net    *netns.Substrate
	Bridge *netns.Bridge
	// NodeIPs (one per node, in Bridge's subnet) and PodCIDRs (one per
	// node, inside ClusterCIDR).
	NodeIPs     []netip.Addr
	PodCIDRs    []netip.Prefix
	ClusterCIDR netip.Prefix
	// ServiceCIDR (optional) is routed on-link in every node's namespace,
	// as a real node's default route would: a node process dialling a
	// ClusterIP (istio-cni's plugin, run by containerd, asks the API at
	// the kubernetes Service) needs a route before kube-proxy's output
	// DNAT. On-link, so a ClusterIP without endpoints goes nowhere.
	ServiceCIDR netip.Prefix
	// Kubeconfig (with context Context) is what kubelets, kube-proxies
	// and CoreDNS use; its server must be reachable from the nodes'
	// namespaces (an address on Bridge).
	Kubeconfig, Context string
	// CAFile verifies kubelet clients; ServingCert/Key (signed by that
	// CA, with every node IP as a SAN) is what the kubelets serve.
	CAFile, ServingCert, ServingKey string
	// Images are image tarballs (OCI or docker-archive) imported into
	// every node's containerd before its kubelet starts.
	Images []string
	// SandboxImage is containerd's pinned pause image (among Images).
	SandboxImage string
	Log          io.Writer
}

// Node is one running node.
type Node struct {
	Name    string
	IP      netip.Addr
	PodCIDR netip.Prefix
	Dir     string
	Socket  string // containerd's socket
	NS      *netns.NS

	containerd, kubelet, proxy *proc
}

// Nodes are the running nodes and the cluster DNS.
type Nodes struct {
	Nodes []*Node
	cfg   Config

	mu      sync.Mutex
	coredns *proc
	stopped bool
}

// CgroupRoot is node i's cgroupRoot (one per kubelet: a kubelet removes
// pod cgroups under its root that it does not know).
func (c *Config) cgroupRoot(i int) string { return fmt.Sprintf("/%s-node-%d", c.Prefix, i) }

func (c *Config) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, "nodes: "+format+"\n", args...)
	}
}

// Start brings the nodes up: returns once every containerd answers, the
// images are imported and the kubelets and kube-proxies run (the caller
// waits for the Node objects to be Ready). On failure everything started
// is stopped again (the caller still closes Net).
func Start(ctx context.Context, cfg Config) (*Nodes, error) {
	if len(cfg.NodeIPs) == 0 || len(cfg.NodeIPs) != len(cfg.PodCIDRs) {
		return nil, fmt.Errorf("nodes: %d node IPs and %d pod CIDRs", len(cfg.NodeIPs), len(cfg.PodCIDRs))
	}
	if err := Check(cfg.BinDir); err != nil {
		return nil, err
	}
	n := &Nodes{cfg: cfg}
	if err := n.start(ctx); err != nil {
		return nil, errors.Join(err, n.Stop())
	}
	return n, nil
}

func (n *Nodes) bin(name string) string { return filepath.Join(n.cfg.BinDir, name) }

// startSteps bring the nodes up, in order; a step that fails is named in
// Start's error.
var startSteps = []struct {
	name string
	do   func(*Nodes, context.Context) error
}{
	{"logs", (*Nodes).makeLogDir},                  // the components' log directory
	{"nodes", (*Nodes).makeNodes},                  // per node: directories, cgroups, namespace, link, configs
	{"routes", (*Nodes).routeNodes},                // each node to the services and the other nodes' pods
	{"coredns", (*Nodes).startCoreDNS},             // on the bridge address, in the host's namespace
	{"mount points", (*Nodes).makeMountPoints},     // HostDirs' well-known paths on the host
	{"containerd", (*Nodes).startContainerds},      // one per node, in its own mount namespace
	{"containerd ready", (*Nodes).waitContainerds}, // every containerd answers
	{"images", (*Nodes).importImages},              // Config.Images into every node
	{"agents", (*Nodes).startAgents},               // every node's kubelet and kube-proxy
}

func (n *Nodes) start(ctx context.Context) error {
	for _, step := range startSteps {
		if err := step.do(n, ctx); err != nil {
			return fmt.Errorf("%s: %w", step.name, err)
		}
	}
	return nil
}

func (n *Nodes) logDir() string { return filepath.Join(n.cfg.Dir, "logs") }

func (n *Nodes) makeLogDir(context.Context) error { return os.MkdirAll(n.logDir(), 0o755) }

// makeNodes makes every node: its directories and cgroups, its network
// namespace linked to the bridge, its route from the host, its configs.
func (n *Nodes) makeNodes(context.Context) error {
	cfg := &n.cfg
	gw := cfg.Bridge.Addr.Addr()
	for i, ip := range cfg.NodeIPs {
		nd := &Node{
			Name: fmt.Sprintf("%s-node-%d", cfg.Prefix, i), IP: ip, PodCIDR: cfg.PodCIDRs[i],
			Dir: filepath.Join(cfg.Dir, fmt.Sprintf("node-%d", i)),
		}
		nd.Socket = filepath.Join(nd.Dir, "containerd.sock")
		n.Nodes = append(n.Nodes, nd)
		for _, d := range HostDirs {
			if err := os.MkdirAll(filepath.Join(nd.Dir, d.Dir), 0o755); err != nil {
				return err
			}
		}
		if err := n.makeCgroups(i); err != nil {
			return err
		}
		ns, err := cfg.Net.Namespace(fmt.Sprintf("n%d", i))
		if err != nil {
			return err
		}
		nd.NS = ns
		if err := cfg.Net.Veth(cfg.Bridge, ns, fmt.Sprintf("h%d", i), "eth0", netip.PrefixFrom(ip, cfg.Bridge.Addr.Bits()), false); err != nil {
			return err
		}
		// No default route: a node reaches the bridge's subnet (the
		// apiserver, CoreDNS, the other nodes) and the other nodes' pod
		// subnets, nothing else; a pull from a registry fails at once.
		// Pods reach each other across nodes on the bridge (L2), with no
		// forwarding in the host's namespace: each node routes the other
		// nodes' pod subnets to them directly.
		if err := ns.Sysctl("net/ipv4/ip_forward", "1"); err != nil {
			return err
		}
		if err := cfg.Net.HostRoute(nd.PodCIDR, ip); err != nil {
			return err
		}
		if err := n.writeConfigs(i, nd, gw); err != nil {
			return err
		}
	}
	return nil
}

// routeNodes routes each node to the service CIDR and to the other nodes'
// pod subnets.
func (n *Nodes) routeNodes(context.Context) error {
	for i, nd := range n.Nodes {
		if n.cfg.ServiceCIDR.IsValid() {
			if err := nd.NS.Route("eth0", n.cfg.ServiceCIDR, netip.Addr{}); err != nil {
				return err
			}
		}
		for j, other := range n.Nodes {
			if i != j {
				if err := nd.NS.Route("eth0", other.PodCIDR, other.IP); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// startCoreDNS starts CoreDNS on the bridge address, in the host's
// namespace.
func (n *Nodes) startCoreDNS(context.Context) error {
	cfg := &n.cfg
	if err := os.WriteFile(filepath.Join(cfg.Dir, "Corefile"), corefile(cfg.Bridge.Addr.Addr(), cfg.Kubeconfig, cfg.Context), 0o644); err != nil {
		return err
	}
	dns, err := startProc(nil, "coredns", n.logDir(), n.bin("coredns"), "-conf", filepath.Join(cfg.Dir, "Corefile"))
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.coredns = dns
	n.mu.Unlock()
	return nil
}

// makeMountPoints: the well-known paths of HostDirs must exist on the
// host to be mount points: made here when missing (empty directories, as
// a real node has them) and left, because removing one would detach the
// mounts of another cluster's nodes using it at the same time.
func (n *Nodes) makeMountPoints(context.Context) error {
	for _, d := range HostDirs {
		if err := os.MkdirAll(d.Path, 0o755); err != nil {
			return fmt.Errorf("creating the mount point %s: %w", d.Path, err)
		}
	}
	return nil
}

// startContainerds: each containerd is born in a new mount namespace (a
// slave of the host's: the host's mounts still appear in it, its own never
// leave it) where the shell bind-mounts HostDirs and then becomes
// containerd (exec: the recorded PID is containerd's).
func (n *Nodes) startContainerds(context.Context) error {
	for i, nd := range n.Nodes {
		args := append([]string{"--mount", "--propagation", "slave", "--", "/bin/sh", "-c", mountScript(nd.Dir) + `exec "$0" "$@"`},
			n.bin("containerd"), "--config", filepath.Join(nd.Dir, "containerd.toml"))
		p, err := startProc(nd.NS, fmt.Sprintf("containerd-%d", i), n.logDir(), UnshareBin, args...)
		if err != nil {
			return err
		}
		n.mu.Lock()
		nd.containerd = p
		n.mu.Unlock()
	}
	return nil
}

func (n *Nodes) waitContainerds(ctx context.Context) error {
	t0 := time.Now()
	for _, nd := range n.Nodes {
		if err := n.waitContainerd(ctx, nd); err != nil {
			return err
		}
	}
	n.cfg.logf("%d containerds answer (%.1fs)", len(n.Nodes), time.Since(t0).Seconds())
	return nil
}

func (n *Nodes) importImages(ctx context.Context) error {
	t0 := time.Now()
	for _, nd := range n.Nodes {
		for _, img := range n.cfg.Images {
			if err := n.Import(ctx, nd, img); err != nil {
				return err
			}
		}
	}
	n.cfg.logf("%d images imported into %d nodes (%.1fs)", len(n.cfg.Images), len(n.Nodes), time.Since(t0).Seconds())
	return nil
}

func (n *Nodes) startAgents(context.Context) error {
	for i, nd := range n.Nodes {
		if err := n.startNodeAgents(i, nd); err != nil {
			return err
		}
	}
	return nil
}

// mountScript bind-mounts a node's HostDirs (under dir) on their paths, in
// the mount namespace of the shell running it; the netns directory is
// made a shared mount, so the pods' netns files containerd mounts there
// later propagate into a pod's HostToContainer volume of it. And /proc/1
// becomes the node's containerd: a node agent finds "the host" as PID 1's
// network namespace (istio-cni reads /host/proc/1/ns/net and enters it
// for its host rules), which must be the node's, never the machine's
// (whose PID 1 is not even readable on these VMs).
func mountScript(dir string) string {
	var b strings.Builder
	b.WriteString("set -e; ")
	for _, d := range HostDirs {
		fmt.Fprintf(&b, "mount --bind %s %s; ", shellQuote(filepath.Join(dir, d.Dir)), shellQuote(d.Path))
	}
	fmt.Fprintf(&b, "mount --make-shared %s; ", shellQuote(NodeNetnsDir))
	// PID 1 of the node is the shell itself, which becomes containerd:
	// a directory of links to its /proc entries is mounted on /proc/1.
	p1 := shellQuote(filepath.Join(dir, "proc1"))
	fmt.Fprintf(&b, `rm -rf %s; mkdir %s; for f in /proc/$$/*; do ln -s "../$$/${f##*/}" %s/; done; mount --bind %s /proc/1; `, p1, p1, p1, p1)
	return b.String()
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// startNodeAgents starts node i's kubelet and kube-proxy.
func (n *Nodes) startNodeAgents(i int, nd *Node) error {
	logDir := filepath.Join(n.cfg.Dir, "logs")
	// Every kubelet binds its device-plugin registry at one fixed path
	// (devicePluginSocket, not under --root-dir): two kubelets starting at
	// once, of this cluster or of another test package's, race between
	// removing the file and binding it, and the loser exits ("bind: address
	// already in use"). So kubelets start one at a time, machine-wide.
	unlock, err := lockFile(kubeletStartLock)
	if err != nil {
		return err
	}
	start := time.Now()
	// In containerd's mount namespace (nsenter execs the kubelet: the
	// recorded PID is the kubelet's): the kubelet creates hostPath
	// directories and its volumes where runc will look for them.
	kl, err := startProc(nd.NS, fmt.Sprintf("kubelet-%d", i), logDir, NsenterBin,
		fmt.Sprintf("--mount=/proc/%d/ns/mnt", nd.containerd.PID), "--", n.bin("kubelet"),
		"--config="+filepath.Join(nd.Dir, "kubelet.yaml"), "--kubeconfig="+n.cfg.Kubeconfig,
		"--root-dir="+filepath.Join(nd.Dir, "kubelet"), "--cert-dir="+filepath.Join(nd.Dir, "kubelet-pki"),
		"--node-ip="+nd.IP.String(), "--hostname-override="+nd.Name, "--v=1")
	if err != nil {
		unlock()
		return err
	}
	for deadline := start.Add(kubeletBindWait); time.Now().Before(deadline) && !kl.Exited(); time.Sleep(50 * time.Millisecond) {
		if st, err := os.Stat(devicePluginSocket); err == nil && !st.ModTime().Before(start) {
			break
		}
	}
	unlock()
	kp, err := startProc(nd.NS, fmt.Sprintf("kube-proxy-%d", i), logDir, n.bin("kube-proxy"),
		"--config="+filepath.Join(nd.Dir, "kube-proxy.yaml"), "--v=1")
	if err != nil {
		kl.Stop(stopGrace)
		return err
	}
	n.mu.Lock()
	nd.kubelet, nd.proxy = kl, kp
	n.mu.Unlock()
	return nil
}

// Exited reports the first node component that has exited (nil while all
// run): for waits that should fail at once rather than time out.
func (n *Nodes) Exited() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, nd := range n.Nodes {
		for _, p := range []*proc{nd.containerd, nd.kubelet, nd.proxy} {
			if p != nil && p.Exited() {
				return p.failure()
			}
		}
	}
	if n.coredns != nil && n.coredns.Exited() {
		return n.coredns.failure()
	}
	return nil
}

// Processes lists the running components.
func (n *Nodes) Processes() []Process {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []Process
	for _, nd := range n.Nodes {
		for _, p := range []*proc{nd.containerd, nd.kubelet, nd.proxy} {
			if p != nil {
				out = append(out, p.info())
			}
		}
	}
	if n.coredns != nil {
		out = append(out, n.coredns.info())
	}
	return out
}

// KillKubelet kills node i's kubelet with SIGKILL (a node failing: its
// pods keep running, the node goes NotReady after the node monitor grace
// period).
func (n *Nodes) KillKubelet(i int) error {
	n.mu.Lock()
	p := n.Nodes[i].kubelet
	n.mu.Unlock()
	if p == nil || p.Exited() {
		return fmt.Errorf("the kubelet of %s is not running", n.Nodes[i].Name)
	}
	p.Kill()
	<-p.Done()
	return nil
}

// RestartKubelet starts node i's kubelet again after KillKubelet.
func (n *Nodes) RestartKubelet(i int) error {
	n.mu.Lock()
	nd := n.Nodes[i]
	old := nd.kubelet
	n.mu.Unlock()
	if old != nil && !old.Exited() {
		return fmt.Errorf("the kubelet of %s is running", nd.Name)
	}
	nd.proxy.Stop(stopGrace)
	return n.startNodeAgents(i, nd)
}

// Ctr runs ctr against node nd's containerd in its k8s.io namespace.
func (n *Nodes) Ctr(ctx context.Context, nd *Node, args ...string) ([]byte, error) {
	full := append([]string{"--address", nd.Socket, "--namespace", "k8s.io"}, args...)
	cmd := exec.CommandContext(ctx, n.bin("ctr"), full...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// Import imports an image tarball into node nd's containerd (k8s.io
// namespace, unpacked for the CRI's snapshotter).
func (n *Nodes) Import(ctx context.Context, nd *Node, tarball string) error {
	if _, err := n.Ctr(ctx, nd, "images", "import", "--snapshotter", "overlayfs", tarball); err != nil {
		return fmt.Errorf("importing %s into %s: %w", tarball, nd.Name, err)
	}
	return nil
}

func (n *Nodes) waitContainerd(ctx context.Context, nd *Node) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var last error
	for {
		if nd.containerd.Exited() {
			return nd.containerd.failure()
		}
		if _, err := os.Stat(nd.Socket); err == nil {
			if _, last = n.Ctr(ctx, nd, "version"); last == nil {
				return nil
			}
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("containerd of %s not answering: %w (last: %v)", nd.Name, ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// makeCgroups creates node i's cgroupRoot in every v1 hierarchy (cpuset
// needs its cpus and mems before anything can join it).
func (n *Nodes) makeCgroups(i int) error {
	root := n.cfg.cgroupRoot(i)
	for _, h := range cgroupHierarchies {
		d := filepath.Join("/sys/fs/cgroup", h, root)
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("creating cgroup %s: %w", d, err)
		}
	}
	for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
		b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/cpuset", f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join("/sys/fs/cgroup/cpuset", root, f), b, 0o644); err != nil {
			return fmt.Errorf("setting %s of cgroup %s: %w", f, root, err)
		}
	}
	return nil
}

// Stop stops everything Start started and removes what it made outside
// Dir and the substrate: see the package doc. It goes on past failures and
// reports them all. Safe to call more than once.
func (n *Nodes) Stop() error {
	n.mu.Lock()
	if n.stopped {
		n.mu.Unlock()
		return nil
	}
	n.stopped = true
	n.mu.Unlock()
	var errs []error
	var wg sync.WaitGroup
	for _, nd := range n.Nodes {
		for _, p := range []*proc{nd.kubelet, nd.proxy} {
			if p != nil {
				wg.Go(func() { p.Stop(stopGrace) })
			}
		}
	}
	wg.Wait()
	// The pods' processes, by the nodes' cgroups (the kubelets are gone,
	// nobody restarts them now).
	for i := range n.Nodes {
		killCgroup(filepath.Join("/sys/fs/cgroup/pids", n.cfg.cgroupRoot(i)))
	}
	for _, nd := range n.Nodes {
		if nd.containerd != nil {
			wg.Go(func() { nd.containerd.Stop(stopGrace) })
		}
	}
	wg.Wait()
	for _, nd := range n.Nodes {
		killShims(nd.Socket)
	}
	if n.coredns != nil {
		n.coredns.Stop(stopGrace)
	}
	if err := unmountUnder(n.cfg.Dir); err != nil {
		errs = append(errs, err)
	}
	for i := range n.Nodes {
		if err := removeCgroups(n.cfg.cgroupRoot(i)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// killCgroup SIGKILLs every process in the cgroup dir and its children
// until none is left (bounded: processes forking while they die).
func killCgroup(dir string) {
	for range 50 {
		var pids []int
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			b, _ := os.ReadFile(filepath.Join(p, "cgroup.procs"))
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					pids = append(pids, pid)
				}
			}
			return nil
		})
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// killShims kills the containerd-shim-runc-v2 processes of the containerd
// at socket: they outlive containerd by design and carry its address on
// their command line.
func killShims(socket string) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 0 && strings.HasSuffix(args[0], "containerd-shim-runc-v2") && slices.Contains(args, socket) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// unmountUnder unmounts every mount at or below dir, deepest first (the
// pods' rootfs overlays, volumes, netns files under containerd's state).
func unmountUnder(dir string) error {
	var errs []error
	for range 3 {
		b, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			return err
		}
		var mounts []string
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) > 4 {
				m := unescapeMount(f[4])
				if m == dir || strings.HasPrefix(m, dir+"/") {
					mounts = append(mounts, m)
				}
			}
		}
		if len(mounts) == 0 {
			return nil
		}
		sort.Sort(sort.Reverse(sort.StringSlice(mounts)))
		errs = errs[:0]
		for _, m := range mounts {
			if err := syscall.Unmount(m, 0); err != nil {
				if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
					errs = append(errs, fmt.Errorf("unmounting %s: %w", m, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// removeCgroups removes the cgroup root in every hierarchy, deepest first.
func removeCgroups(root string) error {
	var errs []error
	for _, h := range append(slices.Clone(cgroupHierarchies), "unified") {
		base := filepath.Join("/sys/fs/cgroup", h, root)
		var dirs []string
		_ = filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			var err error
			for range 20 { // a dying process leaves its cgroup a moment later
				if err = os.Remove(dirs[i]); err == nil || errors.Is(err, os.ErrNotExist) {
					err = nil
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("removing cgroup %s: %w", dirs[i], err))
			}
		}
	}
	return errors.Join(errs...)
}

// devicePluginSocket is where every kubelet binds its device-plugin
// registry (kubelet's fixed pluginapi.DevicePluginPath, whatever its
// --root-dir); kubeletStartLock serialises kubelet starts around it.
const (
	devicePluginSocket = "/var/lib/kubelet/device-plugins/kubelet.sock"
	kubeletStartLock   = "/run/meshbench-kubelet-start.lock"
	// kubeletBindWait bounds the wait for a kubelet to bind it (about
	// 0.1–0.3 s after start here).
	kubeletBindWait = 15 * time.Second
)

// lockFile takes an exclusive flock on path (created if needed) and
// returns its release.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("kubelet start lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("kubelet start lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
