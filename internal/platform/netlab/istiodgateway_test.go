package netlab

import (
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

// TestSubstrateRunIstiodGateway runs a whole sidecar cell through the
// ingress gateway with istiod configuring the sidecars and the gateway
// (pilot-agent proxy router, an Istio Gateway and VirtualService, its
// serving certificate from a Secret over istiod's SDS): every request
// of the load, sent over HTTPS to the gateway and verified against the
// lab's CA, is answered 200; the gateway's Envoy completed them all and
// accepted the load's TLS handshakes; the server sidecars accepted the
// gateway's mTLS (the ALLOW rule for the ingress identity lets it in);
// istiod's ACK table lists the gateway with CDS, EDS, LDS and RDS ACKed;
// meshbench rendered no gateway config; the gateway is sampled as the
// gateway; nothing is left after the run.
func TestSubstrateRunIstiodGateway(t *testing.T) {
	testutil.RequireRoot(t, "netlab: needs root to make network namespaces")
	if testing.Short() {
		t.Skip("a whole gateway cell with an API server, istiod, two sidecars and the gateway (~30 s)")
	}
	b := requireIstiod(t)
	bin := findEnvoy(t)
	mb := testutil.BuildMeshbench(t)
	mo := topology.DefaultOptions()
	mo.Mode, mo.Policies, mo.Replicas, mo.Gateway = topology.ModeSidecar, 4, 2, true
	sub := &Substrate{ControlPlane: ControlPlaneIstiod, Istio: b, Envoy: bin.Path}
	t.Chdir(t.TempDir())
	out := "run"
	o := local.Options{Settings: platform.Settings{Mesh: mo, Load: loadgen.OpenLoopPerSecond(50), Duration: 3 * time.Second},
		OutDir: out, Meshbench: mb, Substrate: sub, Envoy: bin}
	res, _ := runCell(t, o, checkRunGone)
	lr := res.Load
	wantAllOK(t, lr, 100)
	if len(res.Manifest.Invalid) > 0 {
		t.Errorf("cell invalid: %v", res.Manifest.Invalid)
	}
	if len(res.Topology.LoadTargets) != 1 || !strings.HasPrefix(res.Topology.LoadTargets[0].URL, "https://") {
		t.Errorf("load targets %+v, want the gateway's HTTPS listener", res.Topology.LoadTargets)
	}
	for _, l := range res.MeshCheck.Lines {
		t.Log(l)
	}
	d := res.Manifest.Derived
	if got := d["istiod_gateway_requests"]; got < float64(lr.Completed) {
		t.Errorf("the gateway completed %v requests over the cell, want the load's %d", got, lr.Completed)
	}
	if d["istiod_gateway_tls_handshakes"] <= 0 || d["istiod_server_tls_handshakes"] < 2 {
		t.Errorf("TLS handshakes: gateway %v, server sidecars %v; want the load's at the gateway and at least one per replica",
			d["istiod_gateway_tls_handshakes"], d["istiod_server_tls_handshakes"])
	}
	acks, err := os.ReadFile(filepath.Join(out, results.NodeProxyDir, "istiod-acks.txt"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("istiod's ACK table kept with the cell:\n%s", acks)
	var row string
	for _, line := range strings.Split(string(acks), "\n") {
		if strings.HasPrefix(line, gatewayPod+"."+topology.IdentityIngress.Namespace+" ") {
			row = line
		}
	}
	if f := strings.Fields(row); len(f) < 2 || f[1] != "router" || strings.Count(row, "ACK") < 4 {
		t.Errorf("the ACK table's gateway row %q: want a router with CDS, EDS, LDS and RDS ACKed", row)
	}
	if strings.Contains(string(acks), "NACK") || strings.Contains(string(acks), "pending") {
		t.Errorf("not every type ACKed")
	}
	if _, err := os.Stat(filepath.Join(out, results.EnvoyDir, "gateway.json")); err == nil {
		t.Errorf("meshbench rendered a gateway config; istiod should configure the gateway")
	}
	cp, _ := res.Manifest.Options["control_plane"].(map[string]any)
	if what, _ := cp["what"].(string); !strings.HasPrefix(what, "sidecars and the gateway:") {
		t.Errorf("manifest's control_plane.what %q, want it to name the gateway", what)
	}
	names := map[string]string{}
	for _, p := range res.Manifest.Processes {
		names[p.Name] = p.Category
	}
	for name, cat := range map[string]string{"gateway": sample.CategoryGateway, "gateway" + local.AgentSuffix: sample.CategoryGateway,
		"istiod": sample.CategoryControlPlane, "server-0-sidecar": sample.CategoryDataPlane} {
		if names[name] != cat {
			t.Errorf("process %s sampled as %q, want %q (processes %v)", name, names[name], cat, names)
		}
	}
}

// TestSubstrateRunIstiodGatewayAmbient runs the ambient and the waypoint
// cells through the ingress gateway with istiod configuring the
// ztunnels, the waypoint and the gateway: the gateway is not enrolled
// (Istio captures no gateway pod) and sends HBONE to the ambient pods
// itself, through the waypoint in the waypoint cell (the service is
// labelled istio.io/ingress-use-waypoint). Every request is answered
// 200 over HTTPS; the gateway's Envoy completed them all (and the
// waypoint's too); istiod's ACK table lists the gateway as a router;
// the cell is valid; nothing is left after the run.
func TestSubstrateRunIstiodGatewayAmbient(t *testing.T) {
	zt := requirements(t)
	if testing.Short() {
		t.Skip("two whole gateway cells with an API server, istiod, the ztunnels and the gateway (~50 s)")
	}
	b := requireIstiod(t)
	bin := findEnvoy(t)
	mb := testutil.BuildMeshbench(t)
	for _, mode := range []topology.Mode{topology.ModeAmbient, topology.ModeWaypoint} {
		t.Run(string(mode), func(t *testing.T) {
			mo := topology.DefaultOptions()
			mo.Mode, mo.Gateway = mode, true
			sub := &Substrate{ControlPlane: ControlPlaneIstiod, Istio: b, Envoy: bin.Path, Ztunnel: zt}
			t.Chdir(t.TempDir())
			out := "run"
			o := local.Options{Settings: platform.Settings{Mesh: mo, Load: loadgen.OpenLoopPerSecond(50), Duration: 3 * time.Second},
				OutDir: out, Meshbench: mb, Substrate: sub, Envoy: bin}
			res, _ := runCell(t, o, checkRunGone)
			lr := res.Load
			wantAllOK(t, lr, 100)
			if len(res.Manifest.Invalid) > 0 {
				t.Errorf("cell invalid: %v", res.Manifest.Invalid)
			}
			for _, l := range res.MeshCheck.Lines {
				t.Log(l)
			}
			d := res.Manifest.Derived
			if got := d["istiod_gateway_requests"]; got < float64(lr.Completed) {
				t.Errorf("the gateway completed %v requests over the cell, want the load's %d", got, lr.Completed)
			}
			if mode == topology.ModeWaypoint && d["istiod_waypoint_requests"] < float64(lr.Completed) {
				t.Errorf("the waypoint completed %v requests over the cell, want the load's %d (the gateway's calls through it)", d["istiod_waypoint_requests"], lr.Completed)
			}
			acks, err := os.ReadFile(filepath.Join(out, results.NodeProxyDir, "istiod-acks.txt"))
			if err != nil {
				t.Fatal(err)
			}
			var row string
			for _, line := range strings.Split(string(acks), "\n") {
				if strings.HasPrefix(line, gatewayPod+"."+topology.IdentityIngress.Namespace+" ") {
					row = line
				}
			}
			if f := strings.Fields(row); len(f) < 2 || f[1] != "router" || strings.Count(row, "ACK") < 4 {
				t.Errorf("the ACK table's gateway row %q: want a router with CDS, EDS, LDS and RDS ACKed\n%s", row, acks)
			}
			cp, _ := res.Manifest.Options["control_plane"].(map[string]any)
			if what, _ := cp["what"].(string); !strings.HasPrefix(what, "ztunnels and the gateway:") {
				t.Errorf("manifest's control_plane.what %q, want it to name the gateway", what)
			}
		})
	}
}
