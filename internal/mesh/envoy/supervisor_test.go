package envoy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// One Envoy through its whole life: start, ready, a real request through
// its listener, stats and listeners from its admin, the address check
// seeing its sockets, then StopAll leaving no process.
func TestStartServeScrapeStop(t *testing.T) {
	dir := t.TempDir()
	s := newTestSupervisor(t, SupervisorOptions{})
	e := planEnvoy(t, dir, "sidecar server-0", false)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	p, err := s.Start(ctx, e.Spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("one envoy: start→ready %v (pid %d)", p.ReadyAfter.Round(time.Millisecond), p.PID)
	if p.Name != e.Spec.Name || p.AdminAddr != e.Spec.AdminAddr || p.PID <= 0 {
		t.Errorf("proc %+v", p)
	}
	if got := s.PIDs(); !slices.Equal(got, []int{p.PID}) {
		t.Errorf("PIDs() = %v, want [%d]", got, p.PID)
	}
	if pgid, err := syscall.Getpgid(p.PID); err != nil || pgid != p.PID {
		t.Errorf("process group = %d, %v; want its own (%d)", pgid, err, p.PID)
	}

	// A real request through the listener gets the direct response.
	resp, err := http.Get("http://" + e.Listener + "/anything")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "hello from sidecar server-0" {
		t.Errorf("through envoy: %d %q", resp.StatusCode, body)
	}

	// The counters show the request; the histogram fills at the next
	// stats flush (every 100 ms in the test config).
	var snap *StatsSnapshot
	deadline := time.Now().Add(5 * time.Second)
	for {
		snap, err = Stats(ctx, p.AdminAddr)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := snap.Histograms["http.in.downstream_rq_time"].CumulativeAt(50); ok || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if v, ok := snap.Counter("http.in.downstream_rq_2xx"); !ok || v != 1 {
		t.Errorf("counter http.in.downstream_rq_2xx = %d, %v; want 1", v, ok)
	}
	if v := snap.SumCounters("http.in.", "downstream_rq_completed"); v != 1 {
		t.Errorf("SumCounters(http.in., downstream_rq_completed) = %d, want 1", v)
	}
	if _, ok := snap.Counters["server.live"]; ok {
		t.Error("gauge server.live classified as a counter")
	}
	if v, ok := snap.Gauge("server.live"); !ok || v != 1 {
		t.Errorf("gauge server.live = %d, %v; want 1", v, ok)
	}
	h := snap.Histograms["http.in.downstream_rq_time"]
	if p50, ok := h.CumulativeAt(50); !ok || p50 < 0 || math.IsNaN(p50) {
		t.Errorf("histogram http.in.downstream_rq_time p50 = %v, %v; quantiles %v cumulative %v", p50, ok, h.Quantiles, h.Cumulative)
	}
	if !slices.Contains(h.Quantiles, 99.9) || len(h.Cumulative) != len(h.Quantiles) {
		t.Errorf("histogram quantiles %v, cumulative %v", h.Quantiles, h.Cumulative)
	}
	if !strings.HasPrefix(string(snap.Raw), `{"stats":[`) {
		t.Errorf("raw stats start %.40q", snap.Raw)
	}
	t.Logf("stats: %d counters, %d gauges, %d histograms, %d raw bytes",
		len(snap.Counters), len(snap.Gauges), len(snap.Histograms), len(snap.Raw))

	// Listeners bind loopback only.
	ls, err := Listeners(ctx, p.AdminAddr)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 || ls[0].Name != "in" || !slices.Equal(ls[0].Addrs, []string{e.Listener}) || !ls[0].LoopbackOnly() {
		t.Errorf("Listeners = %+v, want [in %s]", ls, e.Listener)
	}
	for _, l := range ls {
		for _, a := range l.Addrs {
			if !strings.HasPrefix(a, "127.") {
				t.Errorf("listener %s bound to %s", l.Name, a)
			}
		}
	}

	// The address check sees Envoy's sockets, though its listener uses
	// SO_REUSEPORT.
	err = CheckAddrsFree([]AddrOwner{{e.Listener, "listener in"}, {e.Spec.AdminAddr, "admin"}})
	if err == nil || len(err.(interface{ Unwrap() []error }).Unwrap()) != 2 {
		t.Errorf("CheckAddrsFree while envoy runs = %v, want both in use", err)
	}

	// StopAll: SIGTERM, Envoy flushes its log and exits 0.
	if err := s.StopAll(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	default:
		t.Fatal("Done() not closed after StopAll")
	}
	if err := p.ExitErr(); err != nil {
		t.Errorf("ExitErr after StopAll = %v, want nil", err)
	}
	if !procGone(p.PID, e.Spec.ConfigPath) {
		t.Errorf("/proc/%d still runs envoy after StopAll", p.PID)
	}
	if pids := s.PIDs(); len(pids) != 0 {
		t.Errorf("PIDs() after StopAll = %v", pids)
	}
	if log, _ := os.ReadFile(e.Spec.LogPath); !strings.Contains(string(log), "caught ENVOY_SIGTERM") {
		t.Errorf("log does not show the SIGTERM:\n%s", log)
	}
	if err := CheckAddrsFree([]AddrOwner{{e.Listener, "listener in"}, {e.Spec.AdminAddr, "admin"}}); err != nil {
		t.Errorf("addresses still busy after StopAll: %v", err)
	}
	// Idempotent, and final.
	if err := s.StopAll(ctx); err != nil {
		t.Errorf("second StopAll: %v", err)
	}
	if _, err := s.Start(ctx, e.Spec); err == nil || !strings.Contains(err.Error(), "has been stopped") {
		t.Errorf("Start after StopAll = %v", err)
	}
}

// An Envoy killed from outside mid-run closes Done, and ExitErr says how.
func TestProcKilledMidRun(t *testing.T) {
	dir := t.TempDir()
	s := newTestSupervisor(t, SupervisorOptions{})
	e := planEnvoy(t, dir, "waypoint", false)
	p, err := s.Start(context.Background(), e.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.ExitErr(); err != nil {
		t.Errorf("ExitErr while running = %v", err)
	}
	if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil { // our own child, by PID
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done() not closed 10s after SIGKILL")
	}
	err = p.ExitErr()
	if err == nil || !strings.Contains(err.Error(), `envoy "waypoint" (pid `) ||
		!strings.Contains(err.Error(), "exited unexpectedly (signal: killed)") {
		t.Errorf("ExitErr = %v", err)
	}
	t.Logf("ExitErr: %v", err)
	if pids := s.PIDs(); len(pids) != 0 {
		t.Errorf("PIDs() = %v after the kill", pids)
	}
}

// One broken config among several: StartAll stops the others, returns an
// error naming the broken one, and leaves no process.
func TestStartAllStopsOthersOnFailure(t *testing.T) {
	dir := t.TempDir()
	s := newTestSupervisor(t, SupervisorOptions{})
	var specs []Spec
	for i, name := range []string{"client-0", "client-1", "broken-2", "server-3"} {
		specs = append(specs, planEnvoy(t, dir, name, i == 2).Spec)
	}
	procs, err := s.StartAll(context.Background(), specs)
	if err == nil {
		t.Fatalf("StartAll = %d procs, want an error", len(procs))
	}
	t.Logf("StartAll: %v", err)
	if !strings.HasPrefix(err.Error(), `starting envoy "broken-2": envoy exited before it was ready (exit status 1): `) ||
		!strings.Contains(err.Error(), "no such field: 'direct_respons'") {
		t.Errorf("error = %v", err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error is not one line: %q", err)
	}
	if pids := s.PIDs(); len(pids) != 0 {
		t.Errorf("PIDs() = %v after a failed StartAll", pids)
	}
	if left := processesMentioning(t, dir); len(left) != 0 {
		t.Errorf("processes left running the test's configs: %v", left)
	}
}

// 20 Envoys started together: all ready, distinct PIDs, all stopped. The
// timing goes to the log (the machine is shared: no assertion on it).
func TestStartAllTwenty(t *testing.T) {
	dir := t.TempDir()
	s := newTestSupervisor(t, SupervisorOptions{})
	var specs []Spec
	for i := range 20 {
		specs = append(specs, planEnvoy(t, dir, "envoy-"+string(rune('a'+i)), false).Spec)
	}
	start := time.Now()
	procs, err := s.StartAll(context.Background(), specs)
	if err != nil {
		t.Fatal(err)
	}
	all := time.Since(start)
	var ready []time.Duration
	seen := map[int]bool{}
	for i, p := range procs {
		if p.Name != specs[i].Name || seen[p.PID] {
			t.Errorf("proc %d: %s pid %d", i, p.Name, p.PID)
		}
		seen[p.PID] = true
		ready = append(ready, p.ReadyAfter)
	}
	slices.Sort(ready)
	t.Logf("20 envoys in parallel (at most %d starting at once): all ready after %v; start→ready per envoy min %v, median %v, max %v",
		DefaultMaxParallelStarts, all.Round(time.Millisecond), ready[0].Round(time.Millisecond),
		ready[len(ready)/2].Round(time.Millisecond), ready[len(ready)-1].Round(time.Millisecond))
	if got := len(s.PIDs()); got != 20 {
		t.Errorf("%d PIDs tracked, want 20", got)
	}
	stopStart := time.Now()
	if err := s.StopAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("StopAll of 20: %v", time.Since(stopStart).Round(time.Millisecond))
	for i, p := range procs {
		if !procGone(p.PID, specs[i].ConfigPath) {
			t.Errorf("pid %d still runs after StopAll", p.PID)
		}
	}
}

func TestStartRefusesBadSpecs(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "c.yaml", "{}", 0o644)
	s := newTestSupervisor(t, SupervisorOptions{})
	tests := []struct {
		name string
		spec Spec
		want string
	}{
		// Every address off loopback is refused before anything starts.
		{"wildcard", Spec{Name: "a", ConfigPath: cfg, AdminAddr: "0.0.0.0:15000"},
			"admin address 0.0.0.0:15000 is not on loopback"},
		{"private", Spec{Name: "a", ConfigPath: cfg, AdminAddr: "10.1.2.3:15000"},
			"admin address 10.1.2.3:15000 is not on loopback"},
		{"ipv6 wildcard", Spec{Name: "a", ConfigPath: cfg, AdminAddr: "[::]:15000"},
			"admin address [::]:15000 is not on loopback"},
		// A name is not an address (Envoy needs an IP literal anyway).
		{"hostname", Spec{Name: "a", ConfigPath: cfg, AdminAddr: "localhost:15000"},
			`admin address "localhost:15000" must be a loopback ip:port`},
		{"no port", Spec{Name: "a", ConfigPath: cfg, AdminAddr: "127.0.0.1"},
			`admin address "127.0.0.1" must be a loopback ip:port`},
		{"port 0", Spec{Name: "a", ConfigPath: cfg, AdminAddr: "127.0.0.1:0"},
			"admin address 127.0.0.1:0 needs a fixed port"},
		// Every problem at once.
		{"several", Spec{ConfigPath: dir + "/missing.yaml", AdminAddr: "127.0.0.1:1", LogLevel: "loud"},
			"spec has no name\nconfig " + dir + "/missing.yaml: no such file or directory\nlog level \"loud\" is not one of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Start(context.Background(), tt.spec)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Start = %v, want %q", err, tt.want)
			}
		})
	}
	// StartAll checks every spec, and distinct names and admins, first.
	_, err := s.StartAll(context.Background(), []Spec{
		{Name: "x", ConfigPath: cfg, AdminAddr: "127.0.0.1:15000"},
		{Name: "x", ConfigPath: cfg, AdminAddr: "127.0.0.1:15000"},
		{Name: "y", ConfigPath: cfg, AdminAddr: "0.0.0.0:15000"},
	})
	for _, w := range []string{`envoy name "x" is used twice`, `envoys "x" and "x" have the same admin address 127.0.0.1:15000`,
		`envoy "y": admin address 0.0.0.0:15000 is not on loopback`} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("StartAll = %v, want %q", err, w)
		}
	}
	if pids := s.PIDs(); len(pids) != 0 {
		t.Errorf("PIDs() = %v: something started", pids)
	}
}

// A config whose admin address differs from the spec is caught as soon as
// Envoy binds its admin, instead of polling someone else's /ready.
func TestStartAdminMismatch(t *testing.T) {
	dir := t.TempDir()
	s := newTestSupervisor(t, SupervisorOptions{})
	e := planEnvoy(t, dir, "mismatch", false)
	wrong := freeAddr(t, loopbackIP())
	spec := e.Spec
	spec.AdminAddr = wrong
	_, err := s.Start(context.Background(), spec)
	if err == nil || !strings.Contains(err.Error(), "envoy bound its admin listener at "+e.Spec.AdminAddr+", but the spec says "+wrong) {
		t.Errorf("Start = %v", err)
	}
	if left := processesMentioning(t, dir); len(left) != 0 {
		t.Errorf("processes left: %v", left)
	}
}

// Not ready in time: the error says so and the process is stopped.
func TestStartReadyTimeout(t *testing.T) {
	dir := t.TempDir()
	s := newTestSupervisor(t, SupervisorOptions{ReadyTimeout: time.Millisecond})
	e := planEnvoy(t, dir, "slow", false)
	_, err := s.Start(context.Background(), e.Spec)
	if err == nil || !strings.Contains(err.Error(), `starting envoy "slow": envoy not ready within 1ms`) {
		t.Errorf("Start = %v", err)
	}
	if left := processesMentioning(t, dir); len(left) != 0 {
		t.Errorf("processes left: %v", left)
	}
	// A cancelled context ends the wait the same way.
	s2 := newTestSupervisor(t, SupervisorOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s2.Start(ctx, e.Spec); err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("Start with a cancelled context = %v", err)
	}
}

// StopAll racing StartAll (a signal arriving mid-start) leaves nothing.
func TestStopAllDuringStartAll(t *testing.T) {
	dir := t.TempDir()
	s := newTestSupervisor(t, SupervisorOptions{})
	var specs []Spec
	for i := range 4 {
		specs = append(specs, planEnvoy(t, dir, "racer-"+string(rune('a'+i)), false).Spec)
	}
	type result struct {
		procs []*Proc
		err   error
	}
	resc := make(chan result, 1)
	go func() {
		procs, err := s.StartAll(context.Background(), specs)
		resc <- result{procs, err}
	}()
	time.Sleep(30 * time.Millisecond) // Envoy needs ≥ 80 ms to be ready
	if err := s.StopAll(context.Background()); err != nil {
		t.Errorf("StopAll: %v", err)
	}
	res := <-resc
	t.Logf("StartAll with a concurrent StopAll: %v", res.err)
	for _, p := range res.procs { // only if all were ready before StopAll
		if !p.exited() {
			t.Errorf("%s (pid %d) still runs", p.Name, p.PID)
		}
	}
	if err := s.StopAll(context.Background()); err != nil {
		t.Errorf("second StopAll: %v", err)
	}
	if left := processesMentioning(t, dir); len(left) != 0 {
		t.Errorf("processes left: %v", left)
	}
}

// helperEnv marks the child process of TestEnvoysDieWithMeshbench.
const helperEnv = "MESHBENCH_ENVOY_TEST_HELPER"

// If meshbench itself dies (here: SIGKILL, so no cleanup code runs), its
// Envoys get the parent-death signal and exit. The child is this test
// binary, re-run to start one Envoy and then block.
func TestEnvoysDieWithMeshbench(t *testing.T) {
	if dir := os.Getenv(helperEnv); dir != "" {
		helperStartAndBlock(dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestEnvoysDieWithMeshbench$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var envoyPID int
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // by PID; no-op once it has exited
		_ = cmd.Wait()
		if envoyPID > 0 && !procGone(envoyPID, dir) {
			_ = syscall.Kill(envoyPID, syscall.SIGKILL) // the test failed: still stop it, by PID
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if _, scanErr := fmt.Sscanf(line, "ENVOY %d", &envoyPID); scanErr != nil {
		t.Fatalf("helper said %q (%v)", line, err)
	}
	if procGone(envoyPID, dir) {
		t.Fatalf("envoy %d not running", envoyPID)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for !procGone(envoyPID, dir) {
		if time.Now().After(deadline) {
			t.Fatalf("envoy %d still runs 10s after its parent was killed", envoyPID)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// helperStartAndBlock starts one Envoy, reports its PID on stdout and
// waits to be killed (at most a minute).
func helperStartAndBlock(dir string) {
	bin, err := Find(FindOptions{ProjectDir: "../../.."})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	var addrs []string
	for range 2 {
		ln, err := net.Listen("tcp", loopbackIP()+":0")
		if err != nil {
			fmt.Println("ERROR", err)
			os.Exit(1)
		}
		addrs = append(addrs, ln.Addr().String())
		ln.Close()
	}
	cfg := filepath.Join(dir, "orphan.yaml")
	if err := os.WriteFile(cfg, []byte(testConfig(addrs[0], addrs[1], "orphan")), 0o644); err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	s := NewSupervisor(bin, SupervisorOptions{RunDir: dir}) // the parent's temp dir: removed even though this process is killed
	p, err := s.Start(context.Background(), Spec{Name: "orphan", ConfigPath: cfg, AdminAddr: addrs[0]})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Printf("ENVOY %d\n", p.PID)
	time.Sleep(time.Minute)
	_ = s.StopAll(context.Background())
	os.Exit(1)
}
