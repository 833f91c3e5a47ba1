package e2e

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/internal/cli"
	"github.com/meshbench/meshbench/internal/platform/kube"
	"github.com/meshbench/meshbench/internal/testkit/kubetest"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// Four real nodes: from kube.NodeSelectorMinNodes meshbench labels three
// for the app and the rest for the load, so the tests see the labels set
// and removed, app replicas spread over nodes and the load apart.
const testNodes = kube.NodeSelectorMinNodes

type cleanupAfter struct{ m *testing.M }

func (c cleanupAfter) Run() int {
	code := c.m.Run()
	testutil.RemoveMeshbenchBuild()
	return code
}

func TestMain(m *testing.M) {
	kubetest.Main(cleanupAfter{m}, kubetest.Options{RealNodes: true, Nodes: testNodes})
}

type invocation struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// meshbench runs the CLI in-process with args; signals, when not nil,
// delivers interrupts as a terminal's Ctrl-C does.
func meshbench(t *testing.T, signals <-chan os.Signal, args ...string) invocation {
	t.Helper()
	var out, errb testutil.SyncBuffer
	env := &cli.Env{Stdout: &out, Stderr: &errb, Getenv: os.Getenv, Now: time.Now, Signals: signals}
	t0 := time.Now()
	code := cli.Run(context.Background(), env, args)
	inv := invocation{code, out.String(), errb.String(), time.Since(t0)}
	t.Logf("meshbench %s: exit %d in %.1fs\n--- stdout ---\n%s--- stderr ---\n%s", strings.Join(args, " "), code, inv.took.Seconds(), inv.stdout, inv.stderr)
	return inv
}

// connect is a client for the test cluster.
func connect(t *testing.T, kc *kubetest.Cluster) *kube.Cluster {
	t.Helper()
	c, err := kube.Connect(context.Background(), kube.ConnectOptions{Kubeconfig: kc.Kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// podWatch records, every 250 ms until stopped, the node and phase of
// every pod it sees in the namespaces (the run deletes them at its end).
type podWatch struct {
	mu   sync.Mutex
	pods map[string]corev1.Pod // "ns/name" -> last seen
	stop context.CancelFunc
	done chan struct{}
}

func watchPods(c *kube.Cluster, namespaces ...string) *podWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &podWatch{pods: map[string]corev1.Pod{}, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			for _, ns := range namespaces {
				l, err := c.Core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					continue
				}
				w.mu.Lock()
				for _, p := range l.Items {
					w.pods[p.Namespace+"/"+p.Name] = p
				}
				w.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *podWatch) Stop() {
	w.stop()
	<-w.done
}

// Pods returns the pods seen in ns whose name starts with prefix.
func (w *podWatch) Pods(ns, prefix string) []corev1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []corev1.Pod
	for _, p := range w.pods {
		if p.Namespace == ns && strings.HasPrefix(p.Name, prefix) {
			out = append(out, p)
		}
	}
	return out
}

// nodesOf is the set of nodes the pods ran on.
func nodesOf(pods []corev1.Pod) map[string]bool {
	m := map[string]bool{}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			m[p.Spec.NodeName] = true
		}
	}
	return m
}

// checkClean fails t if the namespaces exist or a node still carries a
// run's labels.
func checkClean(t *testing.T, c *kube.Cluster, namespaces ...string) {
	t.Helper()
	ctx := context.Background()
	for _, ns := range namespaces {
		if _, err := c.Core.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("namespace %s after the run: %v", ns, err)
		}
	}
	nodes, err := c.Core.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: kube.LabelRun})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		t.Errorf("node %s still labelled %s=%s after the run", n.Name, kube.LabelRun, n.Labels[kube.LabelRun])
	}
}

// waitFor polls check every 250 ms for at most timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, check func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !check() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: not after %v", what, timeout)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
