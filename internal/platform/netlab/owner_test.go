package netlab

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/sys/netns"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestStaleLabAfterSIGKILL: a `meshbench run` on the netns substrate
// (ambient, real ztunnels) is killed with SIGKILL while it measures. Its
// processes die with it (parent-death signal) but its namespaces stay;
// its owner record names a dead process, so the doctor's labs check
// reports the lab as left by a dead meshbench, and RemoveStale (what
// the next lab runs first) removes its namespaces and record — and leaves a
// live lab, made meanwhile by this test, untouched.
func TestStaleLabAfterSIGKILL(t *testing.T) {
	bin := requirements(t)
	mb := testutil.BuildMeshbench(t)
	out := filepath.Join(t.TempDir(), "run")
	var outBuf testutil.SyncBuffer
	cmd := exec.Command(mb, "run", "--substrate", "netns", "--mesh", "ambient", "--rate", "50",
		"--duration", "60s", "--warmup", "1s", "--ztunnel", bin, "--out", out)
	cmd.Dir = t.TempDir()
	cmd.Stdout, cmd.Stderr = &outBuf, &outBuf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	// Wait for the measurement (the lab is up, ztunnels carrying load).
	deadline := time.Now().Add(90 * time.Second)
	for !strings.Contains(outBuf.String(), "phase measure") {
		if time.Now().After(deadline) {
			t.Fatalf("the run did not reach its measurement:\n%s", outBuf.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	var prefix string
	labs, err := Labs()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range labs {
		if l.Owner != nil && l.Owner.PID == pid {
			prefix = l.Prefix
			if !l.Alive || len(l.Namespaces) == 0 {
				t.Fatalf("the running lab %s: alive %v, namespaces %v", l, l.Alive, l.Namespaces)
			}
		}
	}
	if prefix == "" {
		t.Fatalf("no owner record of pid %d among %v", pid, labs)
	}
	kids := descendants(pid)
	if len(kids) == 0 {
		t.Fatal("the run has no child processes")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed = true
	t.Cleanup(func() { _, _ = netns.RemoveNamed(prefix); _ = os.Remove(ownerPath(prefix)) })

	// Its processes die with it (parent-death signal)...
	deadline = time.Now().Add(15 * time.Second)
	for _, k := range kids {
		for alive(k) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d of the killed run still runs", k)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// ...but its namespaces stay, which the next lab must deal with.
	left, err := netns.Named(prefix)
	if err != nil || len(left) == 0 {
		t.Fatalf("after SIGKILL no namespace %s* is left (%v): the test shows nothing", prefix, err)
	}

	// doctor's row names it as left by a dead meshbench.
	if c := LabsCheck(); c.OK || !c.Warn || !strings.Contains(c.Detail, "left by a dead meshbench") ||
		!strings.Contains(c.Detail, prefix+" (dead pid "+strconv.Itoa(pid)) {
		t.Errorf("the labs check does not report the dead lab %s: %+v", prefix, c)
	}

	// A live lab made now is left alone by RemoveStale.
	sn, live := freeLab(t, map[string]bool{prefix: true})
	lab, err := Up(context.Background(), Options{Prefix: live, Subnet: sn, Dir: t.TempDir(), Nodes: []NodeSpec{{Pods: []PodSpec{{Name: "p"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer lab.Close()
	removed, err := RemoveStale()
	if err != nil {
		t.Errorf("remove stale: %v", err)
	}
	var gone bool
	for _, r := range removed {
		gone = gone || r.Prefix == prefix
		if r.Prefix == live {
			t.Errorf("RemoveStale removed the live lab %s", live)
		}
	}
	if !gone {
		t.Errorf("RemoveStale removed %v, not the dead lab %s", removed, prefix)
	}
	if left, _ := netns.Named(prefix); len(left) != 0 {
		t.Errorf("namespaces of the dead lab left: %v", left)
	}
	if _, err := os.Stat(ownerPath(prefix)); !os.IsNotExist(err) {
		t.Errorf("owner record of the dead lab: %v", err)
	}
	if ns, _ := netns.Named(live); len(ns) == 0 {
		t.Errorf("the live lab %s lost its namespaces", live)
	}
	if _, err := os.Stat(ownerPath(live)); err != nil {
		t.Errorf("the live lab's owner record: %v", err)
	}
	if err := lab.Close(); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(ownerPath(live)); !os.IsNotExist(err) {
		t.Errorf("owner record after Close: %v", err)
	}
}

// descendants are the processes below pid (from /proc's parent links).
func descendants(pid int) []int {
	parent := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 {
			pp, _ := strconv.Atoi(f[1])
			parent[p] = pp
		}
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}
