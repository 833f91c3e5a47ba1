package netlab

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform"
	"github.com/meshbench/meshbench/internal/platform/local"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestProxyThreads runs a short cell of each proxy at proxy_threads 3 (ztunnel defaults to 2)
// (topology.Options.ProxyThreads) and reads the thread count back from
// the proxy itself: every Envoy sidecar's server.concurrency gauge, each
// ztunnel's startup config (numWorkerThreads) and each linkerd2-proxy's
// runtime line; the manifest records the setting.
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
