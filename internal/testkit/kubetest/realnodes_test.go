package kubetest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestRealNodes starts a cluster with two real nodes, runs meshbench's
// image on each (a real container, its pod IP in its node's pod CIDR,
// reachable from this machine and across nodes, its log through the API),
// then stops the cluster and checks that nothing is left: no process of
// the nodes, no shim, no mount under the cluster's directory, no cgroup,
// no link, netns or route.
func TestRealNodes(t *testing.T) {
	testutil.RealPart(t, "a Kubernetes control plane and real nodes")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	t0 := time.Now()
	c, err := Start(ctx, Options{Nodes: 2, RealNodes: true, Meshbench: testutil.BuildMeshbench(t), Log: t.Output()})
	if err != nil {
		skip, msg := requireOutcome(err, os.Getenv(RequireEnv))
		if skip {
			t.Skip(msg)
		}
		t.Fatal(msg)
	}
	t.Logf("cluster with 2 real nodes ready in %.1fs", time.Since(t0).Seconds())
	stopped := false
	defer func() {
		if !stopped {
			c.KeepDir()
			_ = c.Stop()
		}
	}()
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	for i, node := range c.Nodes {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("static-%d", i), Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: new(int64(1)),
				Containers: []corev1.Container{{Name: "app", Image: MeshbenchImage, Args: []string{"serve", "static", "--listen", "0.0.0.0:8080"}}}},
		}
		if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t1 := time.Now()
	var ips []string
	Poll(ctx, t, 2*time.Minute, "both pods Running", func() (bool, string) {
		ips = ips[:0]
		var states []string
		for i := range c.Nodes {
			p, err := cs.CoreV1().Pods("default").Get(ctx, fmt.Sprintf("static-%d", i), metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			states = append(states, fmt.Sprintf("%s %s %s", p.Name, p.Status.Phase, p.Status.PodIP))
			if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
				ips = append(ips, p.Status.PodIP)
			}
		}
		return len(ips) == len(c.Nodes), strings.Join(states, "; ")
	})
	t.Logf("pods Running in %.1fs: %v", time.Since(t1).Seconds(), ips)
	for i, ip := range ips {
		if a := netip.MustParseAddr(ip); !c.net.podCIDRs[i].Contains(a) {
			t.Errorf("pod %d's IP %s is outside node %d's pod CIDR %s", i, ip, i, c.net.podCIDRs[i])
		}
		// From this machine (the host routes each pod CIDR to its node).
		var body string
		Poll(ctx, t, 30*time.Second, "pod "+ip+" answering", func() (bool, string) {
			conn, err := net.DialTimeout("tcp", net.JoinHostPort(ip, "8080"), 2*time.Second)
			if err != nil {
				return false, err.Error()
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(5 * time.Second))
			io.WriteString(conn, "GET / HTTP/1.0\r\n\r\n")
			b, _ := io.ReadAll(conn)
			body = string(b)
			return strings.Contains(body, "200 OK"), body
		})
	}
	// The container's output, through the API and the node's kubelet
	// (verified against the cluster CA: no insecure TLS).
	out, err := c.Kubectl(ctx, "logs", "-n", "default", "static-0")
	if err != nil || !strings.Contains(string(out), "READY") {
		t.Errorf("kubectl logs: %v\n%s", err, out)
	}
	// Across nodes: node 1's pod's network namespace reaches node 0's pod
	// (routes between the nodes' pod CIDRs, no forwarding on the host).
	if err := c.Real.Nodes[1].NS.Do(func() error {
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(ips[0], "8080"), 5*time.Second)
		if err == nil {
			conn.Close()
		}
		return err
	}); err != nil {
		t.Errorf("node 1 → pod on node 0: %v", err)
	}

	dir, prefix := c.Dir, c.net.prefix
	sockets := []string{}
	for _, n := range c.Real.Nodes {
		sockets = append(sockets, n.Socket)
	}
	pids := c.Real.Processes()
	t2 := time.Now()
	stopped = true
	if err := c.Stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	t.Logf("stopped in %.1fs", time.Since(t2).Seconds())
	for _, p := range pids {
		if err := syscallKill0(p.PID); err == nil {
			t.Errorf("%s (pid %d) still running", p.Name, p.PID)
		}
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, s := range sockets {
			if strings.Contains(string(b), s) {
				t.Errorf("process %s still runs for %s: %q", e.Name(), s, b)
			}
		}
	}
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mi), dir) {
		t.Errorf("mounts left under %s", dir)
	}
	for _, h := range []string{"cpu", "memory", "pids", "cpuset", "systemd", "unified"} {
		if m, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", h, prefix+"-node-*")); len(m) > 0 {
			t.Errorf("cgroups left: %v", m)
		}
	}
	if m, _ := filepath.Glob("/run/netns/" + prefix + "*"); len(m) > 0 {
		t.Errorf("network namespaces left: %v", m)
	}
	if ifs, _ := net.Interfaces(); true {
		for _, i := range ifs {
			if strings.HasPrefix(i.Name, prefix) {
				t.Errorf("link %s left", i.Name)
			}
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("cluster dir %s left: %v", dir, err)
	}
}

func syscallKill0(pid int) error { return syscall.Kill(pid, 0) }

// TestMain removes the meshbench build the tests make.
func TestMain(m *testing.M) { testutil.Main(m) }
