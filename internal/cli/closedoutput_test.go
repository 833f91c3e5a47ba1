package cli

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestRunClosedOutput: `meshbench run … | head` closes the pipe while the
// run goes on. The run must not die of SIGPIPE at its next line, with its
// lab up: it finishes, writes its results and takes the lab down. (It
// once died at the second progress line, leaving the lab's network
// namespaces for the next run to reclaim.)
func TestRunClosedOutput(t *testing.T) {
	t.Parallel()
	bin := testutil.BuildMeshbench(t)
	out := filepath.Join(t.TempDir(), "run")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // the reader is gone before the first line
	cmd := exec.Command(bin, "run", "--mesh", "none", "--rate", "50", "--duration", "1s", "--warmup", "0s",
		"--drain", "200ms", "--substrate", "loopback", "--loopback-net", "66", "--out", out)
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatal("meshbench run did not end within 2 minutes")
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && !ee.Exited() {
		t.Fatalf("meshbench run was killed by a signal: %v", err)
	}
	if _, rerr := results.ReadManifest(out); rerr != nil {
		t.Fatalf("no run manifest after the output closed (exit: %v): %v", err, rerr)
	}
	lr, lerr := results.ReadFile(filepath.Join(out, results.LoadFile))
	if lerr != nil || lr.Completed == 0 {
		t.Errorf("the run's load result: %v, completed %v", lerr, lr)
	}
}
