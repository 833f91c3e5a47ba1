package bootstrap

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/mesh/envoy"
	"github.com/meshbench/meshbench/internal/mesh/topology"
)

// newTestPKI writes the lab's PKI for topo (plus extra identities) into
// dir: WriteCerts, failing t on error.
func newTestPKI(t testing.TB, dir string, topo *topology.Topology, extra ...topology.Identity) *Certs {
	t.Helper()
	c, err := WriteCerts(topo, dir, extra...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fakeCertPaths names certificate files that need not exist: for golden
// files, which must not depend on a temp dir.
func fakeCertPaths(topo *topology.Topology) CertPaths {
	c := CertPaths{CAFile: "/certs/ca.pem", Workloads: map[topology.Identity]KeyPair{}, Serving: map[string]KeyPair{}}
	for _, id := range topo.Identities {
		base := "/certs/" + id.Namespace + "_" + id.ServiceAccount
		c.Workloads[id] = KeyPair{CertFile: base + ".pem", KeyFile: base + "-key.pem"}
	}
	for _, p := range topo.Proxies {
		if len(p.ServingHosts) > 0 {
			c.Serving[p.Name] = KeyPair{CertFile: "/certs/" + p.Name + "-serving.pem", KeyFile: "/certs/" + p.Name + "-serving-key.pem"}
		}
	}
	return c
}

// envoyBinary is the Envoy 1.40 the tests run, found as meshbench finds
// it ($MESHBENCH_ENVOY, the repository's .tools/envoy, PATH); `make test`
// installs it, so a missing one fails the test.
func envoyBinary(t testing.TB) *envoy.Binary {
	t.Helper()
	wd, _ := os.Getwd()
	bin, err := envoy.Find(envoy.FindOptions{ProjectDir: filepath.Join(wd, "..", "..", "..", "..")})
	if err != nil {
		t.Fatalf("%v (make test installs it)", err)
	}
	return bin
}

// envoyProc is one Envoy started by a test.
type envoyProc struct {
	name  string
	admin string // host:port
	cmd   *exec.Cmd
	log   string // path of its stderr
	pid   int
	done  chan struct{} // closed when the process has exited
}

// startEnvoy starts bin on config in its own process group; t.Cleanup
// sends SIGTERM to that group, then SIGKILL after 5 s.
func startEnvoy(t *testing.T, bin, name, config, admin, logDir string) *envoyProc {
	t.Helper()
	logPath := filepath.Join(logDir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	level := "warn"
	if l := os.Getenv("MESHBENCH_E2E_LOG_LEVEL"); l != "" {
		level = l // e.g. debug, to see why a test fails
	}
	cmd := exec.Command(bin, "-c", config, "--concurrency", "1", "--disable-hot-restart", "--log-level", level)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("starting envoy %s: %v", name, err)
	}
	done := make(chan struct{})
	e := &envoyProc{name: name, admin: admin, cmd: cmd, log: logPath, pid: cmd.Process.Pid, done: done}
	go func() { _ = cmd.Wait(); logFile.Close(); close(done) }()
	t.Cleanup(func() {
		if t.Failed() {
			if log, err := os.ReadFile(logPath); err == nil && len(log) > 0 {
				t.Logf("log of envoy %s:\n%s", name, tail(log, 16000))
			}
		}
		_ = syscall.Kill(-e.pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-e.pid, syscall.SIGKILL)
			<-done
		}
	})
	return e
}

// tail returns the last n bytes of b.
func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// waitReady polls http://ADMIN/ready until it answers 200, the process
// exits, or the deadline passes.
func (e *envoyProc) waitReady(deadline time.Time) error {
	c := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		select {
		case <-e.done:
			log, _ := os.ReadFile(e.log)
			return fmt.Errorf("envoy %s exited before it was ready:\n%s", e.name, log)
		default:
		}
		resp, err := c.Get("http://" + e.admin + "/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	log, _ := os.ReadFile(e.log)
	return fmt.Errorf("envoy %s not ready at %s:\n%s", e.name, e.admin, log)
}

// stats reads the admin's counters and gauges.
func (e *envoyProc) stats(t *testing.T) map[string]int64 {
	t.Helper()
	resp, err := http.Get("http://" + e.admin + "/stats")
	if err != nil {
		t.Fatalf("stats of %s: %v", e.name, err)
	}
	defer resp.Body.Close()
	out := map[string]int64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), ": ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(val, 10, 64); err == nil {
			out[name] = n
		}
	}
	return out
}

// listenSockets returns the local addresses of every TCP socket pid is
// listening on, from /proc (IPv4 and IPv6).
func listenSockets(pid int) ([]string, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var out []string
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(file)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, err
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] { // 0A = LISTEN
				continue
			}
			out = append(out, decodeProcAddr(f[1]))
		}
	}
	return out, nil
}

// decodeProcAddr turns /proc/net/tcp's "0100007F:1F90" into "127.0.0.1:8080".
func decodeProcAddr(s string) string {
	host, port, _ := strings.Cut(s, ":")
	p, _ := strconv.ParseUint(port, 16, 16)
	if len(host) == 8 {
		v, _ := strconv.ParseUint(host, 16, 32)
		return fmt.Sprintf("%d.%d.%d.%d:%d", byte(v), byte(v>>8), byte(v>>16), byte(v>>24), p)
	}
	return "[" + host + "]:" + strconv.FormatUint(p, 10) // IPv6: raw, only compared as "not ours"
}
