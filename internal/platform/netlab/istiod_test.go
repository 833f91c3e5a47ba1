package netlab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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

// TestIstiodSidecars runs the real istiod against the lab's real API
// server and, in three pod namespaces, pilot-agent with upstream Envoy:
// a request from the client pod to the server's VIP gets 200 through
// both sidecars over mTLS with the identities istiod's CA issued (the
// server sidecar's XFCC names both), an AuthorizationPolicy object
// refuses the attacker's identity (403), istiod's ACK table lists every
// sidecar with every type ACKed, and Close leaves no process, namespace
// or API server file behind.
func TestIstiodSidecars(t *testing.T) {
	testutil.RequireRoot(t, "netlab: needs root to make network namespaces")
	if testing.Short() {
		t.Skip("starts an API server, istiod and three sidecars (~20 s)")
	}
	b := requireIstiod(t)
	envoyBin := findEnvoy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	subnet, prefix := freeLab(t, map[string]bool{})
	dir := t.TempDir()
	apiDir := filepath.Join(dir, "api")
	t0 := time.Now()
	api, err := labapi.Start(ctx, labapi.Options{Dir: apiDir, ServiceCIDR: ServiceCIDR(subnet)})
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	sidecar := func(name string, id topology.Identity, svcs ...string) PodSpec {
		return PodSpec{Name: name, Identity: id, Sidecar: true, Services: svcs}
	}
	lab, err := Up(ctx, Options{Prefix: prefix, Subnet: subnet, Dir: filepath.Join(dir, "lab"), Log: testLog{t},
		Nodes: []NodeSpec{
			{Pods: []PodSpec{sidecar("client", topology.IdentityClient), sidecar("attacker", topology.IdentityAttacker)}},
			{Pods: []PodSpec{sidecar("server-0", topology.IdentityServer, "server")}},
		},
		Services: []ServiceSpec{{Name: "server", Namespace: "default", Port: 80, TargetPort: 8080}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer lab.Close()

	// The app: who called it, as the server sidecar tells (XFCC).
	lis, err := lab.Pod("server-0").Listen("tcp", "0.0.0.0:8080")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "xfcc=%s", r.Header.Get("X-Forwarded-Client-Cert"))
	})}
	go func() { _ = srv.Serve(lis) }()
	defer srv.Close()

	d, err := lab.StartIstiod(ctx, IstiodOptions{Build: b, Envoy: envoyBin.Path, API: api})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("API server ready in %v; istiod ready %v after StartIstiod began; 3 sidecars ready in %v more; %v in all",
		api.StartTime.Round(time.Millisecond), d.StartTime.Round(time.Millisecond), d.SidecarsTime.Round(time.Millisecond),
		time.Since(t0).Round(time.Millisecond))
	ps, err := d.WaitACKed(ctx, 60*time.Second)
	logSync(t, ps)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 3 {
		t.Fatalf("istiod lists %d proxies, want the 3 sidecars", len(ps))
	}

	vip := "http://" + lab.Services["server"].String() + ":80/"
	get := func(pod string) (int, string, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, vip, nil)
		resp, err := lab.Pod(pod).HTTPClient(false).Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), nil
	}
	code, body, err := get("client")
	if err != nil || code != 200 {
		t.Fatalf("client → server: %d %q %v", code, body, err)
	}
	for _, want := range []string{"By=spiffe://cluster.local/ns/default/sa/server", "URI=spiffe://cluster.local/ns/default/sa/client"} {
		if !strings.Contains(body, want) {
			t.Errorf("the server sidecar's XFCC %q lacks %s: not mTLS with istiod's identities", body, want)
		}
	}
	t.Logf("client → server: %d, %s", code, body)
	if code, _, err := get("attacker"); err != nil || code != 200 {
		t.Fatalf("attacker → server before the policy: %d %v", code, err)
	}

	if err := api.Client.Apply(ctx, []runtime.Object{allowOnly("server", topology.IdentityClient)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body, err := get("attacker")
		if err == nil && code == 403 {
			t.Logf("attacker → server after the AuthorizationPolicy: %d %q", code, body)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the AuthorizationPolicy did not refuse the attacker in 30 s: %d %q %v", code, body, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if code, body, err := get("client"); err != nil || code != 200 {
		t.Errorf("client → server under the policy: %d %q %v", code, body, err)
	}
	if ps, err = d.WaitACKed(ctx, 30*time.Second); err != nil {
		logSync(t, ps)
		t.Error(err)
	}

	pids := []int{d.Proc.PID}
	for _, a := range d.Agents {
		pids = append(pids, a.PID)
	}
	closedClean(t, api, apiDir, prefix, pids, lab)
}

// closedClean closes cs in order (the lab's parts, the lab, then its API
// server api) and checks that nothing of them is left: none of pids, nor
// the API server's etcd and kube-apiserver, still runs; no namespace
// named with prefix; no API server directory apiDir.
func closedClean(t *testing.T, api *labapi.Server, apiDir, prefix string, pids []int, cs ...interface{ Close() error }) {
	t.Helper()
	etcdPID, apiPID := api.PIDs()
	pids = append(pids, etcdPID, apiPID)
	for _, c := range append(cs, api) {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}
	for _, pid := range pids {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
			t.Errorf("process %d still runs after Close", pid)
		}
	}
	if left, err := netns.Named(prefix); err != nil || len(left) > 0 {
		t.Errorf("namespaces left: %v %v", left, err)
	}
	if _, err := os.Stat(apiDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the API server's files are left in %s: %v", apiDir, err)
	}
}

// allowOnly is an AuthorizationPolicy on svc's pods allowing only id.
func allowOnly(svc string, id topology.Identity) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy",
		"metadata": map[string]any{"name": "allow-" + id.ServiceAccount, "namespace": "default"},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{labelService + svc: "true"}},
			"action":   "ALLOW",
			"rules": []any{map[string]any{"from": []any{map[string]any{"source": map[string]any{
				"principals": []any{"cluster.local/ns/" + id.Namespace + "/sa/" + id.ServiceAccount}}}}}},
		},
	}}
}

func logSync(t *testing.T, ps []istio.ProxySync) {
	t.Helper()
	for _, r := range istio.SyncRows(ps) {
		t.Logf("istiod ACK table: %-20s %-8s %v", r.Proxy, r.Type, r.States)
	}
}

type testLog struct{ t *testing.T }

func (w testLog) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// TestSubstrateRunIstiod runs a whole sidecar cell (local.Run) with the
// sidecars configured by istiod: two server replicas behind the service's
// VIP, the four ALLOW rules as AuthorizationPolicy objects. Every
// request is answered 200; both replicas' sidecars accepted TLS
// handshakes; istiod's ACK table is kept with the cell, every sidecar
// ACKed; the sidecars (Envoy and pilot-agent), istiod and the lab's API
// server are sampled under their names; the manifest names istiod as the
// control plane; nothing is left after the run.
//
// The substrate shares its API server as a plan's does (ShareAPI): after
// the cell its objects are gone but Istio's CRDs (labapi's Clean), and a
// second topology (one replica, no policies) runs on the same API server
// (the same PIDs and start in both manifests) with an ACK table of its
// own pods only; the substrate's Close stops it.
func TestSubstrateRunIstiod(t *testing.T) {
	testutil.RequireRoot(t, "netlab: needs root to make network namespaces")
	if testing.Short() {
		t.Skip("a whole cell with an API server, istiod and three sidecars (~30 s)")
	}
	b := requireIstiod(t)
	bin := findEnvoy(t)
	mb := testutil.BuildMeshbench(t)
	mo := topology.DefaultOptions()
	mo.Mode, mo.Policies, mo.Replicas = topology.ModeSidecar, 4, 2
	sub := &Substrate{ControlPlane: ControlPlaneIstiod, Istio: b, Envoy: bin.Path, ShareAPI: true}
	t.Cleanup(func() { _ = sub.Close() })
	// A results directory relative to where meshbench runs, as a user's
	// results/TIME-MESH is: istiod and the pilot-agents run in their own
	// directories and must still find their files.
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
	cp, _ := res.Manifest.Options["control_plane"].(map[string]any)
	if cp["name"] != ControlPlaneIstiod {
		t.Errorf("manifest's control_plane %v, want istiod", cp)
	}
	if got := res.Manifest.Derived["istiod_server_tls_handshakes"]; got < 2 {
		t.Errorf("the server sidecars accepted %v TLS handshakes, want at least one per replica", got)
	}
	acks, err := os.ReadFile(filepath.Join(out, results.NodeProxyDir, "istiod-acks.txt"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("istiod's ACK table kept with the cell:\n%s", acks)
	for _, pod := range []string{"client.default", "server-0.default", "server-1.default"} {
		if !strings.Contains(string(acks), pod) {
			t.Errorf("the ACK table lacks %s", pod)
		}
	}
	if strings.Contains(string(acks), "NACK") || strings.Contains(string(acks), "pending") {
		t.Errorf("not every type ACKed")
	}
	names := map[string]string{}
	for _, p := range res.Manifest.Processes {
		names[p.Name] = p.Category
	}
	for name, cat := range map[string]string{"istiod": sample.CategoryControlPlane, "lab kube-apiserver": sample.CategoryOverhead} {
		if names[name] != cat {
			t.Errorf("process %s sampled as %q, want %q (processes %v)", name, names[name], cat, names)
		}
	}
	for _, name := range []string{"client-sidecar", "server-0-sidecar", "server-1-sidecar"} {
		if names[name] != sample.CategoryDataPlane {
			t.Errorf("no data-plane process %s, as the hand-rendered sidecar is named (processes %v)", name, names)
		}
	}
	agents := 0
	for name, cat := range names {
		if strings.HasSuffix(name, " pilot-agent") && cat == sample.CategoryDataPlane {
			agents++
		}
	}
	if agents != 3 {
		t.Errorf("%d pilot-agents sampled in the data plane, want 3 (processes %v)", agents, names)
	}
	d := res.Manifest.Derived
	if per, all := d["data_plane_pss_mib_per_proxy"], d["data_plane_pss_mib_avg"]; all > 0 && math.Abs(per*3-all) > 0.01 {
		t.Errorf("PSS per proxy %.2f MiB of %.2f: want it per sidecar (3), pilot-agent with its Envoy", per, all)
	}

	// The next topology of a plan, on the same API server.
	first := apiServerRecord(t, res.Manifest)
	srv := sub.api.srv
	if srv == nil {
		t.Fatal("the substrate holds no shared API server after the cell")
	}
	kept, err := srv.Clean(context.Background())
	if err != nil {
		t.Errorf("after the first topology: %v", err)
	}
	if len(kept) == 0 {
		t.Errorf("after the first topology: no CRD kept for the next lab, want Istio's")
	}
	mo.Policies, mo.Replicas = 0, 1
	o.Settings.Mesh, o.OutDir = mo, "run2"
	t0 := time.Now()
	res2, _ := runCell(t, o, checkRunGone)
	t.Logf("the second topology's cell on the shared API server: %v", time.Since(t0).Round(time.Millisecond))
	wantAllOK(t, res2.Load, 100)
	if len(res2.Manifest.Invalid) > 0 {
		t.Errorf("second topology's cell invalid: %v", res2.Manifest.Invalid)
	}
	second := apiServerRecord(t, res2.Manifest)
	for _, k := range []string{"shared", "started", "etcd_pid", "kube_apiserver_pid"} {
		if fmt.Sprint(first[k]) != fmt.Sprint(second[k]) {
			t.Errorf("api_server %s: %v then %v, want one API server for both topologies", k, first[k], second[k])
		}
	}
	if first["shared"] != true || fmt.Sprint(first["lab"], second["lab"]) != "1 2" {
		t.Errorf("api_server records %v then %v: want shared, labs 1 then 2", first, second)
	}
	acks2, err := os.ReadFile(filepath.Join("run2", results.NodeProxyDir, "istiod-acks.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(acks2), "server-0.default") || strings.Contains(string(acks2), "server-1.default") {
		t.Errorf("second topology's ACK table, want its own pods only (server-0, not the first's server-1):\n%s", acks2)
	}
	etcd, api := srv.PIDs()
	if err := sub.Close(); err != nil {
		t.Error(err)
	}
	for _, pid := range []int{etcd, api} {
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("the shared API server's process %d outlived the substrate's Close", pid)
		}
	}
	if _, err := os.Stat(srv.Dir); !os.IsNotExist(err) {
		t.Errorf("the shared API server's directory %s is still there: %v", srv.Dir, err)
	}
}

// apiServerRecord is the manifest's control_plane.api_server.
func apiServerRecord(t *testing.T, m *results.RunManifest) map[string]any {
	t.Helper()
	cp, _ := m.Options["control_plane"].(map[string]any)
	rec, _ := cp["api_server"].(map[string]any)
	if rec == nil {
		t.Fatalf("manifest's control_plane %v has no api_server", cp)
	}
	return rec
}

// requireIstiod is the istiod build (make istio-tools) and the lab API
// server's binaries (make k8s-tools) that a test of istiod on the lab
// needs: the test is skipped without them, or fails where
// MESHBENCH_REQUIRE_K8S asks for them.
func requireIstiod(t *testing.T) istio.Build {
	t.Helper()
	b, err := istio.Open(istio.DefaultDir())
	if err != nil {
		testutil.SkipOrFail(t, "netlab: "+err.Error())
	}
	if _, _, err := labapi.Check(); err != nil {
		testutil.SkipOrFail(t, "netlab: "+err.Error())
	}
	return b
}
