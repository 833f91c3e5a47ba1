package capture

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/sys/netns"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestLinkerd installs proxy-init's rules in a fresh namespace with no
// command on PATH and reads them back there, and checks the host did not
// get them. Their effect on traffic through the real linkerd2-proxy is
// tested in internal/mesh/linkerd.
func TestLinkerd(t *testing.T) {
	testutil.RequireRoot(t, "capture: needs root to make a network namespace")
	noCommands(t)
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
	inside := readBack(t, ns, linkerdTable)
	all := strings.Join(func() []string {
		var out []string
		for c := range inside {
			out = append(out, c)
		}
		return out
	}(), "\n")
	for _, want := range []string{
		// inbound: the proxy's admin/control and proxy-init's ports stay, the rest goes to 4143
		"proxy-init/ignore-port-4190,4191,4567,4568: tcp dport 4191 return",
		"proxy-init/redirect-all-incoming-to-proxy-port: meta l4proto tcp redirect to :4143",
		// outbound: the proxy's own uid and loopback are exempt, the rest goes to 4140
		"proxy-init/ignore-proxy-user-id: meta skuid 2102 return",
		`proxy-init/ignore-loopback: oifname "lo" return`,
		"proxy-init/redirect-all-outgoing-to-proxy-port: meta l4proto tcp redirect to :4140",
		// both chains hooked in
		"proxy-init/install-proxy-init-prerouting: jump PROXY_INIT_REDIRECT",
		"proxy-init/install-proxy-init-output: jump PROXY_INIT_OUTPUT",
	} {
		if !inside[want] {
			t.Errorf("rules inside the namespace lack %q:\n%s", want, all)
		}
	}
	if n, want := len(inside), len(ProxyInit{}.table().rules); n != want {
		t.Errorf("found %d proxy-init rules, want %d:\n%s", n, want, all)
	}
	if host := readBack(t, nil, linkerdTable); len(host) > 0 {
		t.Errorf("the host has proxy-init's rules: %v", host)
	}
	// A second install in the same namespace fails (the table exists)
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
	if left := readBack(t, ns, linkerdTable); len(left) > 0 {
		t.Errorf("rules left after RemoveLinkerd: %v", left)
	}
	if err := Linkerd(ns, ProxyInit{}); err != nil {
		t.Errorf("install after removal: %v", err)
	}
}
