package bench

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/mesh/istio"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/release"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform"
	"github.com/meshbench/meshbench/internal/platform/kube/labapi"
	"github.com/meshbench/meshbench/internal/platform/netlab"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestUseControlPlane: --control-plane istiod is refused, as a usage
// error of one line, where it cannot run (loopback, a mode istiod does
// not configure on the lab yet, an unknown name) and accepted for a
// sidecar cell on the netns substrate, which it then configures.
func TestUseControlPlane(t *testing.T) {
	sidecar := topology.DefaultOptions()
	sidecar.Mode = topology.ModeSidecar
	linkerd := sidecar
	linkerd.Mode = topology.ModeLinkerd
	for _, tc := range []struct {
		name   string
		sub    func() *netlab.Substrate
		choice string
		opts   topology.Options
		want   string
	}{
		{"lab is the default", nil, "", sidecar, ""},
		{"unknown", nil, "consul", sidecar, `--control-plane "consul": allowed: lab`},
		{"loopback", nil, ControlPlaneIstiod, sidecar, "--control-plane istiod: runs only on the netns substrate"},
		{"linkerd", func() *netlab.Substrate { return &netlab.Substrate{LinkerdProxy: "linkerd2-proxy"} }, ControlPlaneIstiod, linkerd,
			"mesh linkerd with control plane istiod: istiod configures the lab's sidecars, ztunnels and waypoint only so far"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sub *netlab.Substrate
			if tc.sub != nil {
				sub = tc.sub()
			}
			var err error
			if sub == nil {
				err = UseControlPlane(nil, tc.choice, []topology.Options{tc.opts}, "/envoy", false)
			} else {
				err = UseControlPlane(sub, tc.choice, []topology.Options{tc.opts}, "/envoy", false)
			}
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ue *UsageError
			if !errors.As(err, &ue) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("want a one-line usage error, got %v", err)
			}
			if _, berr := istio.Open(istio.DefaultDir()); berr != nil && tc.sub != nil {
				t.Skipf("no Istio build, so refused for that first: %v", err)
			}
			if _, _, cerr := labapi.Check(); cerr != nil && tc.sub != nil {
				t.Skipf("no API server binaries, so refused for that first: %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %q, want it to say %q", err, tc.want)
			}
		})
	}
	err := UseControlPlane(&netlab.Substrate{}, ControlPlaneIstiod, []topology.Options{sidecar}, "/envoy", true)
	if ue := (*UsageError)(nil); !errors.As(err, &ue) || !strings.Contains(err.Error(), "--control-plane istiod with --hops: not yet") {
		t.Errorf("istiod with hop timing: %v, want refused", err)
	}
	if _, err := istio.Open(istio.DefaultDir()); err != nil {
		t.Skip(err)
	}
	if _, _, err := labapi.Check(); err != nil {
		t.Skip(err)
	}
	sub := &netlab.Substrate{}
	if err := UseControlPlane(sub, ControlPlaneIstiod, []topology.Options{sidecar, topology.DefaultOptions()}, "/envoy", false); err != nil {
		t.Fatal(err)
	}
	if sub.ControlPlane != ControlPlaneIstiod || sub.Envoy != "/envoy" || sub.Istio.Dir == "" {
		t.Errorf("the substrate is not configured for istiod: %+v", sub)
	}
	ambient := sidecar
	ambient.Mode = topology.ModeAmbient
	if err := UseControlPlane(&netlab.Substrate{Ztunnel: "ztunnel"}, ControlPlaneIstiod, []topology.Options{ambient}, "", false); err != nil {
		t.Errorf("istiod with mesh ambient: %v, want accepted", err)
	}
	waypoint := sidecar
	waypoint.Mode = topology.ModeWaypoint
	if err := UseControlPlane(&netlab.Substrate{Ztunnel: "ztunnel"}, ControlPlaneIstiod, []topology.Options{waypoint}, "/envoy", false); err != nil {
		t.Errorf("istiod with mesh waypoint: %v, want accepted", err)
	}
	gateway := sidecar
	gateway.Gateway = true
	if err := UseControlPlane(&netlab.Substrate{}, ControlPlaneIstiod, []topology.Options{gateway}, "/envoy", false); err != nil {
		t.Errorf("istiod with mesh sidecar and the gateway: %v, want accepted", err)
	}
	faces := sidecar
	faces.App = topology.AppFaces
	if err := UseControlPlane(&netlab.Substrate{}, ControlPlaneIstiod, []topology.Options{faces}, "/envoy", false); err != nil {
		t.Errorf("istiod with mesh sidecar and app faces: %v, want accepted", err)
	}
	plain := sidecar
	plain.MTLS, plain.Protocol = false, topology.ProtocolTCP
	if err := UseControlPlane(&netlab.Substrate{}, ControlPlaneIstiod, []topology.Options{plain}, "/envoy", false); err != nil {
		t.Errorf("istiod with mesh sidecar, mtls false and protocol tcp: %v, want accepted", err)
	}
	waypoint.Protocol = topology.ProtocolTCP
	if err := UseControlPlane(&netlab.Substrate{Ztunnel: "ztunnel"}, ControlPlaneIstiod, []topology.Options{waypoint}, "/envoy", false); err != nil {
		t.Errorf("istiod with mesh waypoint and protocol tcp: %v, want accepted", err)
	}
	ambient.Protocol = topology.ProtocolTCP
	if err := UseControlPlane(&netlab.Substrate{Ztunnel: "ztunnel"}, ControlPlaneIstiod, []topology.Options{ambient}, "", false); err != nil {
		t.Errorf("istiod with mesh ambient and protocol tcp: %v, want accepted", err)
	}
	ambient.Gateway = true
	if err := UseControlPlane(&netlab.Substrate{Ztunnel: "ztunnel"}, ControlPlaneIstiod, []topology.Options{ambient}, "/envoy", false); err != nil {
		t.Errorf("istiod with mesh ambient and the gateway: %v, want accepted", err)
	}
	waypoint.Protocol, waypoint.Gateway = topology.ProtocolHTTP, true
	if err := UseControlPlane(&netlab.Substrate{Ztunnel: "ztunnel"}, ControlPlaneIstiod, []topology.Options{waypoint}, "/envoy", false); err != nil {
		t.Errorf("istiod with mesh waypoint and the gateway: %v, want accepted", err)
	}
	none := topology.DefaultOptions()
	none.Gateway = true
	err = UseControlPlane(&netlab.Substrate{}, ControlPlaneIstiod, []topology.Options{gateway, none}, "/envoy", false)
	if ue := (*UsageError)(nil); !errors.As(err, &ue) || !strings.Contains(err.Error(), "gateway with mesh none and control plane istiod: not yet") {
		t.Errorf("istiod with mesh none and the gateway: %v, want refused (its gateway would be the hand-rendered one)", err)
	}
}

// TestUseLinkerdControllers: --control-plane linkerd is refused, as a
// usage error of one line, on loopback and for cells it does not
// configure (sidecar), and accepted for linkerd cells (the static and the
// faces app) and none cells on the netns substrate, which it then
// configures with the build.
func TestUseLinkerdControllers(t *testing.T) {
	linkerd := topology.DefaultOptions()
	linkerd.Mode = topology.ModeLinkerd
	sidecar := linkerd
	sidecar.Mode = topology.ModeSidecar
	faces := linkerd
	faces.App = topology.AppFaces
	err := UseControlPlane(nil, ControlPlaneLinkerd, []topology.Options{linkerd}, "", false)
	if ue := (*UsageError)(nil); !errors.As(err, &ue) || !strings.Contains(err.Error(), "--control-plane linkerd: runs only on the netns substrate") {
		t.Errorf("linkerd on loopback: %v, want refused", err)
	}
	if _, err := release.Open(release.DefaultDir()); err != nil {
		t.Skip(err)
	}
	if _, _, err := labapi.Check(); err != nil {
		t.Skip(err)
	}
	for _, tc := range []struct {
		opts topology.Options
		want string
	}{
		{sidecar, "mesh sidecar with control plane linkerd: Linkerd's controllers configure mesh linkerd only"},
	} {
		err := UseControlPlane(&netlab.Substrate{LinkerdProxy: "/proxy"}, ControlPlaneLinkerd, []topology.Options{tc.opts}, "", false)
		var ue *UsageError
		if !errors.As(err, &ue) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: %v, want a one-line usage error saying %q", tc.opts.Mode, tc.opts.App, err, tc.want)
		}
	}
	sub := &netlab.Substrate{LinkerdProxy: "/proxy"}
	if err := UseControlPlane(sub, ControlPlaneLinkerd, []topology.Options{linkerd, faces, topology.DefaultOptions()}, "", false); err != nil {
		t.Fatal(err)
	}
	if sub.ControlPlane != ControlPlaneLinkerd || sub.Linkerd.Dir == "" {
		t.Errorf("the substrate is not configured for Linkerd's controllers: %+v", sub)
	}
}

// TestUseRealControlPlanes: --control-plane real gives every mesh its
// own real control plane: refused on loopback; with neither build it is
// refused in one line naming both (and only what the plan's meshes
// need: mesh none alone needs nothing); with both, a plan of none,
// sidecar, ambient and linkerd is accepted, istiod then runs for Istio's
// modes and Linkerd's controllers for linkerd, the faces app's linkerd
// cells too.
func TestUseRealControlPlanes(t *testing.T) {
	none := topology.DefaultOptions()
	sidecar, ambient, linkerd := none, none, none
	sidecar.Mode, ambient.Mode, linkerd.Mode = topology.ModeSidecar, topology.ModeAmbient, topology.ModeLinkerd
	all := []topology.Options{none, sidecar, ambient, linkerd}
	err := UseControlPlane(nil, ControlPlaneReal, all, "/envoy", false)
	if ue := (*UsageError)(nil); !errors.As(err, &ue) || !strings.Contains(err.Error(), "--control-plane real: runs only on the netns substrate") {
		t.Errorf("real on loopback: %v, want refused", err)
	}

	t.Run("missing builds", func(t *testing.T) {
		t.Setenv(istio.EnvBuild, t.TempDir())
		t.Setenv(release.EnvBuild, t.TempDir())
		err := UseControlPlane(&netlab.Substrate{Ztunnel: "ztunnel", LinkerdProxy: "/proxy"}, ControlPlaneReal, all, "/envoy", false)
		var ue *UsageError
		if !errors.As(err, &ue) || strings.Contains(err.Error(), "\n") ||
			!strings.Contains(err.Error(), "istiod for mesh sidecar, ambient, waypoint") || !strings.Contains(err.Error(), "Linkerd's controllers for mesh linkerd") {
			t.Errorf("real without either build: %v, want one line naming both", err)
		}
		err = UseControlPlane(&netlab.Substrate{Ztunnel: "ztunnel", LinkerdProxy: "/proxy"}, ControlPlaneReal, []topology.Options{none, sidecar}, "/envoy", false)
		if err == nil || strings.Contains(err.Error(), "Linkerd") {
			t.Errorf("real with mesh none and sidecar, no builds: %v, want refused for istiod only", err)
		}
		if err := UseControlPlane(&netlab.Substrate{}, ControlPlaneReal, []topology.Options{none}, "", false); err != nil {
			t.Errorf("real with mesh none only: %v, want accepted (it needs no control plane)", err)
		}
	})

	if _, err := istio.Open(istio.DefaultDir()); err != nil {
		t.Skip(err)
	}
	if _, err := release.Open(release.DefaultDir()); err != nil {
		t.Skip(err)
	}
	if _, _, err := labapi.Check(); err != nil {
		t.Skip(err)
	}
	sub := &netlab.Substrate{Ztunnel: "ztunnel", LinkerdProxy: "/proxy"}
	if err := UseControlPlane(sub, ControlPlaneReal, all, "/envoy", false); err != nil {
		t.Fatal(err)
	}
	if sub.ControlPlane != ControlPlaneReal || !sub.IstiodRuns() || !sub.LinkerdControllersRun() || sub.Istio.Dir == "" || sub.Envoy != "/envoy" {
		t.Errorf("the substrate is not configured for both control planes: %+v", sub)
	}
	first := LabLine(sub, []topology.Mode{topology.ModeNone, topology.ModeSidecar, topology.ModeAmbient, topology.ModeLinkerd}, nil)
	for _, want := range []string{"sidecar: real Envoy sidecars", "configured and certified by the real istiod", "configured (WDS) and certified by the real istiod", "configured and certified by Linkerd's real controllers"} {
		if !strings.Contains(first, want) {
			t.Errorf("first line %q: want it to say %q", first, want)
		}
	}
	if strings.Contains(first, "istiod is not run") || strings.Contains(first, "stand-in") {
		t.Errorf("first line %q: says a mesh is not configured by its own control plane", first)
	}
	faces := linkerd
	faces.App = topology.AppFaces
	sub = &netlab.Substrate{LinkerdProxy: "/proxy"}
	if err := UseControlPlane(sub, ControlPlaneReal, []topology.Options{faces}, "", false); err != nil || !sub.LinkerdControllersRun() {
		t.Errorf("real with mesh linkerd and app faces: %v (controllers run %v), want accepted, Linkerd's controllers", err, sub.LinkerdControllersRun())
	}
}

// TestUseAutoControlPlanes: --control-plane auto is never refused and
// gives each mesh its real control plane only when all it needs is here:
// on loopback every mesh keeps the lab's own (said); on netns, without
// root, without a build or with a cell the real one cannot run yet
// (--hops for istiod), that mesh keeps the
// lab's own and the note says why; with everything here both run real.
// No process starts (the builds are only looked at).
func TestUseAutoControlPlanes(t *testing.T) {
	none := topology.DefaultOptions()
	sidecar, ambient, linkerd := none, none, none
	sidecar.Mode, ambient.Mode, linkerd.Mode = topology.ModeSidecar, topology.ModeAmbient, topology.ModeLinkerd
	all := []topology.Options{none, sidecar, ambient, linkerd}
	modes := []topology.Mode{topology.ModeNone, topology.ModeSidecar, topology.ModeAmbient, topology.ModeLinkerd}
	if err := UseControlPlane(nil, ControlPlaneAuto, all, "/envoy", false); err != nil {
		t.Errorf("auto on loopback: %v, want accepted", err)
	}
	if n := ControlPlaneNote(nil, ControlPlaneAuto, modes); !strings.Contains(n, "meshbench's own for every mesh (the real control planes run only on the netns substrate)") {
		t.Errorf("auto on loopback: note %q", n)
	}
	if n := ControlPlaneNote(nil, ControlPlaneAuto, []topology.Mode{topology.ModeNone}); n != "" {
		t.Errorf("auto with mesh none only: note %q, want none", n)
	}
	if n := ControlPlaneNote(&netlab.Substrate{}, ControlPlaneLab, modes); n != "" {
		t.Errorf("lab: note %q, want none", n)
	}
	auto := func(opts []topology.Options, hops, root bool) *netlab.Substrate {
		t.Helper()
		sub := &netlab.Substrate{Ztunnel: "ztunnel", LinkerdProxy: "/proxy"}
		useAutoControlPlanes(sub, opts, "/envoy", hops, root)
		if sub.ControlPlane != ControlPlaneAuto || ControlPlaneNote(sub, ControlPlaneAuto, modes) != sub.ControlPlaneWhy {
			t.Errorf("substrate after auto: %+v", sub)
		}
		return sub
	}
	lab := func(name string, sub *netlab.Substrate, wants ...string) {
		t.Helper()
		if sub.IstiodRuns() || sub.LinkerdControllersRun() {
			t.Errorf("%s: a real control plane runs: %+v", name, sub)
		}
		for _, want := range wants {
			if !strings.Contains(sub.ControlPlaneWhy, want) {
				t.Errorf("%s: note %q lacks %q", name, sub.ControlPlaneWhy, want)
			}
		}
	}
	lab("not root", auto(all, false, false), "sidecar, ambient: meshbench's own configs, not istiod's (not root",
		"linkerd: the lab's stand-in for Linkerd's control plane (not root")
	// The cells come in the plan's seeded order; the line names Istio's
	// modes in their own.
	lab("not root, cells shuffled", auto([]topology.Options{linkerd, ambient, none, sidecar}, false, false),
		"sidecar, ambient: meshbench's own configs, not istiod's (not root")
	t.Run("missing builds", func(t *testing.T) {
		t.Setenv(istio.EnvBuild, t.TempDir())
		t.Setenv(release.EnvBuild, t.TempDir())
		sub := auto(all, false, true)
		lab("no builds", sub, "sidecar, ambient: meshbench's own configs, not istiod's (", "no Istio build in ",
			"linkerd: the lab's stand-in for Linkerd's control plane (", "no Linkerd build in ")
		// Without the API server's binaries too, each mesh's reason
		// names both, so that one read says all to install.
		t.Setenv(labapi.BinEnv, t.TempDir())
		lab("no API server", auto(all, false, false), "(not root (the lab API server and the control planes run as root), and lab API server binaries not found: ",
			"kube-apiserver is missing (run `make k8s-tools`", ", and no Istio build in ", ", and no Linkerd build in ")
		if first := LabLine(sub, modes, nil); !strings.Contains(first, "istiod is not run") || !strings.Contains(first, "the lab's stand-in") {
			t.Errorf("first line %q: want Istio's modes and linkerd from the lab's own", first)
		}
	})

	if _, err := istio.Open(istio.DefaultDir()); err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	if _, err := release.Open(release.DefaultDir()); err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	if _, _, err := labapi.Check(); err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	sub := auto(all, false, true)
	if !sub.IstiodRuns() || !sub.LinkerdControllersRun() || sub.Envoy != "/envoy" ||
		sub.ControlPlaneWhy != "control plane auto: sidecar, ambient: the real istiod (built here); linkerd: Linkerd's real controllers (installed here)" {
		t.Errorf("with every build: %+v", sub)
	}
	first := LabLine(sub, modes, nil)
	if !strings.Contains(first, "certified by the real istiod") || !strings.Contains(first, "certified by Linkerd's real controllers") || strings.Contains(first, "stand-in") {
		t.Errorf("first line %q: want both real control planes", first)
	}
	// Each mesh on its own: --hops keeps Istio's modes on the lab's own
	// configs; linkerd still runs real. App faces runs under both real
	// control planes.
	sub = auto(all, true, true)
	if sub.IstiodRuns() || !sub.LinkerdControllersRun() || !strings.Contains(sub.ControlPlaneWhy, "(with --hops,") {
		t.Errorf("with --hops: %+v", sub)
	}
	faces := linkerd
	faces.App = topology.AppFaces
	sub = auto([]topology.Options{sidecar, faces}, false, true)
	if !sub.IstiodRuns() || !sub.LinkerdControllersRun() || strings.Contains(sub.ControlPlaneWhy, "stand-in") {
		t.Errorf("with app faces for linkerd: %+v, want Linkerd's real controllers", sub)
	}
	if err := sub.Supports(faces); err != nil {
		t.Errorf("auto, linkerd with Linkerd's controllers: the faces cell is refused: %v", err)
	}
}

// cellsPlatform records the cells it ran and its teardowns, in order
// (no process: what apiUntil does around a platform).
type cellsPlatform struct{ calls []string }

func (p *cellsPlatform) Name() string { return "fake" }
func (p *cellsPlatform) RunCell(_ context.Context, r platform.CellRun) (*platform.Result, error) {
	p.calls = append(p.calls, r.Cell.ID)
	return nil, nil
}
func (p *cellsPlatform) Teardown(string) { p.calls = append(p.calls, "teardown") }

// TestAPIUntil: a plan's shared lab API server is stopped after the last
// cell that needs one (its lab torn down first), not before and not
// again after the others; a plan none of whose cells needs one, or a
// control plane of the lab's own, leaves the platform as it is.
func TestAPIUntil(t *testing.T) {
	cell := func(id string, mode topology.Mode) platform.Cell {
		o := topology.DefaultOptions()
		o.Mode = mode
		return platform.Cell{ID: id, Settings: platform.Settings{Mesh: o}, Topology: id}
	}
	cells := []platform.Cell{cell("none-1", topology.ModeNone), cell("sidecar-1", topology.ModeSidecar),
		cell("linkerd-1", topology.ModeLinkerd), cell("none-2", topology.ModeNone)}
	for _, tc := range []struct {
		cp   string
		want string
	}{
		{ControlPlaneReal, "none-1 sidecar-1 linkerd-1 teardown none-2"},
		{ControlPlaneIstiod, "none-1 sidecar-1 teardown linkerd-1 none-2"},
		{ControlPlaneLinkerd, "none-1 sidecar-1 linkerd-1 teardown none-2"},
		{ControlPlaneLab, "none-1 sidecar-1 linkerd-1 none-2"},
		// auto: only the meshes it gave a build to need the server.
		{ControlPlaneAuto + " istio", "none-1 sidecar-1 teardown linkerd-1 none-2"},
		{ControlPlaneAuto + " linkerd", "none-1 sidecar-1 linkerd-1 teardown none-2"},
		{ControlPlaneAuto, "none-1 sidecar-1 linkerd-1 none-2"},
	} {
		fp := &cellsPlatform{}
		cp, build, _ := strings.Cut(tc.cp, " ")
		ns := &netlab.Substrate{ControlPlane: cp, ShareAPI: true}
		switch build {
		case "istio":
			ns.Istio.Dir = "/istio"
		case "linkerd":
			ns.Linkerd.Dir = "/linkerd"
		}
		on := apiUntil(fp, ns, cells, io.Discard)
		if (tc.cp == ControlPlaneLab || tc.cp == ControlPlaneAuto) && on != platform.Platform(fp) {
			t.Errorf("control plane %s: the platform wrapped, want it as it is", tc.cp)
		}
		for _, c := range cells {
			if _, err := on.RunCell(context.Background(), platform.CellRun{Cell: c}); err != nil {
				t.Fatal(err)
			}
		}
		if got := strings.Join(fp.calls, " "); got != tc.want {
			t.Errorf("control plane %s: %s, want %s", tc.cp, got, tc.want)
		}
	}
}
