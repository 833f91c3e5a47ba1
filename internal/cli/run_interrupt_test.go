package cli

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/mesh/envoy"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// runInterruptNet is the lab's 127.<net>.0.0/16 in TestRunInterrupted; no
// other test uses it.
const runInterruptNet = "38"

// TestRunInterrupted is Ctrl-C on a real `meshbench run`: a meshbench
// process running a sidecar lab (real Envoys, apps, load generator) gets
// SIGINT while the load is measured. It must stop soon with exit 130, print
// the report of what was measured, keep a results directory that says the
// run was interrupted, and leave no process of the lab running.
func TestRunInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real Envoys")
	}
	wd, _ := os.Getwd()
	bin, err := envoy.Find(envoy.FindOptions{ProjectDir: filepath.Join(wd, "..", "..")})
	if err != nil {
		t.Fatalf("%v (make test installs it)", err)
	}
	out := filepath.Join(t.TempDir(), "run")
	var stdout, stderr testutil.SyncBuffer
	cmd := exec.Command(testutil.BuildMeshbench(t), "run", "--mesh", "sidecar", "--rate", "100", "--duration", "30s",
		"--warmup", "1s", "--sample-interval", "250ms", "--out", out, "--envoy", bin.Path, "--loopback-net", runInterruptNet)
	cmd.Dir = t.TempDir()
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	exited := false
	// Whatever happens, nothing this test started outlives it: meshbench's
	// children first (found by parent PID while meshbench still runs), then
	// meshbench, then any child left.
	t.Cleanup(func() {
		if exited {
			return
		}
		kids := childrenOf(cmd.Process.Pid)
		_ = cmd.Process.Kill()
		<-done
		for _, pid := range kids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	// Wait for the measured window: the load is running.
	deadline := time.After(60 * time.Second)
	for !strings.Contains(stderr.String(), "phase measure") {
		select {
		case err := <-done:
			exited = true
			t.Fatalf("meshbench run exited before the load (%v)\nstderr:\n%s", err, stderr.String())
		case <-deadline:
			t.Fatalf("no \"phase measure\" line within 60 s\nstderr:\n%s", stderr.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	time.Sleep(time.Second) // some of the window measured
	interrupted := time.Now()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err = <-done:
		exited = true
	case <-time.After(30 * time.Second):
		t.Fatalf("meshbench run still running 30 s after SIGINT\nstderr:\n%s", stderr.String())
	}
	if took := time.Since(interrupted); took > 15*time.Second {
		t.Errorf("meshbench run took %v to stop after SIGINT", took)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != ExitInterrupted {
		t.Errorf("exit %v, want code %d\nstderr:\n%s", err, ExitInterrupted, stderr.String())
	}
	if !strings.HasSuffix(stderr.String(), "meshbench: interrupted\n") {
		t.Errorf("stderr does not end with \"meshbench: interrupted\":\n%s", stderr.String())
	}
	for _, want := range []string{"meshbench run: mesh sidecar", "Requests      [total, rate, throughput]", "WARNING: interrupted", "Results: " + out} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, stdout.String())
		}
	}

	m, err := results.ReadManifest(out)
	if err != nil {
		t.Fatalf("manifest: %v", err)
	}
	if m.Valid || !slices.Contains(m.Invalid, "interrupted") {
		t.Errorf("manifest valid=%v reasons %q, want invalid, \"interrupted\" among the reasons", m.Valid, m.Invalid)
	}
	for _, r := range m.Invalid {
		// Said once, in words (it was listed as both "interrupted" and
		// "context canceled").
		if strings.Contains(r, "context canceled") {
			t.Errorf("manifest reason %q beside \"interrupted\"", r)
		}
		// The rate was kept until the interrupt; the rest of the 30 s
		// was never scheduled to be sent.
		if strings.Contains(r, "target rate not reached") {
			t.Errorf("manifest reason %q: an interrupted run is not a rate shortfall", r)
		}
	}
	lr, err := results.ReadFile(filepath.Join(out, results.LoadFile))
	if err != nil {
		t.Fatalf("load result: %v", err)
	}
	// About 1 s measured (warm-up not counted) at 100/s before the
	// SIGINT, far from the 30 s asked for.
	if !lr.Interrupted || lr.Sent < 50 || lr.Sent > 1000 {
		t.Errorf("load result: interrupted %v after %d measured requests, want true after 50 to 1000", lr.Interrupted, lr.Sent)
	}
	var names []string
	for _, p := range m.Processes {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	if got := strings.Join(names, ","); got != "client-sidecar,load,server-0 app,server-0-sidecar" {
		t.Errorf("manifest lists processes %s, want the app, both sidecars and the load", got)
	}
	for _, p := range m.Processes {
		if alive(p.PID) {
			t.Errorf("process %s (pid %d) still running after meshbench exited", p.Name, p.PID)
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
		}
	}
}

// TestRunLoopbackNetFlag: the hidden --loopback-net takes 0..255 and is
// not in the help.
func TestRunLoopbackNetFlag(t *testing.T) {
	inv := runCLI(t, nil, "run", "--loopback-net", "256")
	if inv.code != ExitUsage || strings.Count(inv.stderr, "\n") != 1 || !strings.Contains(inv.stderr, "--loopback-net 256: allowed: 0 to 255") {
		t.Errorf("--loopback-net 256: exit %d stderr %q", inv.code, inv.stderr)
	}
	if help := runCLI(t, nil, "run", "--help"); help.code != 0 || strings.Contains(help.stdout, "loopback-net") {
		t.Errorf("run --help: exit %d, shows the hidden flag:\n%s", help.code, help.stdout)
	}
}

// childrenOf lists the PIDs whose parent is pid.
func childrenOf(pid int) []int {
	var out []int
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		p, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces, so split after ')'.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

// alive reports whether pid is a running (not zombie) process.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}
