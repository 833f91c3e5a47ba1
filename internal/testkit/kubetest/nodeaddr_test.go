package kubetest

import (
	"errors"
	"net/netip"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"
)

// TestNodeAddress puts the node address on lo and takes it off again, as
// Start and Stop do; two clusters at once (different kwok ports) get
// different addresses.
func TestNodeAddress(t *testing.T) {
	onLo := func(ip netip.Addr) bool {
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			t.Fatal(err)
		}
		addrs, err := netlink.AddrList(lo, netlink.FAMILY_V4)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range addrs {
			if got, _ := netip.AddrFromSlice(a.IP); got.Unmap() == ip {
				return a.Label == nodeAddrLabel
			}
		}
		return false
	}
	ports, err := freePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	a, err := addNodeAddress(ports[0])
	if errors.Is(err, syscall.EPERM) {
		t.Skipf("not allowed to add addresses here (%v): the test cluster's nodes stay on 127.0.0.1", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer a.release()
	b, err := addNodeAddress(ports[1])
	if err != nil {
		t.Fatal(err)
	}
	defer b.release()
	if a.ip == b.ip || !a.ip.Is4() || !a.ip.IsGlobalUnicast() || a.ip.IsLoopback() {
		t.Fatalf("addresses %v and %v: want two different global unicast IPv4 addresses", a.ip, b.ip)
	}
	if !onLo(a.ip) || !onLo(b.ip) {
		t.Fatalf("%v or %v not on lo with label %s", a.ip, b.ip, nodeAddrLabel)
	}
	if err := a.release(); err != nil {
		t.Fatal(err)
	}
	if onLo(a.ip) || !onLo(b.ip) {
		t.Errorf("after releasing %v: on lo %v; %v on lo %v", a.ip, onLo(a.ip), b.ip, onLo(b.ip))
	}
}
