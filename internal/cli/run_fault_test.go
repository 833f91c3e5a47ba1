package cli

import (
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/mesh/envoy"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testkit/schemas"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestRunFrozenProcess freezes (SIGSTOP) a process of a real sidecar lab
// 1 s into the measured window: the app, or the server's sidecar Envoy. The
// load must still end on time — within the rest of the window + EndGrace +
// --timeout, with slack for a loaded machine — and the run must say what
// happened (rate not reached, timeouts) and exit 1 with its results kept.
// Once, a frozen app made a 10-s run take 413 s.
func TestRunFrozenProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real Envoys")
	}
	wd, _ := os.Getwd()
	bin, err := envoy.Find(envoy.FindOptions{ProjectDir: filepath.Join(wd, "..", "..")})
	if err != nil {
		t.Fatalf("%v (make test installs it)", err)
	}
	const (
		window  = 3 * time.Second
		timeout = 2 * time.Second
		frozeAt = time.Second // into the window
		// slack: the load child writing its result, the lab noticing,
		// and a 2-core machine shared with builds. The old engine took
		// minutes here.
		slack = 4 * time.Second
	)
	tests := []struct {
		name string
		net  string // the lab's 127.<net>.0.0/16, used by no other test
		// which picks the process to freeze among the lab's children by
		// its command line.
		which func(cmdline string) bool
	}{
		{"frozen app", "39", func(c string) bool { return strings.Contains(c, "serve") && strings.Contains(c, "static") }},
		{"frozen server sidecar", "40", func(c string) bool {
			return strings.Contains(c, "envoy") && strings.Contains(c, "server-0-sidecar")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			var stdout, stderr testutil.SyncBuffer
			cmd := exec.Command(testutil.BuildMeshbench(t), "run", "--mesh", "sidecar", "--rate", "100",
				"--duration", window.String(), "--warmup", "500ms", "--drain", "500ms", "--timeout", timeout.String(),
				"--sample-interval", "250ms", "--out", out, "--envoy", bin.Path, "--loopback-net", tt.net)
			cmd.Dir = t.TempDir()
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			exited := false
			frozen := 0
			t.Cleanup(func() {
				if frozen != 0 {
					_ = syscall.Kill(frozen, syscall.SIGCONT)
				}
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
			waitFor := func(line string, within time.Duration) time.Time {
				t.Helper()
				deadline := time.After(within)
				for !strings.Contains(stderr.String(), line) {
					select {
					case err := <-done:
						exited = true
						t.Fatalf("meshbench run exited before %q (%v)\nstderr:\n%s", line, err, stderr.String())
					case <-deadline:
						t.Fatalf("no %q line within %v\nstderr:\n%s", line, within, stderr.String())
					case <-time.After(20 * time.Millisecond):
					}
				}
				return time.Now()
			}
			waitFor("phase measure", 60*time.Second)
			time.Sleep(frozeAt)
			for _, pid := range descendants(cmd.Process.Pid) {
				if b, err := os.ReadFile(filepath.Join("/proc", itoa(pid), "cmdline")); err == nil &&
					tt.which(strings.ReplaceAll(string(b), "\x00", " ")) {
					frozen = pid
					break
				}
			}
			if frozen == 0 {
				t.Fatal("the process to freeze is not among the lab's")
			}
			froze := time.Now()
			if err := syscall.Kill(frozen, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			// The load has ended once the lab drains.
			ended := waitFor("phase drain", window+timeout+slack+30*time.Second)
			_ = syscall.Kill(frozen, syscall.SIGCONT) // let the teardown stop it
			bound := window - frozeAt + loadgen.EndGrace + timeout
			if took := ended.Sub(froze); took > bound+slack {
				t.Errorf("the load ended %v after the freeze; bound %v (+%v slack)", took, bound, slack)
			} else {
				t.Logf("the load ended %v after the freeze (bound %v)", took.Round(10*time.Millisecond), bound)
			}
			select {
			case err = <-done:
				exited = true
			case <-time.After(60 * time.Second):
				t.Fatalf("meshbench run still running 60 s after its load ended\nstderr:\n%s", stderr.String())
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != ExitFailure {
				t.Errorf("exit %v, want %d (the run happened and is invalid)\nstderr:\n%s", err, ExitFailure, stderr.String())
			}
			m, err := results.ReadManifest(out)
			if err != nil {
				t.Fatalf("manifest: %v", err)
			}
			if m.Valid || !slices.ContainsFunc(m.Invalid, func(r string) bool { return strings.Contains(r, "target rate not reached") }) {
				t.Errorf("manifest valid=%v reasons %q, want the rate shortfall", m.Valid, m.Invalid)
			}
			lr, err := results.ReadFile(filepath.Join(out, results.LoadFile))
			if err != nil {
				t.Fatalf("load result: %v", err)
			}
			if lr.NotSent == 0 || lr.Sent+lr.Dropped+lr.NotSent != lr.Scheduled {
				t.Errorf("sent %d + dropped %d + not sent %d, scheduled %d: want the queued tickets not sent", lr.Sent, lr.Dropped, lr.NotSent, lr.Scheduled)
			}
			if !strings.Contains(stdout.String(), "WARNING: target rate not reached") || !strings.Contains(stdout.String(), "requests not sent") {
				t.Errorf("the report does not say what happened:\n%s", stdout.String())
			}
			// Every JSON file of a real sidecar run, invalid or not,
			// matches its published schema.
			checkSchemas(t, out, "run-manifest.v1.schema.json", "load-result.v1.schema.json", "resources.v1.schema.json",
				"samples.v1.schema.json", "envoy-stats.v1.schema.json", "envoy-admin-stats.v1.schema.json")
		})
	}
}

// checkSchemas validates every JSON file under dir against its schema
// (internal/testkit/schemas) and wants at least one file for each of want; it
// logs which files each schema checked.
func checkSchemas(t *testing.T, dir string, want ...string) {
	t.Helper()
	v, err := schemas.ValidateTree(dir, "../../schema")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range want {
		if len(v.BySchema[s]) == 0 {
			t.Errorf("no file validated against %s: %v", s, v.BySchema)
		}
	}
	for _, s := range slices.Sorted(maps.Keys(v.BySchema)) {
		t.Logf("%s: %d file(s), e.g. %s", s, len(v.BySchema[s]), v.BySchema[s][0])
	}
	t.Logf("no schema (not meshbench's formats): %v", v.Unknown)
}

// descendants lists pid's children, their children, and so on.
func descendants(pid int) []int {
	var out []int
	for queue := []int{pid}; len(queue) > 0; queue = queue[1:] {
		kids := childrenOf(queue[0])
		out = append(out, kids...)
		queue = append(queue, kids...)
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }
