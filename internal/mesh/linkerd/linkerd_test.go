package linkerd_test

import (
	"context"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/meshbench/meshbench/internal/mesh/linkerd"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/controlplane"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/proxy"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/mesh/ztunnel"
	"github.com/meshbench/meshbench/internal/platform/netlab"
	"github.com/meshbench/meshbench/internal/sys/netns"
	"github.com/meshbench/meshbench/internal/sys/pki"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// requirements skips (fails under `make test`) without root, the
// linkerd2-proxy binary, or the ztunnel binary netlab needs for its
// nodes (no pod here is enrolled with ztunnel).
func requirements(t *testing.T) (proxyBin, ztunnelBin string) {
	t.Helper()
	testutil.RequireRoot(t, "linkerd: needs root to make network namespaces")
	var err error
	if proxyBin, err = proxy.Find("", "."); err != nil {
		testutil.SkipOrFail(t, "linkerd: "+err.Error())
	}
	if ztunnelBin, err = ztunnel.Find("", "."); err != nil {
		testutil.SkipOrFail(t, "linkerd: netlab: "+err.Error())
	}
	return proxyBin, ztunnelBin
}

// freeLab picks a /16 and a name prefix nobody uses (netlab's own tests
// use 10.98 and 172.27; the lab's addresses live only in its namespaces,
// but the subnet is checked against the host too).
func freeLab(t *testing.T) (netip.Prefix, string) {
	t.Helper()
	for _, sn := range []string{"10.97.0.0/16", "172.28.0.0/16"} {
		p := netip.MustParsePrefix(sn)
		for i := range 100 {
			prefix := "mbk" + strconv.Itoa(i)
			busy, err := inUse(p, prefix)
			if err != nil {
				t.Fatal(err)
			}
			if !busy {
				return p, prefix
			}
		}
	}
	t.Fatal("no free subnet and prefix")
	return netip.Prefix{}, ""
}

// inUse is netns.InUse, retried while the host's tables change under it
// (netlink answers a dump that was interrupted by a change with "results
// may be incomplete": other tests make and remove links meanwhile).
func inUse(p netip.Prefix, prefix string) (bool, error) {
	var err error
	for range 20 {
		var busy bool
		if busy, err = netns.InUse(p, prefix); err == nil {
			return busy, nil
		}
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			return false, err
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false, err
}

// lab is a netlab substrate with Linkerd on it.
type lab struct {
	net  *netlab.Lab
	mesh *linkerd.Mesh
	vip  map[string]netip.Addr
}

// podSpec is one pod of the test topology.
type podSpec struct {
	name     string
	id       topology.Identity
	meshed   bool
	services []string
	policies bool
}

// up makes the netlab pods (none enrolled with ztunnel) and meshes them
// with Linkerd; everything is removed at the end of the test.
func up(t *testing.T, proxyBin, ztunnelBin string, nodes [][]podSpec, services []controlplane.Service, policies int) *lab {
	t.Helper()
	return upWith(t, proxyBin, ztunnelBin, nodes, services, policies, 0)
}

// upWith is up with cores per proxy (0: the proxy's default).
func upWith(t *testing.T, proxyBin, ztunnelBin string, nodes [][]podSpec, services []controlplane.Service, policies, cores int) *lab {
	t.Helper()
	return upWithRules(t, proxyBin, ztunnelBin, nodes, services, topology.Rules(policies), cores)
}

// upWithRules is up with the given ALLOW rules.
func upWithRules(t *testing.T, proxyBin, ztunnelBin string, nodes [][]podSpec, services []controlplane.Service, rules []topology.Policy, cores int) *lab {
	t.Helper()
	subnet, prefix := freeLab(t)
	dir := proxyDir(t)
	o := netlab.Options{Prefix: prefix, Subnet: subnet, Ztunnel: ztunnelBin, Dir: filepath.Join(dir, "netlab")}
	for _, n := range nodes {
		var ns netlab.NodeSpec
		for _, p := range n {
			ns.Pods = append(ns.Pods, netlab.PodSpec{Name: p.name, Identity: p.id})
		}
		o.Nodes = append(o.Nodes, ns)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nl, err := netlab.Up(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := nl.Close(); err != nil {
			t.Errorf("closing the lab: %v", err)
		}
	})
	ca, err := pki.NewRootCA(pkixName("root.linkerd.cluster.local"), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := &lab{net: nl, vip: map[string]netip.Addr{}}
	mo := linkerd.Options{Proxy: proxyBin, Dir: filepath.Join(dir, "linkerd"), CA: ca, Rules: rules,
		ProfileNetworks: []netip.Prefix{subnet}, Cores: cores, Log: testWriter{t}}
	for i, svc := range services {
		svc.VIP = netip.AddrFrom4([4]byte{subnet.Addr().As4()[0], subnet.Addr().As4()[1], 255, byte(i + 1)})
		l.vip[svc.Name] = svc.VIP
		mo.Services = append(mo.Services, svc)
	}
	for _, n := range nodes {
		for _, p := range n {
			np := nl.Pod(p.name)
			mo.Pods = append(mo.Pods, linkerd.Pod{Name: p.name, Identity: p.id, IP: np.IP, NS: np.NS, Meshed: p.meshed,
				Services: p.services, Ports: []int{topology.PortApp}, Policies: p.policies})
		}
	}
	if l.mesh, err = linkerd.Up(ctx, mo); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for name, path := range l.mesh.Logs {
				t.Logf("proxy log of %s:\n%s", name, proxy.Tail(path, 30))
			}
		}
		if err := l.mesh.Close(); err != nil {
			t.Errorf("closing the mesh: %v", err)
		}
	})
	return l
}

// proxyDir is a temporary directory the proxy's user can reach (t.TempDir
// makes its directories 0700).
func proxyDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// serveHTTP answers "NAME REMOTEADDR" on :8080 in the pod.
func serveHTTP(t *testing.T, p *netlab.Pod) {
	t.Helper()
	lis, err := p.Listen("tcp", fmt.Sprintf("0.0.0.0:%d", topology.PortApp))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s", p.Spec.Name, r.RemoteAddr)
	})}
	go srv.Serve(lis)
	t.Cleanup(func() { srv.Close() })
}

// serveGRPC serves gRPC's health service on :8080 in the pod.
func serveGRPC(t *testing.T, p *netlab.Pod) {
	t.Helper()
	lis, err := p.Listen("tcp", fmt.Sprintf("0.0.0.0:%d", topology.PortApp))
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
}

// get returns the status and body of GET url from pod (a new connection
// each time, so each request meets the policy afresh).
func get(p *netlab.Pod, url string) (int, string, error) {
	resp, err := p.HTTPClient(false).Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

func tlsStats(t *testing.T, l *lab, pod string) proxy.Stats {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := l.mesh.Proxies[pod].Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestLinkerdEndToEnd meshes netlab pods with the real linkerd2-proxy and
// the lab's control plane, with the four ALLOW rules (--policies 4) on the
// servers: the proxies are ready in bounded time; the client reaches the
// server service's VIP (balanced over both replicas) and a replica's pod
// IP through both proxies; both proxies' metrics show mTLS with the peer's
// identity; a meshed foreign identity (attacker) and an unmeshed pod are
// refused with 403; a gRPC call (HTTP/2) to a pod without policies goes
// through; each control-plane API was called by the real proxies; and
// teardown leaves no process, namespace or link.
func TestLinkerdEndToEnd(t *testing.T) {
	proxyBin, ztunnelBin := requirements(t)
	client := podSpec{name: "client", id: topology.IdentityClient, meshed: true}
	attacker := podSpec{name: "attacker", id: topology.IdentityAttacker, meshed: true}
	plain := podSpec{name: "plain", id: topology.Identity{Namespace: "default", ServiceAccount: "plain"}}
	server := func(name string) podSpec {
		return podSpec{name: name, id: topology.IdentityServer, meshed: true, services: []string{"server"}, policies: true}
	}
	grpcPod := podSpec{name: "grpc-0", id: topology.Identity{Namespace: "default", ServiceAccount: "grpc"}, meshed: true, services: []string{"grpc"}}
	services := []controlplane.Service{
		{Name: "server", Namespace: "default", Port: 80, TargetPort: topology.PortApp},
		{Name: "grpc", Namespace: "default", Port: 9000, TargetPort: topology.PortApp},
	}
	var prefix string
	var pids []int
	t.Run("mesh", func(t *testing.T) {
		l := up(t, proxyBin, ztunnelBin, [][]podSpec{{client, attacker, plain}, {server("server-0"), server("server-1"), grpcPod}}, services, 4)
		prefix = l.net.Opts.Prefix
		for _, p := range l.mesh.Proxies {
			pids = append(pids, p.PID())
		}
		if found := proxiesOf(t, l.mesh.Opts.Dir); len(found) != 5 {
			t.Errorf("found proxies %v by their environment, want 5", found)
		}
		// Ready in bounded time: one proxy is ready in ~5 ms idle; five on a
		// loaded 2-core machine within 30 s is generous (Up itself gives
		// up at linkerd.ReadyTimeout).
		if l.mesh.ReadyIn > 30*time.Second {
			t.Errorf("proxies ready in %v, want under 30 s", l.mesh.ReadyIn)
		}
		if l.mesh.Version.Release == "" || l.mesh.Version.SHA256 == "" {
			t.Errorf("proxy version %+v lacks its release or sha256", l.mesh.Version)
		}
		for _, name := range []string{"server-0", "server-1"} {
			serveHTTP(t, l.net.Pod(name))
		}
		serveGRPC(t, l.net.Pod("grpc-0"))
		c := l.net.Pod("client")

		// The service's VIP, balanced over the replicas (peak-EWMA: the
		// first one to answer fast may take everything). The app sees the
		// connection from its own pod's proxy (the server pod's IP).
		seen := map[string]int{}
		for range 20 {
			code, body, err := get(c, fmt.Sprintf("http://%s:80/", l.vip["server"]))
			if err != nil || code != http.StatusOK {
				t.Fatalf("client → server VIP: %d %q %v", code, body, err)
			}
			name, from, _ := strings.Cut(body, " ")
			seen[name]++
			if ip, _, _ := net.SplitHostPort(from); ip != l.net.Pod(name).IP.String() {
				t.Errorf("%s saw the request from %s, want its own proxy at %s", name, from, l.net.Pod(name).IP)
			}
		}
		if seen["server-0"]+seen["server-1"] != 20 {
			t.Errorf("VIP requests went to %v, want the two replicas", seen)
		}
		// A replica's pod IP directly.
		s0 := l.net.Pod("server-0")
		if code, body, err := get(c, fmt.Sprintf("http://%s:%d/", s0.IP, topology.PortApp)); err != nil || code != http.StatusOK || !strings.HasPrefix(body, "server-0 ") {
			t.Errorf("client → server-0 pod IP: %d %q %v", code, body, err)
		}

		// mTLS both ways, with the peers' identities.
		clientID, serverID, attackerID := controlplane.Name(topology.IdentityClient), controlplane.Name(topology.IdentityServer), controlplane.Name(topology.IdentityAttacker)
		cs := tlsStats(t, l, "client")
		if cs.OutboundTLS < 21 || cs.OutboundPlain != 0 || cs.ServerIDs[serverID] < 21 {
			t.Errorf("client proxy: outbound %v over mTLS, %v plain, by server %v; want ≥ 21 over mTLS to %s, none plain", cs.OutboundTLS, cs.OutboundPlain, cs.ServerIDs, serverID)
		}
		if n := cs.Endpoints["default/server"]; n != 2 {
			t.Errorf("client proxy's balancer for the server service has %v ready endpoints, want 2 (%v)", n, cs.Endpoints)
		}
		var inTLS float64
		for _, name := range []string{"server-0", "server-1"} {
			ss := tlsStats(t, l, name)
			inTLS += ss.ClientIDs[clientID]
			if ss.InboundPlain != 0 {
				t.Errorf("%s proxy: %v inbound requests without mTLS", name, ss.InboundPlain)
			}
		}
		if inTLS < 21 {
			t.Errorf("server proxies: %v inbound mTLS requests from %s, want ≥ 21", inTLS, clientID)
		}

		// A foreign identity and an unmeshed pod are refused by the
		// servers' proxies.
		for _, from := range []string{"attacker", "plain"} {
			code, body, err := get(l.net.Pod(from), fmt.Sprintf("http://%s:%d/", s0.IP, topology.PortApp))
			if err != nil || code != http.StatusForbidden {
				t.Errorf("%s → server-0: %d %q %v, want 403", from, code, body, err)
			}
		}
		ss := tlsStats(t, l, "server-0")
		if ss.Denied[attackerID] < 1 || ss.Denied[""] < 1 {
			t.Errorf("server-0 proxy denied %v, want the attacker %s and a client without identity", ss.Denied, attackerID)
		}
		if ss.Denied[clientID] != 0 {
			t.Errorf("server-0 proxy denied the client: %v", ss.Denied)
		}

		// gRPC (HTTP/2) through both proxies, to the service's VIP and to
		// a pod without policies (meshed clients allowed by default: the
		// attacker too).
		for _, from := range []string{"client", "attacker"} {
			p := l.net.Pod(from)
			conn, err := grpc.NewClient(fmt.Sprintf("%s:9000", l.vip["grpc"]), grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) { return p.Dial(ctx, "tcp", addr) }))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
			cancel()
			conn.Close()
			if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
				t.Errorf("%s → grpc health check: %v %v", from, resp, err)
			}
		}
		gs := tlsStats(t, l, "grpc-0")
		if gs.ClientIDs[clientID] < 1 || gs.ClientIDs[attackerID] < 1 {
			t.Errorf("grpc-0 proxy: inbound mTLS by client %v, want the client and the attacker", gs.ClientIDs)
		}

		// MESHBENCH_LINKERD_FIXTURES=DIR keeps the proxies' metrics (the
		// fixtures of internal/mesh/linkerd/proxy's parser tests).
		if dir := os.Getenv("MESHBENCH_LINKERD_FIXTURES"); dir != "" {
			for _, name := range []string{"client", "server-0"} {
				c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				text, err := l.mesh.Proxies[name].Metrics(c)
				cancel()
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "metrics-"+name+".txt"), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}

		// No plaintext anywhere (the refused requests are not carried).
		all, err := l.mesh.Stats(context.Background())
		if err != nil || len(all) != 5 {
			t.Fatalf("mesh stats: %d proxies, %v", len(all), err)
		}
		if p := linkerd.Plaintext(all); len(p) > 0 {
			t.Errorf("requests without mTLS: %v", p)
		}

		// The real proxies called every API of the control plane.
		calls := map[string]int{}
		for _, c := range l.mesh.ControlPlane.Calls() {
			if c.Err != "" {
				t.Errorf("control plane answered %s %s with %s", c.Method, c.Subject, c.Err)
			}
			calls[c.Method]++
			calls[c.Method+" "+c.Subject]++
		}
		for _, want := range []string{
			"Identity/Certify " + clientID,
			"Identity/Certify " + serverID,
			"InboundServerPolicies/WatchPort default:server-0:8080",
			"InboundServerPolicies/WatchPort default:server-0:4191",
			fmt.Sprintf("OutboundPolicies/Watch %s:80", l.vip["server"]),
			fmt.Sprintf("OutboundPolicies/Watch %s:8080", s0.IP),
			"Destination/Get server.default.svc.cluster.local:80",
			"Destination/GetProfile",
		} {
			if calls[want] == 0 {
				t.Errorf("the proxies never called %s; calls: %v", want, calls)
			}
		}
		if n := calls["Identity/Certify"]; n != 5 {
			t.Errorf("%d certificates signed, want one per meshed pod (5)", n)
		}
	})
	// Teardown: no proxy process, namespace or link of the lab is left.
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("proxy pid %d still exists after teardown (kill 0: %v)", pid, err)
		}
	}
	if left := leftovers(t, prefix); len(left) > 0 {
		t.Errorf("left after teardown: %v", left)
	}
	if len(pids) != 5 {
		t.Errorf("%d proxies ran, want 5", len(pids))
	}
}

// leftovers lists the host's links and named namespaces whose names start
// with prefix.
func leftovers(t *testing.T, prefix string) []string {
	t.Helper()
	if prefix == "" {
		return nil
	}
	links, err := netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range links {
		if strings.HasPrefix(l.Attrs().Name, prefix) {
			out = append(out, "link "+l.Attrs().Name)
		}
	}
	nss, _ := os.ReadDir("/run/netns")
	for _, e := range nss {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, "netns "+e.Name())
		}
	}
	return out
}

func pkixName(cn string) pkix.Name { return pkix.Name{CommonName: cn} }

// proxiesOf lists the running processes whose environment names dir as
// LINKERD2_PROXY_IDENTITY_DIR's parent (the proxies a mesh in dir started).
func proxiesOf(t *testing.T, dir string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		if strings.Contains(string(env), "LINKERD2_PROXY_IDENTITY_DIR="+dir+string(filepath.Separator)) {
			out = append(out, pid)
		}
	}
	return out
}

// TestLinkerdUpFailures: a failure half-way through Up stops the proxies
// already started and says what failed; a directory the proxy's user
// cannot reach is refused before anything starts.
func TestLinkerdUpFailures(t *testing.T) {
	proxyBin, ztunnelBin := requirements(t)
	subnet, prefix := freeLab(t)
	dir := proxyDir(t)
	o := netlab.Options{Prefix: prefix, Subnet: subnet, Ztunnel: ztunnelBin, Dir: filepath.Join(dir, "netlab"),
		Nodes: []netlab.NodeSpec{{Pods: []netlab.PodSpec{{Name: "a", Identity: topology.IdentityClient}, {Name: "b", Identity: topology.IdentityServer}}}}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nl, err := netlab.Up(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer nl.Close()
	ca, err := pki.NewRootCA(pkixName("root.linkerd.cluster.local"), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pods := func() []linkerd.Pod {
		var ps []linkerd.Pod
		for _, name := range []string{"a", "b"} {
			p := nl.Pod(name)
			ps = append(ps, linkerd.Pod{Name: name, Identity: p.Spec.Identity, IP: p.IP, NS: p.NS, Meshed: true, Ports: []int{topology.PortApp}})
		}
		return ps
	}

	// Pod b's control-plane port is taken: a's proxy was started and must
	// be gone after the error.
	blocker, err := nl.Pod("b").Listen("tcp", fmt.Sprintf("127.0.0.1:%d", linkerd.ControlPort))
	if err != nil {
		t.Fatal(err)
	}
	meshDir := filepath.Join(dir, "mesh")
	_, err = linkerd.Up(ctx, linkerd.Options{Proxy: proxyBin, Dir: meshDir, CA: ca, Pods: pods()})
	blocker.Close()
	if err == nil || !strings.Contains(err.Error(), "linkerd proxy for b: control plane listener") {
		t.Errorf("Up with b's port taken: %v", err)
	}
	if left := proxiesOf(t, meshDir); len(left) > 0 {
		t.Errorf("proxies %v left running after the failed Up", left)
	}

	// Interrupted while waiting: a CA that has expired signs nothing, so
	// no proxy gets its identity and none is ready; the context ends
	// (as on Ctrl-C), Up says which proxy it waited for and stops them all.
	expired, err := pki.NewRootCA(pkixName("expired"), pki.Options{Now: time.Now().Add(-48 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	waitDir := filepath.Join(dir, "wait")
	ictx, icancel := context.WithTimeout(ctx, 3*time.Second)
	_, err = linkerd.Up(ictx, linkerd.Options{Proxy: proxyBin, Dir: waitDir, CA: expired, Pods: pods()})
	icancel()
	if err == nil || !strings.Contains(err.Error(), "waiting for linkerd2-proxy for default:a to be ready") {
		t.Errorf("Up with an expired CA: %v", err)
	}
	if left := proxiesOf(t, waitDir); len(left) > 0 {
		t.Errorf("proxies %v left running after the interrupted Up", left)
	}

	// A directory the proxy's user cannot traverse.
	closed := filepath.Join(dir, "closed")
	if err := os.Mkdir(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err = linkerd.Up(ctx, linkerd.Options{Proxy: proxyBin, Dir: filepath.Join(closed, "mesh"), CA: ca, Pods: pods()})
	if err == nil || !strings.Contains(err.Error(), "not searchable by the proxy's user 2102") {
		t.Errorf("Up in a closed directory: %v", err)
	}
	if left := proxiesOf(t, filepath.Join(closed, "mesh")); len(left) > 0 {
		t.Errorf("proxies %v running after the refused Up", left)
	}

	// Bad options, all reported at once.
	_, err = linkerd.Up(ctx, linkerd.Options{Cores: -1, Pods: []linkerd.Pod{{Name: "x", Meshed: true}}})
	for _, want := range []string{"no linkerd2-proxy binary", "no directory", "proxy cores -1", "pod x is meshed but has no network namespace"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("bad options: error lacks %q: %v", want, err)
		}
	}
}

// TestLinkerdFaces runs the faces app (meshbench serve face, static as
// smiley, grpc as color) on netlab pods meshed with Linkerd, with the
// faces' five ALLOW rules (topology.RulesFor(faces, 5)) on all three: the
// client calls face's VIP; face calls smiley's VIP over HTTP and color's
// over gRPC, each through both proxies over mTLS; a foreign identity
// calling smiley is refused.
func TestLinkerdFaces(t *testing.T) {
	proxyBin, ztunnelBin := requirements(t)
	mb := testutil.BuildMeshbench(t)
	svc := func(name string) controlplane.Service {
		return controlplane.Service{Name: name, Namespace: "default", Port: 80, TargetPort: topology.PortApp}
	}
	backend := func(name string, id topology.Identity) podSpec {
		return podSpec{name: name, id: id, meshed: true, services: []string{strings.TrimSuffix(name, "-0")}, policies: true}
	}
	nodes := [][]podSpec{
		{{name: "client", id: topology.IdentityClient, meshed: true}, {name: "attacker", id: topology.IdentityAttacker, meshed: true}, backend("face-0", topology.IdentityFace)},
		{backend("smiley-0", topology.IdentitySmiley), backend("color-0", topology.IdentityColor)},
	}
	l := upWithRules(t, proxyBin, ztunnelBin, nodes, []controlplane.Service{svc("face"), svc("smiley"), svc("color")}, topology.RulesFor(topology.AppFaces, 5), 0)
	listen := fmt.Sprintf("0.0.0.0:%d", topology.PortApp)
	for _, c := range []struct {
		pod  string
		args []string
	}{
		{"smiley-0", []string{"serve", "static", "--listen", listen}},
		{"color-0", []string{"serve", "grpc", "--listen", listen}},
		{"face-0", []string{"serve", "face", "--listen", listen,
			"--smiley-url", fmt.Sprintf("http://%s:80/", l.vip["smiley"]), "--color-addr", fmt.Sprintf("%s:80", l.vip["color"])}},
	} {
		cmd := exec.Command(mb, c.args...)
		cmd.Stderr = os.Stderr
		if err := l.net.Pod(c.pod).Start(cmd); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := l.net.Pod("client")
	faceURL := fmt.Sprintf("http://%s:80/", l.vip["face"])
	if err := waitOK(ctx, client, faceURL); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if code, body, err := get(client, faceURL); err != nil || code != http.StatusOK {
			t.Fatalf("client → face: %d %q %v", code, body, err)
		}
	}
	faceID := controlplane.Name(topology.IdentityFace)
	fs := tlsStats(t, l, "face-0")
	if fs.ClientIDs[controlplane.Name(topology.IdentityClient)] < 10 || fs.InboundPlain != 0 {
		t.Errorf("face proxy inbound: %v over mTLS by client, %v plain", fs.ClientIDs, fs.InboundPlain)
	}
	if fs.ServerIDs[controlplane.Name(topology.IdentitySmiley)] < 10 || fs.ServerIDs[controlplane.Name(topology.IdentityColor)] < 10 || fs.OutboundPlain != 0 {
		t.Errorf("face proxy outbound: %v over mTLS, %v plain; want ≥ 10 to smiley and to color", fs.ServerIDs, fs.OutboundPlain)
	}
	for _, pod := range []string{"smiley-0", "color-0"} {
		if s := tlsStats(t, l, pod); s.ClientIDs[faceID] < 10 || s.InboundPlain != 0 {
			t.Errorf("%s proxy inbound: %v over mTLS, %v plain; want ≥ 10 from face", pod, s.ClientIDs, s.InboundPlain)
		}
	}
	if code, body, err := get(l.net.Pod("attacker"), fmt.Sprintf("http://%s:80/", l.vip["smiley"])); err != nil || code != http.StatusForbidden {
		t.Errorf("attacker → smiley: %d %q %v, want 403", code, body, err)
	}
}

// TestLinkerdManyPolicies: with --policies 1000 (topology.MaxPolicies) the
// server's proxy takes the 999 authorizations covering its port and still
// allows the client and refuses the attacker.
func TestLinkerdManyPolicies(t *testing.T) {
	proxyBin, ztunnelBin := requirements(t)
	nodes := [][]podSpec{{
		{name: "client", id: topology.IdentityClient, meshed: true},
		{name: "attacker", id: topology.IdentityAttacker, meshed: true},
		{name: "server-0", id: topology.IdentityServer, meshed: true, services: []string{"server"}, policies: true},
	}}
	l := up(t, proxyBin, ztunnelBin, nodes, nil, topology.MaxPolicies)
	serveHTTP(t, l.net.Pod("server-0"))
	url := fmt.Sprintf("http://%s:%d/", l.net.Pod("server-0").IP, topology.PortApp)
	if code, body, err := get(l.net.Pod("client"), url); err != nil || code != http.StatusOK {
		t.Errorf("client → server-0: %d %q %v", code, body, err)
	}
	if code, body, err := get(l.net.Pod("attacker"), url); err != nil || code != http.StatusForbidden {
		t.Errorf("attacker → server-0: %d %q %v, want 403", code, body, err)
	}
}
