package netlab

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform"
	"github.com/meshbench/meshbench/internal/platform/local"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestSubstrateGateway runs a gateway cell of every mode on the netns
// substrate: the load, from the client pod, calls the ingress gateway
// Envoy in its own pod over HTTPS (verified against the lab CA), which
// calls the service as each mode has it. Every request is answered; the
// gateway terminated the load's TLS and is sampled as the gateway; in the
// ambient modes its node's ztunnel carried its calls over mutual TLS and
// the server node's ztunnel saw the gateway's (or, in waypoint mode, the
// waypoint's) identity arrive; nothing is left after the run.
func TestSubstrateGateway(t *testing.T) {
	bin := requirements(t)
	mb := testutil.BuildMeshbench(t)
	envoyBin := findEnvoy(t)
	for _, tc := range []struct {
		mode topology.Mode
		peer string // the identity the server node's ztunnel sees; "" without ztunnel
	}{
		{topology.ModeNone, ""},    // gateway → the replicas directly
		{topology.ModeSidecar, ""}, // gateway → the server sidecars over mTLS, as Istio's gateway does
		{topology.ModeAmbient, "sa/istio-ingressgateway-service-account"}, // gateway pod enrolled: its ztunnel → HBONE
		{topology.ModeWaypoint, "sa/waypoint"},                            // gateway → VIP → ztunnel → waypoint → HBONE
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			mo := topology.DefaultOptions()
			mo.Mode, mo.Replicas, mo.Gateway = tc.mode, 2, true
			if tc.mode != topology.ModeNone {
				mo.Policies = 4
			}
			out := filepath.Join(t.TempDir(), "run")
			res, _ := runCell(t, local.Options{Settings: platform.Settings{Mesh: mo, Load: loadgen.OpenLoopPerSecond(50), Duration: 3 * time.Second},
				OutDir: out, Meshbench: mb, Substrate: &Substrate{Ztunnel: bin}, Envoy: envoyBin}, checkRunGone)
			_, subnet := netnsOf(t, res.Manifest)
			lr := res.Load
			wantAllOK(t, lr, 100)
			if len(res.Topology.LoadTargets) != 1 || !strings.HasPrefix(res.Topology.LoadTargets[0].URL, "https://"+subnet.Addr().String()[:5]) {
				t.Errorf("load targets %+v, want the gateway pod on the lab's subnet", res.Topology.LoadTargets)
			}
			gs, ok := res.EnvoyStats["gateway"]
			if !ok || gs.DownstreamTLS == nil || gs.DownstreamTLS.Handshakes == nil || *gs.DownstreamTLS.Handshakes == 0 {
				t.Errorf("gateway stats %+v: want the load's TLS handshakes", gs)
			}
			var gw bool
			for _, p := range res.Manifest.Processes {
				gw = gw || (p.Name == "gateway" && p.Category == sample.CategoryGateway)
			}
			if !gw {
				t.Errorf("no gateway process sampled as the gateway: %+v", res.Manifest.Processes)
			}
			if tc.peer == "" {
				if len(res.NodeProxyStats) != 0 {
					t.Errorf("mode %s runs ztunnel: %v", tc.mode, res.NodeProxyStats)
				}
				return
			}
			if res.Manifest.Derived["node_proxy_mtls_connections"] == 0 || res.Manifest.Derived["node_proxy_other_connections"] != 0 {
				t.Errorf("derived mTLS figures %v", res.Manifest.Derived)
			}
			b, err := os.ReadFile(filepath.Join(out, "netns", "ztunnel-node2.log"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(b, []byte(`src.identity="spiffe://cluster.local/ns/`)) || !bytes.Contains(b, []byte(tc.peer+`"`)) {
				t.Errorf("the server node's ztunnel logged no HBONE from %s:\n%s", tc.peer, tail(b, 3000))
			}
		})
	}
}
