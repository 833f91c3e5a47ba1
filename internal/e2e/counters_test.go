package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"

	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/platform/kube/kubelet"
	"github.com/meshbench/meshbench/internal/testkit/kubetest"
)

var realWindow = flag.Duration("real-window", 30*time.Second,
	"TestCountersMatchProc's measured window (60s for the issue's closing figures)")

// clockTick is USER_HZ, the unit of utime and stime in /proc/PID/stat:
// 100 on every Linux architecture Go supports.
const clockTick = 100

// cgroupPIDs returns the processes of this machine whose cgroup path
// contains id (a container's ID: the kubelet's runtimes name a
// container's cgroup after it).
func cgroupPIDs(id string) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		if err != nil {
			continue // gone
		}
		if bytes.Contains(b, []byte(id)) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// procTicks sums utime and stime (fields 14 and 15 of /proc/PID/stat,
// in clock ticks) over pids; a process gone meanwhile counts 0.
func procTicks(pids []int) (uint64, error) {
	var sum uint64
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// comm (field 2) may hold spaces: fields after its ')' .
		i := bytes.LastIndexByte(b, ')')
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 13 {
			return 0, fmt.Errorf("/proc/%d/stat: %d fields after comm", pid, len(f))
		}
		ut, err1 := strconv.ParseUint(f[11], 10, 64)
		st, err2 := strconv.ParseUint(f[12], 10, 64)
		if err1 != nil || err2 != nil {
			return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
		}
		sum += ut + st
	}
	return sum, nil
}

// TestProcTicksOfOwnCgroup checks the /proc side of the known answer on
// this very process: its ticks grow by what a busy loop burns (as
// getrusage says), and it is found by its own cgroup (unless it runs in
// the root cgroup, where every process would match).
func TestProcTicksOfOwnCgroup(t *testing.T) {
	self := []int{os.Getpid()}
	before, err := procTicks(self)
	if err != nil {
		t.Fatal(err)
	}
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	used := func() time.Duration {
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
		return time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	}
	// Burn 300 ms of CPU (however long that takes on a loaded machine).
	for end := time.Now().Add(10 * time.Second); used() < 300*time.Millisecond && time.Now().Before(end); {
	}
	cpu := used()
	after, err := procTicks(self)
	if err != nil {
		t.Fatal(err)
	}
	// The same CPU time by /proc (in ticks) and by getrusage, to a tick
	// or two of rounding at each end (and the few µs between the reads).
	got := time.Duration(after-before) * time.Second / clockTick
	if cpu < 250*time.Millisecond || (got-cpu).Abs() > 3*time.Second/clockTick {
		t.Errorf("/proc says %v, getrusage %v; want the same 300 ms or so", got, cpu)
	}

	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Skipf("no /proc/self/cgroup: %v", err)
	}
	line := strings.TrimSpace(strings.Split(strings.TrimSpace(string(b)), "\n")[0])
	path := line[strings.LastIndexByte(line, ':')+1:]
	if path == "/" {
		t.Skip("this process runs in the root cgroup: finding processes by cgroup is not checked here")
	}
	pids, err := cgroupPIDs(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pids, os.Getpid()) {
		t.Fatalf("own PID %d not among %v (cgroup %s)", os.Getpid(), pids, path)
	}
}

// TestCountersMatchProc is the known answer on real nodes: the app
// container under load (meshbench's static server, loaded at 400/s by a
// second container of the same pod) — its CPU by the kubelet's counters
// over a window must match the CPU of its processes by /proc/PID/stat
// (found by the container's cgroup) over the same window, within 5% or
// one clock tick per second, whichever is larger. The calculation:
//
//	proc    = (Σ utime+stime at t1 − Σ at t0) / USER_HZ          core-seconds
//	counter = C(t1) − C(t0), C interpolated between the readings on
//	          both sides of t0 and t1 (Window)                    core-seconds
//	|counter − proc| ≤ max(0.05 × proc, (t1 − t0) × 1 tick/s)
//
// Then the container's process is killed: the kubelet restarts it, its
// counter starts again, and the sampler must report the reset.
func TestCountersMatchProc(t *testing.T) {
	kc := kubetest.Require(t)
	kubeconfig, image := kc.Kubeconfig, kubetest.MeshbenchImage
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const ns = "kubemetrics-real"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{
				{Name: "app", Image: image, ImagePullPolicy: corev1.PullNever, Args: []string{"serve", "static", "--listen", "127.0.0.1:8080"}},
				{Name: "load", Image: image, ImagePullPolicy: corev1.PullNever,
					Args: []string{"load", "--rate", "400", "--connections", "4", "--duration", "10m", "http://127.0.0.1:8080/"}},
			}}}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	containerID := func() string {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			return ""
		}
		for _, st := range p.Status.ContainerStatuses {
			if st.Name == "app" && st.State.Running != nil {
				return st.ContainerID[strings.Index(st.ContainerID, "://")+3:] // runtime://ID
			}
		}
		return ""
	}
	var id string
	for id == "" {
		if ctx.Err() != nil {
			t.Fatal("the app pod never ran")
		}
		time.Sleep(500 * time.Millisecond)
		id = containerID()
	}
	pids, err := cgroupPIDs(id)
	if err != nil || len(pids) == 0 {
		t.Fatalf("processes of container %s: %v %v", id, pids, err)
	}
	s, err := kubelet.New(cs, kubelet.Options{Period: time.Second,
		Classify: func(_ *corev1.Pod, c string) (string, string) { return c, sample.CategoryApp }})
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(sctx) }()
	// metrics.k8s.io beside it, polled every 10 s as the seed tool does.
	mc, err := metricsclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	type apiSample struct {
		end    time.Time
		window time.Duration
		cpu    float64 // millicores
	}
	var api []apiSample
	apiDone := make(chan struct{})
	go func() {
		defer close(apiDone)
		for sctx.Err() == nil {
			if pm, err := mc.MetricsV1beta1().PodMetricses(ns).Get(sctx, "app", metav1.GetOptions{}); err == nil {
				for _, c := range pm.Containers {
					if c.Name == "app" {
						api = append(api, apiSample{pm.Timestamp.Time, pm.Window.Duration, float64(c.Usage.Cpu().ScaledValue(-9)) / 1e6})
					}
				}
			}
			select {
			case <-sctx.Done():
			case <-time.After(10 * time.Second):
			}
		}
	}()
	time.Sleep(20 * time.Second) // readings before t0 despite the kubelet's lag
	t0 := time.Now()
	ticks0, _ := procTicks(pids)
	time.Sleep(*realWindow)
	t1 := time.Now()
	ticks1, _ := procTicks(pids)
	// Kill it: the kubelet restarts the container, and its counter.
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	time.Sleep(40 * time.Second) // readings after t1 and after the restart
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	<-apiDone
	res, err := kubelet.Window(s.Records(), t0, t1, s.Period())
	if err != nil {
		t.Fatal(err)
	}
	key := ns + "/app/app"
	var counter float64
	for _, cw := range res.Containers {
		if cw.Key == key {
			counter += cw.CPUSeconds
		}
	}
	proc := float64(ticks1-ticks0) / clockTick
	tol := math.Max(0.05*proc, t1.Sub(t0).Seconds()/clockTick)
	t.Logf("counters %.3f core-s, /proc %.3f core-s over %.1f s (ratio %.4f, tolerance %.3f); counter lag: median %v, max %v over %d readings; %d stale readings",
		counter, proc, t1.Sub(t0).Seconds(), counter/proc, tol, res.Lag.Median, res.Lag.Max, res.Lag.Samples, res.StaleRecords)
	if math.Abs(counter-proc) > tol {
		t.Errorf("counters %.3f core-s, /proc %.3f: off by more than %.3f", counter, proc, tol)
	}
	// metrics.k8s.io, by its own rule: fresh samples (a new timestamp)
	// whose whole window lies inside [t0, t1], averaged.
	var apiSum float64
	var apiIn, stale int
	var last time.Time
	for _, a := range api {
		if a.end.Equal(last) {
			stale++
			continue
		}
		last = a.end
		if !a.end.Add(-a.window).Before(t0) && !a.end.After(t1) {
			apiSum += a.cpu
			apiIn++
		}
	}
	var roundCPU time.Duration
	rounds := 0
	for _, r := range s.Records() {
		if r.Kind == kubelet.RawRound {
			roundCPU += time.Duration(r.CPUNs)
			rounds++
		}
	}
	apiAvg := "none inside the window"
	if apiIn > 0 {
		apiAvg = fmt.Sprintf("%.1fm (mean of %d samples)", apiSum/float64(apiIn), apiIn)
	}
	t.Logf("app CPU over the window: counters %.1fm, /proc %.1fm, metrics.k8s.io %s; %d of %d metrics.k8s.io samples stale; sampler %.2f ms CPU per round over %d rounds, all nodes",
		counter/t1.Sub(t0).Seconds()*1000, proc/t1.Sub(t0).Seconds()*1000, apiAvg, stale, len(api),
		roundCPU.Seconds()*1000/float64(max(rounds, 1)), rounds)
	all, err := kubelet.Window(s.Records(), t0, time.Now(), s.Period())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range all.AllResets {
		found = found || r.Key == key
	}
	if !found {
		t.Errorf("the killed container's restart was not detected as a counter reset: %+v", all.AllResets)
	}
}
