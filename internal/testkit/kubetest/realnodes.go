package kubetest

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/meshbench/meshbench/internal/load/extgen"
	"github.com/meshbench/meshbench/internal/sys/image"
	"github.com/meshbench/meshbench/internal/sys/netns"
	"github.com/meshbench/meshbench/internal/testkit/nodes"
)

// Images the real nodes hold (imported from tarballs built by package
// image; nothing is pulled from a registry).
const (
	// MeshbenchImage is the name kube.DefaultImage gives meshbench's
	// image (kubetest cannot import kube; a kube test checks they agree),
	// so a run without --image finds it on the nodes.
	MeshbenchImage = "ghcr.io/meshbench/meshbench:dev"
	// PauseImage is containerd's pinned sandbox image: hack/k8s/pause.
	PauseImage = "registry.k8s.io/pause:3.10"
)

// realSlots bounds how many real-node clusters can run on one machine at
// once: slot s uses bridge PREFIX "mbn<s>", node subnet 10.99.<s>.0/24 and
// pod CIDRs 10.<128+s>.<i>.0/24.
const realSlots = 64

// slotLock serialises choosing a slot between processes (go test runs
// packages in parallel): the chooser holds it until its bridge exists, so
// the next one sees the bridge and the subnet taken.
const slotLock = "/tmp/meshbench-kubetest-nodes.lock"

// realNet is the network layout of a real-node cluster.
type realNet struct {
	prefix      string
	sub         *netns.Substrate
	bridge      *netns.Bridge
	nodeIPs     []netip.Addr
	podCIDRs    []netip.Prefix
	clusterCIDR netip.Prefix
}

// gateway is the bridge's address: the apiserver and CoreDNS listen there.
func (r *realNet) gateway() netip.Addr { return r.bridge.Addr.Addr() }

// makeRealNet picks a free slot and makes its bridge (under slotLock).
func makeRealNet(n int) (*realNet, error) {
	f, err := os.OpenFile(slotLock, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return nil, fmt.Errorf("locking %s: %w", slotLock, err)
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	for s := range realSlots {
		nodeNet := netip.MustParsePrefix(fmt.Sprintf("10.99.%d.0/24", s))
		cluster := netip.MustParsePrefix(fmt.Sprintf("10.%d.0.0/16", 128+s))
		prefix := fmt.Sprintf("mbn%d", s)
		busy, err := netns.InUse(nodeNet, prefix)
		if err != nil {
			return nil, err
		}
		if !busy {
			busy, err = netns.InUse(cluster, "")
			if err != nil {
				return nil, err
			}
		}
		if busy {
			continue
		}
		r := &realNet{prefix: prefix, sub: netns.New(prefix), clusterCIDR: cluster}
		gw := nodeNet.Addr().Next()
		if r.bridge, err = r.sub.Bridge("br", netip.PrefixFrom(gw, 24)); err != nil {
			return nil, errors.Join(err, r.sub.Close())
		}
		ip := gw
		for i := range n {
			ip = ip.Next()
			r.nodeIPs = append(r.nodeIPs, ip)
			r.podCIDRs = append(r.podCIDRs, netip.MustParsePrefix(fmt.Sprintf("10.%d.%d.0/24", 128+s, i)))
		}
		return r, nil
	}
	return nil, fmt.Errorf("no free slot for a real-node cluster: 10.99.0-%d.0/24 are all in use", realSlots-1)
}

// buildImages writes the pause and meshbench image archives into dir.
func buildImages(dir, nodesBin, meshbench string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var out []string
	// meshbench's image holds the install step's vegeta and fortio, as
	// `meshbench image` puts them in, when they are built.
	gens, _ := extgen.ImageBinaries()
	for _, im := range []struct {
		ref, bin string
		extra    []string
	}{{PauseImage, filepath.Join(nodesBin, "pause"), nil}, {MeshbenchImage, meshbench, gens}} {
		ref, err := image.ParseRef(im.ref)
		if err != nil {
			return nil, err
		}
		img, err := image.Build(image.Spec{Binary: im.bin, Extra: im.extra})
		if err != nil {
			return nil, fmt.Errorf("building %s: %w", im.ref, err)
		}
		path := filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_").Replace(im.ref)+".tar")
		if err := image.WriteArchiveFile(path, img, ref); err != nil {
			return nil, err
		}
		out = append(out, path)
	}
	return out, nil
}

// startRealNodes builds the images and starts the nodes; the caller waits
// for them to be Ready.
func (c *Cluster) startRealNodes(ctx context.Context) error {
	t0 := time.Now()
	imgs, err := buildImages(filepath.Join(c.Dir, "images"), c.nodesBin, c.meshbench)
	if err != nil {
		return err
	}
	c.step("images built (%.1fs)", time.Since(t0).Seconds())
	n, err := nodes.Start(ctx, nodes.Config{
		Prefix: c.net.prefix, Dir: filepath.Join(c.Dir, "nodes"), BinDir: c.nodesBin,
		Net: c.net.sub, Bridge: c.net.bridge,
		NodeIPs: c.net.nodeIPs, PodCIDRs: c.net.podCIDRs, ClusterCIDR: c.net.clusterCIDR,
		ServiceCIDR: netip.MustParsePrefix(serviceCIDR),
		Kubeconfig:  c.Kubeconfig, Context: ContextCert,
		CAFile: c.pki.caCert, ServingCert: c.pki.servingCert, ServingKey: c.pki.servingKey,
		Images: imgs, SandboxImage: PauseImage, Log: c.log,
	})
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.Real = n
	c.mu.Unlock()
	return nil
}

// stopRealNodes stops the nodes and removes the network.
func (c *Cluster) stopRealNodes() error {
	var errs []error
	c.mu.Lock()
	n, rn := c.Real, c.net
	c.mu.Unlock()
	if n != nil {
		t0 := time.Now()
		errs = append(errs, n.Stop())
		c.logf("real nodes stopped in %.1fs", time.Since(t0).Seconds())
	}
	if rn != nil {
		errs = append(errs, rn.sub.Close())
	}
	return errors.Join(errs...)
}

// startRealRest is start's second half with real nodes: metrics-server,
// its APIService, the nodes, and the waits for Ready nodes, cluster DNS
// and an Available metrics API.
func (c *Cluster) startRealRest(ctx context.Context, logDir string, kcm, sched *proc) error {
	if err := c.waitHTTP(ctx, kcm, "https://"+hostPort(c.Ports.ControllerManager)+"/healthz", 60*time.Second); err != nil {
		return err
	}
	if err := c.waitHTTP(ctx, sched, "https://"+hostPort(c.Ports.Scheduler)+"/healthz", 60*time.Second); err != nil {
		return err
	}
	ms, err := c.startMetricsServer(logDir)
	if err != nil {
		return err
	}
	manifests, err := c.manifests()
	if err != nil {
		return err
	}
	if _, err := c.kubectl(ctx, manifests, "apply", "-f", "-"); err != nil {
		return fmt.Errorf("applying the metrics APIService: %w", err)
	}
	if err := c.startRealNodes(ctx); err != nil {
		return err
	}
	t0 := time.Now()
	if err := ms.waitReady(ctx, 120*time.Second, func(ctx context.Context) error {
		if err := c.Real.Exited(); err != nil {
			return backoffStop{err}
		}
		return c.checkConditions(ctx, "/api/v1/nodes", "Ready", len(c.Nodes))
	}); err != nil {
		return fmt.Errorf("waiting for %d Ready nodes: %w", len(c.Nodes), err)
	}
	c.step("%d real nodes Ready (%.1fs after their kubelets started)", len(c.Nodes), time.Since(t0).Seconds())
	if err := ms.waitReady(ctx, 120*time.Second, func(ctx context.Context) error {
		return c.checkConditions(ctx, "/apis/apiregistration.k8s.io/v1/apiservices?fieldSelector=metadata.name%3D"+metricsAPIService, "Available", 1)
	}); err != nil {
		return err
	}
	c.step("metrics.k8s.io Available; cluster ready (apiserver %s, kubeconfig %s)", c.Server, c.Kubeconfig)
	return nil
}

// backoffStop carries a failure that no waiting can fix out of a
// waitReady check (the check's error is otherwise only the last state).
type backoffStop struct{ err error }

func (b backoffStop) Error() string { return b.err.Error() }

// StopMetricsServer stops metrics-server (metrics.k8s.io goes unavailable)
// until RestartMetricsServer: for tests of what a user sees then.
func (c *Cluster) StopMetricsServer() error {
	c.mu.Lock()
	var ms *proc
	for _, p := range c.procs {
		if p.Name == "metrics-server" && !p.Exited() {
			ms = p
		}
	}
	c.mu.Unlock()
	if ms == nil {
		return errors.New("metrics-server is not running")
	}
	ms.stop()
	// Stopped on purpose: not a component that died (Stop reports those).
	c.mu.Lock()
	c.procs = slices.DeleteFunc(c.procs, func(p *proc) bool { return p == ms })
	c.mu.Unlock()
	return nil
}

// RestartMetricsServer starts metrics-server again and waits until
// metrics.k8s.io is Available.
func (c *Cluster) RestartMetricsServer(ctx context.Context) error {
	ms, err := c.startMetricsServer(filepath.Join(c.Dir, "logs"))
	if err != nil {
		return err
	}
	return ms.waitReady(ctx, 120*time.Second, func(ctx context.Context) error {
		return c.checkConditions(ctx, "/apis/apiregistration.k8s.io/v1/apiservices?fieldSelector=metadata.name%3D"+metricsAPIService, "Available", 1)
	})
}
