package cgroup_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/sys/cgroup"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// cpuTicks is pid's user+system CPU in clock ticks (/proc/PID/stat).
func cpuTicks(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

// TestLimitCPU: a busy loop moved under a 200m limit uses at most about
// 200m (the kernel throttles it: cpu.stat counts the throttled periods),
// and Lift puts it back in its own cgroup and removes the limit's.
func TestLimitCPU(t *testing.T) {
	testutil.RequireRoot(t, "cgroups are written as root")
	h, err := cgroup.Find()
	if err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	spin := exec.Command("sh", "-c", "while :; do :; done")
	if err := spin.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = spin.Process.Kill(); _ = spin.Wait() })
	pid := spin.Process.Pid
	before, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")

	l, err := h.LimitCPU(pid, "test", 200)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Lift() })
	procs, err := cgroup.Procs(l.Dir)
	if err != nil || len(procs) != 1 || procs[0] != pid {
		t.Fatalf("cgroup %s holds %v (%v), want [%d]", l.Dir, procs, err, pid)
	}
	t0, c0 := time.Now(), cpuTicks(t, pid)
	time.Sleep(1500 * time.Millisecond)
	used := float64(cpuTicks(t, pid)-c0) * 10 / time.Since(t0).Seconds() // ms per s = millicores at 100 Hz
	// One tick (10 ms) of /proc resolution over 1.5 s is ~7m.
	if used > 200*1.15+10 {
		t.Errorf("limited to 200m, the busy loop used %.0fm", used)
	}
	stat := "cpu.stat"
	b, err := os.ReadFile(filepath.Join(l.Dir, stat))
	if err != nil || !strings.Contains(string(b), "nr_throttled") || strings.Contains(string(b), "nr_throttled 0\n") {
		t.Errorf("%s: %q (%v): want throttled periods", stat, b, err)
	}
	t.Logf("limited to 200m: used %.0fm; %s", used, strings.ReplaceAll(strings.TrimSpace(string(b)), "\n", ", "))

	dir := l.Dir
	if err := l.Lift(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s still there after Lift (%v)", dir, err)
	}
	after, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if string(after) != string(before) {
		t.Errorf("after Lift the process is in\n%s\nwant\n%s", after, before)
	}
	if err := l.Lift(); err != nil {
		t.Errorf("second Lift: %v", err)
	}
}

// TestLimitGone: lifting the limit of a process that has exited removes
// the cgroup all the same; a limit below the kernel's minimum and a name
// with a slash are refused before anything is made.
func TestLimitGone(t *testing.T) {
	testutil.RequireRoot(t, "cgroups are written as root")
	h, err := cgroup.Find()
	if err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	sleep := exec.Command("sleep", "30")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	l, err := h.LimitCPU(sleep.Process.Pid, "gone", 100)
	if err != nil {
		t.Fatal(err)
	}
	_ = sleep.Process.Kill()
	_ = sleep.Wait()
	dir := l.Dir
	if err := l.Lift(); err != nil {
		t.Fatalf("Lift after exit: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s still there (%v)", dir, err)
	}
	if _, err := h.LimitCPU(os.Getpid(), "low", 5); err == nil {
		t.Error("5m accepted")
	}
	if _, err := h.LimitCPU(os.Getpid(), "a/b", 100); err == nil {
		t.Error("a name with a slash accepted")
	}
	if len(h.Stale()) != 0 {
		t.Errorf("stale limit cgroups: %v", h.Stale())
	}
}
