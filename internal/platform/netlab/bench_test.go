package netlab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestMain removes the meshbench build the tests make.
func TestMain(m *testing.M) { testutil.Main(m) }

// usage is pid's CPU time (user and system) in seconds and its RSS in MB
// (10^6 bytes), from sample.ReadProc; the test fails if pid is gone.
func usage(t *testing.T, pid int) (cpuSeconds, rssMB float64) {
	t.Helper()
	p, err := sample.ReadProc(pid)
	if err != nil {
		t.Fatal(err)
	}
	return float64(p.CPUTicks) / float64(sample.ClockTicksPerSecond), float64(p.RSSBytes) / 1e6
}

// TestBenchZtunnel measures, on the netns substrate with two nodes (client
// on node 1, one server on node 2), an open-loop load of RATE rps (default
// 1000) with a 1 KB answer to REPLICAS server pods (default 1) through the real ztunnels, and the same load
// with no mesh (pods not enrolled): p50, and each node ztunnel's CPU and
// RSS over the measured window. Not part of `make test`: it takes about
// half a minute and its figures need a quiet machine. Run it with
// MESHBENCH_BENCH_NETLAB=1 (and RATE=…, REPLICAS=…, DURATION_SECONDS=…, MODES=none,ambient).
func TestBenchZtunnel(t *testing.T) {
	if os.Getenv("MESHBENCH_BENCH_NETLAB") != "1" {
		t.Skip("a benchmark: set MESHBENCH_BENCH_NETLAB=1")
	}
	bin := requirements(t)
	mb := testutil.BuildMeshbench(t)
	rate := testutil.EnvInt("RATE", 1000)
	secs := testutil.EnvInt("DURATION_SECONDS", 10)
	replicas := testutil.EnvInt("REPLICAS", 1)
	for _, enrolled := range []bool{false, true} {
		name := map[bool]string{false: "none", true: "ambient"}[enrolled]
		if m := os.Getenv("MODES"); m != "" && !strings.Contains(m, name) {
			continue
		}
		t.Run(name, func(t *testing.T) {
			subnet, prefix := freeLab(t, map[string]bool{})
			var servers []PodSpec
			for i := range replicas {
				servers = append(servers, PodSpec{Name: fmt.Sprintf("server-%d", i), Identity: topology.IdentityServer, Enrolled: enrolled})
			}
			o := Options{Prefix: prefix, Subnet: subnet, Ztunnel: bin, Dir: t.TempDir(),
				Nodes: []NodeSpec{
					{Pods: []PodSpec{{Name: "client", Identity: topology.IdentityClient, Enrolled: enrolled}}},
					{Pods: servers},
				}}
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs+120)*time.Second)
			defer cancel()
			l, err := Up(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			var targets []string
			for _, p := range l.Nodes[1].Pods {
				srv := exec.Command(mb, "serve", "static", "--listen", "0.0.0.0:8080", "--body-size", "1024")
				srv.Stderr = os.Stderr
				if err := p.Start(srv); err != nil {
					t.Fatal(err)
				}
				defer func() { srv.Process.Kill(); srv.Wait() }()
				wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
				err := waitHTTP(wctx, l.Pod("client"), fmt.Sprintf("http://%s:8080/healthz", p.IP))
				wcancel()
				if err != nil {
					t.Fatal(err)
				}
				targets = append(targets, fmt.Sprintf("http://%s:8080/", p.IP))
			}
			out := filepath.Join(o.Dir, "load.json")
			args := append([]string{"load", "--rate", strconv.Itoa(rate), "--duration", fmt.Sprintf("%ds", secs), "--warmup", "3s",
				"--connections", strconv.Itoa(max(16, replicas)), "--quiet", "--output-format", "json", "-o", out}, targets...)
			load := exec.Command(mb, args...)
			load.Stderr = os.Stderr
			if err := l.Pod("client").Start(load); err != nil {
				t.Fatal(err)
			}
			time.Sleep(3 * time.Second) // the warm-up
			cpu := func(i int) float64 { c, _ := usage(t, l.Nodes[i].Ztunnel.PID()); return c }
			rss := func(i int) float64 { _, r := usage(t, l.Nodes[i].Ztunnel.PID()); return r }
			cpu0 := []float64{cpu(0), cpu(1)}
			t0 := time.Now()
			if err := load.Wait(); err != nil {
				t.Fatalf("load: %v", err)
			}
			window := time.Since(t0).Seconds()
			cpu1 := []float64{cpu(0), cpu(1)}
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
			t.Logf("%s: %d replicas, %d rps target, achieved %.0f rps, %d/%d ok, p50 %.3f ms, p99 %.3f ms",
				name, replicas, rate, lr.AchievedRatePerSec(), lr.Success, lr.Completed,
				float64(lat.Percentile(50))/1e6, float64(lat.Percentile(99))/1e6)
			for i, n := range l.Nodes {
				if !enrolled {
					t.Logf("%s: %s ztunnel idle (no pod enrolled), RSS %.1f MB", name, n.Name, rss(i))
					continue
				}
				cores := (cpu1[i] - cpu0[i]) / window
				t.Logf("%s: %s ztunnel CPU %.3f cores (%.3f vCPU per 1000 rps), RSS %.1f MB",
					name, n.Name, cores, cores/lr.AchievedRatePerSec()*1000, rss(i))
			}
		})
	}
}

// waitHTTP polls url from pod until it answers 200 (the app is up).
func waitHTTP(ctx context.Context, p *Pod, url string) error {
	for {
		if _, err := get(p.HTTPClient(false), url); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", url, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
