package netlab

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/mesh/ztunnel"
	"github.com/meshbench/meshbench/internal/sys/netns"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// requirements skips (fails under MESHBENCH_REQUIRE_K8S=1, as `make test`
// sets) where namespaces cannot be made or no ztunnel binary is at hand.
func requirements(t *testing.T) string {
	t.Helper()
	testutil.RequireRoot(t, "netlab: needs root to make network namespaces")
	bin, err := ztunnel.Find("", ".")
	if err != nil {
		testutil.SkipOrFail(t, "netlab: "+err.Error())
	}
	return bin
}

// freeLab picks a /16 under 10.98.0.0/15… (10.98–10.99 are avoided by
// the real-node harness: it uses 10.99 and 10.244) — here 10.98.0.0/16
// and then 172.27.0.0/16 — and a prefix nobody uses; the lab's addresses
// live only in its own namespaces, so only the names must differ between
// labs, but the subnet is checked against the host too.
func freeLab(t *testing.T, taken map[string]bool) (netip.Prefix, string) {
	t.Helper()
	for _, sn := range []string{"10.98.0.0/16", "172.27.0.0/16"} {
		p := netip.MustParsePrefix(sn)
		for i := range 100 {
			prefix := fmt.Sprintf("mbl%02d", i) // fixed width: no prefix is the start of another
			if taken[prefix] {
				continue
			}
			busy, err := netns.InUse(p, prefix)
			if err != nil {
				t.Fatal(err)
			}
			if !busy {
				taken[prefix] = true
				return p, prefix
			}
		}
	}
	t.Fatal("no free subnet and prefix")
	return netip.Prefix{}, ""
}

// twoNodes: the client and the attacker on node 1, two server replicas on
// node 2, the server service, the four ALLOW rules on the servers.
func twoNodes(bin, dir string, subnet netip.Prefix, prefix string) Options {
	server := func(name string) PodSpec {
		return PodSpec{Name: name, Identity: topology.IdentityServer, Enrolled: true, Policies: true, Services: []string{"server"}}
	}
	return Options{
		Prefix: prefix, Subnet: subnet, Ztunnel: bin, Dir: dir, Policies: 4,
		Nodes: []NodeSpec{
			{Pods: []PodSpec{{Name: "client", Identity: topology.IdentityClient, Enrolled: true}, {Name: "attacker", Identity: topology.IdentityAttacker, Enrolled: true}}},
			{Pods: []PodSpec{server("server-0"), server("server-1")}},
		},
		Services: []ServiceSpec{{Name: "server", Namespace: "default", Port: 80, TargetPort: 8080}},
	}
}

// serveApps starts an HTTP app on :8080 in every server pod that answers
// with the peer address it sees.
func serveApps(t *testing.T, l *Lab) {
	t.Helper()
	for _, name := range []string{"server-0", "server-1"} {
		lis, err := l.Pod(name).Listen("tcp", "0.0.0.0:8080")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "%s %s", name, r.RemoteAddr)
		})}
		go srv.Serve(lis)
		t.Cleanup(func() { srv.Close() })
	}
}

func get(c *http.Client, url string) (string, error) {
	resp, err := c.Get(url)
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

// mtlsConnections sums ztunnel's istio_tcp_connections_opened_total for
// reporter with mutual_tls from principal.
func mtlsConnections(t *testing.T, zt *ztunnel.Process, reporter, principal string) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	text, err := zt.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, m := range fams["istio_tcp_connections_opened_total"].GetMetric() {
		l := map[string]string{}
		for _, lp := range m.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		if l["reporter"] == reporter && l["connection_security_policy"] == "mutual_tls" && l["source_principal"] == principal {
			n += m.GetCounter().GetValue() + m.GetUntyped().GetValue() // ztunnel's OpenMetrics _total reads as untyped
		}
	}
	return n
}

// exercise checks one two-node lab end to end: pod IP and VIP requests
// cross nodes over HBONE with mTLS counted by both ztunnels, the servers see
// the client pod's own IP, both replicas answer via the VIP, the attacker
// is refused by ztunnel's policy.
func exercise(t *testing.T, l *Lab) {
	if !strings.Contains(l.ZtunnelVersion, "version.BuildInfo") {
		t.Errorf("ztunnel version %q", l.ZtunnelVersion)
	}
	client, attacker := l.Pod("client"), l.Pod("attacker")
	s0 := l.Pod("server-0")
	const n = 20
	seen := map[string]int{}
	for i := range n {
		url := fmt.Sprintf("http://%s:80/", l.Services["server"])
		if i%2 == 0 {
			url = fmt.Sprintf("http://%s:8080/", s0.IP)
		}
		body, err := get(client.HTTPClient(false), url)
		if err != nil {
			t.Fatalf("client → %s: %v", url, err)
		}
		who, peer, _ := strings.Cut(body, " ")
		seen[who]++
		if host, _, _ := net.SplitHostPort(peer); host != client.IP.String() {
			t.Errorf("%s saw the client as %s, want its pod IP %s (source preserved)", who, peer, client.IP)
		}
	}
	if seen["server-1"] == 0 {
		t.Errorf("the VIP never reached server-1: %v", seen)
	}
	if _, err := get(attacker.HTTPClient(false), fmt.Sprintf("http://%s:8080/", s0.IP)); err == nil {
		t.Errorf("attacker → server-0 answered; ztunnel's ALLOW policies should refuse it")
	}
	id := topology.IdentityClient.SPIFFE()
	if got := mtlsConnections(t, l.Nodes[0].Ztunnel, "source", id); got < n {
		t.Errorf("node1's ztunnel counted %v mutual_tls outbound connections from %s, want ≥ %d", got, id, n)
	}
	if got := mtlsConnections(t, l.Nodes[1].Ztunnel, "destination", id); got < n {
		t.Errorf("node2's ztunnel counted %v mutual_tls inbound connections from %s, want ≥ %d", got, id, n)
	}
	// ztunnel writes its access log asynchronously (a non-blocking
	// writer): on a loaded machine the lines land after the requests have
	// returned, so the log is read until it holds both or 10 s pass — far
	// more than a busy 2-core machine takes, and a log that never gets
	// them still fails.
	logged := func(b []byte) bool {
		return strings.Contains(string(b), `src.identity="`+id+`"`) && strings.Contains(string(b), "policy rejection")
	}
	log, _ := os.ReadFile(l.Nodes[1].Log)
	for deadline := time.Now().Add(10 * time.Second); !logged(log) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		log, _ = os.ReadFile(l.Nodes[1].Log)
	}
	if !logged(log) {
		t.Errorf("node2's access log lacks the client's identity or the attacker's rejection (waited 10 s)")
	}
	for _, node := range l.Nodes {
		rss, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", node.Ztunnel.PID()))
		if err == nil {
			for _, line := range strings.Split(string(rss), "\n") {
				if strings.HasPrefix(line, "VmRSS:") {
					t.Logf("%s ztunnel %s", node.Name, strings.Join(strings.Fields(line), " "))
				}
			}
		}
	}
}

// TestTwoNodes brings up two two-node labs side by side (distinct name
// prefixes, each with its own ztunnels, CAs and namespaces), exercises both
// at once, and checks that closing them leaves no namespace or link.
func TestTwoNodes(t *testing.T) {
	bin := requirements(t)
	taken := map[string]bool{}
	type labRun struct {
		subnet netip.Prefix
		prefix string
		lab    *Lab
	}
	runs := make([]*labRun, 2)
	for i := range runs {
		s, p := freeLab(t, taken)
		runs[i] = &labRun{subnet: s, prefix: p}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(runs))
	for i, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.lab, errs[i] = Up(ctx, twoNodes(bin, t.TempDir(), r.subnet, r.prefix))
		}()
	}
	wg.Wait()
	for _, r := range runs {
		if r.lab != nil {
			defer r.lab.Close()
		}
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range runs {
		serveApps(t, r.lab)
	}
	for i, r := range runs {
		t.Run(fmt.Sprintf("lab%d", i), func(t *testing.T) { exercise(t, r.lab) })
	}
	for _, r := range runs {
		if err := r.lab.Close(); err != nil {
			t.Error(err)
		}
		if err := r.lab.Close(); err != nil { // twice is harmless
			t.Error(err)
		}
		if busy, err := netns.NamesInUse(r.prefix); err != nil || busy {
			t.Errorf("after Close, names %s* are still in use (err %v)", r.prefix, err)
		}
	}
}

// TestOptionsRefused: bad options are refused before anything is made,
// every problem at once.
func TestOptionsRefused(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want []string
	}{
		// empty: prefix, subnet, nodes
		{"empty", Options{}, []string{"lab prefix", "lab subnet", "lab nodes"}},
		// an enrolled pod needs ztunnel (a lab without one does not: mode none)
		{"no binary", Options{Prefix: "a", Subnet: netip.MustParsePrefix("10.98.0.0/16"), Nodes: []NodeSpec{{Pods: []PodSpec{{Name: "c", Enrolled: true}}}}}, []string{"no ztunnel binary"}},
		// a public /16 and a long prefix
		{"public subnet", Options{Prefix: "toolong1", Subnet: netip.MustParsePrefix("8.8.0.0/16"), Ztunnel: "z", Nodes: []NodeSpec{{}}}, []string{"lab prefix", "lab subnet"}},
		// a /24 instead of a /16, too many policies
		{"small subnet", Options{Prefix: "a", Subnet: netip.MustParsePrefix("10.98.1.0/24"), Ztunnel: "z", Nodes: []NodeSpec{{}}, Policies: topology.MaxPolicies + 1}, []string{"lab subnet", "policies"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Up(context.Background(), tc.o)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestUpFailsClean: a broken ztunnel binary (/bin/false) is refused at
// `ztunnel version`, before anything is made; a ztunnel that dies after
// the plumbing (a script that answers `version` and exits otherwise) fails
// Up, which then leaves no namespace or link.
func TestUpFailsClean(t *testing.T) {
	requirements(t)
	subnet, prefix := freeLab(t, map[string]bool{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := Up(ctx, twoNodes("/bin/false", t.TempDir(), subnet, prefix))
	if err == nil {
		l.Close()
		t.Fatal("Up succeeded with a ztunnel that exits at once")
	}
	if !strings.Contains(err.Error(), "version") {
		t.Errorf("error %q does not say ztunnel exited", err)
	}
	fake := filepath.Join(t.TempDir(), "ztunnel")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\n[ \"$1\" = version ] && echo version.BuildInfo{fake} && exit 0\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err = Up(ctx, twoNodes(fake, t.TempDir(), subnet, prefix))
	if err == nil {
		l.Close()
		t.Fatal("Up succeeded with a ztunnel that exits at once")
	}
	if !strings.Contains(err.Error(), "ztunnel exited") {
		t.Errorf("error %q does not say ztunnel exited", err)
	}
	if busy, err := netns.NamesInUse(prefix); err != nil || busy {
		t.Errorf("after a failed Up, names %s* are still in use (err %v)", prefix, err)
	}
}
