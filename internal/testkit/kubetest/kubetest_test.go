package kubetest

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"

	"github.com/meshbench/meshbench/internal/platform/kube"
	"github.com/meshbench/meshbench/internal/platform/kube/client"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestCluster starts a real cluster with two kwok nodes and checks what
// meshbench relies on: workloads become Ready on kwok nodes, metrics.k8s.io
// reports the usage set by annotations, Jobs complete, pod logs come back
// through the API, both kubeconfig contexts work, and Stop leaves nothing
// running.
func TestCluster(t *testing.T) {
	testutil.RealPart(t, "a Kubernetes control plane")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	t0 := time.Now()
	c, err := Start(ctx, Options{Nodes: 2, Log: t.Output()})
	if err != nil {
		skip, msg := requireOutcome(err, os.Getenv(RequireEnv))
		if skip {
			t.Skip(msg)
		}
		t.Fatal(msg)
	}
	t.Logf("cluster ready in %.1fs", time.Since(t0).Seconds())
	stopped := false
	defer func() {
		if !stopped {
			if t.Failed() {
				c.KeepDir()
			}
			_ = c.Stop()
		}
	}()

	cs, mc := clients(t, c, c.Context)

	t.Run("nodes", func(t *testing.T) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "type=kwok"})
		if err != nil {
			t.Fatal(err)
		}
		if len(nodes.Items) != 2 {
			t.Fatalf("got %d kwok nodes, want 2", len(nodes.Items))
		}
		for _, n := range nodes.Items {
			if !client.NodeReady(&n) {
				t.Errorf("node %s is not Ready", n.Name)
			}
		}
	})

	t.Run("watch from resourceVersion 0", func(t *testing.T) {
		// kwok's informers watch like this. With Debian's etcd the
		// apiserver ended such watches at once with an error until it
		// ran with WatchList=false (see Start).
		w, err := cs.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: "0", AllowWatchBookmarks: true})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		select {
		case ev := <-w.ResultChan():
			if ev.Type != watch.Added {
				t.Errorf("first event %s %+v, want ADDED for an existing node", ev.Type, ev.Object)
			}
		case <-time.After(10 * time.Second):
			t.Error("no event in 10s")
		}
	})

	t.Run("token context", func(t *testing.T) {
		tcs, _ := clients(t, c, c.TokenContext)
		v, err := tcs.Discovery().ServerVersion()
		if err != nil {
			t.Fatal(err)
		}
		if v.GitVersion != KubernetesVersion {
			t.Errorf("server version %s, want %s", v.GitVersion, KubernetesVersion)
		}
		out, err := c.Kubectl(ctx, "--context="+c.TokenContext, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != "admin-token" {
			t.Errorf("whoami with the token: %q, want admin-token", out)
		}
	})

	// The three workload checks run side by side: the metrics check waits
	// for metrics-server's scrapes, which dominates.
	t.Run("workloads", func(t *testing.T) {
		t.Run("deployment metrics", func(t *testing.T) {
			t.Parallel()
			testDeploymentMetrics(ctx, t, cs, mc)
		})
		t.Run("job", func(t *testing.T) {
			t.Parallel()
			testJob(ctx, t, cs)
		})
		t.Run("logs", func(t *testing.T) {
			t.Parallel()
			testLogs(ctx, t, c, cs)
		})
	})

	t.Run("stop", func(t *testing.T) {
		procs := c.Processes()
		if len(procs) != 6 {
			t.Errorf("%d processes, want 6: %v", len(procs), procs)
		}
		t1 := time.Now()
		err := c.Stop()
		stopped = true
		t.Logf("stopped in %.1fs", time.Since(t1).Seconds())
		if err != nil {
			t.Errorf("Stop: %v", err)
		}
		for _, p := range procs {
			// Each was reaped by Stop, so its PID and its process
			// group are gone (ESRCH), not merely a zombie.
			if err := syscall.Kill(p.PID, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("%s (pid %d) still exists after Stop: kill 0: %v", p.Name, p.PID, err)
			}
			if err := syscall.Kill(-p.PID, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("process group of %s (%d) still exists after Stop: %v", p.Name, p.PID, err)
			}
		}
		if err := c.Stop(); err != nil {
			t.Errorf("second Stop: %v", err)
		}
		if _, err := os.Stat(c.Dir); !os.IsNotExist(err) {
			t.Errorf("Stop left the temporary dir %s: %v", c.Dir, err)
		}
	})
}

func clients(t *testing.T, c *Cluster, context string) (*kubernetes.Clientset, *metricsclient.Clientset) {
	t.Helper()
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: c.Kubeconfig},
		&clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 100, 200 // polling several things at once
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mc, err := metricsclient.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	return cs, mc
}

func testDeploymentMetrics(ctx context.Context, t *testing.T, cs *kubernetes.Clientset, mc *metricsclient.Clientset) {
	ns := createNamespace(ctx, t, cs, "web")
	labels := map[string]string{"app": "web"}
	wantCPU, wantMem := resource.MustParse("250m"), resource.MustParse("64Mi")
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels: labels,
					Annotations: map[string]string{
						AnnotationUsageCPU:    wantCPU.String(),
						AnnotationUsageMemory: wantMem.String(),
					},
				},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "web", Image: "example.invalid/web:1",
					Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
				}}},
			},
		},
	}
	t0 := time.Now()
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{
			Selector: labels,
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	var pods []corev1.Pod
	Poll(ctx, t, 60*time.Second, "2 Ready web pods on kwok nodes", func() (bool, string) {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err.Error()
		}
		var ready []corev1.Pod
		var state []string
		for _, p := range list.Items {
			state = append(state, fmt.Sprintf("%s node=%q phase=%s ready=%v", p.Name, p.Spec.NodeName, p.Status.Phase, kube.PodReady(&p)))
			if kube.PodReady(&p) && strings.HasPrefix(p.Spec.NodeName, "kwok-node-") && p.Status.PodIP != "" {
				ready = append(ready, p)
			}
		}
		pods = ready
		return len(ready) == 2, strings.Join(state, "; ")
	})
	t.Logf("2 pods Ready %.1fs after the Deployment was created", time.Since(t0).Seconds())

	Poll(ctx, t, 30*time.Second, "an EndpointSlice with both pod IPs", func() (bool, string) {
		slices, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=web"})
		if err != nil {
			return false, err.Error()
		}
		n := 0
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready {
					n++
				}
			}
		}
		return n == 2, fmt.Sprintf("%d ready endpoints", n)
	})

	// metrics-server needs about three scrapes of a new pod before it
	// reports its CPU rate (see MetricResolution).
	t1 := time.Now()
	var got string
	Poll(ctx, t, 8*MetricResolution, "pod metrics of 250m CPU and 64Mi memory", func() (bool, string) {
		list, err := mc.MetricsV1beta1().PodMetricses(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err.Error()
		}
		var state []string
		ok := 0
		for _, pm := range list.Items {
			for _, ctr := range pm.Containers {
				cpu, mem := ctr.Usage[corev1.ResourceCPU], ctr.Usage[corev1.ResourceMemory]
				state = append(state, fmt.Sprintf("%s/%s cpu=%s memory=%s window=%s", pm.Name, ctr.Name, cpu.String(), mem.String(), pm.Window.Duration))
				if sameMillicores(cpu, wantCPU) && mem.Cmp(wantMem) == 0 {
					ok++
				}
			}
		}
		got = strings.Join(state, "; ")
		return ok == len(pods), fmt.Sprintf("%d of %d pods right: %s", ok, len(pods), got)
	})
	t.Logf("pod metrics right %.1fs after the pods were Ready: %s", time.Since(t1).Seconds(), got)

	// Node metrics too (kubectl top nodes): a node with pods reports their
	// summed usage.
	nodes, err := mc.MetricsV1beta1().NodeMetricses().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	busy := 0
	for _, nm := range nodes.Items {
		if cpu := nm.Usage[corev1.ResourceCPU]; cpu.Sign() > 0 && strings.HasPrefix(nm.Name, "kwok-node-") {
			busy++
		}
	}
	if busy == 0 {
		t.Errorf("no kwok node has CPU usage in metrics.k8s.io: %+v", nodes.Items)
	}
}

// sameMillicores compares CPU quantities at the millicore, which is what
// kubectl top shows. metrics-server reports nanocores computed from two
// scrapes of kwok's cumulative counter; the counter advances by exactly
// usage × (kwok's time between the scrapes), but metrics-server divides by
// its own request timestamps, so the nanocores jitter by a few parts in 10⁴.
func sameMillicores(got, want resource.Quantity) bool {
	return math.Round(float64(got.ScaledValue(resource.Nano))/1e6) == float64(want.MilliValue())
}

func testJob(ctx context.Context, t *testing.T, cs *kubernetes.Clientset) {
	ns := createNamespace(ctx, t, cs, "batch")
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "work"},
		Spec: batchv1.JobSpec{
			Parallelism: ptr(int32(2)),
			Completions: ptr(int32(2)),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "work", Image: "example.invalid/work:1"}},
			}},
		},
	}
	t0 := time.Now()
	if _, err := cs.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	Poll(ctx, t, 60*time.Second, "the Job to complete", func() (bool, string) {
		j, err := cs.BatchV1().Jobs(ns).Get(ctx, "work", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, cond := range j.Status.Conditions {
			if cond.Type == batchv1.JobComplete && cond.Status == corev1.ConditionTrue {
				return true, ""
			}
		}
		return false, fmt.Sprintf("active=%d succeeded=%d failed=%d conditions=%v", j.Status.Active, j.Status.Succeeded, j.Status.Failed, j.Status.Conditions)
	})
	t.Logf("Job (parallelism=completions=2) complete %.1fs after it was created", time.Since(t0).Seconds())
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=work"})
	if err != nil {
		t.Fatal(err)
	}
	succeeded := 0
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded {
			succeeded++
		}
	}
	if succeeded != 2 {
		t.Errorf("%d Succeeded pods, want 2", succeeded)
	}
}

func testLogs(ctx context.Context, t *testing.T, c *Cluster, cs *kubernetes.Clientset) {
	ns := createNamespace(ctx, t, cs, "logs")
	const app = "line 1\nline 2 with \"quotes\" and a trailing space \nlast line\n"
	const sidecar = "no trailing newline"
	// Set up before the pod exists: the Logs object is looked up per
	// request, by pod name.
	if err := c.ServePodLogs(ctx, ns, "client", "app", "old contents\n"); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "client"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "app", Image: "example.invalid/app:1"},
			{Name: "sidecar", Image: "example.invalid/proxy:1"},
		}},
	}
	// The pod is admitted only once the namespace's default
	// ServiceAccount exists, which kube-controller-manager creates.
	Poll(ctx, t, 30*time.Second, "the pod to be created", func() (bool, string) {
		_, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return false, err.Error()
		}
		return true, ""
	})
	Poll(ctx, t, 60*time.Second, "the pod to be Ready", func() (bool, string) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "client", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return kube.PodReady(p), fmt.Sprintf("node=%q phase=%s", p.Spec.NodeName, p.Status.Phase)
	})
	// Replacing the contents and adding a second container.
	if err := c.ServePodLogs(ctx, ns, "client", "app", app); err != nil {
		t.Fatal(err)
	}
	if err := c.ServePodLogs(ctx, ns, "client", "sidecar", sidecar); err != nil {
		t.Fatal(err)
	}
	for ctr, want := range map[string]string{"app": app, "sidecar": sidecar} {
		b, err := cs.CoreV1().Pods(ns).GetLogs("client", &corev1.PodLogOptions{Container: ctr}).DoRaw(ctx)
		if err != nil {
			t.Fatalf("pods/log of container %s: %v", ctr, err)
		}
		if string(b) != want {
			t.Errorf("pods/log of container %s = %q, want %q", ctr, b, want)
		}
	}
	// kubectl's path (follow off, tail) goes through the same endpoint.
	out, err := c.Kubectl(ctx, "logs", "-n", ns, "client", "-c", "app", "--tail=1")
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "last line\n" {
		t.Errorf("kubectl logs --tail=1 = %q, want %q", out, "last line\n")
	}
	// Streaming (follow) returns what is there and keeps the stream open.
	stream, err := cs.CoreV1().Pods(ns).GetLogs("client", &corev1.PodLogOptions{Container: "sidecar", Follow: true}).Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(sidecar))
	if _, err := io.ReadFull(stream, buf); err != nil || string(buf) != sidecar {
		t.Errorf("following the sidecar's logs: %q, %v", buf, err)
	}
	stream.Close()
}

func createNamespace(ctx context.Context, t *testing.T, cs *kubernetes.Clientset, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

func ptr[T any](v T) *T { return &v }

// The tests below need no binaries.

func TestStartWithoutBinaries(t *testing.T) {
	t.Setenv(BinEnv, t.TempDir())
	_, err := Start(context.Background(), Options{})
	if !errors.Is(err, ErrNoBinaries) {
		t.Fatalf("Start with an empty %s: %v, want ErrNoBinaries", BinEnv, err)
	}
	if !strings.Contains(err.Error(), "make k8s-tools") {
		t.Errorf("error does not say how to build the binaries: %v", err)
	}
}

func TestRequireOutcome(t *testing.T) {
	missing := fmt.Errorf("%w: kubectl missing", ErrNoBinaries)
	for _, tc := range []struct {
		err  error
		env  string
		skip bool
	}{
		{missing, "", true},                              // a developer without the tools: skip
		{missing, "0", true},                             // only "1" requires them
		{missing, "1", false},                            // make test / CI: fail
		{errors.New("kube-apiserver exited"), "", false}, // a broken cluster always fails
	} {
		skip, msg := requireOutcome(tc.err, tc.env)
		if skip != tc.skip || msg == "" {
			t.Errorf("requireOutcome(%v, %q) = %v, %q; want skip=%v", tc.err, tc.env, skip, msg, tc.skip)
		}
	}
}

func TestCRILog(t *testing.T) {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	got := string(criLog("a\n\nb c\nd", ts))
	want := "2026-01-02T03:04:05.0000006Z stdout F a\n" +
		"2026-01-02T03:04:05.0000006Z stdout F \n" +
		"2026-01-02T03:04:05.0000006Z stdout F b c\n" +
		"2026-01-02T03:04:05.0000006Z stdout P d\n"
	if got != want {
		t.Errorf("criLog:\n%s\nwant:\n%s", got, want)
	}
	if got := criLog("", ts); len(got) != 0 {
		t.Errorf("criLog of nothing = %q", got)
	}
}

func TestPrimeCPUCounters(t *testing.T) {
	// The CPU counters of kwok v0.8.0's metrics-resource.yaml, abridged.
	in := `  - name: container_cpu_usage_seconds_total
    value: 'pod.CumulativeUsage("cpu", container.name)'
  - name: container_memory_working_set_bytes
    value: 'pod.Usage("memory", container.name)'
  - name: pod_cpu_usage_seconds_total
    value: 'pod.CumulativeUsage("cpu")'
  - name: node_cpu_usage_seconds_total
    value: 'node.CumulativeUsage("cpu")'
`
	got, err := primeCPUCounters([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := `  - name: container_cpu_usage_seconds_total
    value: 'pod.CumulativeUsage("cpu", container.name) + 1e-9'
  - name: container_memory_working_set_bytes
    value: 'pod.Usage("memory", container.name)'
  - name: pod_cpu_usage_seconds_total
    value: 'pod.CumulativeUsage("cpu") + 1e-9'
  - name: node_cpu_usage_seconds_total
    value: 'node.CumulativeUsage("cpu") + 1e-9'
`
	if string(got) != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if _, err := primeCPUCounters([]byte("value: 'pod.Usage(\"cpu\")'")); err == nil {
		t.Error("a manifest without the three counters was accepted")
	}
}

func TestPKI(t *testing.T) {
	p, err := newPKI(t.TempDir(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(p.caPEM)
	fpRoots := x509.NewCertPool()
	fpRoots.AppendCertsFromPEM(readPEMFile(t, p.fpCACert))
	for _, tc := range []struct {
		file  string
		roots *x509.CertPool
		name  string // a name the certificate must be valid for
		usage x509.ExtKeyUsage
	}{
		{p.apiserverCert, roots, "127.0.0.1", x509.ExtKeyUsageServerAuth},
		{p.apiserverCert, roots, "kubernetes.default.svc", x509.ExtKeyUsageServerAuth},
		{p.servingCert, roots, "127.0.0.1", x509.ExtKeyUsageServerAuth},
		{p.servingCert, roots, "metrics-server.kube-system.svc", x509.ExtKeyUsageServerAuth},
		{p.adminCert, roots, "", x509.ExtKeyUsageClientAuth},
		{p.fpClientCert, fpRoots, "", x509.ExtKeyUsageClientAuth},
	} {
		block, _ := pem.Decode(readPEMFile(t, tc.file))
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		_, err = cert.Verify(x509.VerifyOptions{Roots: tc.roots, DNSName: tc.name, KeyUsages: []x509.ExtKeyUsage{tc.usage}})
		if err != nil {
			t.Errorf("%s for %q: %v", filepath.Base(tc.file), tc.name, err)
		}
		if tc.file == p.adminCert && (len(cert.Subject.Organization) != 1 || cert.Subject.Organization[0] != "system:masters") {
			t.Errorf("admin cert organization %v, want system:masters", cert.Subject.Organization)
		}
	}
}

func readPEMFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
