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
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestSubstrateWaypoint runs waypoint cells (local.Run) on the netns
// substrate: the real ztunnels carry the client's requests to the
// service's VIP over HBONE to the waypoint Envoy in its own pod, which
// terminates HBONE with the lab CA's certificate for its service account,
// applies the ALLOW rules at L7 and originates HBONE again to each server
// pod's own address, where the server node's ztunnel applies them at L4.
//
// With the four rules every request is answered; the client node's
// ztunnel logs the waypoint as its destination, the server node's logs
// the waypoint's identity arriving, both count only mutual TLS, and the
// waypoint is sampled as the data plane's "waypoint".
func TestSubstrateWaypoint(t *testing.T) {
	bin := requirements(t)
	mb := testutil.BuildMeshbench(t)
	envoyBin := findEnvoy(t)
	for _, tc := range []struct {
		name     string
		policies int
		replicas int
	}{
		{"rules", 4, 2},    // allow-client at the waypoint, allow-waypoint at the servers' ztunnel
		{"no-rules", 0, 1}, // no RBAC anywhere, one replica
	} {
		t.Run(tc.name, func(t *testing.T) {
			mo := topology.DefaultOptions()
			mo.Mode, mo.Policies, mo.Replicas = topology.ModeWaypoint, tc.policies, tc.replicas
			out := filepath.Join(t.TempDir(), "run")
			res, log := runCell(t, local.Options{Settings: platform.Settings{Mesh: mo, Load: loadgen.OpenLoopPerSecond(50), Duration: 3 * time.Second, Timeout: 3 * time.Second},
				OutDir: out, Meshbench: mb, Substrate: &Substrate{Ztunnel: bin}, Envoy: envoyBin}, checkRunGone)
			lr := res.Load
			if lr == nil {
				t.Fatalf("no load result\n%s", log.String())
			}
			wantAllOK(t, lr, 100)
			// The load went to the service's VIP, not to a pod.
			if len(res.Topology.LoadTargets) != 1 || !strings.Contains(res.Topology.LoadTargets[0].URL, ".255.1:8080") {
				t.Errorf("load targets %+v, want the service VIP", res.Topology.LoadTargets)
			}
			ws, ok := res.EnvoyStats["waypoint"]
			if !ok || ws.DownstreamTLS == nil || ws.DownstreamTLS.Handshakes == nil || *ws.DownstreamTLS.Handshakes == 0 {
				t.Errorf("waypoint stats %+v: want TLS handshakes from ztunnel", ws)
			}
			if tc.policies > 0 && (ws.RBAC == nil || ws.RBAC.Allowed == nil || *ws.RBAC.Allowed == 0) {
				t.Errorf("waypoint RBAC %+v: want the client's streams allowed", ws.RBAC)
			}
			for _, name := range []string{"ztunnel-node1", "ztunnel-node2"} {
				s, ok := res.NodeProxyStats[name]
				if !ok || s.MTLSOpened() == 0 || s.PlaintextOpened() != 0 {
					t.Errorf("%s stats %+v: want mutual TLS connections only", name, s)
				}
			}
			if _, ok := res.NodeProxyStats["ztunnel-node3"]; ok {
				t.Errorf("the waypoint's node runs a ztunnel: %v", res.NodeProxyStats)
			}
			var wp *results.ProcessInfo
			for i, p := range res.Manifest.Processes {
				if p.Name == "waypoint" {
					wp = &res.Manifest.Processes[i]
				}
			}
			if wp == nil || wp.Component != "waypoint" || wp.Category != sample.CategoryDataPlane {
				t.Errorf("waypoint process %+v: want component waypoint, data plane", wp)
			}
			b1, err := os.ReadFile(filepath.Join(out, "netns", "ztunnel-node1.log"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(b1, []byte(`dst.workload="waypoint"`)) || !bytes.Contains(b1, []byte(`dst.identity="spiffe://cluster.local/ns/default/sa/waypoint"`)) {
				t.Errorf("the client node's ztunnel did not send to the waypoint:\n%s", tail(b1, 3000))
			}
			b2, err := os.ReadFile(filepath.Join(out, "netns", "ztunnel-node2.log"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(b2, []byte(`src.identity="spiffe://cluster.local/ns/default/sa/waypoint"`)) {
				t.Errorf("the server node's ztunnel logged no HBONE from the waypoint:\n%s", tail(b2, 3000))
			}
		})
	}
}

// tail is the last n bytes of b.
func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
