package envoy

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The tests in this package run the real Envoy 1.40 that `make envoy`
// installs into .tools/envoy; they fail (with the fix) when it is missing.

var realBin struct {
	once sync.Once
	bin  *Binary
	err  error
}

// moduleRoot walks up from the working directory to go.mod.
func moduleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// envoyBin finds the project's Envoy once per test binary.
func envoyBin(t testing.TB) *Binary {
	t.Helper()
	root := moduleRoot(t)
	realBin.once.Do(func() {
		realBin.bin, realBin.err = Find(FindOptions{ProjectDir: root})
	})
	if realBin.err != nil {
		t.Fatalf("these tests run the real Envoy: %v", realBin.err)
	}
	return realBin.bin
}

// loopbackIP returns a random address in 127.200.0.0–127.249.255.255, far
// from the lab's 127.0.x.y plan, so tests of engineers sharing the machine
// do not collide.
func loopbackIP() string {
	return fmt.Sprintf("127.%d.%d.%d", 200+rand.IntN(50), rand.IntN(256), 1+rand.IntN(254))
}

// freeAddr returns ip:port with a port the kernel just handed out and that
// is free again (Envoy needs fixed ports in its config).
func freeAddr(t testing.TB, ip string) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// testConfig is a minimal Envoy: admin, and one HTTP listener answering
// every request with a direct response. Listeners keep Envoy's default
// enable_reuse_port (true), the case CheckAddrsFree must see through. Stats
// flush every 100 ms so histograms fill quickly.
func testConfig(admin, listener, body string) string {
	ah, ap, _ := net.SplitHostPort(admin)
	lh, lp, _ := net.SplitHostPort(listener)
	return `stats_flush_interval: 0.1s
admin:
  address: {socket_address: {address: "` + ah + `", port_value: ` + ap + `}}
static_resources:
  listeners:
  - name: in
    address: {socket_address: {address: "` + lh + `", port_value: ` + lp + `}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: in
          http_filters:
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - match: {prefix: "/"}
                direct_response: {status: 200, body: {inline_string: "` + body + `"}}
`
}

// brokenConfig is testConfig with a misspelt field Envoy rejects.
func brokenConfig(admin, listener string) string {
	return strings.Replace(testConfig(admin, listener, "x"), "direct_response", "direct_respons", 1)
}

func writeFile(t testing.TB, dir, name, content string, perm os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
	return p
}

// testEnvoy is one planned Envoy of a test: its spec and listener address.
type testEnvoy struct {
	Spec     Spec
	Listener string
}

// planEnvoy writes a config for an Envoy on its own random loopback IP.
func planEnvoy(t testing.TB, dir, name string, broken bool) testEnvoy {
	t.Helper()
	ip := loopbackIP()
	admin, listener := freeAddr(t, ip), freeAddr(t, ip)
	cfg := testConfig(admin, listener, "hello from "+name)
	if broken {
		cfg = brokenConfig(admin, listener)
	}
	return testEnvoy{
		Spec: Spec{
			Name:       name,
			ConfigPath: writeFile(t, dir, name+".yaml", cfg, 0o644),
			AdminAddr:  admin,
			LogPath:    filepath.Join(dir, name+".log"),
		},
		Listener: listener,
	}
}

// newTestSupervisor returns a Supervisor whose processes are all stopped,
// by PID, when the test ends (even on failure), and checks that none is
// left.
func newTestSupervisor(t *testing.T, opts SupervisorOptions) *Supervisor {
	t.Helper()
	s := NewSupervisor(envoyBin(t), opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := s.StopAll(ctx); err != nil {
			t.Errorf("StopAll: %v", err)
		}
		if pids := s.PIDs(); len(pids) > 0 {
			t.Errorf("after StopAll, PIDs() = %v", pids)
		}
	})
	return s
}

// processesMentioning lists the PIDs whose command line contains s (a
// test's temp dir): proof that no process of the test is left.
func processesMentioning(t testing.TB, s string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), s) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// procGone reports whether no process with this PID runs this test's
// config (the PID is gone, or recycled by an unrelated process).
func procGone(pid int, configPath string) bool {
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	return err != nil || !strings.Contains(string(cmdline), configPath)
}
