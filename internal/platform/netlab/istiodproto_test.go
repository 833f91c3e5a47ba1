package netlab

import (
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/mesh/istio"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform"
	"github.com/meshbench/meshbench/internal/platform/kube/labapi"
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
// the port as TCP and the ztunnels carry it. Each cell is valid and
// leaves nothing behind.
func TestSubstrateRunIstiodTCPPlain(t *testing.T) {
	testutil.RequireRoot(t, "netlab: needs root to make network namespaces")
	if testing.Short() {
		t.Skip("two whole cells with an API server and istiod (~45 s)")
	}
	b, err := istio.Open(istio.DefaultDir())
	if err != nil {
		testutil.SkipOrFail(t, "netlab: "+err.Error())
	}
	if _, _, err := labapi.Check(); err != nil {
		testutil.SkipOrFail(t, "netlab: "+err.Error())
	}
	bin := findEnvoy(t)
	mb := testutil.BuildMeshbench(t)
	for _, tc := range []struct {
		mode topology.Mode
		mtls bool
	}{
		{topology.ModeSidecar, false},
		{topology.ModeAmbient, true},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			sub := &Substrate{ControlPlane: ControlPlaneIstiod, Istio: b, Envoy: bin.Path}
			if tc.mode == topology.ModeAmbient {
				sub.Ztunnel = requirements(t)
			}
			mo := topology.DefaultOptions()
			mo.Mode, mo.Protocol, mo.MTLS = tc.mode, topology.ProtocolTCP, tc.mtls
			t.Chdir(t.TempDir())
			o := local.Options{Settings: platform.Settings{Mesh: mo, Load: loadgen.OpenLoopPerSecond(50), Duration: 2 * time.Second},
				OutDir: "run", Meshbench: mb, Substrate: sub, Envoy: bin}
			res, _ := runCell(t, o, checkRunGone)
			lr := res.Load
			if lr.Completed < 60 || lr.Success != lr.Completed {
				t.Errorf("%d of %d requests answered 200: %v %v", lr.Success, lr.Completed, lr.StatusCodes, lr.Errors)
			}
			if len(res.Manifest.Invalid) > 0 {
				t.Errorf("cell invalid: %v", res.Manifest.Invalid)
			}
			var held bool
			for _, l := range res.MeshCheck.Lines {
				t.Log(l)
				held = held || (strings.HasPrefix(l, "istiod holds server.default.svc.cluster.local:") && strings.Contains(l, ` as TCP (port "tcp-http")`))
			}
			if !held {
				t.Errorf("no line saying istiod holds the service's port as TCP: %q", res.MeshCheck.Lines)
			}
			if tc.mode != topology.ModeSidecar {
				return
			}
			d := res.Manifest.Derived
			if d["istiod_server_tcp_connections"] <= 0 || d["istiod_server_http_requests"] != 0 || d["istiod_server_tls_handshakes"] != 0 {
				t.Errorf("server sidecars: %v TCP connections, %v requests at L7, %v TLS handshakes; want connections at L4 only, in plaintext",
					d["istiod_server_tcp_connections"], d["istiod_server_http_requests"], d["istiod_server_tls_handshakes"])
			}
		})
	}
}
