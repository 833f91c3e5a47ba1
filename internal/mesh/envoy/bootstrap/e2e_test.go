package bootstrap

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/workload"
)

// e2eNet is the second octet of the e2e labs' addresses (127.42.N.x), so
// they stay clear of other packages' labs on 127.0.N.x.
const e2eNet = 42

// lab is one topology running for real: the static app on every server
// pod, one Envoy per proxy, all stopped in t.Cleanup.
type lab struct {
	t      *testing.T
	topo   *topology.Topology
	pki    *Certs
	envoys map[string]*envoyProc
}

func startLab(t *testing.T, o topology.Options) *lab {
	t.Helper()
	bin := envoyBinary(t)
	o.LoopbackNet = e2eNet
	topo, err := topology.Plan(o)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pki := newTestPKI(t, dir, topo)
	configs, err := Render(topo, pki.Paths)
	if err != nil {
		t.Fatal(err)
	}
	for _, pod := range topo.ServerPods() {
		srv, err := workload.Start(context.Background(), workload.Config{Kind: workload.KindStatic, Listen: pod.AppAddr().String()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(ctx)
		})
	}
	l := &lab{t: t, topo: topo, pki: pki, envoys: map[string]*envoyProc{}}
	for _, p := range topo.Proxies {
		path := filepath.Join(dir, p.Name+".json")
		if err := os.WriteFile(path, configs[p.Name], 0o644); err != nil {
			t.Fatal(err)
		}
		l.envoys[p.Name] = startEnvoy(t, bin.Path, p.Name, path, p.Admin.String(), dir)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, p := range topo.Proxies {
		if err := l.envoys[p.Name].waitReady(deadline); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

// client returns an HTTP/1.1 client whose connections leave from pod's
// address; fresh makes every request open a new connection (tcp_proxy
// balances per connection). It trusts the lab CA (for the gateway).
func (l *lab) client(pod string, fresh bool) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second}
	if p := l.topo.Pod(pod); p != nil {
		d.LocalAddr = &net.TCPAddr{IP: p.Addr.AsSlice()}
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: d.DialContext, DisableKeepAlives: fresh,
		TLSClientConfig: &tls.Config{RootCAs: l.pki.CA.Pool(), MinVersion: tls.VersionTLS12}}}
}

// get sends GET url and returns the status, body and headers.
func get(c *http.Client, u string) (int, []byte, http.Header, error) {
	resp, err := c.Get(u)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, resp.Header, err
}

// getOK sends n requests to u and requires 200 with the 615-byte body.
func (l *lab) getOK(c *http.Client, u string, n int) http.Header {
	l.t.Helper()
	var hdr http.Header
	for i := range n {
		status, body, h, err := get(c, u)
		if err != nil || status != 200 || len(body) != workload.DefaultBodySize {
			l.t.Fatalf("request %d to %s: status %d, %d bytes, err %v", i, u, status, len(body), err)
		}
		hdr = h
	}
	return hdr
}

// denied sends n requests, each on a new connection, and requires every
// one to fail (an error or a non-2xx status).
func (l *lab) denied(c *http.Client, u string, n int) {
	l.t.Helper()
	for i := range n {
		status, _, _, err := get(c, u)
		if err == nil && status < 300 {
			l.t.Fatalf("attack request %d to %s succeeded with %d", i, u, status)
		}
	}
}

func (l *lab) stats(proxy string) map[string]int64 {
	l.t.Helper()
	e := l.envoys[proxy]
	if e == nil {
		l.t.Fatalf("no envoy %s", proxy)
	}
	return e.stats(l.t)
}

// hostRequests reads the admin's /clusters: requests per endpoint of
// cluster, keyed by the endpoint address ("127.42.2.10:15006", or
// "envoy://connect_originate_node2/127.42.2.10:8080" for internal ones).
func (l *lab) hostRequests(proxy, cluster string) map[string]int64 {
	l.t.Helper()
	resp, err := http.Get("http://" + l.envoys[proxy].admin + "/clusters")
	if err != nil {
		l.t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]int64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "::")
		if len(f) == 4 && f[0] == cluster && f[2] == "rq_total" {
			n, _ := strconv.ParseInt(f[3], 10, 64)
			out[f[1]] = n
		}
	}
	return out
}

// want checks stats[name] against cmp ("==", ">=") and value.
func (l *lab) want(proxy string, st map[string]int64, name, cmp string, value int64) {
	l.t.Helper()
	got, ok := st[name]
	switch {
	case !ok:
		l.t.Errorf("%s: no stat %s", proxy, name)
	case cmp == "==" && got != value, cmp == ">=" && got < value:
		l.t.Errorf("%s: %s = %d, want %s %d", proxy, name, got, cmp, value)
	}
}

// noStatsWith requires that no stat name of proxy contains sub.
func (l *lab) noStatsWith(proxy, sub string) {
	l.t.Helper()
	for name, v := range l.stats(proxy) {
		if strings.Contains(name, sub) && v != 0 {
			l.t.Errorf("%s: unexpected %s = %d", proxy, name, v)
		}
	}
}

// listenerStat is the per-listener stat prefix Envoy uses, e.g.
// "listener.127.42.2.10_15006.".
func listenerStat(l *topology.Listener) string {
	return fmt.Sprintf("listener.%s_%d.", l.Addr.Addr(), l.Addr.Port())
}

// checkBinds requires that every Envoy listens on exactly its planned
// admin and listener addresses, all on loopback (read from /proc).
func (l *lab) checkBinds() {
	l.t.Helper()
	for _, p := range l.topo.Proxies {
		got, err := listenSockets(l.envoys[p.Name].pid)
		if err != nil {
			l.t.Fatal(err)
		}
		var want []string
		for _, b := range p.Binds() {
			want = append(want, b.String())
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			l.t.Errorf("%s listens on %v, want %v", p.Name, got, want)
		}
		for _, a := range got {
			if !strings.HasPrefix(a, "127.") {
				l.t.Errorf("%s listens on %s, off loopback", p.Name, a)
			}
		}
	}
}

// plaintextRefused sends a plaintext HTTP request to addr and requires the
// connection to close without any answer.
func plaintextRefused(t *testing.T, addr string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dialing %s: %v", addr, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return // already closed: refused
	}
	data, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("plaintext to %s: connection left open", addr)
	}
	if len(data) > 0 {
		t.Fatalf("plaintext to %s answered: %q", addr, data)
	}
}

// connect opens one HBONE stream to hbone (a node proxy's :15008) with id's
// certificate, asking for peer's certificate by SNI and for authority, and
// returns the response status.
func (l *lab) connect(hbone string, id, peer topology.Identity, authority string) (int, error) {
	cert := l.pki.Workloads[id].TLSCertificate()
	tr := &http.Transport{Protocols: new(http.Protocols), TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{cert}, ServerName: topology.HBONESNI(peer),
		// The peer's certificate carries only a URI SAN; this probe tests
		// the server's checks, not the client's.
		InsecureSkipVerify: true, MinVersion: tls.VersionTLS13, NextProtos: []string{"h2"}}}
	tr.Protocols.SetHTTP2(true) // HBONE is HTTP/2 CONNECT
	defer tr.CloseIdleConnections()
	pr, pw := io.Pipe()
	defer pw.Close()
	req := &http.Request{Method: http.MethodConnect, URL: &url.URL{Scheme: "https", Host: hbone}, Host: authority,
		Header: http.Header{}, Body: pr}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := tr.RoundTrip(req.WithContext(ctx))
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func e2eOptions(mut func(*topology.Options)) topology.Options {
	o := topology.DefaultOptions()
	mut(&o)
	return o
}

// TestE2E runs each mode for real and checks, from Envoy's own counters,
// that traffic took the intended path with the intended security.
func TestE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Envoy processes")
	}
	envoyBinary(t)

	t.Run("none", func(t *testing.T) {
		l := startLab(t, e2eOptions(func(o *topology.Options) { o.Replicas, o.Nodes = 2, 2 }))
		if len(l.topo.LoadTargets) != 2 {
			t.Fatalf("%d load targets", len(l.topo.LoadTargets))
		}
		c := l.client("client", false)
		for _, lt := range l.topo.LoadTargets {
			l.getOK(c, lt.URL, 3)
		}
	})

	t.Run("none-gateway", func(t *testing.T) {
		l := startLab(t, e2eOptions(func(o *topology.Options) { o.Replicas, o.Nodes, o.Gateway = 2, 2, true }))
		l.getOK(l.client("client", false), l.topo.LoadTargets[0].URL, 10)
		gw := l.topo.Proxy("gateway")
		st := l.stats("gateway")
		ls := listenerStat(gw.Listener(topology.ListenerGateway))
		l.want("gateway", st, ls+"ssl.handshake", ">=", 1)
		l.want("gateway", st, ls+"ssl.versions.TLSv1.3", ">=", 1)
		l.want("gateway", st, "cluster.outbound|8080||server.default.svc.cluster.local.upstream_rq_200", "==", 10)
		hosts := l.hostRequests("gateway", "outbound|8080||server.default.svc.cluster.local")
		for _, pod := range l.topo.ServerPods() {
			if hosts[pod.AppAddr().String()] < 1 {
				t.Errorf("gateway sent no request to %s: %v", pod.Name, hosts)
			}
		}
		l.checkBinds()
	})

	t.Run("sidecar", func(t *testing.T) {
		l := startLab(t, e2eOptions(func(o *topology.Options) {
			o.Mode, o.Replicas, o.Nodes, o.Policies, o.Attacker = topology.ModeSidecar, 2, 2, 4, true
		}))
		const n = 10
		l.getOK(l.client("client", false), l.topo.LoadTargets[0].URL, n)
		cl := "cluster.outbound|8080||server.default.svc.cluster.local."
		st := l.stats("client-sidecar")
		l.want("client-sidecar", st, cl+"upstream_rq_200", "==", n)
		l.want("client-sidecar", st, cl+"ssl.handshake", ">=", 2) // one connection per server
		l.want("client-sidecar", st, cl+"ssl.versions.TLSv1.3", "==", st[cl+"ssl.handshake"])
		if v := st[cl+"ssl.versions.TLSv1.2"]; v != 0 {
			t.Errorf("client sidecar negotiated TLS 1.2 %d times", v)
		}
		hosts := l.hostRequests("client-sidecar", "outbound|8080||server.default.svc.cluster.local")
		var allowed, served int64
		for _, pod := range l.topo.ServerPods() {
			sc := l.topo.Sidecar(pod.Name)
			in := sc.Listener(topology.ListenerInbound)
			if hosts[in.Addr.String()] != n/2 {
				t.Errorf("client sidecar sent %d requests to %s, want %d (round robin): %v", hosts[in.Addr.String()], pod.Name, n/2, hosts)
			}
			st := l.stats(sc.Name)
			ls := listenerStat(in)
			l.want(sc.Name, st, ls+"ssl.handshake", ">=", 1)
			l.want(sc.Name, st, ls+"ssl.versions.TLSv1.3", ">=", 1)
			l.want(sc.Name, st, "cluster.inbound|8080||.upstream_rq_200", "==", n/2)
			allowed += st["virtualInbound.rbac.allowed"]
			served += st["http.virtualInbound.downstream_rq_2xx"]
		}
		if allowed < 2 || served != n {
			t.Errorf("server sidecars: rbac.allowed %d (want ≥ 2, one per connection), 2xx %d (want %d)", allowed, served, n)
		}

		// The attacker's sidecar makes a valid mTLS connection; the ALLOW
		// rules deny its identity, every time.
		const tries = 20
		l.denied(l.client("attacker", true), l.topo.AttackTargets[0].URL, tries)
		var denied int64
		for _, pod := range l.topo.ServerPods() {
			denied += l.stats(pod.Name + "-sidecar")["virtualInbound.rbac.denied"]
		}
		if denied != tries {
			t.Errorf("rbac.denied on the server sidecars = %d, want %d", denied, tries)
		}

		// Plaintext to a sidecar inbound finds no filter chain.
		in := l.topo.Sidecar("server-0").Listener(topology.ListenerInbound)
		plaintextRefused(t, in.Addr.String())
		l.want("server-0-sidecar", l.stats("server-0-sidecar"), listenerStat(in)+"no_filter_chain_match", "==", 1)
		l.checkBinds()
	})

	t.Run("sidecar-plaintext", func(t *testing.T) {
		l := startLab(t, e2eOptions(func(o *topology.Options) { o.Mode, o.MTLS = topology.ModeSidecar, false }))
		l.getOK(l.client("client", false), l.topo.LoadTargets[0].URL, 5)
		l.want("server-0-sidecar", l.stats("server-0-sidecar"), "http.virtualInbound.downstream_rq_2xx", "==", 5)
		l.noStatsWith("client-sidecar", "ssl.")
		l.noStatsWith("server-0-sidecar", "ssl.")
	})

	t.Run("sidecar-tcp", func(t *testing.T) {
		l := startLab(t, e2eOptions(func(o *topology.Options) { o.Mode, o.Protocol = topology.ModeSidecar, topology.ProtocolTCP }))
		l.getOK(l.client("client", true), l.topo.LoadTargets[0].URL, 5)
		st := l.stats("client-sidecar")
		l.want("client-sidecar", st, "tcp.virtualOutbound.downstream_cx_total", "==", 5)
		l.want("client-sidecar", st, "cluster.outbound|8080||server.default.svc.cluster.local.ssl.versions.TLSv1.3", "==", 5)
		l.want("server-0-sidecar", l.stats("server-0-sidecar"), "tcp.virtualInbound.downstream_cx_total", "==", 5)
		l.noStatsWith("client-sidecar", "http.virtualOutbound.")
		l.noStatsWith("server-0-sidecar", "http.virtualInbound.")
	})

	t.Run("sidecar-gateway", func(t *testing.T) {
		l := startLab(t, e2eOptions(func(o *topology.Options) {
			o.Mode, o.Replicas, o.Nodes, o.Policies, o.Gateway = topology.ModeSidecar, 2, 2, 4, true
		}))
		l.getOK(l.client("client", false), l.topo.LoadTargets[0].URL, 10)
		gw := l.topo.Proxy("gateway")
		st := l.stats("gateway")
		l.want("gateway", st, listenerStat(gw.Listener(topology.ListenerGateway))+"ssl.versions.TLSv1.3", ">=", 1)
		l.want("gateway", st, "cluster.outbound|8080||server.default.svc.cluster.local.ssl.versions.TLSv1.3", ">=", 2)
		l.want("gateway", st, "cluster.outbound|8080||server.default.svc.cluster.local.upstream_rq_200", "==", 10)
		var allowed int64
		for _, pod := range l.topo.ServerPods() {
			allowed += l.stats(pod.Name + "-sidecar")["virtualInbound.rbac.allowed"]
		}
		if allowed < 2 {
			t.Errorf("server sidecars allowed %d connections from the gateway, want ≥ 2", allowed)
		}
		l.checkBinds()
	})

	t.Run("ambient", func(t *testing.T) {
		l := startLab(t, e2eOptions(func(o *topology.Options) {
			o.Mode, o.Replicas, o.Nodes, o.Policies, o.Attacker = topology.ModeAmbient, 2, 2, 4, true
		}))
		// The node proxy picks a replica per connection, at random: one
		// connection per request, enough of them that both get some.
		const n = 40
		l.getOK(l.client("client", true), l.topo.LoadTargets[0].URL, n)
		st := l.stats("ztunnel-node1")
		l.want("ztunnel-node1", st, "tcp.outbound_client.downstream_cx_total", "==", n)
		var sum int64
		for _, pod := range l.topo.ServerPods() {
			// One TLS 1.3 connection per destination pod, one CONNECT stream
			// per client connection.
			c := "cluster.hbone|" + pod.Name + "|client."
			streams := st[c+"upstream_rq_total"]
			sum += streams
			if streams < 1 {
				t.Errorf("no stream to %s: %s = %d", pod.Name, c+"upstream_rq_total", streams)
			}
			l.want("ztunnel-node1", st, c+"ssl.handshake", "==", 1)
			l.want("ztunnel-node1", st, c+"ssl.versions.TLSv1.3", "==", 1)
			l.want("ztunnel-node1", st, c+"upstream_cx_total", "==", 1)
			// The pod's node proxy got exactly those streams, so each carried
			// its own pod's :authority (another pod's would be a 404 there).
			np := l.topo.NodeProxy(pod.Node)
			nst := l.stats(np.Name)
			ls := listenerStat(np.Listener(topology.ListenerHBONE))
			l.want(np.Name, nst, ls+"ssl.handshake", "==", 1)
			l.want(np.Name, nst, ls+"ssl.versions.TLSv1.3", "==", 1)
			l.want(np.Name, nst, "http.hbone_inbound.downstream_rq_total", "==", streams)
			l.want(np.Name, nst, "http.hbone_inbound.downstream_rq_2xx", "==", streams)
			l.want(np.Name, nst, "http.hbone_inbound.rbac.allowed", "==", streams)
			l.want(np.Name, nst, "cluster.virtual_inbound.upstream_cx_total", "==", streams)
		}
		if sum != n {
			t.Errorf("%d CONNECT streams for %d connections", sum, n)
		}

		const tries = 20
		l.denied(l.client("attacker", true), l.topo.AttackTargets[0].URL, tries)
		var denied int64
		for _, node := range []string{"ztunnel-node2", "ztunnel-node3"} {
			denied += l.stats(node)["http.hbone_inbound.rbac.denied"]
		}
		if denied != tries {
			t.Errorf("rbac.denied on the node proxies = %d, want %d", denied, tries)
		}

		// Plaintext to HBONE finds no filter chain; an authenticated CONNECT
		// to an address that is no pod of the node gets 404 (no open proxy).
		hb := l.topo.NodeProxy(2).Listener(topology.ListenerHBONE)
		plaintextRefused(t, hb.Addr.String())
		l.want("ztunnel-node2", l.stats("ztunnel-node2"), listenerStat(hb)+"no_filter_chain_match", "==", 1)
		for _, tc := range []struct {
			authority string
			want      int
		}{
			{l.topo.Pod("server-0").AppAddr().String(), 200},    // a pod of node2
			{"127.0.0.1:8080", 404},                             // not a pod of node2
			{l.topo.Pod("server-1").AppAddr().String(), 404},    // a pod of node3
			{l.topo.Pod("server-0").Addr.String() + ":22", 403}, // a port no rule allows
		} {
			status, err := l.connect(hb.Addr.String(), topology.IdentityClient, topology.IdentityServer, tc.authority)
			if err != nil || status != tc.want {
				t.Errorf("CONNECT %s: %d %v, want %d", tc.authority, status, err, tc.want)
			}
		}
		// Asking by SNI for an identity no pod of the node has finds no
		// filter chain: the node proxy never presents a certificate it
		// does not host.
		before := l.stats("ztunnel-node2")[listenerStat(hb)+"no_filter_chain_match"]
		if status, err := l.connect(hb.Addr.String(), topology.IdentityClient, topology.IdentityAttacker, l.topo.Pod("server-0").AppAddr().String()); err == nil {
			t.Errorf("CONNECT asking for %s's certificate: status %d, want the handshake refused", topology.IdentityAttacker, status)
		}
		l.want("ztunnel-node2", l.stats("ztunnel-node2"), listenerStat(hb)+"no_filter_chain_match", "==", before+1)
		l.checkBinds()
	})

	t.Run("ambient-gateway", func(t *testing.T) {
		l := startLab(t, e2eOptions(func(o *topology.Options) { o.Mode, o.Policies, o.Gateway = topology.ModeAmbient, 4, true }))
		l.getOK(l.client("client", false), l.topo.LoadTargets[0].URL, 5)
		gwNode := l.topo.NodeProxy(l.topo.Proxy("gateway").Node)
		l.want(gwNode.Name, l.stats(gwNode.Name), "cluster.hbone|server-0|gateway.ssl.versions.TLSv1.3", "==", 1)
		l.want("ztunnel-node2", l.stats("ztunnel-node2"), "http.hbone_inbound.rbac.allowed", ">=", 1)
		l.want("gateway", l.stats("gateway"), "cluster.outbound|8080||server.default.svc.cluster.local.upstream_rq_200", "==", 5)
	})

	t.Run("waypoint", func(t *testing.T) {
		l := startLab(t, e2eOptions(func(o *topology.Options) {
			o.Mode, o.Replicas, o.Nodes, o.Policies, o.Attacker = topology.ModeWaypoint, 2, 2, 4, true
		}))
		const n = 10
		hdr := l.getOK(l.client("client", false), l.topo.LoadTargets[0].URL, n)
		if got := hdr.Get("x-served-by"); got != "waypoint.default" {
			t.Errorf("x-served-by = %q, want waypoint.default", got)
		}
		st := l.stats("ztunnel-node1")
		l.want("ztunnel-node1", st, "cluster.hbone|waypoint|client.ssl.versions.TLSv1.3", "==", 1)
		l.want("ztunnel-node1", st, "cluster.hbone|waypoint|client.upstream_rq_total", "==", 1) // one keep-alive connection
		wp := l.topo.Proxy("waypoint")
		st = l.stats("waypoint")
		l.want("waypoint", st, listenerStat(wp.Listener(topology.ListenerHBONE))+"ssl.versions.TLSv1.3", "==", 1)
		l.want("waypoint", st, "http.connect_terminate.downstream_rq_total", "==", 1)
		l.want("waypoint", st, "http.connect_terminate.rbac.allowed", "==", 1)
		l.want("waypoint", st, "http.main_internal.downstream_rq_2xx", "==", n)
		hosts := l.hostRequests("waypoint", "outbound|8080||server.default.svc.cluster.local")
		if len(hosts) != 2 {
			t.Errorf("waypoint endpoints %v, want 2", hosts)
		}
		for h, rq := range hosts {
			if rq != n/2 {
				t.Errorf("waypoint sent %d requests to %s, want %d (round robin)", rq, h, n/2)
			}
		}
		for _, node := range []int{2, 3} {
			c := fmt.Sprintf("cluster.hbone|node%d.", node)
			l.want("waypoint", st, c+"ssl.versions.TLSv1.3", "==", 1)
			np := fmt.Sprintf("ztunnel-node%d", node)
			// The destination sees the waypoint's identity: allow-waypoint.
			l.want(np, l.stats(np), "http.hbone_inbound.rbac.allowed", ">=", 1)
		}
		if status, _, _, err := get(l.client("client", false), strings.TrimSuffix(l.topo.LoadTargets[0].URL, "/")+"/admin"); err != nil || status != 403 {
			t.Errorf("GET /admin through the waypoint: %d %v, want 403", status, err)
		}

		const tries = 20
		l.denied(l.client("attacker", true), l.topo.AttackTargets[0].URL, tries)
		l.want("waypoint", l.stats("waypoint"), "http.connect_terminate.rbac.denied", "==", tries)
		plaintextRefused(t, wp.Listener(topology.ListenerHBONE).Addr.String())
		l.checkBinds()
	})

	t.Run("waypoint-tcp", func(t *testing.T) {
		l := startLab(t, e2eOptions(func(o *topology.Options) {
			o.Mode, o.Replicas, o.Protocol = topology.ModeWaypoint, 2, topology.ProtocolTCP
		}))
		l.getOK(l.client("client", true), l.topo.LoadTargets[0].URL, 6)
		st := l.stats("waypoint")
		l.want("waypoint", st, "tcp.main_internal.downstream_cx_total", "==", 6)
		l.want("waypoint", st, "http.connect_terminate.downstream_rq_total", "==", 6)
		l.noStatsWith("waypoint", "http.main_internal.")
		hosts := l.hostRequests("waypoint", "outbound|8080||server.default.svc.cluster.local")
		for h, rq := range hosts {
			if rq != 3 {
				t.Errorf("waypoint sent %d connections to %s, want 3: %v", rq, h, hosts)
			}
		}
	})
}

// TestListenerClashFails starts a second Envoy on an address the first one
// listens on (its admin moved aside): with enable_reuse_port false it must
// fail to start, instead of silently sharing the connections (LAB.md §5).
func TestListenerClashFails(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Envoy processes")
	}
	bin := envoyBinary(t)
	o := topology.DefaultOptions()
	o.Mode, o.LoopbackNet = topology.ModeSidecar, e2eNet+1
	topo, err := topology.Plan(o)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pki := newTestPKI(t, dir, topo)
	bs, err := Build(topo, pki.Paths)
	if err != nil {
		t.Fatal(err)
	}
	sc := topo.Proxy("client-sidecar")
	first, err := Marshal(bs[sc.Name])
	if err != nil {
		t.Fatal(err)
	}
	bs[sc.Name].Admin.Address = sockAddr(netip.AddrPortFrom(sc.Addr, topology.PortAdmin+100))
	second, err := Marshal(bs[sc.Name])
	if err != nil {
		t.Fatal(err)
	}
	for name, js := range map[string][]byte{"first": first, "second": second} {
		if err := os.WriteFile(filepath.Join(dir, name+".json"), js, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e1 := startEnvoy(t, bin.Path, "first", filepath.Join(dir, "first.json"), sc.Admin.String(), dir)
	if err := e1.waitReady(time.Now().Add(20 * time.Second)); err != nil {
		t.Fatal(err)
	}
	e2 := startEnvoy(t, bin.Path, "second", filepath.Join(dir, "second.json"), netip.AddrPortFrom(sc.Addr, topology.PortAdmin+100).String(), dir)
	select {
	case <-e2.done:
	case <-time.After(20 * time.Second):
		t.Fatal("a second Envoy on the same listener address kept running")
	}
	log, _ := os.ReadFile(e2.log)
	want := sc.Listener(topology.ListenerOutbound).Addr.String()
	if !strings.Contains(string(log), want) || !strings.Contains(string(log), "Address already in use") {
		t.Errorf("second Envoy's log does not name the clash on %s:\n%s", want, log)
	}
}
