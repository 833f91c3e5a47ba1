package capture

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/meshbench/meshbench/internal/sys/netns"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// envDial makes the test binary a helper that dials the address in it and
// exits: the connection as another process (the proxy's uid) makes it.
const envDial = "MESHBENCH_CAPTURE_DIAL"

func TestMain(m *testing.M) {
	if addr := os.Getenv(envDial); addr != "" {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		c.Write([]byte("x"))
		c.Close()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// originalDst is the connection's destination before any REDIRECT
// (SO_ORIGINAL_DST, what Envoy's original_dst listener filter reads).
func originalDst(c net.Conn) (netip.AddrPort, error) {
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return netip.AddrPort{}, err
	}
	var out netip.AddrPort
	var serr error
	err = raw.Control(func(fd uintptr) {
		const soOriginalDst = 80
		mreq, err := unix.GetsockoptIPv6Mreq(int(fd), unix.SOL_IP, soOriginalDst)
		if err != nil {
			serr = err
			return
		}
		b := mreq.Multiaddr // a sockaddr_in: family, port (big endian), address
		out = netip.AddrPortFrom(netip.AddrFrom4([4]byte{b[4], b[5], b[6], b[7]}), uint16(b[2])<<8|uint16(b[3]))
	})
	if err == nil {
		err = serr
	}
	return out, err
}

// arrival is a connection one of the test's listeners accepted.
type arrival struct {
	listener string
	origDst  netip.AddrPort
}

// TestIstioInit puts istio-init's rules in pod A of a two-pod bridge and
// sends real connections: the app's outbound lands on A's 15001 with its
// original destination, inbound on A's 15006, while the proxy's uid, its
// 127.0.0.6 connections to the app, the excluded port 15008 and loopback
// pass untouched.
func TestIstioInit(t *testing.T) {
	testutil.RequireRoot(t, "capture: needs root to make network namespaces")
	s := netns.New(fmt.Sprintf("mbi%d", os.Getpid()%100000))
	defer s.Close()
	fabric, err := s.Namespace("f")
	if err != nil {
		t.Fatal(err)
	}
	br, err := s.BridgeIn(fabric, "br", netip.MustParsePrefix("10.98.251.1/24"))
	if err != nil {
		t.Fatal(err)
	}
	a, b := netip.MustParseAddr("10.98.251.10"), netip.MustParseAddr("10.98.251.11")
	podA, err := s.Namespace("a")
	if err != nil {
		t.Fatal(err)
	}
	podB, err := s.Namespace("b")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		ns   *netns.NS
		veth string
		addr netip.Addr
	}{{podA, "va", a}, {podB, "vb", b}} {
		if err := s.Veth(br, p.ns, p.veth, "eth0", netip.PrefixFrom(p.addr, 24), true); err != nil {
			t.Fatal(err)
		}
	}
	const proxyUID = 1337
	noCommands(t)
	if err := IstioInit(podA, proxyUID, proxyUID); err != nil {
		t.Fatal(err)
	}
	arrivals := make(chan arrival, 16)
	listen := func(ns *netns.NS, name, addr string) {
		var lis net.Listener
		if err := ns.Do(func() (err error) { lis, err = net.Listen("tcp", addr); return err }); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lis.Close() })
		go func() {
			for {
				c, err := lis.Accept()
				if err != nil {
					return
				}
				// Without a nat entry (pod B has no rules) there is
				// no original destination: the zero value.
				od, _ := originalDst(c)
				arrivals <- arrival{name, od}
				c.Close()
			}
		}()
	}
	listen(podA, "A outbound 15001", "0.0.0.0:15001")
	listen(podA, "A inbound 15006", "0.0.0.0:15006")
	listen(podA, "A app", a.String()+":8080")
	listen(podA, "A hbone 15008", a.String()+":15008")
	listen(podA, "A loopback", "127.0.0.1:9999")
	listen(podB, "B app", b.String()+":8080")

	dial := func(ns *netns.NS, addr string, local net.Addr) error {
		return ns.Do(func() error {
			d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: local}
			c, err := d.Dial("tcp", addr)
			if err != nil {
				return err
			}
			return c.Close()
		})
	}
	// The proxy's uid runs a copy of this test binary (go test's build
	// directory is root's own).
	helperDir, err := os.MkdirTemp("", "meshbench-capture-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(helperDir)
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	helper := helperDir + "/dial"
	if err := os.WriteFile(helper, self, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(helperDir, 0o755); err != nil {
		t.Fatal(err)
	}
	dialAsProxy := func(addr string) error {
		cmd := exec.Command(helper)
		cmd.Env = []string{envDial + "=" + addr}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: proxyUID, Gid: proxyUID}}
		var out strings.Builder
		cmd.Stderr = &out
		if err := podA.Do(cmd.Start); err != nil {
			return err
		}
		if err := cmd.Wait(); err != nil {
			return fmt.Errorf("%v: %s", err, out.String())
		}
		return nil
	}
	ab := func(ip netip.Addr, port uint16) netip.AddrPort { return netip.AddrPortFrom(ip, port) }
	tests := []struct {
		name     string
		send     func() error
		listener string
		origDst  netip.AddrPort // checked when valid
	}{
		// the app's outbound call: to its sidecar's 15001, destination kept
		{"app outbound", func() error { return dial(podA, b.String()+":8080", nil) }, "A outbound 15001", ab(b, 8080)},
		// a peer calling the pod's app port: to the sidecar's 15006
		{"inbound", func() error { return dial(podB, a.String()+":8080", nil) }, "A inbound 15006", ab(a, 8080)},
		// the sidecar's own outbound (uid 1337): straight to the peer
		{"proxy uid outbound", func() error { return dialAsProxy(b.String() + ":8080") }, "B app", netip.AddrPort{}},
		// the sidecar's inbound hop to the app, from 127.0.0.6: straight to the app
		{"passthrough to app", func() error {
			return dial(podA, a.String()+":8080", &net.TCPAddr{IP: net.ParseIP(InboundPassthroughSource)})
		}, "A app", netip.AddrPort{}},
		// HBONE's port is not captured inbound
		{"inbound 15008", func() error { return dial(podB, a.String()+":15008", nil) }, "A hbone 15008", netip.AddrPort{}},
		// loopback is not captured
		{"loopback", func() error { return dial(podA, "127.0.0.1:9999", nil) }, "A loopback", netip.AddrPort{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.send(); err != nil {
				t.Fatal(err)
			}
			select {
			case got := <-arrivals:
				if got.listener != tc.listener {
					t.Errorf("arrived at %s, want %s", got.listener, tc.listener)
				}
				if tc.origDst.IsValid() && got.origDst != tc.origDst {
					t.Errorf("original destination %s, want %s", got.origDst, tc.origDst)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("no listener accepted the connection")
			}
		})
	}
}
