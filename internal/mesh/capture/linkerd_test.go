package capture

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/coreos/go-iptables/iptables"

	"github.com/meshbench/meshbench/internal/sys/netns"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestLinkerd installs proxy-init's rules in a fresh namespace and reads
// them back there, and checks the host's nat table did not get them. Their
// effect on traffic through the real linkerd2-proxy is tested in
// internal/mesh/linkerd.
func TestLinkerd(t *testing.T) {
	testutil.RequireRoot(t, "capture: needs root to make a network namespace")
	prefix := fmt.Sprintf("mbk%d", os.Getpid()%100000)
	s := netns.New(prefix)
	defer s.Close()
	ns, err := s.Namespace("-pod")
	if err != nil {
		t.Fatal(err)
	}
	if err := Linkerd(ns, ProxyInit{}); err != nil {
		t.Fatal(err)
	}
	list := func() map[string][]string {
		ipt, err := iptables.New()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]string{}
		for _, ch := range []string{"PREROUTING", "OUTPUT", linkerdInboundChain, linkerdOutboundChain} {
			rs, err := ipt.List("nat", ch)
			if err != nil {
				continue // the host has no such chain
			}
			out[ch] = rs
		}
		return out
	}
	var inside map[string][]string
	if err := ns.Do(func() error { inside = list(); return nil }); err != nil {
		t.Fatal(err)
	}
	all := strings.Join(append(append(inside["PREROUTING"], inside["OUTPUT"]...), append(inside[linkerdInboundChain], inside[linkerdOutboundChain]...)...), "\n")
	for _, want := range []string{
		// inbound: the proxy's admin/control and proxy-init's ports stay, the rest goes to 4143
		"--dports 4190,4191,4567,4568",
		"--to-ports 4143",
		// outbound: the proxy's own uid and loopback are exempt, the rest goes to 4140
		"--uid-owner 2102",
		"-o lo",
		"--to-ports 4140",
		// both chains hooked in
		`-A PREROUTING -m comment --comment "proxy-init/install-proxy-init-prerouting" -j PROXY_INIT_REDIRECT`,
		`-A OUTPUT -m comment --comment "proxy-init/install-proxy-init-output" -j PROXY_INIT_OUTPUT`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("rules inside the namespace lack %q:\n%s", want, all)
		}
	}
	if n := strings.Count(all, "proxy-init/"); n != len(ProxyInit{}.rules()) {
		t.Errorf("found %d proxy-init rules, want %d:\n%s", n, len(ProxyInit{}.rules()), all)
	}
	host := list()
	if _, ok := host[linkerdOutboundChain]; ok {
		t.Errorf("the host's nat table has chain %s", linkerdOutboundChain)
	}
	// A second install in the same namespace fails (the chains exist)
	// rather than doubling the rules.
	if err := Linkerd(ns, ProxyInit{}); err == nil {
		t.Error("a second install succeeded")
	}
	// Removed, nothing of it is left, and it installs again; removing
	// twice is fine.
	for range 2 {
		if err := RemoveLinkerd(ns, ProxyInit{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := ns.Do(func() error { inside = list(); return nil }); err != nil {
		t.Fatal(err)
	}
	if _, ok := inside[linkerdInboundChain]; ok || strings.Contains(strings.Join(append(inside["PREROUTING"], inside["OUTPUT"]...), "\n"), "proxy-init") {
		t.Errorf("rules left after RemoveLinkerd: %v", inside)
	}
	if err := Linkerd(ns, ProxyInit{}); err != nil {
		t.Errorf("install after removal: %v", err)
	}
}
