package kube

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform"
	"github.com/meshbench/meshbench/internal/platform/fault"
)

// TestLinkerdCores: linkerd2-proxy's runtime line at start (as the lab's
// linkerd2-proxy logs it; TestProxyThreads in platform/netlab reads the
// real one).
func TestLinkerdCores(t *testing.T) {
	for _, tc := range []struct {
		log  string
		want int
		bad  bool
	}{
		{"[     0.001s]  INFO ThreadId(01) linkerd2_proxy::rt: Using multi-threaded proxy runtime cores=2\n", 2, false},
		{"[     0.001s]  INFO ThreadId(01) linkerd2_proxy::rt: Using single-threaded proxy runtime\n", 1, false},
		{"[     0.001s]  INFO ThreadId(01) linkerd2_proxy: release 2.300.0\n", 0, true},
	} {
		got, err := LinkerdCores([]byte(tc.log))
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("LinkerdCores(%q) = %d, %v; want %d (error %v)", tc.log, got, err, tc.want, tc.bad)
		}
	}
}

// TestInjectedThreads: the threads an injector put in a pod's spec.
func TestInjectedThreads(t *testing.T) {
	// As Istio's injector renders a load pod's native sidecar (seen on
	// the test cluster: TestFactorAxesOnRealNodes).
	istio := &corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "istio-proxy",
		Args: []string{"proxy", "sidecar", "--domain", "x.svc.cluster.local"},
		Env:  []corev1.EnvVar{{Name: "PROXY_CONFIG", Value: `{"concurrency":2}`}, {Name: "ISTIO_META_POD_PORTS", Value: "[]"}}}}}}
	istioArgs := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "istio-proxy",
		Args: []string{"proxy", "sidecar", "--concurrency", "4"}}}}}
	linkerd := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}, {Name: "linkerd-proxy",
		Env: []corev1.EnvVar{{Name: "LINKERD2_PROXY_CORES", Value: "3"}}}}}}
	// edge-26.8.3's injector for proxy-cpu-limit 2: the runtime's
	// maximum, the minimum left at 1.
	linkerdMax := &corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "linkerd-proxy",
		Env: []corev1.EnvVar{{Name: "LINKERD2_PROXY_CORES", Value: "1"}, {Name: "LINKERD2_PROXY_CORES_MIN", Value: "1"}, {Name: "LINKERD2_PROXY_CORES_MAX", Value: "2"}}}}}}
	plain := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "istio-proxy", Args: []string{"proxy", "sidecar"}}}}}
	for name, tc := range map[string]struct {
		p    *corev1.Pod
		want int
	}{"istio": {istio, 2}, "istio args": {istioArgs, 4}, "linkerd": {linkerd, 3}, "linkerd max": {linkerdMax, 2}, "none set": {plain, 0}} {
		if got := InjectedThreads(tc.p); got != tc.want {
			t.Errorf("%s: %d, want %d", name, got, tc.want)
		}
	}
}

// TestCellLoadSpec: a cell's load Job (Options.loadSpec, what runLoad
// applies) carries its shape, and a bulk cell reads the static app's
// endless answer.
func TestCellLoadSpec(t *testing.T) {
	o := Options{Settings: platform.Settings{Load: loadgen.Bulk, Workers: 2, Duration: 5 * time.Second, Connections: 4},
		Spec: spec(topology.ModeSidecar, topology.AppStatic, 0)}
	job, err := LoadJob(o.loadSpec())
	if err != nil {
		t.Fatal(err)
	}
	args := job.Spec.Template.Spec.Containers[0].Args
	if !slices.Contains(args, "--bulk") || args[len(args)-1] != "http://static.meshbench-app.svc.cluster.local:8080/stream" {
		t.Errorf("bulk cell's worker args %v: want --bulk and the app's /stream", args)
	}
	o.Load, o.RequestsPerConnection, o.Arrivals, o.ArrivalsSeed = loadgen.OpenLoopPerSecond(100), 1, loadgen.ArrivalsPoisson, 3
	if job, err = LoadJob(o.loadSpec()); err != nil {
		t.Fatal(err)
	}
	args = job.Spec.Template.Spec.Containers[0].Args
	if !strings.Contains(strings.Join(args, " "), "--requests-per-connection 1 --arrivals poisson --seed 3") || args[len(args)-1] != "http://static.meshbench-app.svc.cluster.local:8080/" {
		t.Errorf("open-loop cell's worker args %v", args)
	}
	if slices.Contains(args, "--interval") {
		t.Errorf("a cell without a fault keeps the CLI's interval: %v", args)
	}
	if o.Fault, err = fault.Parse("kill:sidecar@2s"); err != nil {
		t.Fatal(err)
	}
	if job, err = LoadJob(o.loadSpec()); err != nil {
		t.Fatal(err)
	}
	if args = job.Spec.Template.Spec.Containers[0].Args; !strings.Contains(strings.Join(args, " "), "--interval "+fault.LoadInterval.String()) {
		t.Errorf("a fault cell's worker args %v: want --interval %v (its cost is read from the intervals)", args, fault.LoadInterval)
	}
}
