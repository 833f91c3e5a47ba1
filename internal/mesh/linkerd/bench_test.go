package linkerd_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/controlplane"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestMain removes the meshbench build the tests make.
func TestMain(m *testing.M) { testutil.Main(m) }

// procSample reads pid's CPU ticks and memory, failing the test if it is
// gone.
func procSample(t *testing.T, pid int) sample.ProcSample {
	t.Helper()
	s, err := sample.ReadProc(pid)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestBenchLinkerd measures, on netlab pods (client on node 1, one server
// on node 2, the server service's VIP as target), an open-loop load of
// RATE rps (default 1000, 1 KB answers, 16 connections) through the real
// linkerd2-proxies (mTLS and HTTP/2 between them), and the same load
// without a mesh: achieved rate, p50/p99, and each proxy's CPU (cores, and
// vCPU per 1000 rps) and RSS/PSS over the measured window; also the CPU of
// this test process, which holds the lab's stand-in control plane (an
// upper bound for it, labelled as such: it is not Linkerd's). Not part of
// `make test`: its figures need a quiet machine. Run it with
// MESHBENCH_BENCH_LINKERD=1 (and RATE=…, DURATION_SECONDS=…,
// PROXY_CORES=…, MODES=none,linkerd).
func TestBenchLinkerd(t *testing.T) {
	if os.Getenv("MESHBENCH_BENCH_LINKERD") != "1" {
		t.Skip("a benchmark: set MESHBENCH_BENCH_LINKERD=1")
	}
	proxyBin, ztunnelBin := requirements(t)
	mb := testutil.BuildMeshbench(t)
	rate := testutil.EnvInt("RATE", 1000)
	secs := testutil.EnvInt("DURATION_SECONDS", 10)
	cores := testutil.EnvInt("PROXY_CORES", 0)
	for _, meshed := range []bool{false, true} {
		name := map[bool]string{false: "none", true: "linkerd"}[meshed]
		if m := os.Getenv("MODES"); m != "" && !strings.Contains(m, name) {
			continue
		}
		t.Run(name, func(t *testing.T) {
			nodes := [][]podSpec{
				{{name: "client", id: topology.IdentityClient, meshed: meshed}},
				{{name: "server-0", id: topology.IdentityServer, meshed: meshed, services: []string{"server"}}},
			}
			l := upWith(t, proxyBin, ztunnelBin, nodes, []controlplane.Service{{Name: "server", Namespace: "default", Port: 80, TargetPort: topology.PortApp}}, 0, cores)
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs+120)*time.Second)
			defer cancel()
			srvPod := l.net.Pod("server-0")
			srv := exec.Command(mb, "serve", "static", "--listen", fmt.Sprintf("0.0.0.0:%d", topology.PortApp), "--body-size", "1024")
			srv.Stderr = os.Stderr
			if err := srvPod.Start(srv); err != nil {
				t.Fatal(err)
			}
			defer func() { srv.Process.Kill(); srv.Wait() }()
			client := l.net.Pod("client")
			// The target: the service's VIP when meshed (the client proxy
			// balances over its endpoints), the pod's IP without a mesh
			// (nothing implements the VIP then).
			target := fmt.Sprintf("http://%s:%d/", srvPod.IP, topology.PortApp)
			if meshed {
				target = fmt.Sprintf("http://%s:80/", l.vip["server"])
			}
			if err := waitOK(ctx, client, target); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "load.json")
			load := exec.Command(mb, "load", "--rate", strconv.Itoa(rate), "--duration", fmt.Sprintf("%ds", secs), "--warmup", "3s",
				"--connections", "16", "--quiet", "--output-format", "json", "-o", out, target)
			load.Stderr = os.Stderr
			if err := client.Start(load); err != nil {
				t.Fatal(err)
			}
			time.Sleep(3 * time.Second) // the warm-up
			pids := map[string]int{"test process (lab control plane)": os.Getpid()}
			if meshed {
				pids["client proxy"] = l.mesh.Proxies["client"].PID()
				pids["server proxy"] = l.mesh.Proxies["server-0"].PID()
			}
			before := map[string]sample.ProcSample{}
			for k, pid := range pids {
				before[k] = procSample(t, pid)
			}
			t0 := time.Now()
			if err := load.Wait(); err != nil {
				t.Fatalf("load: %v", err)
			}
			window := time.Since(t0).Seconds()
			after := map[string]sample.ProcSample{}
			for k, pid := range pids {
				after[k] = procSample(t, pid)
			}
			lr, err := results.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			lat, _, _, err := lr.Histograms()
			if err != nil {
				t.Fatal(err)
			}
			if lr.Success < lr.Completed {
				t.Errorf("%s: %d of %d requests failed: %v %v", name, lr.Completed-lr.Success, lr.Completed, lr.StatusCodes, lr.Errors)
			}
			achieved := lr.AchievedRatePerSec()
			t.Logf("%s: %d rps target, achieved %.0f rps, %d/%d ok, p50 %.3f ms, p99 %.3f ms",
				name, rate, achieved, lr.Success, lr.Completed, float64(lat.Percentile(50))/1e6, float64(lat.Percentile(99))/1e6)
			for _, k := range []string{"client proxy", "server proxy", "test process (lab control plane)"} {
				if _, ok := pids[k]; !ok {
					continue
				}
				c := float64(after[k].CPUTicks-before[k].CPUTicks) / float64(sample.ClockTicksPerSecond) / window
				t.Logf("%s: %s CPU %.3f cores (%.3f vCPU per 1000 rps), RSS %.1f MB, PSS %.1f MB",
					name, k, c, c/achieved*1000, float64(after[k].RSSBytes)/1e6, float64(after[k].PSSBytes)/1e6)
			}
			if meshed {
				cs := tlsStats(t, l, "client")
				t.Logf("%s: client proxy: %.0f requests over mTLS to %v, %.0f plain", name, cs.OutboundTLS, cs.ServerIDs, cs.OutboundPlain)
				if cs.OutboundPlain != 0 || cs.OutboundTLS < float64(lr.Completed) {
					t.Errorf("client proxy: %v requests over mTLS, %v plain; want all %d over mTLS", cs.OutboundTLS, cs.OutboundPlain, lr.Completed)
				}
			}
		})
	}
}

// waitOK polls url from pod until it answers 200 (the app is up).
func waitOK(ctx context.Context, p interface {
	HTTPClient(bool) *http.Client
}, url string) error {
	for {
		resp, err := p.HTTPClient(false).Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last: %v)", url, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
