package process

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// start runs argv with Start and returns its PID and a channel closed once
// it is reaped; the test stops it (and its group) when it ends, also when
// it fails.
func start(t *testing.T, argv ...string) (int, chan struct{}) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := Start(cmd); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() { Stop(cmd.Process.Pid, done, 0) })
	return cmd.Process.Pid, done
}

// groupGone reports whether no process of pid's group is left.
func groupGone(pid int) bool {
	return errors.Is(syscall.Kill(-pid, 0), syscall.ESRCH)
}

// TestStopGrace stops real children: one that exits on SIGTERM, and a
// shell that ignores it, whose whole group (the shell and its sleep) is
// then killed after the grace period.
func TestStopGrace(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	// The grace bounds are generous: on a loaded 2-core machine a child may
	// take a while to be scheduled and reaped.
	t.Run("exits on SIGTERM", func(t *testing.T) {
		pid, done := start(t, "sleep", "60")
		began := time.Now()
		if killed := Stop(pid, done, 30*time.Second); killed {
			t.Error("Stop killed a child that exits on SIGTERM")
		}
		if d := time.Since(began); d > 20*time.Second {
			t.Errorf("Stop took %v for a child that exits on SIGTERM", d)
		}
		if !groupGone(pid) {
			t.Error("the child's group is still there")
		}
	})
	t.Run("ignores SIGTERM", func(t *testing.T) {
		ready := filepath.Join(t.TempDir(), "ready")
		pid, done := start(t, "sh", "-c", `trap "" TERM; touch `+ready+`; sleep 60 & wait`)
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(ready); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the shell did not start")
			}
		}
		if killed := Stop(pid, done, 200*time.Millisecond); !killed {
			t.Error("Stop did not need SIGKILL for a child that ignores SIGTERM")
		}
		// The sleep the shell forked shares its group: killed with it.
		for deadline := time.Now().Add(30 * time.Second); !groupGone(pid); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("a process of the child's group outlived Stop")
			}
		}
	})
	t.Run("already ended", func(t *testing.T) {
		pid, done := start(t, "true")
		<-done
		if killed := Stop(pid, done, time.Second); killed {
			t.Error("Stop signalled a reaped child")
		}
	})
}

// TestTail checks the tails error messages quote.
func TestTail(t *testing.T) {
	for _, tt := range []struct {
		name     string
		in       string
		maxLines int
		want     string
	}{
		// The last lines, without the final newline.
		{"last lines", "a\nb\nc\n", 2, "b\nc"},
		// Fewer lines than asked for: all of them.
		{"short", "only\n", 5, "only"},
		// No limit.
		{"all", "a\nb\n", 0, "a\nb"},
		// Nothing written: nothing to quote.
		{"empty", "", 3, ""},
		// Trailing blank lines are not lines of output.
		{"blank end", "x\n\n\n", 1, "x"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := TailLines([]byte(tt.in), tt.maxLines); got != tt.want {
				t.Errorf("TailLines = %q, want %q", got, tt.want)
			}
			path := filepath.Join(t.TempDir(), "log")
			if err := os.WriteFile(path, []byte(tt.in), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := TailFile(path, tt.maxLines, 1<<10); got != tt.want {
				t.Errorf("TailFile = %q, want %q", got, tt.want)
			}
		})
	}
	// Only the last maxBytes are read.
	path := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(path, []byte(strings.Repeat("x", 100)+"\nend"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := string(ReadTail(path, 4)); got != "\nend" {
		t.Errorf("ReadTail 4 bytes = %q", got)
	}
	if got := ReadTail(filepath.Join(t.TempDir(), "missing"), 10); got != nil {
		t.Errorf("ReadTail of a missing file = %q, want nil", got)
	}
}

// TestTailBuffer checks that the buffer keeps the last bytes written.
func TestTailBuffer(t *testing.T) {
	b := NewTailBuffer(4)
	for _, s := range []string{"ab", "cdef", "ghijklmn", "o"} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got := string(b.Bytes()); got != "lmno" {
		t.Errorf("Bytes = %q, want lmno", got)
	}
}
