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

// TestSubstrateRunIstiodFaces runs the faces app (face calls smiley over
// HTTP and color over gRPC) in whole cells with istiod configuring the
// proxies: every request is answered 200 and the cell is valid; istiod
// holds color's port as gRPC; with sidecars the face's calls went to the
// services' VIPs through its own sidecar (its outbound requests) and each
// backend's sidecars took them over mTLS; in ambient the ztunnels carry
// them. Nothing is left after either run.
func TestSubstrateRunIstiodFaces(t *testing.T) {
	testutil.RequireRoot(t, "netlab: needs root to make network namespaces")
	if testing.Short() {
		t.Skip("two whole faces cells with an API server and istiod (~40 s)")
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
	for _, mode := range []topology.Mode{topology.ModeSidecar, topology.ModeAmbient} {
		t.Run(string(mode), func(t *testing.T) {
			sub := &Substrate{ControlPlane: ControlPlaneIstiod, Istio: b, Envoy: bin.Path}
			if mode == topology.ModeAmbient {
				sub.Ztunnel = requirements(t)
			}
			mo := topology.DefaultOptions()
			mo.Mode, mo.App = mode, topology.AppFaces
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
			all := strings.Join(res.MeshCheck.Lines, "\n")
			t.Log(all)
			if !strings.Contains(all, `istiod holds color.default.svc.cluster.local:8080 as GRPC (port "grpc")`) {
				t.Errorf("no line saying istiod holds color's port as gRPC")
			}
			if mode != topology.ModeSidecar {
				return
			}
			// Each load request makes the face call both backends.
			if got := res.Manifest.Derived["istiod_faces_calls"]; got < 2*float64(lr.Completed) {
				t.Errorf("the face's sidecars sent %v requests out, want two per load request (%d)", got, lr.Completed)
			}
			for _, b := range []string{"smiley", "color"} {
				if !strings.Contains(all, "; "+b+"'s sidecars took ") || strings.Contains(all, b+"'s sidecars took 0 ") {
					t.Errorf("no requests at %s's sidecars", b)
				}
			}
		})
	}
}
