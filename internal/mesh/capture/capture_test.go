package capture

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/coreos/go-iptables/iptables"
	"github.com/vishvananda/netlink"

	"github.com/meshbench/meshbench/internal/sys/netns"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestInPod installs the rules in a fresh namespace and reads them back
// there (iptables and netlink), and checks the host's tables did not get
// them. The end-to-end effect (traffic through the real ztunnel) is tested
// in internal/mesh/ztunnel and internal/platform/netlab.
func TestInPod(t *testing.T) {
	testutil.RequireRoot(t, "capture: needs root to make a network namespace")
	// Only the names matter here (the namespace gets no address): a
	// per-process prefix keeps parallel runs apart.
	prefix := fmt.Sprintf("mbc%d", os.Getpid()%100000)
	s := netns.New(prefix)
	defer s.Close()
	ns, err := s.Namespace("-pod")
	if err != nil {
		t.Fatal(err)
	}
	if err := InPod(ns); err != nil {
		t.Fatal(err)
	}
	want := len(inPodRules())
	count := func() (n int, rules []netlink.Rule) {
		ipt, err := iptables.New()
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range [][2]string{{"mangle", "PREROUTING"}, {"mangle", "OUTPUT"}, {"nat", "OUTPUT"}} {
			rs, err := ipt.List(tc[0], tc[1])
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rs {
				if strings.Contains(r, "0x539") || strings.Contains(r, "0x111") || strings.Contains(r, "-i lo") || strings.Contains(r, "-o lo") || strings.Contains(r, "RELATED,ESTABLISHED") {
					n++
				}
			}
		}
		rules, err = netlink.RuleList(netlink.FAMILY_V4)
		if err != nil {
			t.Fatal(err)
		}
		return n, rules
	}
	var inside int
	var rules []netlink.Rule
	if err := ns.Do(func() error { inside, rules = count(); return nil }); err != nil {
		t.Fatal(err)
	}
	if inside != want {
		t.Errorf("found %d of the %d rules inside the namespace", inside, want)
	}
	found := false
	for _, r := range rules {
		if r.Table == RouteTable && r.Mark == ConnMark {
			found = true
		}
	}
	if !found {
		t.Errorf("no rule fwmark 0x%x lookup %d inside the namespace", ConnMark, RouteTable)
	}
	if host, hostRules := count(); host == want {
		t.Errorf("the host's tables have the pod's %d rules too", host)
	} else {
		for _, r := range hostRules {
			if r.Table == RouteTable && r.Mark == ConnMark {
				t.Errorf("the host has the pod's fwmark rule")
			}
		}
	}
}
