package netlab

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform"
	"github.com/meshbench/meshbench/internal/platform/local"
	"github.com/meshbench/meshbench/internal/report"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestProxyThreads runs a short cell of each proxy at proxy_threads 3 (ztunnel defaults to 2)
// (topology.Options.ProxyThreads) and reads the thread count back from
// the proxy itself: every Envoy sidecar's server.concurrency gauge, each
// ztunnel's startup config (numWorkerThreads) and each linkerd2-proxy's
// runtime line; the manifest records the setting and the SMP export
// labels it.
func TestProxyThreads(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("linkerd2-proxy runs one thread on one core whatever it is asked")
	}
	zt := requirements(t)
	lp := linkerdProxy(t)
	mb := testutil.BuildMeshbench(t)
	for _, tc := range []struct {
		mode topology.Mode
		logs []string // files under the run's directory, each with want
		want string
	}{
		{topology.ModeSidecar, nil, ""},
		{topology.ModeAmbient, []string{"netns/ztunnel-node1.log", "netns/ztunnel-node2.log"}, "numWorkerThreads: 3"},
		// linkerd2-proxy caps its cores at the machine's
		// (LINKERD2_PROXY_CORES_MAX defaults to them).
		{topology.ModeLinkerd, []string{"linkerd/client-linkerd-proxy.log", "linkerd/server-0-linkerd-proxy.log"},
			fmt.Sprintf("Using multi-threaded proxy runtime cores=%d", min(3, runtime.NumCPU()))},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			mo := topology.DefaultOptions()
			mo.Mode, mo.ProxyThreads = tc.mode, 3
			out := filepath.Join(t.TempDir(), "run")
			o := local.Options{Settings: platform.Settings{Mesh: mo, Load: loadgen.OpenLoopPerSecond(100), Duration: 2 * time.Second},
				OutDir: out, Meshbench: mb, Substrate: &Substrate{Ztunnel: zt, LinkerdProxy: lp, Meshbench: mb}}
			gone := checkRunGone
			switch tc.mode {
			case topology.ModeSidecar:
				o.Envoy = findEnvoy(t)
			case topology.ModeLinkerd:
				gone = checkLinkerdGone
			}
			res, log := runCell(t, o, gone)
			if lr := res.Load; lr.Completed < 150 || lr.Success != lr.Completed {
				t.Errorf("%d of %d requests answered 200: %v %v", lr.Success, lr.Completed, lr.StatusCodes, lr.Errors)
			}
			if got := res.Manifest.Options["proxy_threads"]; got != 3 && got != float64(3) {
				t.Errorf("manifest proxy_threads %v (%T), want 3", got, got)
			}
			// The SMP export labels it (read back from the cell's files).
			c, err := analysis.ReadCell(out, "cell")
			if err != nil {
				t.Fatal(err)
			}
			if smp, err := report.SMPResult(c, res.Manifest, res.Load); err != nil || !strings.Contains(string(smp), `"meshbench.proxy_threads": "3"`) {
				t.Errorf("SMP (%v) has no meshbench.proxy_threads label 3:\n%s", err, smp)
			}
			if tc.mode == topology.ModeSidecar {
				if len(res.EnvoyStats) != 2 {
					t.Errorf("Envoy stats of %d proxies, want the two sidecars", len(res.EnvoyStats))
				}
				for name, s := range res.EnvoyStats {
					if s.Concurrency != 3 {
						t.Errorf("%s reports server.concurrency %d, want 3", name, s.Concurrency)
					}
				}
			}
			for _, f := range tc.logs {
				b, err := os.ReadFile(filepath.Join(out, f))
				if err != nil || !strings.Contains(string(b), tc.want) {
					t.Errorf("%s (%v) does not say %q:\n%s", f, err, tc.want, log)
				}
			}
		})
	}
}

// TestThroughputCells runs the two throughput cells through every mesh
// of the lab: bulk (one endless answer per connection, bytes per second)
// and the connection rate (the closed loop with a connection per
// request). Each is valid, analysis reads a throughput in Gb/s with the
// CPU per Gb/s of the data plane, or connections per second; in the
// connection-rate cells the client's proxy accepted a new connection
// for every request (Envoy's listener, ztunnel's own counters). The
// kernel's CPU over the window is recorded.
func TestThroughputCells(t *testing.T) {
	zt := requirements(t)
	lp := linkerdProxy(t)
	mb := testutil.BuildMeshbench(t)
	for _, mode := range []topology.Mode{topology.ModeNone, topology.ModeSidecar, topology.ModeAmbient, topology.ModeWaypoint, topology.ModeLinkerd} {
		for _, crr := range []bool{false, true} {
			name := string(mode) + "/bulk"
			if crr {
				name = string(mode) + "/connection-rate"
			}
			t.Run(name, func(t *testing.T) {
				mo := topology.DefaultOptions()
				mo.Mode = mode
				out := filepath.Join(t.TempDir(), "run")
				s := platform.Settings{Mesh: mo, Load: loadgen.Bulk, Duration: 2 * time.Second, Connections: 2}
				if crr {
					s.Load, s.RequestsPerConnection = loadgen.ClosedLoop, 1
				}
				o := local.Options{Settings: s, OutDir: out, Meshbench: mb, Substrate: &Substrate{Ztunnel: zt, LinkerdProxy: lp, Meshbench: mb}}
				gone := checkRunGone
				switch mode {
				case topology.ModeSidecar, topology.ModeWaypoint:
					o.Envoy = findEnvoy(t)
				case topology.ModeLinkerd:
					gone = checkLinkerdGone
				}
				res, _ := runCell(t, o, gone)
				if !res.Manifest.Valid {
					t.Errorf("cell invalid: %v", res.Manifest.Invalid)
				}
				c, err := analysis.ReadCell(out, "cell")
				if err != nil {
					t.Fatal(err)
				}
				// Moving bytes through sockets is kernel work: the
				// window's kernel CPU is measured, and its part outside
				// the sampled processes is at most the whole.
				d := res.Manifest.Derived
				if d[sample.KernelNodeCPU] <= 0 || d[sample.KernelOutsideCPU] > d[sample.KernelNodeCPU] || c.Figures[analysis.KernelNodeCPU] != d[sample.KernelNodeCPU] {
					t.Errorf("kernel CPU: derived %v, figure %v", d, c.Figures[analysis.KernelNodeCPU])
				}
				lr := res.Load
				if !crr {
					if !lr.Bulk() || c.Figures[analysis.ThroughputGbps] <= 0 {
						t.Errorf("bulk %v, throughput %v Gb/s", lr.Bulk(), c.Figures[analysis.ThroughputGbps])
					}
					_, hasRate := c.Figures[analysis.AchievedRate]
					_, dpPerGbps := c.Figures[analysis.CPUPerGbpsPrefix+"data-plane"]
					if hasRate || dpPerGbps != (mode != topology.ModeNone) {
						t.Errorf("figures %v: want no achieved rate, and data-plane CPU per Gb/s where there is a data plane", c.Figures)
					}
					return
				}
				if lr.Completed < 100 || lr.Success != lr.Completed || c.Figures[analysis.ConnectionRate] <= 0 {
					t.Errorf("%d of %d answered, %v connections/s", lr.Success, lr.Completed, c.Figures[analysis.ConnectionRate])
				}
				accepted := uint64(0)
				switch mode {
				case topology.ModeSidecar:
					for name, l := range res.EnvoyStats["client-sidecar"].Listeners {
						if l.CxTotal != nil && strings.Contains(name, "15001") {
							accepted += *l.CxTotal
						}
					}
				case topology.ModeAmbient:
					accepted = res.NodeProxyStats["ztunnel-node1"].ConnectionsOpened
				default:
					return
				}
				if accepted < uint64(lr.Completed) {
					t.Errorf("the client's proxy accepted %d connections for %d requests: want one each", accepted, lr.Completed)
				}
			})
		}
	}
}

// TestSameNode runs ambient with the client beside the app's first pod
// (placement same-node): the cell is valid, mTLS verified, and a single
// ztunnel — the app node's — carries both ends of every request,
// reporting its connections as source and as destination.
func TestSameNode(t *testing.T) {
	zt := requirements(t)
	mb := testutil.BuildMeshbench(t)
	mo := topology.DefaultOptions()
	mo.Mode, mo.Placement = topology.ModeAmbient, topology.PlacementSameNode
	out := filepath.Join(t.TempDir(), "run")
	res, _ := runCell(t, local.Options{Settings: platform.Settings{Mesh: mo, Load: loadgen.OpenLoopPerSecond(100), Duration: 2 * time.Second},
		OutDir: out, Meshbench: mb, Substrate: &Substrate{Ztunnel: zt}}, checkRunGone)
	if !res.Manifest.Valid {
		t.Errorf("cell invalid: %v", res.Manifest.Invalid)
	}
	if lr := res.Load; lr.Completed < 150 || lr.Success != lr.Completed {
		t.Errorf("%d of %d requests answered 200", lr.Success, lr.Completed)
	}
	s, ok := res.NodeProxyStats["ztunnel-node2"]
	if len(res.NodeProxyStats) != 1 || !ok || s.OpenedByReporter["source"] == 0 || s.OpenedByReporter["destination"] == 0 || s.PlaintextOpened() != 0 {
		t.Errorf("node proxy stats %+v: want ztunnel-node2 alone, reporting mutual TLS connections as source and destination", res.NodeProxyStats)
	}
	if got := res.Manifest.Options["placement"]; got != "same-node" {
		t.Errorf("manifest placement %v", got)
	}
}
