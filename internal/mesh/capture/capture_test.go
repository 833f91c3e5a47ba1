package capture

import (
	"fmt"
	"os"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/meshbench/meshbench/internal/sys/netns"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// noCommands empties PATH for the test: the capture runs no command (no
// iptables, no nft), so it must work on a machine without them.
func noCommands(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
}

// comments are the comments of the rules of tables, in install order.
func comments(tables []table) []string {
	var out []string
	for _, tb := range tables {
		for _, r := range tb.rules {
			out = append(out, r.text)
		}
	}
	return out
}

// readBack lists the rules of the named tables in ns, keyed by comment.
func readBack(t *testing.T, ns *netns.NS, names ...string) map[string]bool {
	t.Helper()
	var got []Listed
	var err error
	if ns == nil {
		got, err = listHere(names)
	} else {
		got, err = List(ns, names...)
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, l := range got {
		out[l.Comment] = true
	}
	return out
}

// TestInPod installs the rules in a fresh namespace with no command on
// PATH and reads them back there (nftables and netlink), and checks the
// host did not get them. The end-to-end effect (traffic through the real
// ztunnel) is tested in internal/mesh/ztunnel and internal/platform/netlab.
func TestInPod(t *testing.T) {
	testutil.RequireRoot(t, "capture: needs root to make a network namespace")
	noCommands(t)
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
	want := comments(inPodTables())
	inside := readBack(t, ns, inPodMangle, inPodNAT)
	for _, c := range want {
		if !inside[c] {
			t.Errorf("rule %q not found inside the namespace", c)
		}
	}
	if len(inside) != len(want) {
		t.Errorf("found %d rules inside the namespace, want %d: %v", len(inside), len(want), inside)
	}
	var rules []netlink.Rule
	if err := ns.Do(func() (err error) { rules, err = netlink.RuleList(netlink.FAMILY_V4); return err }); err != nil {
		t.Fatal(err)
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
	if host := readBack(t, nil, inPodMangle, inPodNAT); len(host) > 0 {
		t.Errorf("the host has the pod's rules: %v", host)
	}
	hostRules, err := netlink.RuleList(netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range hostRules {
		if r.Table == RouteTable && r.Mark == ConnMark {
			t.Errorf("the host has the pod's fwmark rule")
		}
	}
	// A second install fails whole (the tables exist): nothing doubled.
	if err := InPod(ns); err == nil {
		t.Error("a second install succeeded")
	}
	if again := readBack(t, ns, inPodMangle, inPodNAT); len(again) != len(want) {
		t.Errorf("after a failed second install: %d rules, want %d", len(again), len(want))
	}
}

// TestProbe: the kernel check the substrate runs before anything is made
// passes here (with no command on PATH) and leaves no table behind.
func TestProbe(t *testing.T) {
	testutil.RequireRoot(t, "capture: needs root to make a network namespace")
	noCommands(t)
	s := netns.New(fmt.Sprintf("mbp%d", os.Getpid()%100000))
	defer s.Close()
	ns, err := s.Namespace("-probe")
	if err != nil {
		t.Fatal(err)
	}
	if err := Probe(ns); err != nil {
		t.Fatal(err)
	}
	if left, err := List(ns); err != nil || len(left) > 0 {
		t.Errorf("after the probe: rules %v (%v)", left, err)
	}
}
