package local

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/mesh/envoy"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

func findEnvoy(t *testing.T) *envoy.Binary {
	t.Helper()
	wd, _ := os.Getwd()
	bin, err := envoy.Find(envoy.FindOptions{ProjectDir: filepath.Join(wd, "..", "..", "..")})
	if err != nil {
		t.Fatalf("%v (make test installs it)", err)
	}
	return bin
}

// labOptions: each test gets its own 127.<net>.0.0/16 so parallel packages
// and leftovers never clash.
// testLoad is the load s names ("100", "max"), for a test's options.
func testLoad(tb testing.TB, s string) loadgen.Load {
	tb.Helper()
	l, err := loadgen.ParseLoad(s)
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

func labOptions(t *testing.T, mode topology.Mode, replicas int, loopbackNet uint8) Options {
	mo := topology.DefaultOptions()
	mo.Mode, mo.Replicas, mo.LoopbackNet = mode, replicas, loopbackNet
	o := Options{Settings: platform.Settings{Mesh: mo, Load: testLoad(t, "100"), Duration: 2 * time.Second, Warmup: 500 * time.Millisecond, SampleInterval: 250 * time.Millisecond, Drain: 500 * time.Millisecond},
		OutDir: filepath.Join(t.TempDir(), "run"), Meshbench: testutil.BuildMeshbench(t), IdleTimeout: 5 * time.Second, Version: "test"}
	if mode != topology.ModeNone {
		o.Envoy = findEnvoy(t)
	}
	return o
}

// assertNothingLeft: every process the run recorded is gone.
func assertNothingLeft(t *testing.T, m *results.RunManifest) {
	t.Helper()
	for _, p := range m.Processes {
		if err := syscall.Kill(p.PID, 0); err == nil {
			if b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.PID), "stat")); len(b) > 0 && !strings.Contains(string(b), ") Z ") {
				t.Errorf("process %s (pid %d) still running after the run", p.Name, p.PID)
			}
		}
	}
}

// TestRunEveryMode runs one short cell per mesh mode through real Envoys and
// checks the results directory: 100% success through the full chain, every
// component sampled, Envoy configs and stats kept, nothing left running.
func TestRunEveryMode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real Envoys")
	}
	modes := []struct {
		mode       topology.Mode
		components []string
		statsOf    string // a proxy whose stats must show traffic
		counter    string // substring of a counter that must be > 0 there
	}{
		{topology.ModeNone, []string{"app static", "load"}, "", ""},
		{topology.ModeSidecar, []string{"app static", "load", "client sidecar", "server sidecar"}, "server-0-sidecar", "ssl.handshake"},
		{topology.ModeAmbient, []string{"app static", "load", "node proxy node2"}, "ztunnel-node2", "ssl.handshake"},
		{topology.ModeWaypoint, []string{"app static", "load", "waypoint"}, "waypoint", "ssl.handshake"},
	}
	for i, tt := range modes {
		t.Run(string(tt.mode), func(t *testing.T) {
			o := labOptions(t, tt.mode, 2, uint8(10+i))
			// The observer: every phase as it starts, every sampling
			// round, the load's running figures.
			obs := &recorder{}
			o.Observer = obs
			res, err := Run(context.Background(), o)
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if !res.Manifest.Valid {
				t.Errorf("run invalid: %v", res.Manifest.Invalid)
			}
			if res.Load.Sent != 200 || res.Load.Success != 200 {
				t.Errorf("sent %d success %d, want 200/200 (codes %v errors %v)", res.Load.Sent, res.Load.Success, res.Load.StatusCodes, res.Load.Errors)
			}
			got := map[string]bool{}
			for _, c := range res.Summary.Components {
				got[c.Name] = true
			}
			for _, c := range tt.components {
				if !got[c] {
					t.Errorf("component %q not sampled (have %v)", c, got)
				}
			}
			for _, f := range []string{results.ManifestFile, results.LoadFile, results.SamplesFile, results.ResourcesFile} {
				if _, err := os.Stat(filepath.Join(res.Dir, f)); err != nil {
					t.Errorf("results file %s: %v", f, err)
				}
			}
			if tt.statsOf != "" {
				b, err := os.ReadFile(filepath.Join(res.Dir, results.EnvoyDir, tt.statsOf+".stats.json"))
				if err != nil || !strings.Contains(string(b), tt.counter) {
					t.Errorf("stats of %s lack %q: %v", tt.statsOf, tt.counter, err)
				}
				if _, err := os.Stat(filepath.Join(res.Dir, results.EnvoyDir, tt.statsOf+".json")); err != nil {
					t.Errorf("config of %s not kept: %v", tt.statsOf, err)
				}
				b, err = os.ReadFile(filepath.Join(res.Dir, results.EnvoyStatsFile))
				if _, ok := res.EnvoyStats[tt.statsOf]; err != nil || !ok || !strings.Contains(string(b), `"`+tt.statsOf+`"`) {
					t.Errorf("summary of %s not in %s or the result: %v", tt.statsOf, results.EnvoyStatsFile, err)
				}
			}
			if tt.mode == topology.ModeSidecar {
				// Every request crossed one server sidecar (round robin over
				// the replicas): the 2xx add up to the 200 measured at least
				// (warm-up included), each over mTLS.
				var ok2xx uint64
				for _, pod := range res.Topology.ServerPods() {
					ps := res.EnvoyStats[res.Topology.Sidecar(pod.Name).Name]
					if ps.DownstreamTLS == nil || ps.DownstreamTLS.Handshakes == nil || *ps.DownstreamTLS.Handshakes == 0 {
						t.Errorf("sidecar of %s: no TLS handshake in %+v", pod.Name, ps.DownstreamTLS)
					}
					if ps.Downstream != nil && ps.Downstream.Rq2xx != nil {
						ok2xx += *ps.Downstream.Rq2xx
					}
				}
				if ok2xx < 200 {
					t.Errorf("server sidecars' downstream 2xx = %d, want >= 200", ok2xx)
				}
			}
			var phases []string
			for _, p := range res.Manifest.Phases {
				phases = append(phases, p.Name)
			}
			want := "prepare/apps,prepare,idle,warmup,measure,drain,collect,teardown"
			if tt.mode != topology.ModeNone {
				want = "prepare/render,prepare/validate,prepare/apps,prepare/envoys," + want[len("prepare/apps,"):]
			}
			if got := strings.Join(phases, ","); got != want {
				t.Errorf("phases %s", got)
			}
			obs.mu.Lock()
			wantStarted := "prepare,prepare/apps,idle,warmup,measure,drain,collect,teardown"
			if tt.mode != topology.ModeNone {
				wantStarted = "prepare,prepare/render,prepare/validate,prepare/apps,prepare/envoys,idle,warmup,measure,drain,collect,teardown"
			}
			if got := strings.Join(obs.phases, ","); got != wantStarted {
				t.Errorf("the observer saw phases %s, want %s", got, wantStarted)
			}
			if obs.rounds == 0 || obs.rounds < res.Summary.Rounds {
				t.Errorf("the observer saw %d rounds; the window alone has %d", obs.rounds, res.Summary.Rounds)
			}
			if obs.progress == 0 {
				t.Error("the observer saw none of the load's running figures")
			}
			obs.mu.Unlock()
			if _, err := os.Stat(filepath.Join(res.Dir, results.LogsDir, "load-progress.json")); err != nil {
				t.Errorf("the load's progress file, asked for by a LoadObserver: %v", err)
			}
			assertNothingLeft(t, res.Manifest)
		})
	}
}

// TestRunEnvoyDiesMidRun: an Envoy killed during the load ends the run,
// which reports errors, is marked invalid, and leaves nothing running.
func TestRunEnvoyDiesMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real Envoys")
	}
	o := labOptions(t, topology.ModeSidecar, 1, 20)
	o.Duration = 20 * time.Second
	// Kill the server sidecar once the load runs: watch for its PID in /proc.
	topo, err := topology.Plan(o.Mesh)
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(o.OutDir, results.EnvoyDir, topo.Sidecar("server-0").Name+".json")
	go func() {
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
			if _, err := os.Stat(filepath.Join(o.OutDir, results.LogsDir, "load.log")); err != nil {
				continue
			}
			time.Sleep(time.Second)
			pid := pidRunning(config)
			if pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
				return
			}
		}
	}()
	start := time.Now()
	res, err := Run(context.Background(), o)
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("run took %v: it should end soon after the Envoy died", took)
	}
	if err == nil || !strings.Contains(err.Error(), "died") {
		t.Fatalf("run error = %v, want one naming the dead Envoy", err)
	}
	if res == nil || res.Manifest.Valid {
		t.Fatalf("run not marked invalid")
	}
	assertNothingLeft(t, res.Manifest)
}

// pidRunning finds the PID of a process whose command line contains arg.
func pidRunning(arg string) int {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if b, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline")); strings.Contains(string(b), arg) {
			return pid
		}
	}
	return 0
}

// TestRunAddressInUse: a listener address already taken is reported before
// anything starts, naming the address and its owner.
func TestRunAddressInUse(t *testing.T) {
	o := labOptions(t, topology.ModeNone, 1, 21)
	topo, err := topology.Plan(o.Mesh)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", topo.ServerPods()[0].AppAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = Run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), topo.ServerPods()[0].AppAddr().String()) {
		t.Fatalf("error %v, want the busy address named", err)
	}
	if _, statErr := os.Stat(o.OutDir); statErr == nil {
		t.Error("results directory created although nothing ran")
	}
}

// TestRunLoadCPUStarved: a load generator over its CPU limit makes the run
// invalid with the reason (the limit set absurdly low so a real 1000 rps
// load crosses it); closed loop is exempt. The rate is 1000, not 100: the
// kernel charges CPU in 10-ms ticks, and on a fast machine 200 requests
// took under one tick, so a 100 rps run was sometimes charged 0m (CI saw
// it).
func TestRunLoadCPUStarved(t *testing.T) {
	o := labOptions(t, topology.ModeNone, 1, 22)
	o.LoadCPUMax, o.Load = 0.001, testLoad(t, "1000") // 1m
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if res.Manifest.Valid || !strings.Contains(strings.Join(res.Manifest.Invalid, ";"), "load generator CPU-starved") {
		t.Errorf("valid %v, reasons %q: want invalid, CPU-starved", res.Manifest.Valid, res.Manifest.Invalid)
	}
	assertNothingLeft(t, res.Manifest)

	o = labOptions(t, topology.ModeNone, 1, 22)
	o.LoadCPUMax, o.Load, o.Duration = 0.001, loadgen.ClosedLoop, time.Second
	res, err = Run(context.Background(), o)
	if err != nil {
		t.Fatalf("closed-loop run: %v", err)
	}
	if strings.Contains(strings.Join(res.Manifest.Invalid, ";"), "CPU-starved") || res.Load.Success == 0 {
		t.Errorf("closed loop: reasons %q, %d successes; want no CPU-starved flag and successes", res.Manifest.Invalid, res.Load.Success)
	}
	if res.Load.Model != results.ModelClosed {
		t.Error("closed-loop run's load result not marked closed loop")
	}
	assertNothingLeft(t, res.Manifest)
}

// TestCheckValidityThresholds: the plan's thresholds replace the defaults
// (1% errors, 0.2% rate shortfall) in judging a run.
func TestCheckValidityThresholds(t *testing.T) {
	r := &results.LoadResult{Scheduled: 1000, Sent: 990, Completed: 990, Success: 970}
	judge := func(o Options) []string {
		c := &cell{opts: o, manifest: &results.RunManifest{Valid: true}}
		c.checkValidity(r)
		return c.manifest.Invalid
	}
	if got := judge(Options{}); len(got) != 2 {
		t.Errorf("defaults: %q, want rate and errors both flagged (1%% short, 2%% failed)", got)
	}
	if got := judge(Options{Settings: platform.Settings{RateShortfall: 0.02, ErrorRatio: 0.05}}); len(got) != 0 {
		t.Errorf("loose thresholds: %q, want valid", got)
	}
	if got := judge(Options{Settings: platform.Settings{RateShortfall: 0.02, ErrorRatio: 0.01}}); len(got) != 1 || !strings.Contains(got[0], "20 of 990 requests failed") {
		t.Errorf("errors only: %q", got)
	}
}

// TestLabReuse runs two cells on one running sidecar lab: the same
// processes serve both, the first cell's manifest carries the prepare
// phases and the second says it reused the lab, and each cell's Envoy
// stats count only its own requests (counters reset, a new histogram
// interval) although the Envoys kept running.
func TestLabReuse(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real Envoys")
	}
	o := labOptions(t, topology.ModeSidecar, 1, 23)
	o.Warmup = 0 // every request the Envoys see is one the load counts
	labDir := filepath.Join(t.TempDir(), "lab")
	lab, err := Start(context.Background(), o, labDir)
	if err != nil {
		t.Fatal(err)
	}
	var manifests []*results.RunManifest
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := lab.Stop(ctx); err != nil {
			t.Errorf("stopping the lab: %v", err)
		}
		for _, m := range manifests {
			assertNothingLeft(t, m)
		}
	})
	var results2 []*Result
	for i, rate := range []string{"50", "100"} {
		co := o
		co.Load, co.OutDir = testLoad(t, rate), filepath.Join(t.TempDir(), "cell"+strconv.Itoa(i))
		res, err := lab.Run(context.Background(), co)
		if err != nil {
			t.Fatalf("cell %d: %v", i, err)
		}
		if !res.Manifest.Valid {
			t.Errorf("cell %d invalid: %q", i, res.Manifest.Invalid)
		}
		manifests = append(manifests, res.Manifest)
		results2 = append(results2, res)
	}
	pids := func(m *results.RunManifest) map[string]int {
		out := map[string]int{}
		for _, p := range m.Processes {
			if p.Name != "load" {
				out[p.Name] = p.PID
			}
		}
		return out
	}
	if a, b := pids(manifests[0]), pids(manifests[1]); len(a) != 3 || !reflect.DeepEqual(a, b) {
		t.Errorf("processes: cell 1 %v, cell 2 %v; want the same app and two sidecars", a, b)
	}
	hasPrepare := func(m *results.RunManifest) bool {
		for _, p := range m.Phases {
			if p.Name == "prepare" {
				return true
			}
		}
		return false
	}
	if !hasPrepare(manifests[0]) || hasPrepare(manifests[1]) {
		t.Errorf("prepare phase in cell 1: %v, in cell 2: %v; want only the first", hasPrepare(manifests[0]), hasPrepare(manifests[1]))
	}
	for i, m := range manifests {
		info, _ := m.Options["lab"].(map[string]any)
		if info == nil || info["cell"] != i+1 || info["reused"] != (i > 0) {
			t.Errorf("cell %d: lab info %v", i+1, info)
		}
	}
	for i, res := range results2 {
		st, ok := res.EnvoyStats["server-0-sidecar"]
		if !ok || st.Downstream == nil || st.Downstream.Rq2xx == nil {
			t.Fatalf("cell %d: no downstream 2xx count for the server sidecar: %+v", i+1, st)
		}
		if got, want := *st.Downstream.Rq2xx, res.Load.Success; got != uint64(want) {
			t.Errorf("cell %d: server sidecar counted %d 2xx, the load %d successes: counters not the cell's own", i+1, got, want)
		}
		var withTime int
		for _, c := range st.Clusters {
			if c.RqTimeMs != nil {
				withTime++
			}
		}
		if withTime == 0 {
			t.Errorf("cell %d: no cluster has upstream_rq_time quantiles for the cell's interval", i+1)
		}
	}
	if lab.Cells() != 2 {
		t.Errorf("lab ran %d cells, want 2", lab.Cells())
	}
	bad := o
	bad.Mesh.Replicas = 2
	bad.OutDir = filepath.Join(t.TempDir(), "misfit")
	if _, err := lab.Run(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "topology differs") {
		t.Errorf("a cell of another topology on the lab: %v, want refused", err)
	}
}

// TestLabFitsDefaultMeshbench: a cell that leaves Meshbench empty (as
// bench's cells do) fits a lab started with this executable's path, the
// default it stands for.
func TestLabFitsDefaultMeshbench(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	mo := topology.DefaultOptions()
	l := newLab(Options{Settings: platform.Settings{Mesh: mo}, Meshbench: exe}, nil, t.TempDir())
	if !l.Fits(Options{Settings: platform.Settings{Mesh: mo}}) {
		t.Error("a cell without a Meshbench path does not fit a lab running this executable")
	}
	other := mo
	other.Replicas = 2
	if l.Fits(Options{Settings: platform.Settings{Mesh: other}}) || l.Fits(Options{Settings: platform.Settings{Mesh: mo}, Meshbench: "/other/meshbench"}) {
		t.Error("cells of another topology or binary fit")
	}
}

// recorder is a platform.LoadObserver that counts what it is told.
type recorder struct {
	platform.ObserverBase
	mu               sync.Mutex
	phases           []string
	rounds, progress int
}

func (r *recorder) Phase(name string)  { r.mu.Lock(); r.phases = append(r.phases, name); r.mu.Unlock() }
func (r *recorder) Round(sample.Round) { r.mu.Lock(); r.rounds++; r.mu.Unlock() }
func (r *recorder) LoadProgress(results.LoadProgress) {
	r.mu.Lock()
	r.progress++
	r.mu.Unlock()
}

// TestEvidenceNotKept: an evidence file that cannot be written (here a
// directory stands where it goes) is said in the log and marks the cell
// invalid, naming the file; one written is not.
func TestEvidenceNotKept(t *testing.T) {
	dir, err := results.CreateRunDir(filepath.Join(t.TempDir(), "run"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir.Path, results.EnvoyStatsFile, "in-the-way"), 0o755); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	c := &cell{opts: Options{Log: &log}, dir: dir, manifest: &results.RunManifest{Valid: true}}
	c.kept("mesh-check.json", c.dir.WriteJSON("mesh-check.json", map[string]int{"ok": 1}))
	if !c.manifest.Valid {
		t.Fatalf("a file written marked the cell: %v", c.manifest.Invalid)
	}
	c.kept(results.EnvoyStatsFile, c.dir.WriteJSON(results.EnvoyStatsFile, map[string]int{}))
	if c.manifest.Valid || len(c.manifest.Invalid) != 1 || !strings.HasPrefix(c.manifest.Invalid[0], "evidence not kept: "+results.EnvoyStatsFile+": ") {
		t.Errorf("manifest valid %v, invalid %q; want invalid: evidence not kept: %s: …", c.manifest.Valid, c.manifest.Invalid, results.EnvoyStatsFile)
	}
	if !strings.Contains(log.String(), "warning: "+results.EnvoyStatsFile+" not kept: ") {
		t.Errorf("log %q does not say it", log.String())
	}
}
