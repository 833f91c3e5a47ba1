package envoy

import (
	"net"
	"slices"
	"strings"
	"testing"
)

func TestCheckAddrsFree(t *testing.T) {
	ip := loopbackIP()
	busy1, busy2, free := freeAddr(t, ip), freeAddr(t, ip), freeAddr(t, ip)
	for _, a := range []string{busy1, busy2} {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
	}

	err := CheckAddrsFree([]AddrOwner{
		{busy1, "server-0 sidecar inbound"},
		{free, "server-0 sidecar admin"},
		{busy2, "client-0 sidecar outbound"},
		{free, "waypoint admin"}, // planned twice
		{"127.0.0.1", "bad plan"},
	})
	if err == nil {
		t.Fatal("no error")
	}
	var got []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		got = append(got, e.Error())
	}
	want := []string{
		"listener address " + busy1 + " (server-0 sidecar inbound) is already in use",
		"listener address " + busy2 + " (client-0 sidecar outbound) is already in use",
		"listener address " + free + " (waypoint admin) is also planned for server-0 sidecar admin",
		`listener address "127.0.0.1" (bad plan) is not ip:port: `, // then netip's own words
	}
	if len(got) == len(want) && strings.HasPrefix(got[3], want[3]) {
		got[3] = want[3]
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors:\n got %q\nwant %q", got, want)
	}

	if err := CheckAddrsFree([]AddrOwner{{free, "admin"}, {ip + ":0", "any"}, {ip + ":0", "any again"}}); err != nil {
		t.Errorf("free addresses: %v", err)
	}
	// An address no interface has cannot be bound: reported, not in use.
	err = CheckAddrsFree([]AddrOwner{{"192.0.2.1:15000", "off-host"}})
	if err == nil || !strings.HasPrefix(err.Error(), "listener address 192.0.2.1:15000 (off-host) cannot be bound: ") {
		t.Errorf("192.0.2.1: %v", err)
	}
}
