package sample

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestParseNodeFiles parses this machine's own /proc/stat, the cpuacct
// root's cpuacct.stat (cgroup v1) and the unified root's cpu.stat (v2),
// checks them against each other, and refuses broken contents.
func TestParseNodeFiles(t *testing.T) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Skip("no /proc/stat:", err)
	}
	st, err := ParseCPUTimes(b)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := ParseKernelTimes(b)
	if st.System != k.System || st.IRQ != k.IRQ || st.SoftIRQ != k.SoftIRQ || st.Idle == 0 || st.User == 0 {
		t.Errorf("/proc/stat: %+v; the kernel parser says %+v", st, k)
	}
	checked := 0
	// The root cgroup holds every task: its user + system time is the
	// machine's user + nice + system time, bar the interrupt time
	// /proc/stat keeps apart (a tenth below, loosely) and /proc/stat's
	// tick sampling with tickless idle, which misses bursts shorter than
	// a tick that end in idle while the cgroup counts the scheduler's
	// exact run time: after a day of short bursts (benchmarks) the
	// cgroup read 11 % above /proc/stat here, so up to a quarter above.
	near := func(name string, c CgroupCPU) {
		machine := float64(st.User+st.Nice+st.System) * 1e9 / ClockTicksPerSecond
		got := float64(c.UserNs + c.SystemNs)
		if c.SystemNs == 0 || got < 0.9*machine || got > 1.25*machine {
			t.Errorf("%s: %+v (%.0f s) beside /proc/stat's user + nice + system %.0f s", name, c, got/1e9, machine/1e9)
		}
		checked++
	}
	if b, err := os.ReadFile("/sys/fs/cgroup/cpuacct/cpuacct.stat"); err == nil {
		c, err := ParseCpuacctStat(b)
		if err != nil {
			t.Fatal(err)
		}
		near("cpuacct.stat", c)
	}
	if b, err := os.ReadFile("/sys/fs/cgroup/unified/cpu.stat"); err == nil {
		c, err := ParseCPUStatV2(b)
		if err != nil {
			t.Fatal(err)
		}
		// v2's root cpu.stat is the machine's too (5.x kernels sum it
		// from /proc/stat).
		near("unified cpu.stat", c)
	}
	if checked == 0 {
		t.Log("no cgroup v1 cpuacct or v2 root here: only /proc/stat checked")
	}
	// Broken contents, each refused.
	for _, bad := range []string{"", "user 1\n", "system 2\n", "user x\nsystem 2\n"} {
		if _, err := ParseCpuacctStat([]byte(bad)); err == nil {
			t.Errorf("cpuacct.stat %q: no error", bad)
		}
	}
	for _, bad := range []string{"", "usage_usec 5\nuser_usec 1\n", "user_usec 1\nsystem_usec -2\n"} {
		if _, err := ParseCPUStatV2([]byte(bad)); err == nil {
			t.Errorf("cpu.stat %q: no error", bad)
		}
	}
	if c, err := ParseCPUStatV2([]byte("usage_usec 30\nuser_usec 10\nsystem_usec 20\nnr_periods 0\n")); err != nil || c != (CgroupCPU{UserNs: 10000, SystemNs: 20000}) {
		t.Errorf("cpu.stat: %+v, %v", c, err)
	}
	if c, err := ParseCPUTimes([]byte("cpu  1 2 3 4 5 6 7\n")); err != nil || c != (CPUTimes{1, 2, 3, 4, 5, 6, 7, 0}) {
		t.Errorf("a /proc/stat without steal: %+v, %v", c, err)
	}
}

// TestNodeKernelOver checks the arithmetic on made-up readings (1 s
// apart, ticks of 10 ms): per node, per machine shared by nodes, and the
// nodes that cannot have a figure.
func TestNodeKernelOver(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) int64 { return t0.Add(time.Duration(s * float64(time.Second))).UnixNano() }
	read := func(s float64, boot string, sys, irq, soft, user uint64, podsSysMs uint64) NodeReading {
		return NodeReading{TimeUnixNs: at(s), BootID: boot, Stat: CPUTimes{User: user, System: sys, IRQ: irq, SoftIRQ: soft, Idle: 1},
			Pods: CgroupCPU{SystemNs: podsSysMs * 1e6}}
	}
	readings := map[string][]NodeReading{
		// Readings before the window, and after it, are not used: the
		// figures are over [1 s, 3 s].
		"a": {read(0.5, "B1", 0, 0, 0, 0, 0), read(1, "B1", 100, 10, 20, 500, 1000), read(2, "B1", 130, 10, 30, 600, 1100),
			read(3, "B1", 160, 12, 40, 700, 1200), read(3.5, "B1", 999, 999, 999, 999, 9999)},
		// b shares a's machine: its /proc/stat is not counted again; its
		// pods are counted beside a's.
		"b": {read(1, "B1", 101, 10, 20, 500, 300), read(3, "B1", 161, 12, 40, 700, 400)},
		// c is a machine of its own.
		"c": {read(1, "B2", 0, 0, 0, 0, 0), read(3, "B2", 20, 0, 2, 40, 300)},
		// d has one reading in the window, e rebooted in it.
		"d": {read(2, "B3", 1, 1, 1, 1, 1)},
		"e": {read(1, "B4", 0, 0, 0, 0, 0), read(2, "B5", 5, 0, 0, 0, 0)},
	}
	rep := NodeKernelOver(readings, t0.Add(time.Second), t0.Add(3*time.Second))
	if len(rep.Machines) != 2 || len(rep.Missing) != 2 || rep.Missing[0].Node != "d" || rep.Missing[1].Node != "e" {
		t.Fatalf("machines %+v, missing %+v; want 2 machines, d and e missing", rep.Machines, rep.Missing)
	}
	m := rep.Machines[0]
	// Machine B1 over a's 2 s: kernel (60 + 2 + 20) ticks = 0.82 s →
	// 410m, softirq 20 ticks → 100m, busy adds 200 user ticks → 1410m;
	// pods' system a 200 ms/2 s = 100m, b 100 ms/2 s = 50m; outside 260m.
	if m.Name() != "the machine shared by nodes a, b" || m.Seconds != 2 {
		t.Errorf("machine %q over %v s", m.Name(), m.Seconds)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"node kernel", m.NodeKernelCPUm, 410}, {"softirq", m.SoftIRQCPUm, 100}, {"node busy", m.NodeCPUm, 1410},
		{"pods' system", m.PodsSystemCPUm, 150}, {"outside the pods", m.OutsidePodsCPUm, 260}} {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("B1 %s: %v, want %v", c.name, c.got, c.want)
		}
	}
	// c: kernel 22 ticks/2 s = 110m, its pods 150m: more than the node's
	// kernel time by the counters' rounding: outside 0, never negative.
	if c := rep.Machines[1]; c.Name() != "node c" || c.NodeKernelCPUm != 110 || c.PodsSystemCPUm != 150 || c.OutsidePodsCPUm != 0 {
		t.Errorf("node c: %+v", c)
	}
	// A node missing: no cell figure (a sum without it would look whole).
	if d := rep.Derived(); d != nil {
		t.Errorf("derived with nodes missing: %v", d)
	}
	delete(readings, "d")
	delete(readings, "e")
	d := NodeKernelOver(readings, t0.Add(time.Second), t0.Add(3*time.Second)).Derived()
	want := map[string]float64{KernelNodeCPU: 520, KernelSoftIRQCPU: 110, KernelPodsSystemCPU: 300, KernelOutsidePodsCPU: 260}
	for k, v := range want {
		if math.Abs(d[k]-v) > 1e-9 {
			t.Errorf("derived %s = %v, want %v (all: %v)", k, d[k], v, d)
		}
	}
}

// TestNodeKernelReal puts a real process that lives in the kernel (dd
// writing one byte at a time) into a cgroup laid out as a kubelet's
// (meshbench-test-…/kubepods/besteffort/pod<UID>, cgroup v1 cpuacct),
// finds it as a node reader does (FindPodsCgroup by the pod's UID, among
// the machine's real cgroups), reads the node a second apart and checks
// that the pods' system time holds dd's and the node's kernel time
// holds the pods'. Root and cgroup v1 only.
func TestNodeKernelReal(t *testing.T) {
	if testing.Short() {
		t.Skip("spends a second of CPU")
	}
	uid := fmt.Sprintf("0d0e0f00-1111-2222-3333-%012d", os.Getpid())
	dir := testutil.KubepodsCgroup(t, uid)
	pods, err := FindPodsCgroup("/sys/fs/cgroup", uid)
	if err != nil {
		t.Fatal(err)
	}
	if pods.Dir != filepath.Dir(filepath.Dir(dir)) || pods.V2 {
		t.Fatalf("found %+v; want %s (v1)", pods, filepath.Dir(filepath.Dir(dir)))
	}
	if _, err := FindPodsCgroup("/sys/fs/cgroup", "no-such-uid"); err == nil {
		t.Error("a pod UID no cgroup holds: found")
	}
	dd := exec.Command("dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=1000000000")
	if err := dd.Start(); err != nil {
		t.Skip("no dd:", err)
	}
	t.Cleanup(func() { _ = dd.Process.Kill(); _ = dd.Wait() })
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(dd.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	a, err := ReadNode("/proc", pods)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	b, err := ReadNode("/proc", pods)
	if err != nil {
		t.Fatal(err)
	}
	if a.BootID == "" || a.BootID != b.BootID {
		t.Errorf("boot IDs %q, %q", a.BootID, b.BootID)
	}
	rep := NodeKernelOver(map[string][]NodeReading{"here": {a, b}}, a.Time(), b.Time())
	if len(rep.Machines) != 1 {
		t.Fatalf("%+v", rep)
	}
	m := rep.Machines[0]
	t.Logf("dd in the pods' cgroup (shared machine): %+v", m)
	// Loose bounds: the machine may be shared, so dd may get a fraction
	// of a core; what it gets is mostly system time, all in the pods'.
	// Ticks of both counters round: 20m of slack.
	if m.PodsSystemCPUm < 50 || m.NodeKernelCPUm < m.PodsSystemCPUm-20 || m.OutsidePodsCPUm != max(0, m.NodeKernelCPUm-m.PodsSystemCPUm) {
		t.Errorf("want ≥ 50m of pods' system time (dd's), within the node's kernel time, and the rest outside: %+v", m)
	}
}

// FuzzParseNodeFiles: the node reader's parsers never panic, and what
// they accept reads back as given.
func FuzzParseNodeFiles(f *testing.F) {
	f.Add([]byte("cpu  4705 356 584 3699176 23 23 47 0 0 0\n"))
	f.Add([]byte("user 5177121\nsystem 1286564\n"))
	f.Add([]byte("usage_usec 63892880206\nuser_usec 51175318822\nsystem_usec 12717561384\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if c, err := ParseCPUTimes(b); err == nil {
			k, kerr := ParseKernelTimes(b)
			if kerr != nil || k.System != c.System || k.IRQ != c.IRQ || k.SoftIRQ != c.SoftIRQ {
				t.Errorf("%q: %+v, the kernel parser %+v %v", b, c, k, kerr)
			}
		}
		_, _ = ParseCpuacctStat(b)
		_, _ = ParseCPUStatV2(b)
	})
}
