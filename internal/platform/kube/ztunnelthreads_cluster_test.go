package kube

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meshbench/meshbench/internal/testkit/kubetest"
)

// TestZtunnelLogThreads: ztunnel's worker threads from the config it
// logs at start (the lines as the lab's real ztunnel writes them).
func TestZtunnelLogThreads(t *testing.T) {
	log := "2026-11-28T05:20:58.944981Z\tinfo\tztunnel\tset file descriptor limits from 20000 to 20000\t\n" +
		"2026-11-28T05:20:58.945095Z\tinfo\tztunnel\trunning with config: proxy: true\ndnsProxy: true\n" +
		"proxyMetadata: {}\nnumWorkerThreads: 3\nrequireOriginalSource: null\n"
	if n, err := ZtunnelLogThreads([]byte(log)); err != nil || n != 3 {
		t.Errorf("ZtunnelLogThreads = %d, %v; want 3", n, err)
	}
	if _, err := ZtunnelLogThreads([]byte("2026-11-28T05:20:58.944981Z\tinfo\tztunnel\tversion: …\n")); err == nil {
		t.Error("a log without the config: no error")
	}
}

// TestZtunnelThreadsRollout: SetZtunnelThreads changes the ztunnel
// DaemonSet's ZTUNNEL_WORKER_THREADS, keeps what it was in an annotation,
// and returns once the real DaemonSet controller rolled every node's pod
// out (kwok's nodes run them); the same value again changes nothing;
// RestoreZtunnelThreads puts back the DaemonSet as it was, whether it
// had no setting or one of its own.
func TestZtunnelThreadsRollout(t *testing.T) {
	kc := kubetest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cs, _ := clusterClients(t, kc)
	c, err := Connect(ctx, ConnectOptions{Kubeconfig: kc.Kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: IstioNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteNamespace(t, cs, IstioNamespace) })
	tpl := testPodTemplate(map[string]string{"app": "ztunnel"}, "2m", "16Mi", "istio-proxy")
	tpl.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "RUST_LOG", Value: "info"}}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: IstioNamespace, Name: "ztunnel"},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ztunnel"}}, Template: tpl}}
	if _, err := cs.AppsV1().DaemonSets(IstioNamespace).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const timeout = 2 * time.Minute
	step := func(what string, n int, from, to string) {
		t.Helper()
		var ch *ZtunnelThreadsChange
		var err error
		if n < 0 {
			ch, err = c.RestoreZtunnelThreads(ctx, timeout)
		} else {
			ch, err = c.SetZtunnelThreads(ctx, n, timeout)
		}
		switch {
		case err != nil:
			t.Fatalf("%s: %v", what, err)
		case from == "-" && ch != nil:
			t.Errorf("%s: changed %s, want nothing changed", what, ch)
		case from != "-" && (ch == nil || ch.From != from || ch.To != to):
			t.Errorf("%s: %v, want %q → %q", what, ch, from, to)
		}
	}
	// state checks the DaemonSet's env and note and every pod's env.
	state := func(what, env, note string) {
		t.Helper()
		got, err := cs.AppsV1().DaemonSets(IstioNamespace).Get(ctx, "ztunnel", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		v, _ := envValue(&got.Spec.Template.Spec, "istio-proxy", ZtunnelThreadsEnv)
		if v != env || got.Annotations[ZtunnelThreadsBefore] != note {
			t.Errorf("%s: DaemonSet %s=%q, note %q; want %q, %q", what, ZtunnelThreadsEnv, v, got.Annotations[ZtunnelThreadsBefore], env, note)
		}
		if r, _ := envValue(&got.Spec.Template.Spec, "istio-proxy", "RUST_LOG"); r != "info" {
			t.Errorf("%s: RUST_LOG %q, want its own setting kept", what, r)
		}
		checkZtunnelPods(ctx, t, cs, what, env, len(kc.Nodes))
	}
	if err := c.waitZtunnelRollout(ctx, ds, "", timeout); err != nil {
		t.Fatal(err)
	}
	step("restore with nothing changed", -1, "-", "")
	step("set 2", 2, "", "2")
	state("set 2", "2", ztunnelUnset)
	step("set 2 again", 2, "-", "")
	step("set 3", 3, "2", "3")
	state("set 3", "3", ztunnelUnset)
	step("restore", -1, "3", "")
	state("restored", "", "")
	step("restore again", -1, "-", "")

	// A setting of its own is put back as it was.
	if _, err := c.SetZtunnelThreads(ctx, 4, timeout); err != nil {
		t.Fatal(err)
	}
	got, err := cs.AppsV1().DaemonSets(IstioNamespace).Get(ctx, "ztunnel", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(got.Annotations, ZtunnelThreadsBefore) // as if the DaemonSet had 4 of its own
	if _, err := cs.AppsV1().DaemonSets(IstioNamespace).Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	step("set 1 over its own 4", 1, "4", "1")
	state("set 1", "1", "4")
	step("restore its own", 0, "1", "4")
	state("restored its own", "4", "")

	// Someone else's ambient workload: a change that restarts ztunnel is
	// refused naming it; the value ztunnel runs already, or the
	// workload's namespace as the run's own, is not.
	const other = "mbz-theirs"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other,
		Labels: map[string]string{"istio.io/dataplane-mode": "ambient"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteNamespace(t, cs, other) })
	if err := c.refuseZtunnelRestart(ctx, 2, "mbz-app"); err != nil {
		t.Errorf("an ambient namespace without pods: %v, want no refusal", err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "their-app"}, Spec: testPodTemplate(nil, "1m", "1Mi", "main").Spec}
	if _, err := cs.CoreV1().Pods(other).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.refuseZtunnelRestart(ctx, 2, "mbz-app"); err == nil || !strings.Contains(err.Error(), other+" (1 pods)") || !strings.Contains(err.Error(), "--allow-foreign-workloads") {
		t.Errorf("their pod enrolled in ambient: %v, want a refusal naming %s", err, other)
	}
	if err := c.refuseZtunnelRestart(ctx, 4, "mbz-app"); err != nil {
		t.Errorf("ztunnel already at 4: %v, want no refusal (nothing restarts)", err)
	}
	if err := c.refuseZtunnelRestart(ctx, 2, "mbz-app", other); err != nil {
		t.Errorf("the namespace as the run's own: %v, want no refusal", err)
	}
}

// checkZtunnelPods checks that n ztunnel pods run, each Ready and with
// env as ZTUNNEL_WORKER_THREADS ("" unset), none terminating.
func checkZtunnelPods(ctx context.Context, t *testing.T, cs kubernetes.Interface, what, env string, n int) {
	t.Helper()
	pods, err := cs.CoreV1().Pods(IstioNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=ztunnel"})
	if err != nil {
		t.Fatal(err)
	}
	if why := ztunnelPodsPending(pods.Items, "istio-proxy", env, n); why != "" || len(pods.Items) != n {
		t.Errorf("%s: %d ztunnel pods, want %d Ready with %s=%q: %s", what, len(pods.Items), n, ZtunnelThreadsEnv, env, why)
	}
}
