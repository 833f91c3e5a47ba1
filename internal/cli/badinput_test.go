package cli

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/workload"
)

// TestRunBenchBadInput: run and bench check every flag before anything
// starts, with load's one-line messages, and exit 2 at once: no lab is
// built, no results directory is made. (Once, `run --rate abc` built the
// whole lab, then failed with exit 1 and "open …/load.json: no such file".)
func TestRunBenchBadInput(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A plan directory whose manifest was cut short, and one from a
	// future meshbench.
	truncated, future := copyPlan(t, planSmall), copyPlan(t, planSmall)
	if err := os.Truncate(filepath.Join(truncated, results.PlanManifestFile), 40); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(future, results.PlanManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.Replace(string(b), `"meshbench.plan/v1"`, `"meshbench.plan/v9"`, 1))
	if err := os.WriteFile(filepath.Join(future, results.PlanManifestFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "never-made")
	tests := []struct {
		name string
		args []string
		want string // in the one stderr line
	}{
		{"run rate not a number", []string{"run", "--rate", "abc", "--out", out}, `--rate "abc": allowed: a positive number`},
		{"run rate 0", []string{"run", "--rate", "0", "--out", out}, `--rate "0": allowed`},
		{"run rate NaN", []string{"run", "--rate", "NaN", "--out", out}, `--rate "NaN": allowed`},
		{"run rate too high", []string{"run", "--rate", "1e12", "--out", out}, `--rate "1e12"`},
		// 0 once silently became 16, and -5 was recorded while 1 ran.
		{"run connections 0", []string{"run", "--connections", "0", "--out", out}, "--connections 0: allowed: 1 or more"},
		{"run connections -5", []string{"run", "--connections", "-5", "--out", out}, "--connections -5: allowed: 1 or more"},
		{"run out is a file", []string{"run", "--out", file}, "--out " + file + " is a file: allowed: a new or empty directory"},
		{"run out under a file", []string{"run", "--out", filepath.Join(file, "x")}, "is a file, not a directory"},
		{"run body size 0", []string{"run", "--body-size", "0", "--out", out}, "--body-size 0: allowed: 1 to 67108864 bytes"},
		{"run body size faces", []string{"run", "--app", "faces", "--body-size", "1024", "--out", out}, "--body-size 1024: applies to the static app only"},
		{"kube run body size 0", []string{"run", "--platform", "kube", "--body-size", "0", "--out", out}, "--body-size 0: allowed: 1 to 67108864 bytes"},
		{"kube run body size faces", []string{"run", "--platform", "kube", "--app", "faces", "--body-size", "1024", "--out", out}, "--body-size 1024: applies to the static app only"},
		{"kube run body size app image", []string{"run", "--platform", "kube", "--app-image", "nginx:1", "--body-size", "1024", "--out", out}, "--body-size 1024: applies to meshbench's static app only: --app-image nginx:1 runs as it is"},
		{"run substrate unknown", []string{"run", "--substrate", "docker", "--out", out}, `--substrate "docker": allowed: auto, netns, loopback`},
		{"run substrate netns faces waypoint", []string{"run", "--substrate", "netns", "--mesh", "waypoint", "--app", "faces", "--out", out}, "app faces with mesh waypoint (gateway false): the netns substrate runs faces without waypoint or gateway so far"},
		{"run linkerd loopback", []string{"run", "--substrate", "loopback", "--mesh", "linkerd", "--out", out}, "--mesh linkerd: runs only on the netns substrate"},
		{"run linkerd plaintext", []string{"run", "--mesh", "linkerd", "--mtls=false", "--out", out}, "mtls false: Linkerd's mTLS between meshed pods is always on"},
		{"run linkerd hops", []string{"run", "--mesh", "linkerd", "--hops", "--out", out}, "--hops: times the Envoys' hops; mesh linkerd's proxies keep no per-request timing log"},
		{"bench linkerd loopback", []string{"bench", "--mesh", "none,linkerd", "--substrate", "loopback", "--out", out}, "--mesh linkerd: runs only on the netns substrate"},
		{"bench body size", []string{"bench", "--mesh", "none", "--body-size", "-1", "--out", out}, `--body-size "-1": allowed: 1 to 67108864 bytes`},
		{"bench substrate unknown", []string{"bench", "--mesh", "none", "--substrate", "docker", "--out", out}, `--substrate "docker": allowed: auto, netns`},
		{"bench out is a file", []string{"bench", "--mesh", "none", "--out", file}, "--out " + file + " is a file"},
		// The apps' workload options are checked as serve checks its own.
		{"run app delay negative", []string{"run", "--app-delay", "-1ms", "--out", out}, "--app-delay -1ms: allowed: 0s to 1h"},
		{"run app delay dist", []string{"run", "--app-delay-dist", "poisson:1ms", "--out", out}, `--app-delay-dist: invalid delay distribution "poisson:1ms"`},
		{"run app error ratio", []string{"run", "--app-error-ratio", "2", "--out", out}, "--app-error-ratio 2: allowed: 0 to 1"},
		{"run app stall alone", []string{"run", "--app-stall-for", "1s", "--out", out}, "--app-stall-for 1s: needs stall-every too"},
		// Faults on a cluster: what cannot be done is refused with why (a
		// part the mesh lacks, a slow replica of an app that is not
		// meshbench's).
		{"run kube slow replica app image", []string{"run", "--platform", "kube", "--mesh", "sidecar", "--replicas", "2", "--app-image", "nginx:1.27", "--fault", "slow-replica:1=10ms@1s", "--out", out}, "--fault slow-replica:1=10ms@1s with --app-image: allowed with meshbench's own app only"},
		{"run kube slow replica one", []string{"run", "--platform", "kube", "--mesh", "sidecar", "--replicas", "1", "--fault", "slow-replica:1=10ms@1s", "--out", out}, "at least one replica must stay healthy"},
		{"run kube kill missing part", []string{"run", "--platform", "kube", "--mesh", "sidecar", "--fault", "kill:node-proxy@1s", "--out", out}, "--fault kill:node-proxy@1s with --mesh sidecar: mesh sidecar has no node-proxy"},
		{"run lab kill control plane", []string{"run", "--mesh", "sidecar", "--fault", "kill:control-plane@1s", "--out", out}, "--fault kill:control-plane@1s with --mesh sidecar: control-plane of mesh sidecar: the lab runs no istiod with control plane lab (its proxies' config comes from the topology, their certificates from the lab's CA); use control plane istiod"},
		{"run kube kill oha", []string{"run", "--platform", "kube", "--mesh", "sidecar", "--generator", "oha", "--fault", "kill:sidecar@1s", "--out", out}, "allowed with --generator meshbench only"},
		{"run hops on kube", []string{"run", "--platform", "kube", "--hops", "--out", out}, "--hops: the local lab only for now"},
		{"run send tick too long", []string{"run", "--send-tick", "50ms", "--out", out}, "--send-tick 50ms: allowed: 0 (exact spacing) or 100µs to 10ms"},
		{"run send tick with oha", []string{"run", "--generator", "oha", "--send-tick", "1ms", "--out", out}, "--send-tick 1ms: only with meshbench's own engine"},
		{"kube run send tick too short", []string{"run", "--platform", "kube", "--send-tick", "10us", "--out", out}, "--send-tick 10µs: allowed"},
		{"bench send tick too long", []string{"bench", "--mesh", "none", "--send-tick", "1s", "--out", out}, `--send-tick "1s": allowed: 0 (each request at its own time) or a duration from 100µs to 10ms`},
		{"bench send tick closed loop", []string{"bench", "--mesh", "none", "--rate", "max", "--send-tick", "1ms", "--out", out}, `--send-tick "1ms": applies to an open loop's schedule`},
		{"bench hops not a bool", []string{"bench", "--mesh", "none", "--hops=maybe", "--out", out}, `--hops "maybe": allowed: true, false`},
		{"run app options on kube", []string{"run", "--platform", "kube", "--app-delay", "1ms", "--out", out}, "--app-delay: the lab's apps only"},
		{"bench app delay", []string{"bench", "--mesh", "none", "--app-delay", "x", "--out", out}, `--app-delay "x": allowed: a duration of 0 or more`},
		{"bench resume truncated manifest", []string{"bench", "--resume", truncated}, "--resume " + truncated + ": "},
		{"bench resume future manifest", []string{"bench", "--resume", future}, `schema "meshbench.plan/v9"`},
		// --istio-build: the overlay only with meshbench's own install, and
		// only from a complete build of the pinned Istio.
		{"run istio-build without install-mesh", []string{"run", "--platform", "kube", "--istio-build", tmp, "--out", out}, "needs --install-mesh"},
		{"run istio-build not a build", []string{"run", "--platform", "kube", "--install-mesh", "--istio-build", tmp, "--out", out}, "hack/istio/build.sh"},
		{"image istio nothing to do", []string{"image", "istio"}, "nothing to do"},
		{"image istio not a build", []string{"image", "istio", "-o", out, "--istio-build", tmp}, "hack/istio/build.sh"},
		{"image istio bad load target", []string{"image", "istio", "--load", "docker:x"}, "is not kind, k3d"},
		// --linkerd-build: meshbench's images with the build's CLI, only
		// with --install-mesh and a complete build; --linkerd-certs only
		// with it.
		{"run linkerd-build without install-mesh", []string{"run", "--platform", "kube", "--linkerd-build", tmp, "--out", out}, "--linkerd-build " + tmp + ": needs --install-mesh"},
		{"run linkerd-build not a build", []string{"run", "--platform", "kube", "--install-mesh", "--linkerd-build", tmp, "--out", out}, "make linkerd-tools"},
		{"run linkerd-certs without build", []string{"run", "--platform", "kube", "--install-mesh", "--linkerd-certs", tmp, "--out", out}, "needs --linkerd-build"},
		{"image linkerd nothing to do", []string{"image", "linkerd"}, "nothing to do"},
		{"image linkerd not a build", []string{"image", "linkerd", "-o", out, "--linkerd-build", tmp}, "make linkerd-tools"},
		{"image linkerd bad load target", []string{"image", "linkerd", "--load", "docker:x"}, "is not kind, k3d"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			inv := runCLI(t, nil, tt.args...)
			if inv.code != ExitUsage {
				t.Errorf("exit %d, want %d; stderr %q", inv.code, ExitUsage, inv.stderr)
			}
			lines := strings.Split(strings.TrimSpace(inv.stderr), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], tt.want) {
				t.Errorf("stderr %q, want one line containing %q", inv.stderr, tt.want)
			}
			// Refused before anything started: well under the ~5 s a lab
			// takes to come up, even on a loaded machine.
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("took %v to refuse", took)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("results directory made on bad input: %v", err)
			}
		})
	}
}

// TestLoadHungTargetCLI is the case as a user types it: a target
// that accepts connections and never answers. `load --rate 100 --duration
// 2s --timeout 1s --warmup 0s` must end within 2 s + 1 s (+ grace and
// slack), say the rate was not reached and how many requests were never
// sent, and write the same in its JSON. (It took 64 s for a 5-s load with
// a 2-s timeout before the end-of-window rule.)
func TestLoadHungTargetCLI(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // accepted, never read, never answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	})
	out := filepath.Join(t.TempDir(), "hung.json")
	start := time.Now()
	inv := runCLI(t, nil, "load", "--rate", "100", "--duration", "2s", "--timeout", "1s", "--warmup", "0s", "-o", out, "http://"+ln.Addr().String()+"/")
	// 2 s + 1 s + 0.5 s grace; 2.5 s of slack for a loaded 2-core machine.
	if took := time.Since(start); took > 6*time.Second {
		t.Errorf("load against a hung target took %v", took)
	}
	if inv.code != ExitOK {
		t.Errorf("exit %d: %s", inv.code, inv.stderr)
	}
	for _, want := range []string{"Not sent      [total, ratio]", "WARNING: target rate not reached: sent ",
		" requests not sent: the measured window ended while they waited for a free connection; a request in flight then got at most the 1s timeout",
		"Error Set:\nread tcp " + ln.Addr().String() + ": i/o timeout\n\n", "[kind, count, error]           timeout, "} {
		if !strings.Contains(inv.stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, inv.stdout)
		}
	}
	r, err := results.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.NotSent == 0 || r.NotSentReason == "" || r.Sent+r.Dropped+r.NotSent != r.Scheduled {
		t.Errorf("json: sent %d dropped %d not sent %d (%q) of %d", r.Sent, r.Dropped, r.NotSent, r.NotSentReason, r.Scheduled)
	}
	if p := r.Problems(0, 0); len(p) == 0 || !strings.Contains(p[0], "target rate not reached") {
		t.Errorf("problems %q, want the rate shortfall first", p)
	}
}

// TestLoadInterruptInFlight: Ctrl-C 1.5 s into a load whose requests take
// 20 s returns at once, exit 130, with those requests counted as canceled,
// not as answers (they were once waited for and counted as 200).
func TestLoadInterruptInFlight(t *testing.T) {
	srv, err := workload.Start(context.Background(), workload.Config{Kind: workload.KindStatic, Listen: "127.0.0.1:0", Faults: workload.Faults{Delay: 20 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Its handlers still sleep: do not wait for them.
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	addr := srv.Addr()
	out := filepath.Join(t.TempDir(), "r.json")
	sigs := make(chan os.Signal, 1)
	var signalled time.Time
	time.AfterFunc(1500*time.Millisecond, func() { signalled = time.Now(); sigs <- os.Interrupt })
	inv := runCLI(t, &Env{Signals: sigs}, "load", "--rate", "20", "--duration", "60s", "--warmup", "0s", "-o", out, "http://"+addr+"/")
	// At once: 3 s of slack for a loaded machine, far from the 18.5 s the
	// in-flight requests once held the exit.
	if took := time.Since(signalled); took > 3*time.Second {
		t.Errorf("exit %v after SIGINT", took)
	}
	if inv.code != ExitInterrupted {
		t.Fatalf("exit %d, want %d; stderr %q", inv.code, ExitInterrupted, inv.stderr)
	}
	r := readResult(t, out)
	if r.Sent == 0 || r.Canceled != r.Sent || r.Completed != 0 || len(r.StatusCodes) != 0 {
		t.Errorf("sent %d: canceled %d, completed %d, codes %v; want every request canceled", r.Sent, r.Canceled, r.Completed, r.StatusCodes)
	}
}
