package testutil

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Limits of StartServe.
const (
	// ServeReadyTimeout is how long StartServe waits for the READY line.
	ServeReadyTimeout = 10 * time.Second
	// ServeStopTimeout is how long the cleanup waits after SIGTERM before
	// it sends SIGKILL.
	ServeStopTimeout = 5 * time.Second
)

var build struct {
	once sync.Once
	path string
	err  error
}

// BuildMeshbench builds ./cmd/meshbench of the enclosing module, static
// (CGO_ENABLED=0), once per test binary, into a fresh os.MkdirTemp directory, and returns the executable's
// path. The module root is found by walking up from the working directory to
// go.mod. The directory (about 20 MB) outlives the tests unless the
// package's TestMain calls RemoveMeshbenchBuild after m.Run.
func BuildMeshbench(t testing.TB) string {
	t.Helper()
	build.once.Do(func() { build.path, build.err = buildMeshbench() })
	if build.err != nil {
		t.Fatalf("building meshbench: %v", build.err)
	}
	return build.path
}

// RemoveMeshbenchBuild deletes the directory BuildMeshbench built into, if
// it built. Call it from TestMain after m.Run, once no process of the binary
// is still running.
func RemoveMeshbenchBuild() {
	if build.path != "" {
		_ = os.RemoveAll(filepath.Dir(build.path))
	}
}

func buildMeshbench() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("the go command is needed to build meshbench: %w", err)
	}
	dir, err := os.MkdirTemp("", "meshbench-test-bin-")
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "meshbench")
	cmd := exec.Command(goBin, "build", "-o", out, "./cmd/meshbench")
	cmd.Dir = root
	// Static, as `meshbench image` needs it (the real test nodes run it
	// in a container with no libc), and as the Dockerfile builds it.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if output, err := cmd.CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("go build ./cmd/meshbench in %s: %v\n%s", root, err, output)
	}
	statSources(root)
	return out, nil
}

// statSources stats every non-test Go file of the module under root, and
// go.mod and go.sum. go test's result cache keys a package's passing run on
// the files its test process opened or stat'ed, not on what a child (the
// go build above) read: without this, a package whose tests run the
// meshbench binary but do not import the changed code would replay a
// stale pass (make check uses the cache).
func statSources(root string) {
	_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			_, _ = os.Stat(path)
		}
		return nil
	})
	for _, f := range []string{"go.mod", "go.sum"} {
		_, _ = os.Stat(filepath.Join(root, f))
	}
}

// moduleRoot walks up from the working directory to the directory holding
// go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// StartServe runs `meshbench serve ARGS... --listen 127.0.0.1:0` as a
// separate process and returns the host:port from its READY line. It fails
// the test, with the process's stderr, when no READY line arrives within
// ServeReadyTimeout or the process exits first. A cleanup registered with t
// sends SIGTERM to the process's PID, waits up to ServeStopTimeout, then
// sends SIGKILL; it fails the test unless the process exited 0 after SIGTERM.
func StartServe(t testing.TB, args ...string) (addr string) {
	t.Helper()
	bin := BuildMeshbench(t)
	argv := append(append([]string{"serve"}, args...), "--listen", "127.0.0.1:0")
	p := &serveProc{
		desc:  "meshbench " + strings.Join(argv, " "),
		ready: make(chan string, 1),
		done:  make(chan struct{}),
	}
	p.cmd = exec.Command(bin, argv...)
	p.cmd.Stdout = &readyWriter{ready: p.ready}
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", p.desc, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { p.stop(t) })

	timer := time.NewTimer(ServeReadyTimeout)
	defer timer.Stop()
	select {
	case addr = <-p.ready:
		return addr
	case <-p.done:
		p.reported = true
		t.Fatalf("%s exited before READY: %v\nstderr:\n%s", p.desc, p.err, p.stderr.String())
	case <-timer.C:
		t.Fatalf("%s printed no READY line within %v\nstderr:\n%s", p.desc, ServeReadyTimeout, p.stderr.String())
	}
	return ""
}

// serveProc is one `meshbench serve` process started by StartServe.
type serveProc struct {
	desc   string
	cmd    *exec.Cmd
	stderr SyncBuffer
	ready  chan string   // receives the READY address once
	done   chan struct{} // closed when the process has exited
	err    error         // cmd.Wait's result; read after done
	// reported is set when the early exit was already reported.
	reported bool
}

// stop sends SIGTERM, waits up to ServeStopTimeout, then SIGKILL, all by
// PID, and reports anything but a clean exit 0.
func (p *serveProc) stop(t testing.TB) {
	t.Helper()
	pid := p.cmd.Process.Pid
	select {
	case <-p.done:
		if p.reported {
			return
		}
		t.Errorf("%s (pid %d) exited before the test ended: %v\nstderr:\n%s", p.desc, pid, p.err, p.stderr.String())
		return
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Errorf("sending SIGTERM to %s (pid %d): %v", p.desc, pid, err)
	}
	timer := time.NewTimer(ServeStopTimeout)
	defer timer.Stop()
	select {
	case <-p.done:
		if p.err != nil {
			t.Errorf("%s (pid %d) exited with %v after SIGTERM, want exit 0\nstderr:\n%s", p.desc, pid, p.err, p.stderr.String())
		}
	case <-timer.C:
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Errorf("%s (pid %d) did not exit within %v of SIGTERM; killed\nstderr:\n%s", p.desc, pid, ServeStopTimeout, p.stderr.String())
	}
}

// readyWriter watches a process's stdout for its first "READY KIND ADDR"
// line and sends ADDR on ready.
type readyWriter struct {
	mu      sync.Mutex
	partial []byte
	seen    bool
	ready   chan<- string
}

func (w *readyWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen {
		return len(b), nil
	}
	w.partial = append(w.partial, b...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			return len(b), nil
		}
		line := string(w.partial[:i])
		w.partial = w.partial[i+1:]
		if f := strings.Fields(line); len(f) == 3 && f[0] == "READY" {
			w.seen = true
			w.partial = nil
			w.ready <- f[2]
			return len(b), nil
		}
	}
}

// SyncBuffer is a bytes.Buffer safe for concurrent writers and readers
// (a process's or an in-process CLI's output that a test reads meanwhile).
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Main is a TestMain for a package whose tests build meshbench
// (BuildMeshbench): it runs the tests, removes the build and exits with
// their code.
func Main(m *testing.M) {
	code := m.Run()
	RemoveMeshbenchBuild()
	os.Exit(code)
}

// EnvInt is the positive integer in the environment variable name, else
// def: a benchmark test's knobs (RATE=…, DURATION_SECONDS=…).
func EnvInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
