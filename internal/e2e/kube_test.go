package e2e

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/platform/kube"
	"github.com/meshbench/meshbench/internal/platform/kube/client"
	"github.com/meshbench/meshbench/internal/platform/kube/loadjob"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testkit/kubetest"
)

// rowCPU returns the CPU_avg column (millicores) of the first metrics
// table row starting with name, -1 when there is none.
func rowCPU(out, name string) float64 {
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, name+"  ") {
			continue
		}
		f := strings.Fields(strings.TrimPrefix(line, name))
		if len(f) < 3 {
			return -1
		}
		v, err := strconv.ParseFloat(strings.TrimSuffix(f[2], "m"), 64)
		if err != nil {
			return -1
		}
		return v
	}
	return -1
}

// TestRunNoneOnRealNodes is the user's first `meshbench run --platform
// kube`: mesh none, 2 app replicas, 2 load workers, on real pods. The app
// and the workers must run on different nodes (meshbench labels them),
// the Indexed Job's real logs must be collected and merged exactly (the
// request count is rate × duration), the metrics tables must show real
// app and load CPU (and the app idle before the load), the drain must end
// on idle, and the namespaces and node labels must be gone afterwards.
func TestRunNoneOnRealNodes(t *testing.T) {
	kc := kubetest.Require(t)
	c := connect(t, kc)
	out := filepath.Join(t.TempDir(), "run")
	w := watchPods(c, "e2e-app", "e2e-load")
	inv := meshbench(t, nil, "run", "--platform", "kube", "--kubeconfig", kc.Kubeconfig, "--namespace-prefix", "e2e",
		"--mesh", "none", "--replicas", "2", "--workers", "2", "--rate", "40", "--duration", "25s", "--out", out)
	w.Stop()
	if inv.code != 0 {
		t.Fatalf("exit %d", inv.code)
	}
	lr, err := results.ReadFile(filepath.Join(out, results.LoadFile))
	if err != nil {
		t.Fatal(err)
	}
	// 40/s for 25 s (metrics-server's 10-s samples need a window that
	// long to have one wholly inside) from two workers of 20/s each: the
	// open-loop schedule holds exactly 1000, and every one must have been
	// sent and answered (a loaded 2-core machine may be late, never
	// short).
	if lr.Workers != 2 || lr.Scheduled != 1000 || lr.Sent != 1000 || lr.Success != 1000 {
		t.Errorf("merged result: %d workers, %d scheduled, %d sent, %d ok; want 2, 1000, 1000, 1000", lr.Workers, lr.Scheduled, lr.Sent, lr.Success)
	}
	for _, want := range []string{"Requests      [total, rate, throughput]         1000,", "Status Codes  [code:count]                      200:1000", "merged from 2 workers"} {
		if !strings.Contains(inv.stdout, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	for _, f := range []string{results.ManifestFile, results.LoadFile, results.SamplesFile, results.ResourcesFile, "metrics-raw.jsonl", "k8s/app.yaml", "k8s/load-job.yaml"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("results: %v", err)
		}
	}
	// Each worker's own log (its JSON result, read through the pods/log
	// API from the real container's output) is kept, with its share.
	logs, _ := filepath.Glob(filepath.Join(out, results.LogsDir, "load-*.log"))
	if len(logs) != 2 {
		t.Errorf("worker logs kept: %v", logs)
	}
	indexes := map[int]bool{}
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		// Read as the platform reads it: the engine's running figures
		// (--progress-log) precede the JSON result.
		wr, err := loadjob.ParseWorkerLog(b)
		if err != nil || wr.Worker == nil || wr.Worker.Count != 2 {
			t.Errorf("worker log %s: %v; want a result with a share of 2", l, err)
			continue
		}
		indexes[wr.Worker.Index] = true
	}
	if !indexes[0] || !indexes[1] || lr.Worker != nil {
		t.Errorf("worker indexes %v, merged worker %+v; want 0 and 1, none", indexes, lr.Worker)
	}
	if m, err := results.ReadManifest(out); err != nil || m.Drain == nil || m.Drain.Ended != results.DrainIdle || m.Drain.AppPods != 2 {
		t.Errorf("manifest drain: %v %+v, want ended idle over 2 app pods", err, m)
	}
	// Real CPU: the app serves 40/s, the load sends it.
	if cpu := rowCPU(inv.stdout, "app static"); cpu <= 0 {
		t.Errorf("app static CPU_avg %v, want > 0", cpu)
	}
	if cpu := rowCPU(inv.stdout, "load"); cpu <= 0 {
		t.Errorf("load CPU_avg %v, want > 0", cpu)
	}
	for _, want := range []string{"idle: app CPU ", "drain: app idle again after", "phase teardown"} {
		if !strings.Contains(inv.stderr, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	// Same-machine nodes: the node rows count the whole machine, and
	// the run must say so (the node rows come from the kubelet's
	// counters here, the boot IDs from the Node objects).
	if !strings.Contains(inv.stdout, "share one machine") {
		t.Errorf("stdout does not say the nodes share one machine")
	}
	// The default source (auto) on real kubelets is their counters,
	// read through the node proxy, with metrics.k8s.io beside them as
	// the cross-check: the printout says which and shows both.
	for _, want := range []string{
		"Resources from the kubelet's counters (", "CPU by the kubelet's cumulative counters over ",
		"Node usage from the kubelet's counters", "Counter readings: ", "Sampler: every 1s, 4 node(s)",
		"metrics.k8s.io over the same run (cross-check)",
	} {
		if !strings.Contains(inv.stdout, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	if !strings.Contains(inv.stderr, "resources from the kubelet's counters") {
		t.Errorf("stderr does not say the source")
	}
	var stored struct {
		Source   string          `json:"source"`
		Counters json.RawMessage `json:"counters"`
		API      json.RawMessage `json:"metrics_api"`
	}
	if b, err := os.ReadFile(filepath.Join(out, results.ResourcesFile)); err != nil || json.Unmarshal(b, &stored) != nil ||
		stored.Source != kube.SourceKubelet || len(stored.Counters) < 5 || len(stored.API) < 5 {
		t.Errorf("resources.json: %v, source %q, counters %d bytes, metrics_api %d bytes; want the kubelet's counters and the metrics API's report", err, stored.Source, len(stored.Counters), len(stored.API))
	}
	if _, err := os.Stat(filepath.Join(out, kube.KubeletRawFile)); err != nil {
		t.Errorf("results: %v", err)
	}
	checkNodeKernel(t, out, inv.stdout)
	t.Logf("run --platform kube --mesh none (stdout):\n%s", inv.stdout)
	app, load := w.Pods("e2e-app", "static-"), w.Pods("e2e-load", "")
	if len(app) < 2 || len(load) != 2 {
		t.Fatalf("saw %d app pods and %d load pods, want 2 and 2", len(app), len(load))
	}
	for n := range nodesOf(load) {
		if nodesOf(app)[n] {
			t.Errorf("load and app pods share node %s", n)
		}
	}
	checkClean(t, c, "e2e-app", "e2e-load", "e2e-load-nodes")
}

// checkNodeKernel checks a cell's kernel CPU from its node readers on the
// test nodes, which are kubelets on this one machine: every reader read
// this machine's boot ID (the host's, not a container's), so the figures
// are one row, "the machine shared by nodes" all of them, never summed
// per node; the readers found each node's own pods' cgroup and the pods
// spent system time; the outside part is the machine's kernel time less
// it; the manifest's derived figures are that row's; every reading is
// kept.
func checkNodeKernel(t *testing.T, out, stdout string) {
	t.Helper()
	var stored struct {
		NodeKernel *sample.NodeKernelReport `json:"node_kernel"`
	}
	b, err := os.ReadFile(filepath.Join(out, results.ResourcesFile))
	if err != nil || json.Unmarshal(b, &stored) != nil || stored.NodeKernel == nil {
		t.Fatalf("resources.json: %v; want its node_kernel", err)
	}
	rep := stored.NodeKernel
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if len(rep.Machines) != 1 || len(rep.Missing) > 0 {
		t.Fatalf("node_kernel %+v; want one machine, no node missing", rep)
	}
	m := rep.Machines[0]
	t.Logf("kernel CPU (shared machine): %+v", m)
	if len(m.Nodes) != testNodes || m.BootID != strings.TrimSpace(string(boot)) || m.Seconds < 20 {
		t.Errorf("machine %s, boot ID %s (this machine's %s), over %.1fs; want all %d nodes on this machine over most of the 25-s window",
			m.Name(), m.BootID, boot, m.Seconds, testNodes)
	}
	if m.NodeKernelCPUm <= 0 || m.PodsSystemCPUm <= 0 || m.PodsUserCPUm <= 0 || m.NodeCPUm < m.NodeKernelCPUm ||
		m.OutsidePodsCPUm != max(0, m.NodeKernelCPUm-m.PodsSystemCPUm) {
		t.Errorf("machine figures %+v; want kernel and pods' time above 0, outside = kernel - pods' system", m)
	}
	// The pods' cgroups hold every pod's CPU, the counters every
	// sampled container's (the same pods here, their pause containers
	// apart): the two must agree, loosely (their windows' edges differ by
	// up to a second, ticks round).
	if total := rowCPU(stdout, "TOTAL"); total <= 0 || math.Abs(m.PodsUserCPUm+m.PodsSystemCPUm-total) > 0.3*total+5 {
		t.Errorf("pods' user + system %.1fm by their cgroups; the counters' TOTAL %.1fm", m.PodsUserCPUm+m.PodsSystemCPUm, total)
	}
	if !strings.Contains(stdout, "Kernel CPU from meshbench's node readers") || !strings.Contains(stdout, m.Name()+"  ") {
		t.Errorf("stdout lacks the kernel CPU row of %q", m.Name())
	}
	man, err := results.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	d := man.Derived
	if d[sample.KernelNodeCPU] != m.NodeKernelCPUm || d[sample.KernelPodsSystemCPU] != m.PodsSystemCPUm || d[sample.KernelOutsidePodsCPU] != m.OutsidePodsCPUm {
		t.Errorf("manifest derived %v; want the machine's figures, counted once", d)
	}
	if fi, err := os.Stat(filepath.Join(out, kube.NodeReadingsFile)); err != nil || fi.Size() == 0 {
		t.Errorf("%s: %v", kube.NodeReadingsFile, err)
	}
}

// TestFacesOnRealNodes runs meshbench's own faces app on real pods: face
// calls smiley over HTTP and color over gRPC, through their Services and
// cluster DNS, with each service's two replicas spread over two app nodes
// (so every face pod has a color and a smiley pod on another node).
func TestFacesOnRealNodes(t *testing.T) {
	kc := kubetest.Require(t)
	c := connect(t, kc)
	out := filepath.Join(t.TempDir(), "run")
	w := watchPods(c, "e2f-app")
	inv := meshbench(t, nil, "run", "--platform", "kube", "--kubeconfig", kc.Kubeconfig, "--namespace-prefix", "e2f",
		"--mesh", "none", "--app", "faces", "--faces-chart=false", "--replicas", "2", "--workers", "1",
		"--rate", "40", "--duration", "25s", "--out", out)
	w.Stop()
	if inv.code != 0 {
		t.Fatalf("exit %d", inv.code)
	}
	lr, err := results.ReadFile(filepath.Join(out, results.LoadFile))
	if err != nil {
		t.Fatal(err)
	}
	if lr.Sent != 1000 || lr.Success != 1000 {
		t.Errorf("%d sent, %d ok; want 1000 and 1000 (face answers 200 only when smiley and color did)", lr.Sent, lr.Success)
	}
	for _, row := range []string{"app face", "app smiley", "app color"} {
		if cpu := rowCPU(inv.stdout, row); cpu <= 0 {
			t.Errorf("%s CPU_avg %v, want > 0", row, cpu)
		}
	}
	for _, svc := range []string{"smiley-", "color-"} {
		if n := nodesOf(w.Pods("e2f-app", svc)); len(n) < 2 {
			t.Errorf("%s pods on %d node(s), want 2 (spread over the app nodes)", svc, len(n))
		}
	}
	checkClean(t, c, "e2f-app", "e2f-load")
}

// TestDoctorOnRealNodes: every check passes on the real cluster; with
// metrics-server stopped the metrics check fails with its one-line reason.
func TestDoctorOnRealNodes(t *testing.T) {
	kc := kubetest.Require(t)
	// Right after the cluster starts metrics-server has not scraped
	// twice yet (a warning): ask again until every check is ok, but for
	// the mesh CLIs' warnings (istioctl and linkerd are not installed
	// here; no mesh is asked for).
	otherWarnings := func(out string) []string {
		var w []string
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, " warn ") && !strings.HasPrefix(l, "istioctl ") && !strings.HasPrefix(l, "linkerd ") {
				w = append(w, l)
			}
		}
		return w
	}
	var inv invocation
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(5 * time.Second) {
		inv = meshbench(t, nil, "doctor", "--platform", "kube", "--kubeconfig", kc.Kubeconfig)
		if inv.code != 0 || strings.Contains(inv.stdout, "FAIL") {
			t.Fatalf("doctor on the real cluster: exit %d", inv.code)
		}
		if len(otherWarnings(inv.stdout)) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if w := otherWarnings(inv.stdout); len(w) > 0 {
		t.Errorf("doctor still warns on the real cluster: %q", w)
	}
	if err := kc.StopMetricsServer(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := kc.RestartMetricsServer(ctx); err != nil {
			t.Fatalf("restarting metrics-server: %v", err)
		}
	}()
	metricsLine := func(stdout string) string {
		var line string
		for _, l := range strings.Split(stdout, "\n") {
			if strings.HasPrefix(l, "metrics API") {
				line = l
			}
		}
		return line
	}
	// With the kubelet's counters readable (auto), metrics.k8s.io is only
	// the cross-check: its absence is a warning. Asked for as the source,
	// it is a failure.
	inv = meshbench(t, nil, "doctor", "--platform", "kube", "--kubeconfig", kc.Kubeconfig)
	if line := metricsLine(inv.stdout); inv.code != 0 || !strings.Contains(line, "warn") || !strings.Contains(line, "kubelet's counters") {
		t.Errorf("doctor without metrics-server (auto): exit %d, metrics line %q; want 0 and a warning naming the counters", inv.code, line)
	}
	inv = meshbench(t, nil, "doctor", "--platform", "kube", "--kubeconfig", kc.Kubeconfig, "--metrics-source", "metrics-api")
	if inv.code != 1 {
		t.Errorf("doctor --metrics-source metrics-api without metrics-server: exit %d, want 1", inv.code)
	}
	if line := metricsLine(inv.stdout); !strings.Contains(line, "FAIL") || len(strings.Fields(line)) < 5 {
		t.Errorf("metrics check line %q: want FAIL with a reason", line)
	}
}

// TestBenchOnRealNodes runs a plan of two rates × two repetitions on real
// pods and checks the report, the CSVs and the verdicts.
func TestBenchOnRealNodes(t *testing.T) {
	kc := kubetest.Require(t)
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(plan, []byte(`platform: kube
repetitions: 2
axes:
  mesh: [none]
  rate: [20, 40]
duration: 20s
warmup: 1s
connections: 4
workers: 1
sample_interval: 10s
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	inv := meshbench(t, nil, "bench", plan, "--seed", "7", "--out", out, "--kubeconfig", kc.Kubeconfig, "--namespace-prefix", "e2b")
	if inv.code != 0 {
		t.Fatalf("exit %d", inv.code)
	}
	for _, f := range []string{"report.txt", "report.html", "latency.csv", "figures.csv"} {
		if _, err := os.Stat(filepath.Join(out, "report", f)); err != nil {
			t.Errorf("report file: %v", err)
		}
	}
	m, err := results.ReadPlanManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Complete || len(m.Order) != 4 {
		t.Errorf("plan: complete %v, %d cells; want true, 4", m.Complete, len(m.Order))
	}
	for _, id := range m.Order {
		if st := m.Cells[id]; st.State != results.CellDone || !st.Valid {
			t.Errorf("cell %s: %s, valid %v: %v %q", id, st.State, st.Valid, st.Invalid, st.Error)
		}
		cd := results.CellDir(out, id)
		for _, f := range []string{results.ManifestFile, results.LoadFile, results.ResourcesFile, "metrics-raw.jsonl", "k8s/app.yaml", "k8s/load-job.yaml"} {
			if _, err := os.Stat(filepath.Join(cd, f)); err != nil {
				t.Errorf("cell %s: %v", id, err)
			}
		}
		lr, err := results.ReadFile(filepath.Join(cd, results.LoadFile))
		if err != nil {
			t.Fatal(err)
		}
		want := 20.0
		if strings.Contains(id, "-r40-") {
			want = 40
		}
		if r := lr.AchievedRatePerSec(); r < want*0.95 || r > want*1.05 || lr.Success != lr.Sent {
			t.Errorf("cell %s: %.1f/s, %d of %d ok; want %.0f/s, all ok", id, r, lr.Success, lr.Sent, want)
		}
	}
	html, err := os.ReadFile(filepath.Join(out, "report", "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"metrics.k8s.io", "working set", "<td>platform</td><td>kube</td>"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	txt, err := os.ReadFile(filepath.Join(out, "report", "report.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.ToLower(string(txt)), "verdict") {
		t.Errorf("report.txt has no verdict lines:\n%s", txt)
	}
	checkClean(t, connect(t, kc), "e2b-app", "e2b-load")
}

// TestImageMissingOnRealNodes: an image no node has and none can pull
// (the nodes have no route off their subnet, so the pull fails at once,
// with no traffic leaving the machine) ends the run within seconds with
// the `meshbench image` command that fixes it, results kept.
func TestImageMissingOnRealNodes(t *testing.T) {
	kc := kubetest.Require(t)
	out := filepath.Join(t.TempDir(), "run")
	inv := meshbench(t, nil, "run", "--platform", "kube", "--kubeconfig", kc.Kubeconfig, "--namespace-prefix", "e2i",
		"--mesh", "none", "--rate", "20", "--duration", "5s", "--image", "kubetest.invalid/missing:v1", "--out", out)
	if inv.code != 1 {
		t.Errorf("exit %d, want 1", inv.code)
	}
	// The 5-minute ready timeout must not be what ends it; 90 s covers
	// the pull's failure, the teardown and a loaded machine.
	if inv.took > 90*time.Second {
		t.Errorf("took %v", inv.took)
	}
	for _, want := range []string{"cannot be pulled (ErrImagePull", "meshbench image --tag kubetest.invalid/missing:v1 --load "} {
		if !strings.Contains(inv.stderr, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	if _, err := os.Stat(filepath.Join(out, results.ManifestFile)); err != nil {
		t.Errorf("results not kept: %v", err)
	}
	checkClean(t, connect(t, kc), "e2i-app", "e2i-load")
}

// TestCrashLoopOnRealNodes: an app container that exits at once (the
// meshbench image run with no arguments prints its help and exits) ends
// the run as soon as Kubernetes backs off restarting it.
func TestCrashLoopOnRealNodes(t *testing.T) {
	kc := kubetest.Require(t)
	out := filepath.Join(t.TempDir(), "run")
	inv := meshbench(t, nil, "run", "--platform", "kube", "--kubeconfig", kc.Kubeconfig, "--namespace-prefix", "e2c",
		"--mesh", "none", "--rate", "20", "--duration", "5s", "--app-image", kubetest.MeshbenchImage, "--out", out)
	if inv.code != 1 {
		t.Errorf("exit %d, want 1", inv.code)
	}
	if inv.took > 90*time.Second {
		t.Errorf("took %v", inv.took)
	}
	if !strings.Contains(inv.stderr, "is crash-looping") {
		t.Errorf("stderr does not say the app is crash-looping")
	}
	if _, err := os.Stat(filepath.Join(out, results.ManifestFile)); err != nil {
		t.Errorf("results not kept: %v", err)
	}
	checkClean(t, connect(t, kc), "e2c-app", "e2c-load")
}

// killInPod SIGKILLs the processes of pod's containers (not its sandbox):
// they are found by the pod's cgroup (cgroupfs driver: .../pod<UID>/<id>).
func killInPod(t *testing.T, pod corev1.Pod, cmdlineHas string) int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	killed := 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cg, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(cg), "pod"+string(pod.UID)) && strings.Contains(string(cmd), cmdlineHas) {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed++
			}
		}
	}
	return killed
}

// TestWorkerKilledOnRealNodes: a load worker's process killed mid-run
// (SIGKILL, as the OOM killer would) fails the Job; the run ends promptly
// with one line saying so, keeps its results and cleans up.
func TestWorkerKilledOnRealNodes(t *testing.T) {
	kc := kubetest.Require(t)
	c := connect(t, kc)
	out := filepath.Join(t.TempDir(), "run")
	w := watchPods(c, "e2k-load")
	defer w.Stop()
	done := make(chan invocation, 1)
	go func() {
		done <- meshbench(t, nil, "run", "--platform", "kube", "--kubeconfig", kc.Kubeconfig, "--namespace-prefix", "e2k",
			"--mesh", "none", "--rate", "20", "--workers", "2", "--duration", "40s", "--out", out)
	}()
	var victim corev1.Pod
	waitFor(t, 3*time.Minute, "a running load worker", func() bool {
		for _, p := range w.Pods("e2k-load", "") {
			if p.Status.Phase == corev1.PodRunning {
				victim = p
				return true
			}
		}
		return false
	})
	time.Sleep(5 * time.Second) // well into the measured window
	if n := killInPod(t, victim, "load"); n == 0 {
		t.Fatalf("found no process of pod %s to kill", victim.Name)
	}
	t0 := time.Now()
	inv := <-done
	if inv.code != 1 {
		t.Errorf("exit %d, want 1", inv.code)
	}
	// The other worker still runs its 40 s; the run must not wait for
	// the ready timeout on top.
	if d := time.Since(t0); d > 2*time.Minute {
		t.Errorf("ended %v after the kill", d)
	}
	if !strings.Contains(inv.stderr, "load Job") || !strings.Contains(inv.stderr, "exit code 137") {
		t.Errorf("stderr does not name the load Job and the killed worker's exit code 137")
	}
	if _, err := os.Stat(filepath.Join(out, results.ManifestFile)); err != nil {
		t.Errorf("results not kept: %v", err)
	}
	checkClean(t, c, "e2k-app", "e2k-load")
}

// TestInterruptOnRealNodes: Ctrl-C during the measured window ends the run
// with exit 130, the partial results written and the namespaces deleted.
func TestInterruptOnRealNodes(t *testing.T) {
	kc := kubetest.Require(t)
	c := connect(t, kc)
	out := filepath.Join(t.TempDir(), "run")
	w := watchPods(c, "e2x-load", "e2x-load-nodes")
	defer w.Stop()
	sig := make(chan os.Signal, 1)
	done := make(chan invocation, 1)
	go func() {
		done <- meshbench(t, sig, "run", "--platform", "kube", "--kubeconfig", kc.Kubeconfig, "--namespace-prefix", "e2x",
			"--mesh", "none", "--rate", "20", "--duration", "60s", "--out", out)
	}()
	waitFor(t, 3*time.Minute, "a running load worker", func() bool {
		for _, p := range w.Pods("e2x-load", "") {
			if p.Status.Phase == corev1.PodRunning {
				return true
			}
		}
		return false
	})
	time.Sleep(3 * time.Second)
	sig <- os.Interrupt
	t0 := time.Now()
	inv := <-done
	if inv.code != 130 {
		t.Errorf("exit %d, want 130", inv.code)
	}
	if d := time.Since(t0); d > 90*time.Second {
		t.Errorf("ended %v after Ctrl-C", d)
	}
	if _, err := os.Stat(filepath.Join(out, results.ManifestFile)); err != nil {
		t.Errorf("results not kept: %v", err)
	}
	// The kernel CPU's node readers ran during the load, and went with
	// the run's namespaces at Ctrl-C.
	if n := len(w.Pods("e2x-load-nodes", "node-reader-")); n != testNodes {
		t.Errorf("saw %d node readers, want one per node (%d)", n, testNodes)
	}
	checkClean(t, c, "e2x-app", "e2x-load", "e2x-load-nodes")
}

// TestDefaultImageName: the image the nodes hold is the one a run uses
// by default.
func TestDefaultImageName(t *testing.T) {
	if kubetest.MeshbenchImage != kube.DefaultImage {
		t.Errorf("kubetest.MeshbenchImage %q != kube.DefaultImage %q", kubetest.MeshbenchImage, kube.DefaultImage)
	}
}

// TestNodeStoppedOnRealNodes: the kubelet of the load worker's node killed
// mid-run (the node stops reporting; its pods keep running unseen) ends
// the run with one line naming the node as soon as Kubernetes marks it
// NotReady (10 s here), not after the Job's timeout. The kubelet comes
// back then (as a rebooted node would), so the teardown can delete the
// pods; results are kept and nothing is left.
func TestNodeStoppedOnRealNodes(t *testing.T) {
	kc := kubetest.Require(t)
	c := connect(t, kc)
	out := filepath.Join(t.TempDir(), "run")
	w := watchPods(c, "e2n-load")
	defer w.Stop()
	done := make(chan invocation, 1)
	go func() {
		done <- meshbench(t, nil, "run", "--platform", "kube", "--kubeconfig", kc.Kubeconfig, "--namespace-prefix", "e2n",
			"--mesh", "none", "--rate", "20", "--duration", "60s", "--out", out)
	}()
	var node string
	waitFor(t, 3*time.Minute, "a running load worker", func() bool {
		for _, p := range w.Pods("e2n-load", "") {
			if p.Status.Phase == corev1.PodRunning {
				node = p.Spec.NodeName
				return true
			}
		}
		return false
	})
	idx := -1
	for i, n := range kc.Real.Nodes {
		if n.Name == node {
			idx = i
		}
	}
	if idx < 0 {
		t.Fatalf("node %q is not one of the real nodes", node)
	}
	time.Sleep(3 * time.Second)
	if err := kc.Real.KillKubelet(idx); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	restarted := false
	restart := func() {
		if !restarted {
			restarted = true
			if err := kc.Real.RestartKubelet(idx); err != nil {
				t.Errorf("restarting the kubelet of %s: %v", node, err)
			}
		}
	}
	defer restart()
	ctx := context.Background()
	waitFor(t, 2*time.Minute, "node "+node+" NotReady", func() bool {
		n, err := c.Core.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		return err == nil && !client.NodeReady(n)
	})
	// Give the run a few polls to see it, then bring the node back.
	time.Sleep(5 * time.Second)
	restart()
	inv := <-done
	if inv.code != 1 {
		t.Errorf("exit %d, want 1", inv.code)
	}
	if d := time.Since(t0); d > 2*time.Minute {
		t.Errorf("ended %v after the kubelet was killed", d)
	}
	if !strings.Contains(inv.stderr, "node "+node+" is not Ready") {
		t.Errorf("stderr does not name node %s as not Ready", node)
	}
	if _, err := os.Stat(filepath.Join(out, results.ManifestFile)); err != nil {
		t.Errorf("results not kept: %v", err)
	}
	checkClean(t, c, "e2n-app", "e2n-load")
	waitFor(t, time.Minute, "node "+node+" Ready again", func() bool {
		n, err := c.Core.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		return err == nil && client.NodeReady(n)
	})
}
