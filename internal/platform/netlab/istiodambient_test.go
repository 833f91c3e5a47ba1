package netlab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/mesh/ztunnel"
	"github.com/meshbench/meshbench/internal/platform"
	"github.com/meshbench/meshbench/internal/platform/kube/labapi"
	"github.com/meshbench/meshbench/internal/platform/local"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestIstiodAmbient runs the real istiod against the lab's real API
// server configuring the real ztunnels of two nodes (no local config
// file): a request from the client pod to the server pod, and to the
// service's VIP, gets 200 through both ztunnels over HBONE; each
// ztunnel's config dump holds the workloads and the service as istiod
// sent them and certificates istiod's CA issued for its node's pods; an
// AuthorizationPolicy object makes the server's ztunnel refuse the
// attacker's identity while the client still gets 200; istiod's ACK table
// lists both ztunnels with their address and authorization types ACKed;
// Close leaves no process, namespace or API server file behind.
func TestIstiodAmbient(t *testing.T) {
	zbin := requirements(t)
	if testing.Short() {
		t.Skip("starts an API server, istiod and two ztunnels (~20 s)")
	}
	b := requireIstiod(t)
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
	enrolled := func(name string, id topology.Identity, svcs ...string) PodSpec {
		return PodSpec{Name: name, Identity: id, Enrolled: true, Services: svcs}
	}
	lab, err := Up(ctx, Options{Prefix: prefix, Subnet: subnet, Dir: filepath.Join(dir, "lab"), Log: testLog{t},
		Ztunnel: zbin, ZtunnelsFromXDS: true,
		Nodes: []NodeSpec{
			{Pods: []PodSpec{enrolled("client", topology.IdentityClient), enrolled("attacker", topology.IdentityAttacker)}},
			{Pods: []PodSpec{enrolled("server-0", topology.IdentityServer, "server")}},
		},
		Services: []ServiceSpec{{Name: "server", Namespace: "default", Port: 80, TargetPort: 8080}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer lab.Close()
	if _, err := os.Stat(filepath.Join(dir, "lab", "ztunnel.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the lab wrote a local ztunnel config with ZtunnelsFromXDS: %v", err)
	}

	lis, err := lab.Pod("server-0").Listen("tcp", "0.0.0.0:8080")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "peer="+r.RemoteAddr)
	})}
	go func() { _ = srv.Serve(lis) }()
	defer srv.Close()

	d, err := lab.StartIstiod(ctx, IstiodOptions{Build: b, API: api})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("API server ready in %v; istiod ready %v after StartIstiod began; 2 ztunnels ready in %v more; %v in all",
		api.StartTime.Round(time.Millisecond), d.StartTime.Round(time.Millisecond), d.SidecarsTime.Round(time.Millisecond),
		time.Since(t0).Round(time.Millisecond))
	ps, err := d.WaitACKed(ctx, 60*time.Second)
	logSync(t, ps)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 {
		t.Fatalf("istiod lists %d proxies, want the 2 ztunnels", len(ps))
	}
	for _, p := range ps {
		if p.Type != "ztunnel" || !p.Types["WDS"].ACKed() || !p.Types["WDS-authz"].ACKed() {
			t.Errorf("istiod's ACK table: %s (%s) %v: want a ztunnel with WDS (Address) and WDS-authz (Authorization) ACKed", p.Proxy, p.Type, p.Types)
		}
	}

	get := func(pod, url string) (int, string, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := lab.Pod(pod).HTTPClient(false).Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), nil
	}
	podURL := "http://" + lab.Pod("server-0").IP.String() + ":8080/"
	vipURL := "http://" + lab.Services["server"].String() + ":80/"
	for _, url := range []string{podURL, vipURL} {
		code, body, err := get("client", url)
		if err != nil || code != 200 {
			t.Fatalf("client → %s: %d %q %v", url, code, body, err)
		}
		t.Logf("client → %s: %d %s", url, code, body)
	}

	if code, _, err := get("attacker", podURL); err != nil || code != 200 {
		t.Fatalf("attacker → server before the policy: %d %v", code, err)
	}

	// Over HBONE: the server's ztunnel took the connections as mTLS.
	text, err := lab.Pod("server-0").Node.Ztunnel.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ztunnel.ParseMetrics(text)
	if err != nil {
		t.Fatal(err)
	}
	if got := c[ztunnel.Series{Metric: "istio_tcp_connections_opened_total", Reporter: "destination", Security: "mutual_tls"}]; got < 3 {
		t.Errorf("the server's ztunnel counted %v mTLS connections in, want the client's two and the attacker's: %v", got, c)
	}

	// Each ztunnel's config came from istiod: its dump holds the
	// workloads as istiod names them, the service, and certificates for
	// its node's pods from istiod's CA.
	root, err := d.rootCert(ctx, "istio-system")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range lab.Nodes {
		raw, err := n.Ztunnel.ConfigDump(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sum, err := ztunnel.SummarizeDump(raw, "Kubernetes", root)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s's ztunnel config dump: %s", n.Name, sum)
		if sum.FromCluster < 3 || sum.Services < 1 || sum.Policies < 1 {
			t.Errorf("%s's ztunnel holds %+v: want the three pods and the service as istiod sends them, and istiod's policy", n.Name, sum)
		}
		for _, p := range n.Pods {
			id := "spiffe://cluster.local/ns/default/sa/" + p.Spec.Identity.ServiceAccount
			if !sum.Certificates[id] {
				t.Errorf("%s's ztunnel has no certificate from istiod's CA for %s: %v", n.Name, id, sum.Certificates)
			}
		}
	}

	if err := api.Client.Apply(ctx, []runtime.Object{allowOnly("server", topology.IdentityClient)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body, err := get("attacker", podURL)
		if err != nil {
			t.Logf("attacker → server after the AuthorizationPolicy: refused at L4: %v", err)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the AuthorizationPolicy did not refuse the attacker in 30 s: %d %q", code, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if code, body, err := get("client", podURL); err != nil || code != 200 {
		t.Errorf("client → server under the policy: %d %q %v", code, body, err)
	}
	if ps, err = d.WaitACKed(ctx, 30*time.Second); err != nil {
		logSync(t, ps)
		t.Error(err)
	}

	pids := []int{d.Proc.PID}
	for _, n := range lab.Nodes {
		pids = append(pids, n.Ztunnel.PID())
	}
	closedClean(t, api, apiDir, prefix, pids, lab)
}

// TestSubstrateRunIstiodAmbient runs a whole ambient cell (local.Run)
// with the ztunnels configured and certified by istiod: two server
// replicas on their own node, the four ALLOW rules as AuthorizationPolicy
// objects. Every request is answered 200 and the cell is valid (the
// ztunnels' own counters show mTLS); istiod's ACK table is kept with the
// cell, both ztunnels with WDS and WDS-authz ACKed; each ztunnel's config
// dump is kept, its workloads from istiod and its certificates from
// istiod's root; the ztunnels are sampled as the node proxies, istiod as
// the control plane, the API server as overhead; the manifest names
// istiod; nothing is left after the run.
func TestSubstrateRunIstiodAmbient(t *testing.T) {
	zbin := requirements(t)
	if testing.Short() {
		t.Skip("a whole ambient cell with an API server, istiod and two ztunnels (~25 s)")
	}
	b := requireIstiod(t)
	mb := testutil.BuildMeshbench(t)
	mo := topology.DefaultOptions()
	mo.Mode, mo.Policies, mo.Replicas = topology.ModeAmbient, 4, 2
	sub := &Substrate{Ztunnel: zbin, ControlPlane: ControlPlaneIstiod, Istio: b}
	t.Chdir(t.TempDir())
	out := "run"
	o := local.Options{Settings: platform.Settings{Mesh: mo, Load: loadgen.OpenLoopPerSecond(50), Duration: 3 * time.Second},
		OutDir: out, Meshbench: mb, Substrate: sub}
	res, _ := runCell(t, o, checkRunGone)
	lr := res.Load
	wantAllOK(t, lr, 100)
	if len(res.Manifest.Invalid) > 0 {
		t.Errorf("cell invalid: %v", res.Manifest.Invalid)
	}
	cp, _ := res.Manifest.Options["control_plane"].(map[string]any)
	if cp["name"] != ControlPlaneIstiod || !strings.HasPrefix(fmt.Sprint(cp["what"]), "ztunnels:") {
		t.Errorf("manifest's control_plane %v, want istiod configuring the ztunnels", cp)
	}
	raw := filepath.Join(out, results.NodeProxyDir)
	acks, err := os.ReadFile(filepath.Join(raw, "istiod-acks.txt"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("istiod's ACK table kept with the cell:\n%s", acks)
	if strings.Count(string(acks), "ztunnel ") != 2 || strings.Contains(string(acks), "NACK") || strings.Contains(string(acks), "pending") {
		t.Errorf("want both ztunnels, every type ACKed")
	}
	for _, want := range []string{"WDS", "WDS-authz"} {
		if !strings.Contains(string(acks), want) {
			t.Errorf("the ACK table lacks %s", want)
		}
	}
	var dumps int
	for _, line := range res.MeshCheck.Lines {
		if strings.Contains(line, "'s config dump: ") {
			t.Log(line)
			dumps++
		}
	}
	if dumps != 2 {
		t.Errorf("run says %d ztunnel config dump summaries, want 2: %q", dumps, res.MeshCheck.Lines)
	}
	for _, n := range []string{"node1", "node2"} {
		if _, err := os.Stat(filepath.Join(raw, "ztunnel-"+n+".config_dump.json")); err != nil {
			t.Errorf("ztunnel-%s's config dump not kept: %v", n, err)
		}
	}
	names := map[string]string{}
	for _, p := range res.Manifest.Processes {
		names[p.Name] = p.Category
	}
	for name, cat := range map[string]string{"istiod": sample.CategoryControlPlane, "lab kube-apiserver": sample.CategoryOverhead,
		"ztunnel-node1": sample.CategoryDataPlane, "ztunnel-node2": sample.CategoryDataPlane} {
		if names[name] != cat {
			t.Errorf("process %s sampled as %q, want %q (processes %v)", name, names[name], cat, names)
		}
	}
}
