package netlab

import (
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform"
	"github.com/meshbench/meshbench/internal/platform/local"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestSubstrateRunIstiodTCPPlain runs whole cells whose services declare
// TCP (ports named tcp-http, as the kube platform names them), istiod
// configuring the proxies: with sidecars and mTLS off (a
// PeerAuthentication DISABLE per namespace, the cluster cell's objects)
// every request is answered 200, istiod holds the port as TCP, the
// server sidecars took the connections at L4 (TCP proxy), completed no
// request at L7 and accepted no TLS handshake; in ambient istiod holds
// the port as TCP and the ztunnels carry it; with the waypoint (its
// check counts Envoy's tcp_proxy stats there, not L7 requests) the
// waypoint proxied the load's connections at L4 and bytes through them.
// Each cell is valid and leaves nothing behind.
func TestSubstrateRunIstiodTCPPlain(t *testing.T) {
	testutil.RequireRoot(t, "netlab: needs root to make network namespaces")
	if testing.Short() {
		t.Skip("three whole cells with an API server and istiod (~60 s)")
	}
	b := requireIstiod(t)
	bin := findEnvoy(t)
	mb := testutil.BuildMeshbench(t)
	for _, tc := range []struct {
		mode topology.Mode
		mtls bool
	}{
		{topology.ModeSidecar, false},
		{topology.ModeAmbient, true},
		{topology.ModeWaypoint, true},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			sub := &Substrate{ControlPlane: ControlPlaneIstiod, Istio: b, Envoy: bin.Path}
			if tc.mode != topology.ModeSidecar {
				sub.Ztunnel = requirements(t)
			}
			mo := topology.DefaultOptions()
			mo.Mode, mo.Protocol, mo.MTLS = tc.mode, topology.ProtocolTCP, tc.mtls
			t.Chdir(t.TempDir())
			o := local.Options{Settings: platform.Settings{Mesh: mo, Load: loadgen.OpenLoopPerSecond(50), Duration: 2 * time.Second},
				OutDir: "run", Meshbench: mb, Substrate: sub, Envoy: bin}
			res, _ := runCell(t, o, checkRunGone)
			lr := res.Load
			wantAllOK(t, lr, 60)
			if len(res.Manifest.Invalid) > 0 {
				t.Errorf("cell invalid: %v", res.Manifest.Invalid)
			}
			var held bool
			// Who carries the port at L4: the waypoint where there is one,
			// else ztunnel; a sidecar's line names neither.
			carrier := map[topology.Mode]string{topology.ModeAmbient: "; ztunnel carries it at L4", topology.ModeWaypoint: "; the waypoint carries it at L4"}[tc.mode]
			for _, l := range res.MeshCheck.Lines {
				t.Log(l)
				if strings.HasPrefix(l, "istiod holds server.default.svc.cluster.local:") && strings.Contains(l, ` as TCP (port "tcp-http")`) {
					held = true
					if carrier != "" && !strings.Contains(l, carrier) || carrier == "" && strings.Contains(l, "carries it") {
						t.Errorf("%q: want it to say %q", l, carrier)
					}
				}
			}
			if !held {
				t.Errorf("no line saying istiod holds the service's port as TCP: %q", res.MeshCheck.Lines)
			}
			d := res.Manifest.Derived
			if tc.mode == topology.ModeWaypoint {
				if d["istiod_waypoint_tcp_connections"] <= 0 || d["istiod_waypoint_tcp_bytes"] < float64(lr.Completed) {
					t.Errorf("the waypoint proxied %v TCP connections and %v bytes over the cell; want the load's connections and at least a byte per request (%d)",
						d["istiod_waypoint_tcp_connections"], d["istiod_waypoint_tcp_bytes"], lr.Completed)
				}
			}
			if tc.mode != topology.ModeSidecar {
				return
			}
			if d["istiod_server_tcp_connections"] <= 0 || d["istiod_server_http_requests"] != 0 || d["istiod_server_tls_handshakes"] != 0 {
				t.Errorf("server sidecars: %v TCP connections, %v requests at L7, %v TLS handshakes; want connections at L4 only, in plaintext",
					d["istiod_server_tcp_connections"], d["istiod_server_http_requests"], d["istiod_server_tls_handshakes"])
			}
		})
	}
}
