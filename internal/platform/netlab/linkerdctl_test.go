package netlab

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/mesh/linkerd"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/controlplane"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/release"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform"
	"github.com/meshbench/meshbench/internal/platform/kube/labapi"
	"github.com/meshbench/meshbench/internal/platform/local"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// linkerdBuild is Linkerd's build (make linkerd-tools) and the lab API
// server's binaries; skipped without them (failed under make test).
func linkerdBuild(t *testing.T) release.Build {
	t.Helper()
	b, err := release.Open(release.DefaultDir())
	if err != nil {
		testutil.SkipOrFail(t, "netlab: "+err.Error())
	}
	if _, _, err := labapi.Check(); err != nil {
		testutil.SkipOrFail(t, "netlab: "+err.Error())
	}
	return b
}

// TestLinkerdControllers runs Linkerd's real identity, destination and
// policy controllers against the lab's real API server and, in three pod
// namespaces, the real linkerd2-proxy configured and certified by them:
// a request from the client pod to the server's VIP gets 200 over mTLS
// with the identities the identity controller issued (the proxies'
// own metrics: tls="true" with the peers' client_id and server_id, the
// certificate's expiry, the endpoints destination resolved); a Server,
// AuthorizationPolicy and MeshTLSAuthentication allowing only the client
// make the policy controller refuse the attacker's identity (403) while
// the client still gets 200; Close leaves no process, namespace or API
// server file behind.
func TestLinkerdControllers(t *testing.T) {
	bin := linkerdProxy(t)
	if testing.Short() {
		t.Skip("starts an API server, Linkerd's three controllers and three proxies (~20 s)")
	}
	b := linkerdBuild(t)
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
	pod := func(name string, id topology.Identity, svcs ...string) PodSpec {
		return PodSpec{Name: name, Identity: id, Services: svcs}
	}
	lab, err := Up(ctx, Options{Prefix: prefix, Subnet: subnet, Dir: filepath.Join(dir, "lab"), Log: testLog{t},
		Nodes: []NodeSpec{
			{Pods: []PodSpec{pod("client", topology.IdentityClient), pod("attacker", topology.IdentityAttacker)}},
			{Pods: []PodSpec{pod("server-0", topology.IdentityServer, "server")}},
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
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
	go func() { _ = srv.Serve(lis) }()
	defer srv.Close()

	c, err := lab.StartLinkerdControllers(ctx, LinkerdControllersOptions{Build: b, API: api, Proxy: bin})
	if err != nil {
		t.Fatal(err)
	}
	// The proxies' user reads its identity files there: a directory
	// every user can traverse (t.TempDir's parent is not).
	proxies, err := os.MkdirTemp("", "meshbench-linkerd-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(proxies)
	if err := os.Chmod(proxies, 0o755); err != nil {
		t.Fatal(err)
	}
	o := linkerd.Options{Proxy: bin, Dir: proxies, CA: c.Anchor, Controllers: c.Controllers(),
		ProfileNetworks: []netip.Prefix{subnet}, Log: testLog{t}}
	for _, name := range []string{"client", "attacker", "server-0"} {
		p := lab.Pod(name)
		lp := linkerd.Pod{Name: name, Identity: p.Spec.Identity, IP: p.IP, NS: p.NS, Meshed: true}
		if name == "server-0" {
			lp.Services, lp.Ports = []string{"server"}, []int{8080}
		}
		o.Pods = append(o.Pods, lp)
	}
	m, err := linkerd.Up(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	t.Logf("API server ready in %v; controllers %v after they began (%v); 3 proxies certified in %v; %v in all",
		api.StartTime.Round(time.Millisecond), c.StartTime.Round(time.Millisecond), c.Ready, m.ReadyIn.Round(time.Millisecond),
		time.Since(t0).Round(time.Millisecond))

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
	for range 5 {
		if code, body, err := get("client"); err != nil || code != 200 {
			t.Fatalf("client → server: %d %q %v", code, body, err)
		}
	}
	if code, _, err := get("attacker"); err != nil || code != 200 {
		t.Fatalf("attacker → server before the policy: %d %v", code, err)
	}

	stats, err := m.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := linkerdDiagnostics(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range diagnosticsLines(rows) {
		t.Log(line)
	}
	if bad := diagnosticsInvalid(rows); len(bad) > 0 {
		t.Errorf("diagnostics: %v", bad)
	}
	// Three proxies and the controllers' pods' own two.
	if n, err := c.Certified(ctx); err != nil || n != 5 {
		t.Errorf("the identity controller issued %v certificates (%v), want one per proxy (5)", n, err)
	}
	// The proxies reached identity, destination and policy over TLS only,
	// verifying the pods' identities (their counters), and the pods'
	// proxies received every request over TLS (their inbound counters):
	// the Certify calls at the identity pod, destination's and policy's
	// at the destination pod.
	texts, err := c.PodsMetrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pods, err := PodsInbound(texts)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(texts[destinationPod], "\n") {
		if strings.HasPrefix(line, `request_total{direction="inbound"`) {
			t.Log(line)
		}
	}
	for _, r := range rows {
		if n := r.IdentityRequests + r.DestinationRequests + r.PolicyRequests; r.IdentityRequests < 1 || r.ControllersTLS < n {
			t.Errorf("%s's proxy: %v requests to the controllers (%v to identity), %v over TLS to their pods' identities", r.Pod, n, r.IdentityRequests, r.ControllersTLS)
		}
	}
	proof := controllersProof(pods, rows)
	for _, line := range proof.Lines {
		t.Log(line)
	}
	for _, pod := range []string{identityPod, destinationPod} {
		t.Logf("%s's proxy: inbound by client_id %v; its control requests %v (server_id %v)", pod, pods[pod].ClientIDs, pods[pod].Control, pods[pod].ControlServerIDs)
	}
	// Three Certify calls and the destination pod's proxy's.
	if len(proof.Invalid) > 0 || proof.InboundTLS[identityPod] < 4 || proof.InboundTLS[destinationPod] < 3 {
		t.Errorf("the controllers' pods' proxies: %v (over TLS %v)", proof.Invalid, proof.InboundTLS)
	}
	clientID, serverID := controlplane.Name(topology.IdentityClient), controlplane.Name(topology.IdentityServer)
	if s := stats["server-0"]; s.ClientIDs[clientID] < 5 || s.InboundPlain != 0 {
		t.Errorf("server-0's proxy: %v requests from %s over mTLS, %v in plaintext; want ≥ 5 and 0", s.ClientIDs[clientID], clientID, s.InboundPlain)
	}
	if s := stats["client"]; s.ServerIDs[serverID] < 5 || s.OutboundPlain != 0 {
		t.Errorf("client's proxy: %v requests to %s over mTLS, %v in plaintext; want ≥ 5 and 0", s.ServerIDs[serverID], serverID, s.OutboundPlain)
	}

	if err := api.Client.Apply(ctx, linkerdAllowOnly("server", topology.IdentityClient)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body, err := get("attacker")
		if err == nil && code == 403 {
			t.Logf("attacker → server after the Server, AuthorizationPolicy and MeshTLSAuthentication: %d %q", code, body)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the policy controller did not refuse the attacker in 30 s: %d %q %v", code, body, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The Server alone denies everyone, so the attacker's 403 can come
	// before the policy controller has served the client's authorization:
	// the client's 200 is waited for within the same deadline.
	for {
		code, body, err := get("client")
		if err == nil && code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("client → server under the policy: %d %q %v (30 s after the policy)", code, body, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	stats, err = m.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	attackerID := controlplane.Name(topology.IdentityAttacker)
	if stats["server-0"].Denied[attackerID] < 1 {
		t.Errorf("server-0's proxy denied %v, want the attacker's identity %s", stats["server-0"].Denied, attackerID)
	}

	pids := []int{c.Identity.PID, c.Destination.PID, c.Policy.PID,
		c.IdentityProxy.Proxies[identityPod].PID(), c.DestinationProxy.Proxies[destinationPod].PID()}
	for _, p := range m.Proxies {
		pids = append(pids, p.PID())
	}
	closedClean(t, api, apiDir, prefix, pids, m, lab)
}

// linkerdAllowOnly are a Server on svc's pods' port 8080, and an
// AuthorizationPolicy with a MeshTLSAuthentication allowing only id.
func linkerdAllowOnly(svc string, id topology.Identity) []runtime.Object {
	obj := func(apiVersion, kind, name string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind,
			"metadata": map[string]any{"name": name, "namespace": "default"}, "spec": spec}}
	}
	name := "allow-" + id.ServiceAccount
	return []runtime.Object{
		obj("policy.linkerd.io/v1beta3", "Server", svc, map[string]any{
			"podSelector": map[string]any{"matchLabels": map[string]any{labelService + svc: "true"}}, "port": int64(8080)}),
		obj("policy.linkerd.io/v1alpha1", "MeshTLSAuthentication", name, map[string]any{
			"identityRefs": []any{map[string]any{"kind": "ServiceAccount", "name": id.ServiceAccount, "namespace": id.Namespace}}}),
		obj("policy.linkerd.io/v1alpha1", "AuthorizationPolicy", name, map[string]any{
			"targetRef": map[string]any{"group": "policy.linkerd.io", "kind": "Server", "name": svc},
			"requiredAuthenticationRefs": []any{map[string]any{
				"group": "policy.linkerd.io", "kind": "MeshTLSAuthentication", "name": name}}}),
	}
}

// diagnosticsLines prints rows as run does.
func diagnosticsLines(rows []DiagnosticsRow) []string {
	return strings.Split(strings.TrimRight(diagnosticsTable(rows), "\n"), "\n")
}

// TestSubstrateRunLinkerd runs a whole linkerd cell (local.Run) with the
// proxies configured and certified by Linkerd's own controllers: two
// server replicas, the four ALLOW rules as Server, AuthorizationPolicy
// and MeshTLSAuthentication objects. Every request is answered 200 over
// mTLS (the proxies' counters); the diagnostics table, kept with the
// cell, shows every proxy certified by the identity controller and
// configured by the policy controller; the controllers are sampled as the
// control plane, the API server as overhead; the manifest names Linkerd's
// controllers; nothing is left after the run.
func TestSubstrateRunLinkerd(t *testing.T) {
	bin := linkerdProxy(t)
	if testing.Short() {
		t.Skip("a whole cell with an API server, Linkerd's controllers and three proxies (~20 s)")
	}
	b := linkerdBuild(t)
	mb := testutil.BuildMeshbench(t)
	mo := topology.DefaultOptions()
	mo.Mode, mo.Policies, mo.Replicas = topology.ModeLinkerd, 4, 2
	sub := &Substrate{LinkerdProxy: bin, Meshbench: mb, ControlPlane: ControlPlaneLinkerd, Linkerd: b}
	// A relative results directory, as a user's results/TIME-MESH is.
	t.Chdir(t.TempDir())
	out := "run"
	o := local.Options{Settings: platform.Settings{Mesh: mo, Load: loadgen.OpenLoopPerSecond(200), Duration: 3 * time.Second},
		OutDir: out, Meshbench: mb, Substrate: sub}
	res, log := runCell(t, o, checkLinkerdGone)
	lr := res.Load
	wantAllOK(t, lr, 500)
	if len(res.Manifest.Invalid) > 0 {
		t.Errorf("cell invalid: %v", res.Manifest.Invalid)
	}
	d := res.Manifest.Derived
	if d["linkerd_mtls_requests"] < 2*float64(lr.Completed) || d["linkerd_plaintext_requests"] != 0 {
		t.Errorf("derived mTLS %v plaintext %v, want ≥ %d and 0", d["linkerd_mtls_requests"], d["linkerd_plaintext_requests"], 2*lr.Completed)
	}
	if d["linkerd_controller_certificates"] < 5 {
		t.Errorf("the identity controller issued %v certificates, want one per proxy (3, and the controllers' pods' 2)", d["linkerd_controller_certificates"])
	}
	if d["linkerd_identity_inbound_tls"] < 4 || d["linkerd_identity_inbound_plain"] != 0 || d["linkerd_controllers_inbound_plain"] != 0 {
		t.Errorf("the controllers' pods' proxies' inbound: identity %v over TLS, %v in plaintext; destination %v in plaintext; want ≥ 4, 0, 0",
			d["linkerd_identity_inbound_tls"], d["linkerd_identity_inbound_plain"], d["linkerd_controllers_inbound_plain"])
	}
	cp, _ := res.Manifest.Options["control_plane"].(map[string]any)
	if cp["name"] != ControlPlaneLinkerd {
		t.Errorf("manifest's control_plane %v, want linkerd", cp)
	}
	diag, err := os.ReadFile(filepath.Join(out, results.NodeProxyDir, "linkerd-diagnostics.txt"))
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	t.Logf("kept with the cell:\n%s", diag)
	// The proxies reached identity, destination and policy over TLS
	// only: the controllers' pods' proxies' inbound counters.
	for _, pod := range []string{"identity", "destination"} {
		if !regexp.MustCompile(`The ` + pod + ` pod's proxy .* received [1-9][0-9]* requests over TLS \(tls="true".*\) and 0 in plaintext`).Match(diag) {
			t.Errorf("the diagnostics lack the %s pod's proxy's inbound TLS proof", pod)
		}
	}
	for _, pod := range []string{"client", "server-0", "server-1"} {
		if !strings.Contains(string(diag), pod+" ") {
			t.Errorf("the diagnostics table lacks %s", pod)
		}
	}
	// The load calls the service's VIP: the client's proxy balances over
	// the two endpoints destination resolved.
	var client DiagnosticsRow
	for _, line := range strings.Split(string(diag), "\n") {
		if f := strings.Fields(line); len(f) > 8 && f[0] == "client" {
			client.Endpoints, _ = strconv.ParseFloat(f[8], 64)
		}
	}
	if client.Endpoints != 2 {
		t.Errorf("the client's proxy balanced over %v endpoints, want the 2 replicas destination resolved", client.Endpoints)
	}
	names := map[string]string{}
	for _, p := range res.Manifest.Processes {
		names[p.Name] = p.Category
	}
	for name, cat := range map[string]string{"linkerd-identity": sample.CategoryControlPlane, "linkerd-destination": sample.CategoryControlPlane,
		"linkerd-policy": sample.CategoryControlPlane, LinkerdControllersProxyName: sample.CategoryControlPlane,
		LinkerdIdentityProxyName: sample.CategoryControlPlane, "lab kube-apiserver": sample.CategoryOverhead, "client-linkerd-proxy": sample.CategoryDataPlane} {
		if names[name] != cat {
			t.Errorf("process %s sampled as %q, want %q (processes %v)", name, names[name], cat, names)
		}
	}
	if _, ok := names[ControlPlaneName]; ok {
		t.Errorf("the lab's stand-in control plane ran beside Linkerd's controllers")
	}
	if _, err := os.Stat(filepath.Join(out, "netns", "linkerd-controllers", "issuer")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the identity issuer's key is kept with the results (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(out, "netns", "linkerd-controllers", "logs", "linkerd-identity.log")); err != nil {
		t.Errorf("the identity controller's log is not kept: %v", err)
	}
}

// TestSubstrateRunLinkerdFaces: a faces cell (face calling smiley over
// HTTP and color over gRPC, two replicas each, policies 5) configured
// and certified by Linkerd's controllers on the lab API server, which
// holds the three Services and their pods: face's calls go to the
// backends' VIPs, its pod's capture hands them to its proxy, which
// destination tells where the backends' pods are; the cell is valid,
// every backend took face's requests over mTLS with face's identity and
// none in plaintext, face's proxies sent each backend at least as many
// as the load completed, and the
// policy objects (Server, AuthorizationPolicy, MeshTLSAuthentication)
// allowed them (nothing denied).
func TestSubstrateRunLinkerdFaces(t *testing.T) {
	bin := linkerdProxy(t)
	if testing.Short() {
		t.Skip("a faces cell with an API server, Linkerd's controllers and seven proxies (~20 s)")
	}
	b := linkerdBuild(t)
	mb := testutil.BuildMeshbench(t)
	mo := topology.DefaultOptions()
	mo.Mode, mo.App, mo.Policies, mo.Replicas = topology.ModeLinkerd, topology.AppFaces, 5, 2
	sub := &Substrate{LinkerdProxy: bin, Meshbench: mb, ControlPlane: ControlPlaneLinkerd, Linkerd: b}
	t.Chdir(t.TempDir())
	o := local.Options{Settings: platform.Settings{Mesh: mo, Load: loadgen.OpenLoopPerSecond(100), Duration: 2 * time.Second},
		OutDir: "run", Meshbench: mb, Substrate: sub}
	res, log := runCell(t, o, checkLinkerdGone)
	lr := res.Load
	wantAllOK(t, lr, 150)
	if len(res.Manifest.Invalid) > 0 {
		t.Errorf("cell invalid: %v\n%s", res.Manifest.Invalid, log.String())
	}
	d := res.Manifest.Derived
	for _, b := range []string{"smiley", "color"} {
		sent, took, plain := d["linkerd_faces_"+b+"_sent"], d["linkerd_faces_"+b+"_took"], d["linkerd_faces_"+b+"_plain"]
		if took < float64(lr.Completed) || sent < float64(lr.Completed) || plain != 0 {
			t.Errorf("%s: face's proxies sent %v over mTLS, %s's took %v from face's identity and %v in plaintext; want both ≥ %d, and 0",
				b, sent, b, took, plain, lr.Completed)
		}
	}
	if d["linkerd_denied_requests"] != 0 || d["linkerd_plaintext_requests"] != 0 {
		t.Errorf("denied %v, plaintext %v, want 0", d["linkerd_denied_requests"], d["linkerd_plaintext_requests"])
	}
	// One identity per proxy: client, 2 face, 2 smiley, 2 color, and the
	// controllers' pods' 2.
	if d["linkerd_controller_certificates"] < 9 {
		t.Errorf("the identity controller issued %v certificates, want ≥ 9", d["linkerd_controller_certificates"])
	}
	cp, _ := res.Manifest.Options["control_plane"].(map[string]any)
	if cp["name"] != ControlPlaneLinkerd {
		t.Errorf("manifest's control_plane %v, want linkerd", cp)
	}
}
