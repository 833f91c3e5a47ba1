package sample

import (
	"os/exec"
	"testing"
	"time"
)

func TestParseKernelTimes(t *testing.T) {
	k, err := ParseKernelTimes([]byte("cpu  4705 356 584 3699176 23 23 47 0 0 0\ncpu0 1 2 3 4 5 6 7 0 0 0\n"))
	if err != nil || k != (KernelTimes{System: 584, IRQ: 23, SoftIRQ: 47}) {
		t.Errorf("got %+v, %v", k, err)
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4 5 6 7\n", "cpu 1 2 x 4 5 6 7\n", "cpu 1 2 3\n"} {
		if _, err := ParseKernelTimes([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestKernelBetween runs a real process that spends its time in the
// kernel (dd writing one byte at a time to /dev/null) for a second: the
// machine's kernel CPU shows it, all of it outside when dd is not among
// the sampled processes, and less of it outside when it is (its system
// time is charged to it).
func TestKernelBetween(t *testing.T) {
	if testing.Short() {
		t.Skip("spends a second of CPU")
	}
	dd := exec.Command("dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=100000000")
	if err := dd.Start(); err != nil {
		t.Skip("no dd:", err)
	}
	t.Cleanup(func() { _ = dd.Process.Kill(); _ = dd.Wait() })
	time.Sleep(100 * time.Millisecond)
	pids := []int{dd.Process.Pid}
	a, err := ReadKernel(pids)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	b, err := ReadKernel(pids)
	if err != nil {
		t.Fatal(err)
	}
	with, err := KernelBetween(a, b)
	if err != nil {
		t.Fatal(err)
	}
	a.STime, b.STime = nil, nil
	without, _ := KernelBetween(a, b)
	t.Logf("dd sampled: %+v; not sampled: %+v", with, without)
	// Loose bounds: the machine may be shared, so dd may get a fraction
	// of a core; what it does get is mostly system time.
	if with.Node < 50 || without.Outside != without.Node || with.Outside > with.Node-40 {
		t.Errorf("kernel CPU with dd sampled %+v, without %+v: want ≥ 50m of node kernel time, all outside "+
			"when dd is not sampled, and at least 40m of it charged to dd when it is", with, without)
	}
	if _, err := KernelBetween(b, a); err == nil {
		t.Error("a window that runs backwards: no error")
	}
}
