package process

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestChild starts real children with their output in a log: one that
// prints and exits (its log's tail and exit status read back), and a shell
// that ignores SIGTERM, which Stop kills after the grace period; a missing
// log says so.
func TestChild(t *testing.T) {
	dir := t.TempDir()
	c, err := StartLogged("printer", dir, exec.Command("sh", "-c", "for i in 1 2 3 4; do echo line $i; done; exit 3"), nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second): // a shell exits in milliseconds; 10 s holds on a loaded machine
		t.Fatal("the printer did not exit")
	}
	if !c.Exited() || c.Err() == nil || !strings.Contains(c.Err().Error(), "exit status 3") {
		t.Errorf("exited %v, err %v; want exit status 3", c.Exited(), c.Err())
	}
	if got := c.Tail(2); got != "line 3\nline 4" {
		t.Errorf("Tail(2) = %q", got)
	}
	c.Kill() // reaped: nothing is signalled
	if killed := c.Stop(time.Second); killed {
		t.Error("Stop of a reaped child needed SIGKILL")
	}

	stubborn, err := StartLogged("stubborn", dir, exec.Command("sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stubborn.Stop(0) })
	for deadline := time.Now().Add(10 * time.Second); stubborn.Tail(1) != "ready" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
	}
	if stubborn.Exited() {
		t.Fatal("the stubborn shell exited early")
	}
	if killed := stubborn.Stop(200 * time.Millisecond); !killed || !stubborn.Exited() {
		t.Errorf("Stop: killed %v, exited %v; want SIGKILL after the grace", killed, stubborn.Exited())
	}
	// The sleep the shell forked shares its group: killed with it (reaped
	// by init a moment later; 30 s holds on a loaded machine).
	for deadline := time.Now().Add(30 * time.Second); !groupGone(stubborn.PID); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a process of the stubborn shell's group outlived Stop")
		}
	}

	if _, err := StartLogged("x", dir+"/missing", exec.Command("true"), nil); err == nil {
		t.Error("a log in a missing directory started")
	}
	gone := &Child{LogFile: dir + "/none.log"}
	if got := gone.Tail(3); !strings.HasPrefix(got, "(no log: ") {
		t.Errorf("Tail of a missing log = %q", got)
	}
}
