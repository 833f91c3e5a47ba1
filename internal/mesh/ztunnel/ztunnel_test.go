package ztunnel

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/meshbench/meshbench/internal/mesh/capture"
	"github.com/meshbench/meshbench/internal/mesh/istio/ca"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/sys/netns"
	"github.com/meshbench/meshbench/internal/sys/pki"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// requireRoot: network namespaces and capture rules need root.
func requireRoot(t *testing.T) {
	t.Helper()
	testutil.RequireRoot(t, "ztunnel: needs root to make network namespaces and capture rules")
}

// freeSubnet picks a /24 under 10.98.0.0/16 (no other substrate of the
// project uses it) and a link-name prefix nobody uses.
func freeSubnet(t *testing.T) (netip.Prefix, string) {
	t.Helper()
	for i := range 256 {
		p := netip.MustParsePrefix(fmt.Sprintf("10.98.%d.0/24", i))
		prefix := fmt.Sprintf("mbz%d", i)
		busy, err := netns.InUse(p, prefix)
		if err != nil {
			t.Fatal(err)
		}
		if !busy {
			return p, prefix
		}
	}
	t.Fatal("no free subnet under 10.98.0.0/16")
	return netip.Prefix{}, ""
}

// inNS returns an HTTP client whose connections are made inside ns (a
// pod's application socket, which the pod's capture rules see).
func inNS(ns *netns.NS) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (c net.Conn, err error) {
			err = ns.Do(func() error {
				var d net.Dialer
				c, err = d.DialContext(ctx, network, addr)
				return err
			})
			return c, err
		},
	}}
}

// TestInPodRealZtunnel runs the production ztunnel in shared (in-pod) mode
// in a node namespace, with three pods as namespaces on a bridge, Istio's
// in-pod capture in each, the lab's CA over Istio's certificate API, the
// project's ZDS agent and a local config carrying the four L4 ALLOW
// policies. It checks: client pod → server pod (by pod IP and by service
// VIP) answers 200 over HBONE with mTLS (ztunnel's metrics and access log
// name the client's identity), the server sees the client pod's own IP,
// the attacker identity is refused by ztunnel's policy, the CA issued each
// pod's identity to the node ztunnel by impersonation, and teardown leaves
// no link or namespace behind. No part is faked: ztunnel is the real one.
func TestInPodRealZtunnel(t *testing.T) {
	requireRoot(t)
	bin, err := Find("", ".")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	version, err := Version(ctx, bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ztunnel: %s", version)

	subnet, prefix := freeSubnet(t)
	sub := netns.New(prefix)
	closed := false
	defer func() {
		if !closed {
			if err := sub.Close(); err != nil {
				t.Error(err)
			}
		}
	}()
	base := subnet.Addr().As4()
	ip := func(host byte) netip.Addr { b := base; b[3] = host; return netip.AddrFrom4(b) }
	gw := netip.PrefixFrom(ip(1), 24)
	br, err := sub.Bridge("br", gw)
	if err != nil {
		t.Fatal(err)
	}
	node, err := sub.Namespace("-node1")
	if err != nil {
		t.Fatal(err)
	}
	type pod struct {
		name string
		id   topology.Identity
		ip   netip.Addr
		ns   *netns.NS
	}
	pods := []*pod{
		{name: "client", id: topology.IdentityClient, ip: ip(11)},
		{name: "server", id: topology.IdentityServer, ip: ip(12)},
		{name: "attacker", id: topology.IdentityAttacker, ip: ip(13)},
	}
	vip := ip(250) // on the bridge's subnet: if capture failed, nothing would leave the host
	for _, p := range pods {
		if p.ns, err = sub.Namespace("-" + p.name); err != nil {
			t.Fatal(err)
		}
		// no default route: a pod reaches its subnet only
		if err := sub.Veth(br, p.ns, "v"+p.name[:3], "eth0", netip.PrefixFrom(p.ip, 24), false); err != nil {
			t.Fatal(err)
		}
		if err := capture.InPod(p.ns); err != nil {
			t.Fatal(err)
		}
	}
	client, server, attacker := pods[0], pods[1], pods[2]

	// The app: answers with the peer address it sees.
	var lis net.Listener
	if err := server.ns.Do(func() (err error) { lis, err = net.Listen("tcp", "0.0.0.0:8080"); return err }); err != nil {
		t.Fatal(err)
	}
	app := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.RemoteAddr)
	})}
	go app.Serve(lis)
	defer app.Close()

	// The lab's CA, served on the node namespace's loopback.
	dir := t.TempDir()
	labCA, err := pki.NewCA(topology.TrustDomain)
	if err != nil {
		t.Fatal(err)
	}
	files, err := labCA.WriteFiles(filepath.Join(dir, "pki"))
	if err != nil {
		t.Fatal(err)
	}
	var caLis net.Listener
	if err := node.Do(func() (err error) { caLis, err = net.Listen("tcp", "127.0.0.1:15012"); return err }); err != nil {
		t.Fatal(err)
	}
	caSrv, err := ca.Serve(labCA, caLis, []netip.Addr{netip.MustParseAddr("127.0.0.1")}, "lab-token")
	if err != nil {
		t.Fatal(err)
	}
	defer caSrv.Close()

	// ztunnel's local config: three workloads, the server service, the
	// four ALLOW rules on the server.
	policies := Policies(topology.Rules(4), "default")
	cfg := Config{Policies: policies}
	for _, p := range pods {
		w := Workload{
			UID: "lab//v1/Pod/default/" + p.name, Name: p.name, Namespace: p.id.Namespace, ServiceAccount: p.id.ServiceAccount,
			WorkloadIPs: []string{p.ip.String()}, Protocol: ProtocolHBONE, Node: "node1", TrustDomain: topology.TrustDomain,
		}
		if p == server {
			w.Services = map[string]map[int]int{"default/server.default.svc.cluster.local": {80: 8080}}
			for _, a := range policies {
				w.AuthorizationPolicies = append(w.AuthorizationPolicies, a.Key())
			}
		}
		cfg.Workloads = append(cfg.Workloads, w)
	}
	cfg.Services = []Service{{Name: "server", Namespace: "default", Hostname: "server.default.svc.cluster.local", VIPs: []string{Addr(vip)}, Ports: map[int]int{80: 8080}}}
	cfgPath := filepath.Join(dir, "ztunnel.yaml")
	if err := cfg.Write(cfgPath); err != nil {
		t.Fatal(err)
	}

	var zpods []Pod
	for _, p := range pods {
		zpods = append(zpods, Pod{UID: "lab//v1/Pod/default/" + p.name, Name: p.name, Namespace: p.id.Namespace, ServiceAccount: p.id.ServiceAccount, NetnsPath: p.ns.Path()})
	}
	agent, err := Listen(filepath.Join(dir, "zds.sock"), zpods)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	go agent.Serve(ctx)

	log := &testutil.SyncBuffer{}
	zt, err := Start(Spec{
		Bin: bin, NS: node, NodeName: "node1", ConfigPath: cfgPath, UDS: agent.Path,
		CAAddress: "https://127.0.0.1:15012", RootCAPath: files.Cert, Token: "lab-token", ClusterID: "lab", Log: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		zt.Stop(5 * time.Second)
		if t.Failed() {
			t.Logf("ztunnel log:\n%s", log.String())
		}
	}()
	if err := agent.Synced(ctx, zt.Exited()); err != nil {
		t.Fatal(err)
	}
	if err := zt.Ready(ctx); err != nil {
		t.Fatal(err)
	}

	get := func(from *pod, url string) (string, error) {
		resp, err := inNS(from.ns).Get(url)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("%s: %s", url, resp.Status)
		}
		return string(b), nil
	}
	for _, url := range []string{
		fmt.Sprintf("http://%s:8080/", server.ip), // pod IP
		fmt.Sprintf("http://%s:80/", vip),         // service VIP
	} {
		peer, err := get(client, url)
		if err != nil {
			t.Fatalf("client → %s: %v", url, err)
		}
		host, _, _ := net.SplitHostPort(peer)
		if host != client.ip.String() {
			t.Errorf("client → %s: the server saw %s, want the client pod's %s (source preserved)", url, peer, client.ip)
		}
	}
	if _, err := get(attacker, fmt.Sprintf("http://%s:8080/", server.ip)); err == nil {
		t.Errorf("attacker → server answered; the ALLOW policies should refuse %s", attacker.id.SPIFFE())
	}

	// mTLS seen by ztunnel itself: its connection metrics.
	text, err := zt.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	opened := fams["istio_tcp_connections_opened_total"]
	if opened == nil {
		t.Fatal("no istio_tcp_connections_opened_total in ztunnel's metrics")
	}
	var mtlsInbound float64
	for _, m := range opened.GetMetric() {
		l := map[string]string{}
		for _, lp := range m.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		if l["reporter"] == "destination" && l["connection_security_policy"] == "mutual_tls" && l["source_principal"] == client.id.SPIFFE() {
			mtlsInbound += m.GetCounter().GetValue() + m.GetUntyped().GetValue() // ztunnel's OpenMetrics _total reads as untyped
		}
	}
	if mtlsInbound < 2 {
		t.Logf("metrics:\n%s", grepLines(text, "istio_tcp_connections_opened_total"))
		t.Errorf("ztunnel counted %v mutual_tls inbound connections from %s, want ≥ 2", mtlsInbound, client.id.SPIFFE())
	}
	// ztunnel writes a connection's access-log line when the connection
	// closes, and its stdout reaches log through a pipe: wait for it.
	if !logShows(log.String, `src.identity="`+client.id.SPIFFE()+`"`, 10*time.Second) {
		t.Errorf("ztunnel's access log names no src.identity %s within 10s", client.id.SPIFFE())
	}

	// The node ztunnel took every pod's certificate by impersonation.
	got := map[string]bool{}
	for _, is := range caSrv.Issued() {
		got[is.Impersonated] = true
	}
	for _, p := range pods {
		if !got[p.id.SPIFFE()] {
			t.Errorf("the CA issued no certificate for %s (issued %v)", p.id.SPIFFE(), caSrv.Issued())
		}
	}

	// A restarted ztunnel reconnects to the agent, which hands it the
	// pods again (ztunnel is ready only once it has the snapshot).
	if err := zt.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	zt2, err := Start(zt.Spec)
	if err != nil {
		t.Fatal(err)
	}
	defer zt2.Stop(5 * time.Second)
	if err := zt2.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := get(client, fmt.Sprintf("http://%s:8080/", server.ip)); err != nil {
		t.Fatalf("client → server after a ztunnel restart: %v", err)
	}
	twice := func() string { // the client pod started in both ztunnels' logs
		if strings.Count(log.String(), `pod received, starting proxy	uid="lab//v1/Pod/default/client"`) < 2 {
			return ""
		}
		return log.String()
	}
	if !logShows(twice, `received snapshot sent`, 10*time.Second) {
		t.Errorf("the restarted ztunnel did not get the snapshot again")
	}

	// Teardown leaves nothing.
	zt2.Stop(5 * time.Second)
	closed = true
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	if busy, err := netns.NamesInUse(prefix); err != nil || busy {
		t.Errorf("after Close, %s / %s* still in use (err %v)", subnet, prefix, err)
	}
}

// logShows reports whether read's text contains want within wait.
func logShows(read func() string, want string, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for {
		if strings.Contains(read(), want) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func grepLines(text, what string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, what) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
