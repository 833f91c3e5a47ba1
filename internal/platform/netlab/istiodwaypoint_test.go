package netlab

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/mesh/istio"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform"
	"github.com/meshbench/meshbench/internal/platform/kube/labapi"
	"github.com/meshbench/meshbench/internal/platform/local"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/sys/netns"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestIstiodWaypoint runs the real istiod configuring the real ztunnels
// and a waypoint: a Gateway of class istio-waypoint on the lab's API
// server, its Envoy started as `pilot-agent proxy waypoint` in the
// waypoint's pod with the bootstrap pilot-agent makes. A request from
// the client pod to the service's VIP gets 200 through it; an L7
// AuthorizationPolicy bound to the Gateway refuses one path with 403
// (only an HTTP proxy on the path can answer so), the waypoint's Envoy
// counts the requests; istiod's ACK table lists the waypoint with every
// type ACKed beside the two ztunnels; nothing is left after Close.
func TestIstiodWaypoint(t *testing.T) {
	zbin := requirements(t)
	if testing.Short() {
		t.Skip("starts an API server, istiod, two ztunnels and a waypoint (~25 s)")
	}
	b, err := istio.Open(istio.DefaultDir())
	if err != nil {
		testutil.SkipOrFail(t, "netlab: "+err.Error())
	}
	if _, _, err := labapi.Check(); err != nil {
		testutil.SkipOrFail(t, "netlab: "+err.Error())
	}
	envoyBin := findEnvoy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	subnet, prefix := freeLab(t, map[string]bool{})
	dir := t.TempDir()
	api, err := labapi.Start(ctx, labapi.Options{Dir: filepath.Join(dir, "api"), ServiceCIDR: ServiceCIDR(subnet)})
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	lab, err := Up(ctx, Options{Prefix: prefix, Subnet: subnet, Dir: filepath.Join(dir, "lab"), Log: testLog{t},
		Ztunnel: zbin, ZtunnelsFromXDS: true,
		Nodes: []NodeSpec{
			{Pods: []PodSpec{{Name: "client", Identity: topology.IdentityClient, Enrolled: true}}},
			{Pods: []PodSpec{{Name: "server-0", Identity: topology.IdentityServer, Enrolled: true, Services: []string{"server"}}, waypointSpec()}},
		},
		Services: []ServiceSpec{{Name: "server", Namespace: "default", Port: 80, TargetPort: 8080}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer lab.Close()
	lis, err := lab.Pod("server-0").Listen("tcp", "0.0.0.0:8080")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	})}
	go func() { _ = srv.Serve(lis) }()
	defer srv.Close()

	objs := func() ([]runtime.Object, error) {
		gw := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
			"metadata": map[string]any{"name": waypointGateway, "namespace": "default", "labels": map[string]any{"istio.io/waypoint-for": "service"}},
			"spec": map[string]any{"gatewayClassName": "istio-waypoint",
				"listeners": []any{map[string]any{"name": "mesh", "port": int64(topology.PortHBONE), "protocol": "HBONE"}}},
		}}
		deny := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy",
			"metadata": map[string]any{"name": "deny-path", "namespace": "default"},
			"spec": map[string]any{
				"targetRefs": []any{map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": waypointGateway}},
				"action":     "DENY",
				"rules":      []any{map[string]any{"to": []any{map[string]any{"operation": map[string]any{"paths": []any{"/denied"}}}}}},
			},
		}}
		return []runtime.Object{gw, deny}, nil
	}
	d, err := lab.StartIstiod(ctx, IstiodOptions{Build: b, Envoy: envoyBin.Path, API: api, Objects: objs})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := d.WaitACKed(ctx, 60*time.Second)
	logSync(t, ps)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 3 {
		t.Fatalf("istiod lists %d proxies, want the 2 ztunnels and the waypoint", len(ps))
	}

	get := func(path string) (int, string, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+lab.Services["server"].String()+":80"+path, nil)
		resp, err := lab.Pod("client").HTTPClient(false).Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), nil
	}
	// istiod names the waypoint to the ztunnels once its Gateway has an
	// address: until then the VIP is reached directly.
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, body, err := get("/denied")
		if err == nil && code == 403 {
			t.Logf("client → /denied through the waypoint: %d %q", code, body)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the waypoint's AuthorizationPolicy did not refuse /denied in 60 s: %d %q %v (istiod log %s)", code, body, err, d.Proc.LogFile)
		}
		time.Sleep(250 * time.Millisecond)
	}
	for range 5 {
		if code, body, err := get("/"); err != nil || code != 200 {
			t.Fatalf("client → / through the waypoint: %d %q %v", code, body, err)
		}
	}
	rq, err := envoyRequests(ctx, lab.Pod(waypointPod))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the waypoint's Envoy completed %v requests", rq)
	if rq < 6 {
		t.Errorf("the waypoint's Envoy completed %v requests, want the 6 it answered", rq)
	}
	// Reads of the waypoint's admin (meshbench's sampling, this check's
	// own) are not traffic it served.
	for range 3 {
		if _, err := envoyCounter(ctx, lab.Pod(waypointPod), "server.live"); err != nil {
			t.Fatal(err)
		}
	}
	if again, err := envoyRequests(ctx, lab.Pod(waypointPod)); err != nil || again != rq {
		t.Errorf("after 3 admin reads the waypoint's Envoy completed %v requests (%v), want still %v", again, err, rq)
	}
	if ps, err = d.WaitACKed(ctx, 30*time.Second); err != nil {
		logSync(t, ps)
		t.Error(err)
	}

	pids := []int{d.Proc.PID}
	for _, a := range d.Agents {
		pids = append(pids, a.PID)
	}
	for _, n := range lab.Nodes {
		pids = append(pids, n.Ztunnel.PID())
	}
	if err := lab.Close(); err != nil {
		t.Error(err)
	}
	for _, pid := range pids {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
			t.Errorf("process %d still runs after Close", pid)
		}
	}
	if left, err := netns.Named(prefix); err != nil || len(left) > 0 {
		t.Errorf("namespaces left: %v %v", left, err)
	}
}

// TestSubstrateRunIstiodWaypoint runs a whole waypoint cell (local.Run)
// with istiod configuring the ztunnels and the waypoint: two server
// replicas, the four ALLOW rules as AuthorizationPolicy objects (the
// waypoint-bound ones too, as a cluster cell applies them). Every
// request is answered 200 through the waypoint (its Envoy completed them
// all), the cell is valid, istiod's ACK table lists the waypoint and both
// ztunnels with every type ACKed, the waypoint is sampled under its
// topology name, and nothing is left after the run.
func TestSubstrateRunIstiodWaypoint(t *testing.T) {
	zbin := requirements(t)
	if testing.Short() {
		t.Skip("a whole waypoint cell with an API server, istiod, two ztunnels and a waypoint (~30 s)")
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
	mo := topology.DefaultOptions()
	mo.Mode, mo.Policies, mo.Replicas = topology.ModeWaypoint, 4, 2
	sub := &Substrate{Ztunnel: zbin, ControlPlane: ControlPlaneIstiod, Istio: b, Envoy: bin.Path}
	t.Chdir(t.TempDir())
	out := "run"
	o := local.Options{Settings: platform.Settings{Mesh: mo, Load: loadgen.OpenLoopPerSecond(50), Duration: 3 * time.Second},
		OutDir: out, Meshbench: mb, Substrate: sub, Envoy: bin}
	res, _ := runCell(t, o, checkRunGone)
	lr := res.Load
	if lr.Completed < 100 || lr.Success != lr.Completed {
		t.Errorf("%d of %d requests answered 200: %v %v", lr.Success, lr.Completed, lr.StatusCodes, lr.Errors)
	}
	if len(res.Manifest.Invalid) > 0 {
		t.Errorf("cell invalid: %v", res.Manifest.Invalid)
	}
	if got := res.Manifest.Derived["istiod_waypoint_requests"]; got < float64(lr.Completed) {
		t.Errorf("the waypoint completed %v requests over the cell, want the load's %d", got, lr.Completed)
	}
	acks, err := os.ReadFile(filepath.Join(out, results.NodeProxyDir, "istiod-acks.txt"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("istiod's ACK table kept with the cell:\n%s", acks)
	if !strings.Contains(string(acks), "waypoint.default") || strings.Count(string(acks), "ztunnel ") != 2 ||
		strings.Contains(string(acks), "NACK") || strings.Contains(string(acks), "pending") {
		t.Errorf("want the waypoint and both ztunnels, every type ACKed")
	}
	for _, l := range res.MeshCheck.Lines {
		t.Log(l)
	}
	names := map[string]string{}
	for _, p := range res.Manifest.Processes {
		names[p.Name] = p.Category
	}
	for name, cat := range map[string]string{"istiod": sample.CategoryControlPlane, "waypoint": sample.CategoryDataPlane,
		"waypoint" + local.AgentSuffix: sample.CategoryDataPlane, "ztunnel-node1": sample.CategoryDataPlane} {
		if names[name] != cat {
			t.Errorf("process %s sampled as %q, want %q (processes %v)", name, names[name], cat, names)
		}
	}
}
