package fault

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/sys/cgroup"
	"github.com/meshbench/meshbench/internal/sys/process"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
	"github.com/meshbench/meshbench/internal/workload"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in, str, id string
	}{
		{"none", "none", ""},
		{"kill:node-proxy@3s", "kill:node-proxy@3s", "kill-node-proxy-at3s"},
		{"kill:sidecar", "kill:sidecar@0s", "kill-sidecar-at0s"},
		{"cpu-limit:waypoint=200m@2s+5s", "cpu-limit:waypoint=200@2s+5s", "cpu-limit-waypoint-200m-at2s-for5s"},
		{"slow-replica:1=200ms@1s", "slow-replica:1=200ms@1s", "slow-replica-1-200ms-at1s"},
		{"noisy-neighbour:1500@500ms+1s", "noisy-neighbour:1500@500ms+1s", "noisy-neighbour-1500m-at500ms-for1s"},
		{"slow-replica:color/1=200ms@2s", "slow-replica:color/1=200ms@2s", "slow-replica-color-1-200ms-at2s"},
	} {
		f, err := Parse(tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if f.String() != tc.str || f.ID() != tc.id {
			t.Errorf("%s: String %q ID %q, want %q %q", tc.in, f.String(), f.ID(), tc.str, tc.id)
		}
		if g, err := Parse(f.String()); err != nil || g != f {
			t.Errorf("%s: String does not parse back: %+v %v", tc.in, g, err)
		}
	}
	for _, bad := range []string{"kill", "kill:ztunnel", "kill:sidecar@3s+1s", "cpu-limit:sidecar", "cpu-limit:sidecar=5",
		"cpu-limit:sidecar=x", "slow-replica:0=1s", "slow-replica:1", "slow-replica:1=-1s", "noisy-neighbour:99999",
		"explode:all", "kill:sidecar@-1s", "kill:sidecar@soon", "noisy-neighbour:100@1s+0s"} {
		if _, err := Parse(bad); err == nil || !strings.Contains(err.Error(), "allowed:") {
			t.Errorf("%q: error %v, want one saying what is allowed", bad, err)
		}
	}
	f, _ := Parse("kill:sidecar@5s")
	if f.Check(5*time.Second) == nil || f.Check(6*time.Second) != nil {
		t.Error("Check: a fault must start inside the window")
	}
}

// TestSkip: the combinations that mean nothing are said with the reason;
// the others are not.
func TestSkip(t *testing.T) {
	get := func(n string) *mesh.Mesh {
		m, ok := mesh.Get(n)
		if !ok {
			t.Fatalf("no mesh %s", n)
		}
		return m
	}
	p := func(s string) Fault {
		f, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, tc := range []struct {
		fault, mesh string
		replicas    int
		want        string // "" or a piece of the reason
	}{
		{"kill:node-proxy", "sidecar", 2, "has no node-proxy"},
		{"kill:node-proxy", "ambient", 2, ""},
		{"kill:node-proxy", "waypoint", 2, ""},
		{"kill:waypoint", "ambient", 2, "has no waypoint"},
		{"kill:waypoint", "waypoint", 2, ""},
		{"kill:sidecar", "linkerd", 2, ""},
		{"kill:sidecar", "ambient", 2, "has no sidecar"},
		{"kill:sidecar", "none", 2, "has no sidecar"},
		{"kill:control-plane", "sidecar", 2, "runs no istiod"},
		{"kill:control-plane", "linkerd", 2, "not with control plane lab"},
		{"cpu-limit:sidecar=100", "sidecar", 1, ""},
		{"slow-replica:1=100ms", "linkerd", 1, "replicas ≥ 2"},
		{"slow-replica:1=100ms", "linkerd", 3, ""},
		{"noisy-neighbour:500", "none", 1, ""},
		{"slow-replica:color/1=200ms", "linkerd", 2, ""},
		{"slow-replica:colour/1=200ms", "linkerd", 2, "app faces has face, smiley, color"},
	} {
		app := topology.AppStatic
		if strings.Contains(tc.fault, "colo") {
			app = topology.AppFaces
		}
		got := Skip(p(tc.fault), get(tc.mesh), app, tc.replicas, true)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s on %s ×%d: skip %q, want %q", tc.fault, tc.mesh, tc.replicas, got, tc.want)
		}
		if lab := SkipLab(p(tc.fault), get(tc.mesh), app, tc.replicas, ControlPlaneLab); lab != got {
			t.Errorf("%s on %s ×%d with control plane lab: skip %q, want Skip's %q", tc.fault, tc.mesh, tc.replicas, lab, got)
		}
	}
	// With a mesh's real control plane, the lab runs it: its kill means
	// something; a part the mesh lacks is still skipped.
	for _, tc := range []struct{ fault, mesh, cp, want string }{
		{"kill:control-plane", "sidecar", "istiod", ""},
		{"kill:control-plane", "ambient", "istiod", ""},
		{"cpu-limit:control-plane=100", "waypoint", "istiod", ""},
		{"kill:control-plane", "linkerd", "linkerd", ""},
		{"kill:control-plane", "none", "istiod", "has no control-plane"},
		{"kill:node-proxy", "sidecar", "istiod", "has no node-proxy"},
	} {
		got := SkipLab(p(tc.fault), get(tc.mesh), topology.AppStatic, 2, tc.cp)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s on %s with control plane %s: skip %q, want %q", tc.fault, tc.mesh, tc.cp, got, tc.want)
		}
	}
}

// target is a Target of real processes: a busy loop as the part (what
// a CPU limit hits; a kill starts a new one), real app servers with
// control sockets as the replicas.
type target struct {
	mu    sync.Mutex
	part  *exec.Cmd
	reps  []workload.Control
	kills int
}

func (tg *target) PartPID(mesh.Part) (int, string, error) {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return tg.part.Process.Pid, "busy", nil
}

func (tg *target) Kill(context.Context, mesh.Part) (int, error) {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	process.KillGroup(tg.part.Process.Pid)
	_ = tg.part.Wait()
	tg.kills++
	c, err := busy()
	if err != nil {
		return 0, err
	}
	tg.part = c
	return c.Process.Pid, nil
}

func (tg *target) Replicas(string) []workload.Control { return tg.reps }

func busy() (*exec.Cmd, error) {
	c := exec.Command("sh", "-c", "while :; do :; done")
	return c, process.Start(c)
}

func newTarget(t *testing.T, replicas int) *target {
	t.Helper()
	c, err := busy()
	if err != nil {
		t.Fatal(err)
	}
	tg := &target{part: c}
	t.Cleanup(func() {
		tg.mu.Lock()
		defer tg.mu.Unlock()
		process.KillGroup(tg.part.Process.Pid)
		_ = tg.part.Wait()
	})
	for i := range replicas {
		sock := filepath.Join(t.TempDir(), "app"+strconv.Itoa(i)+".sock")
		srv, err := workload.Start(context.Background(), workload.Config{Kind: workload.KindStatic, Listen: "127.0.0.1:0", Control: sock})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
		tg.reps = append(tg.reps, workload.Control{Path: sock})
	}
	return tg
}

// ourCgroups are the fault cgroups this process made that still exist.
func ourCgroups(t *testing.T, h cgroup.Hierarchy) []string {
	t.Helper()
	es, err := os.ReadDir(h.Root)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		if strings.HasPrefix(e.Name(), cgroup.Prefix) && strings.HasSuffix(e.Name(), "-"+strconv.Itoa(os.Getpid())) {
			out = append(out, e.Name())
		}
	}
	return out
}

func cgroupOf(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	return string(b)
}

// TestScheduleCPULimitAndUndo: a CPU limit takes effect at its time (the
// part's process moves into a limit cgroup), is undone after +FOR, and
// Stop leaves no cgroup; a limit without +FOR is undone by Stop.
func TestScheduleCPULimitAndUndo(t *testing.T) {
	testutil.RequireRoot(t, "cgroups are written as root")
	h, err := cgroup.Find()
	if err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	tg := newTarget(t, 0)
	pid, _, _ := tg.PartPID("")
	home := cgroupOf(pid)
	f, _ := Parse("cpu-limit:sidecar=100@200ms+400ms")
	var lines []string
	var mu sync.Mutex
	r := Schedule(context.Background(), f, tg, time.Now(), func(s string) { mu.Lock(); lines = append(lines, s); mu.Unlock() })
	// Polled, not slept: a loaded machine may run the scheduler late,
	// never early.
	time.Sleep(50 * time.Millisecond)
	if cgroupOf(pid) != home {
		t.Error("limited before its time")
	}
	until := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("after 5 s, still not %s", what)
			}
		}
	}
	until("in a limit cgroup", func() bool { return strings.Contains(cgroupOf(pid), cgroup.Prefix+"limit-") })
	until("back home with no cgroup left", func() bool { return cgroupOf(pid) == home && len(ourCgroups(t, h)) == 0 })
	rec := r.Stop()
	if len(rec.Errors) != 0 || rec.StartS < 0.19 || rec.EndS-rec.StartS < 0.39 || len(rec.Events) != 2 {
		t.Errorf("record %+v", rec)
	}
	mu.Lock()
	if len(lines) != 2 || !strings.Contains(lines[0], "limited to 100m") {
		t.Errorf("log lines %q", lines)
	}
	mu.Unlock()

	// Without +FOR: to the end of the cell, which Stop is.
	f, _ = Parse("cpu-limit:sidecar=100@0s")
	r = Schedule(context.Background(), f, tg, time.Now(), nil)
	until("limited (no +FOR)", func() bool { return strings.Contains(cgroupOf(pid), cgroup.Prefix) })
	r.Stop()
	if cgroupOf(pid) != home || len(ourCgroups(t, h)) != 0 {
		t.Errorf("after Stop: in %q, cgroups left %v", cgroupOf(pid), ourCgroups(t, h))
	}
}

// TestScheduleStopBeforeTime: a cell that ends (a failure, Ctrl-C)
// before its fault's time applies nothing and says so.
func TestScheduleStopBeforeTime(t *testing.T) {
	tg := newTarget(t, 1)
	f, _ := Parse("slow-replica:1=300ms@10s")
	ctx, cancel := context.WithCancel(context.Background())
	r := Schedule(ctx, f, tg, time.Now(), nil)
	cancel()
	rec := r.Stop()
	if !rec.Start.IsZero() || len(rec.Events) != 1 || !strings.Contains(rec.Events[0].What, "not applied") {
		t.Errorf("record %+v", rec)
	}
	if st, err := tg.reps[0].Stats(context.Background(), false); err != nil || st.ExtraDelayNs != 0 {
		t.Errorf("replica's extra delay %v (%v), want none", st.ExtraDelayNs, err)
	}
}

// TestScheduleSlowReplica: the first N replicas of real app servers
// answer later while the fault lasts, the others never, and none after.
func TestScheduleSlowReplica(t *testing.T) {
	tg := newTarget(t, 3)
	f, _ := Parse("slow-replica:2=250ms@0s")
	r := Schedule(context.Background(), f, tg, time.Now(), nil)
	time.Sleep(200 * time.Millisecond)
	ctx := context.Background()
	extra := func() []int64 {
		var out []int64
		for _, c := range tg.reps {
			st, err := c.Stats(ctx, false)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, st.ExtraDelayNs)
		}
		return out
	}
	d := int64(250 * time.Millisecond)
	if e := extra(); e[0] != d || e[1] != d || e[2] != 0 {
		t.Errorf("extra delays during the fault %v, want [%d %d 0]", e, d, d)
	}
	rec := r.Stop()
	if e := extra(); e[0] != 0 || e[1] != 0 || e[2] != 0 {
		t.Errorf("extra delays after Stop %v, want none", e)
	}
	if len(rec.Errors) != 0 || rec.End.IsZero() {
		t.Errorf("record %+v", rec)
	}
}

// TestScheduleNoisyNeighbour: the hog runs under its limit while the
// fault lasts; after Stop neither its processes nor its cgroups remain.
func TestScheduleNoisyNeighbour(t *testing.T) {
	testutil.RequireRoot(t, "cgroups are written as root")
	h, err := cgroup.Find()
	if err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	tg := newTarget(t, 0)
	f, _ := Parse("noisy-neighbour:1200@0s")
	r := Schedule(context.Background(), f, tg, time.Now(), nil)
	cgs := ourCgroups(t, h)
	for deadline := time.Now().Add(5 * time.Second); len(cgs) < 2 && time.Now().Before(deadline); cgs = ourCgroups(t, h) {
		time.Sleep(10 * time.Millisecond)
	}
	if len(cgs) != 2 {
		t.Fatalf("hog cgroups %v, want 2 (1200m: two processes)", cgs)
	}
	var pids []int
	for _, c := range cgs {
		ps, err := cgroup.Procs(filepath.Join(h.Root, c))
		if err != nil || len(ps) != 1 {
			t.Fatalf("cgroup %s holds %v (%v)", c, ps, err)
		}
		pids = append(pids, ps[0])
	}
	rec := r.Stop()
	if len(rec.Errors) != 0 {
		t.Errorf("record %+v", rec)
	}
	if left := ourCgroups(t, h); len(left) != 0 {
		t.Errorf("cgroups left %v", left)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("hog pid %d still there (%v)", pid, err)
		}
	}
}

// TestScheduleKill: a kill calls the target's restart once and records
// the new process; Stop waits for the restart.
func TestScheduleKill(t *testing.T) {
	tg := newTarget(t, 0)
	old, _, _ := tg.PartPID("")
	f, _ := Parse("kill:node-proxy@50ms")
	r := Schedule(context.Background(), f, tg, time.Now(), nil)
	killed := func() bool { tg.mu.Lock(); defer tg.mu.Unlock(); return tg.kills > 0 }
	for deadline := time.Now().Add(5 * time.Second); !killed() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	rec := r.Stop()
	now, _, _ := tg.PartPID("")
	if tg.kills != 1 || now == old || len(rec.Errors) != 0 || len(rec.Events) != 2 || rec.End.Before(rec.Start) {
		t.Errorf("kills %d, pid %d→%d, record %+v", tg.kills, old, now, rec)
	}
}

// TestScheduleRemovesStale: a fault cgroup left by a meshbench killed
// with SIGKILL (its maker's PID gone) is removed when the next CPU fault
// starts, and the record says so.
func TestScheduleRemovesStale(t *testing.T) {
	testutil.RequireRoot(t, "cgroups are written as root")
	h, err := cgroup.Find()
	if err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(h.Root, cgroup.Prefix+"limit-"+strconv.Itoa(gone.Process.Pid))
	if err := os.Mkdir(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(stale) })
	tg := newTarget(t, 0)
	f, _ := Parse("cpu-limit:sidecar=100@0s")
	r := Schedule(context.Background(), f, tg, time.Now(), nil)
	// Stop only once it is applied (Stop at its very time may win the
	// race and apply nothing, as it should).
	pid, _, _ := tg.PartPID("")
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(cgroupOf(pid), cgroup.Prefix) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	rec := r.Stop()
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale cgroup %s still there (%v)", stale, err)
	}
	if len(rec.Events) == 0 || !strings.Contains(rec.Events[0].What, "removed 1 fault cgroup") {
		t.Errorf("record %+v", rec)
	}
}

// podTarget is a PodTarget standing in for a cluster (the kill's real
// form, a pod deleted and replaced, is internal/e2e's
// TestFaultsOnRealNodes): it counts the kills.
type podTarget struct {
	mu    sync.Mutex
	kills []mesh.Part
}

func (*podTarget) PartPID(mesh.Part) (int, string, error)       { return 0, "", errors.New("a pod") }
func (*podTarget) Kill(context.Context, mesh.Part) (int, error) { return 0, errors.New("a pod") }
func (*podTarget) Replicas(string) []workload.Control           { return nil }
func (p *podTarget) KillPod(_ context.Context, part mesh.Part, deleted func(string)) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.kills = append(p.kills, part)
	deleted("ns/old")
	return "ns/new", nil
}

// TestSchedulePodTarget: on a PodTarget a kill deletes the part's pod
// through it (never PartPID's process) and the record names both pods;
// a kind a cluster cannot do yet fails, said in the record, not done.
func TestSchedulePodTarget(t *testing.T) {
	tg := &podTarget{}
	f, _ := Parse("kill:waypoint@10ms")
	rec := waitApplied(t, Schedule(context.Background(), f, tg, time.Now(), nil))
	if len(tg.kills) != 1 || tg.kills[0] != mesh.PartWaypoint || len(rec.Errors) != 0 || rec.End.IsZero() || len(rec.Events) != 2 ||
		rec.Events[0].What != "deleted pod ns/old (the waypoint)" || !strings.HasPrefix(rec.Events[1].What, "pod ns/new Ready in its place") {
		t.Errorf("kills %v, record %+v", tg.kills, rec)
	}
	f, _ = Parse("noisy-neighbour:100@10ms")
	rec = waitApplied(t, Schedule(context.Background(), f, tg, time.Now(), nil))
	if len(rec.Errors) != 1 || !strings.Contains(rec.Errors[0], "runs no hog pod") || len(tg.kills) != 1 {
		t.Errorf("noisy-neighbour on a PodTarget that is no PodHogger: record %+v", rec)
	}
	// A CPU limit through a PodLimiter: applied, then undone by +FOR.
	pl := &podLimiter{}
	f, _ = Parse("cpu-limit:sidecar=150@10ms+20ms")
	r := Schedule(context.Background(), f, pl, time.Now(), nil)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		pl.mu.Lock()
		done := pl.undone
		pl.mu.Unlock()
		if done > 0 {
			break
		}
	}
	rec = r.Stop()
	if pl.limits != 1 || pl.undone != 1 || len(rec.Errors) != 0 || len(rec.Events) != 2 || rec.Events[0].What != "sidecar limited to 150m" || rec.Events[1].What != "undone" {
		t.Errorf("cpu-limit on a PodLimiter: limits %d, undone %d, record %+v", pl.limits, pl.undone, rec)
	}

	// A limit asked but not seen applied (an interrupt during the wait):
	// the error is recorded and the undo still runs at Stop.
	pl = &podLimiter{fail: errors.New("waiting for the kubelet: context canceled")}
	f, _ = Parse("cpu-limit:sidecar=150@10ms")
	rec = waitApplied(t, Schedule(context.Background(), f, pl, time.Now(), nil))
	if pl.undone != 1 || len(rec.Errors) != 1 || !strings.Contains(rec.Errors[0], "limiting the sidecar: waiting for the kubelet") {
		t.Errorf("a limit that failed after it was asked: undone %d, record %+v", pl.undone, rec)
	}
}

// podLimiter is a podTarget that also caps a part's CPU (a cluster's
// resize, in internal/e2e's real-node test): it counts limits and undos,
// and fails with fail after "asking" when set.
type podLimiter struct {
	podTarget
	limits, undone int
	fail           error
}

func (p *podLimiter) LimitPod(_ context.Context, part mesh.Part, m int) (string, func(context.Context) error, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.limits++
	return fmt.Sprintf("%s limited to %dm", part, m), func(context.Context) error {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.undone++
		return nil
	}, p.fail
}

// waitApplied stops r once it has started (its first event), at most 5 s.
func waitApplied(t *testing.T, r *Running) Record {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		r.mu.Lock()
		started := !r.rec.Start.IsZero() && (len(r.rec.Events) > 0 || len(r.rec.Errors) > 0)
		r.mu.Unlock()
		if started {
			break
		}
	}
	return r.Stop()
}

// podHogger is a PodHogger standing in for a cluster (the hog pod's real
// form is internal/e2e's noisy-neighbour cell): it counts hogs and
// deletes.
type podHogger struct {
	podTarget
	hogs, deleted int
	fail          bool
}

func (p *podHogger) HogPod(_ context.Context, millicores int) (string, func(context.Context) (string, error), error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hogs++
	undo := func(context.Context) (string, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.deleted++
		return "hog pod ns/hog deleted", nil
	}
	if p.fail {
		return "", undo, errors.New("it ended before it ran")
	}
	return fmt.Sprintf("hog pod ns/hog of %dm", millicores), undo, nil
}

// TestSchedulePodHogger: a noisy neighbour through a PodHogger is its pod,
// deleted at +FOR, and at Stop when it never ran (its pod was made).
func TestSchedulePodHogger(t *testing.T) {
	ph := &podHogger{}
	f, _ := Parse("noisy-neighbour:300@10ms+20ms")
	r := Schedule(context.Background(), f, ph, time.Now(), nil)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		ph.mu.Lock()
		done := ph.deleted
		ph.mu.Unlock()
		if done > 0 {
			break
		}
	}
	rec := r.Stop()
	if ph.hogs != 1 || ph.deleted != 1 || len(rec.Errors) != 0 || len(rec.Events) != 3 || rec.Events[0].What != "hog pod ns/hog of 300m" ||
		rec.Events[1].What != "hog pod ns/hog deleted" || rec.Events[2].What != "undone" || rec.End.Before(rec.Start) {
		t.Errorf("noisy-neighbour on a PodHogger: hogs %d, deleted %d, record %+v", ph.hogs, ph.deleted, rec)
	}
	ph = &podHogger{fail: true}
	f, _ = Parse("noisy-neighbour:300@10ms")
	rec = waitApplied(t, Schedule(context.Background(), f, ph, time.Now(), nil))
	if ph.deleted != 1 || len(rec.Errors) != 1 || !strings.Contains(rec.Errors[0], "the CPU hog: it ended before it ran") {
		t.Errorf("a hog that never ran: deleted %d, record %+v", ph.deleted, rec)
	}
}

// replicaReacher is a ReplicaReacher over real app servers whose control
// is a loopback TCP address (a pod's control port as its port-forward
// reaches it; the port-forward itself is internal/e2e's slow-replica
// cell).
type replicaReacher struct {
	podTarget
	reps   []Replica
	closed int
}

func (p *replicaReacher) ReachReplicas(_ context.Context, svc string, n int) ([]Replica, func(), error) {
	if svc != "" || n > len(p.reps) {
		return nil, nil, fmt.Errorf("service %q, %d replicas", svc, n)
	}
	return p.reps[:n], func() { p.mu.Lock(); p.closed++; p.mu.Unlock() }, nil
}

// TestScheduleReplicaReacher: a slow replica through a ReplicaReacher
// slows the first N replicas' real servers through their control, takes
// the delay away at +FOR, says each one's own measure of its waits, and
// closes what it opened.
func TestScheduleReplicaReacher(t *testing.T) {
	rr := &replicaReacher{}
	var addrs []string
	for i := range 2 {
		srv, err := workload.Start(context.Background(), workload.Config{Kind: workload.KindStatic, Listen: "127.0.0.1:0", Control: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
		addrs = append(addrs, srv.Addr())
		rr.reps = append(rr.reps, Replica{Name: "pod ns/app-" + strconv.Itoa(i), Control: workload.Control{Path: srv.ControlAddr()}})
	}
	f, _ := Parse("slow-replica:1=30ms@10ms+300ms")
	r := Schedule(context.Background(), f, rr, time.Now(), nil)
	slow := func(addr string) time.Duration {
		start := time.Now()
		resp, err := http.Get("http://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return time.Since(start)
	}
	waitApplied := func() {
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			r.mu.Lock()
			n := len(r.rec.Events)
			r.mu.Unlock()
			if n > 0 {
				return
			}
		}
	}
	waitApplied()
	if d0, d1 := slow(addrs[0]), slow(addrs[1]); d0 < 30*time.Millisecond || d1 >= 30*time.Millisecond {
		t.Errorf("while slowed: replica 0 answered in %s, replica 1 in %s; want ≥ 30ms and under it", d0, d1)
	}
	time.Sleep(400 * time.Millisecond)
	rec := r.Stop()
	if d0 := slow(addrs[0]); d0 >= 30*time.Millisecond {
		t.Errorf("after +FOR replica 0 answered in %s; want the delay taken away", d0)
	}
	if len(rec.Errors) != 0 || len(rec.Events) != 3 || rec.Events[0].What != "replica 0 (pod ns/app-0) answers 30ms later" ||
		!strings.HasPrefix(rec.Events[1].What, "replica 0 (pod ns/app-0) answers without the delay again; by its own measure 1 answer(s) waited, p50 3") ||
		rec.Events[2].What != "undone" || rr.closed != 1 {
		t.Errorf("record %+v, closed %d", rec, rr.closed)
	}
}
