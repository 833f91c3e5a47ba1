package netns

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// requireRoot: bridges and network namespaces need root.
func requireRoot(t *testing.T) {
	t.Helper()
	testutil.RequireRoot(t, "netns: needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) to make bridges and network namespaces")
}

// freeSubnet picks a /24 under 10.97.0.0/16 and a prefix nobody uses.
func freeSubnet(t *testing.T) (netip.Prefix, string) {
	t.Helper()
	for i := range 256 {
		p := netip.MustParsePrefix(fmt.Sprintf("10.97.%d.0/24", i))
		prefix := fmt.Sprintf("mbt%d", i)
		busy, err := InUse(p, prefix)
		if err != nil {
			t.Fatal(err)
		}
		if !busy {
			return p, prefix
		}
	}
	t.Fatal("no free subnet under 10.97.0.0/16")
	return netip.Prefix{}, ""
}

// TestSubstrate makes a bridge and two namespaces joined to it, checks
// that TCP flows host → namespace and namespace → namespace (and that a
// namespace without a default route cannot reach past its subnet), then
// that Close removes every link, namespace and route.
func TestSubstrate(t *testing.T) {
	requireRoot(t)
	subnet, prefix := freeSubnet(t)
	s := New(prefix)
	closed := false
	defer func() {
		if !closed {
			s.Close()
		}
	}()
	gw := subnet.Addr().Next()
	br, err := s.Bridge("br", netip.PrefixFrom(gw, 24))
	if err != nil {
		t.Fatal(err)
	}
	ips := []netip.Addr{gw.Next(), gw.Next().Next()}
	var nss []*NS
	for i, ip := range ips {
		ns, err := s.Namespace(fmt.Sprintf("n%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Veth(br, ns, fmt.Sprintf("h%d", i), "eth0", netip.PrefixFrom(ip, 24), i == 0); err != nil {
			t.Fatal(err)
		}
		nss = append(nss, ns)
	}
	if err := s.HostRoute(netip.MustParsePrefix("10.96.250.0/24"), ips[0]); err != nil {
		t.Fatal(err)
	}
	// A listener made in namespace 0 lives there.
	var ln net.Listener
	if err := nss[0].Do(func() (err error) {
		ln, err = net.Listen("tcp", netip.AddrPortFrom(ips[0], 0).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, "hi")
			c.Close()
		}
	}()
	read := func(dial func() (net.Conn, error)) (string, error) {
		c, err := dial()
		if err != nil {
			return "", err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		b, err := io.ReadAll(c)
		return string(b), err
	}
	addr := ln.Addr().String()
	if got, err := read(func() (net.Conn, error) { return net.DialTimeout("tcp", addr, 5*time.Second) }); got != "hi" {
		t.Errorf("host → %s: %q %v", addr, got, err)
	}
	var got string
	err = nss[1].Do(func() (err error) {
		got, err = read(func() (net.Conn, error) { return net.DialTimeout("tcp", addr, 5*time.Second) })
		return err
	})
	if got != "hi" {
		t.Errorf("namespace 1 → %s: %q %v", addr, got, err)
	}
	// Namespace 1 has no default route: an address off its subnet is
	// unreachable at once (nothing is sent).
	err = nss[1].Do(func() error {
		_, err := net.DialTimeout("tcp", "10.96.251.1:80", 2*time.Second)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("namespace 1 → off-subnet: %v, want network unreachable", err)
	}
	if busy, _ := InUse(subnet, prefix); !busy {
		t.Error("InUse does not see the substrate")
	}
	if busy, _ := NamesInUse(prefix); !busy {
		t.Error("NamesInUse does not see the substrate's names")
	}

	closed = true
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if busy, err := InUse(subnet, prefix); busy || err != nil {
		t.Errorf("after Close the subnet or prefix is still in use (%v)", err)
	}
	if busy, err := NamesInUse(prefix); busy || err != nil {
		t.Errorf("after Close names %s* are still in use (%v)", prefix, err)
	}
	if busy, _ := InUse(netip.MustParsePrefix("10.96.250.0/24"), ""); busy {
		t.Error("the host route is left")
	}
	for _, ns := range nss {
		if _, err := os.Stat(ns.Path()); !os.IsNotExist(err) {
			t.Errorf("%s left: %v", ns.Path(), err)
		}
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestNameTooLong: a link name past 15 bytes is refused before anything
// is made.
func TestNameTooLong(t *testing.T) {
	s := New("averylongprefix")
	if _, err := s.Bridge("br", netip.MustParsePrefix("10.97.255.1/24")); err == nil || !strings.Contains(err.Error(), "longer than 15") {
		t.Errorf("got %v", err)
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
}
