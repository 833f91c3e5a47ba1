// Package netns makes and removes the network plumbing of a test substrate
// on this machine: a Linux bridge with an address in the host's network
// namespace, named network namespaces joined to it by veth pairs, their
// addresses and routes, and host routes. Every object carries the
// substrate's prefix, is recorded as it is made, and is removed in reverse
// order by Close, which also runs after a failure half-way. What goes in a
// namespace (a kubelet, a proxy, pods) is someone else's business.
//
// It needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN for mounting the namespace
// files under /run/netns). Links and routes are made with
// github.com/vishvananda/netlink, namespaces with
// github.com/vishvananda/netns; nothing shells out to ip(8).
package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// MaxNameLen is the longest link name Linux accepts (IFNAMSIZ-1).
const MaxNameLen = 15

// Substrate is one set of plumbing made under one name prefix.
type Substrate struct {
	// Prefix starts the name of every link and namespace made here.
	Prefix string

	mu     sync.Mutex
	undo   []step
	closed bool
}

type step struct {
	what string
	do   func() error
}

// New returns an empty substrate whose objects are named with prefix.
func New(prefix string) *Substrate { return &Substrate{Prefix: prefix} }

func (s *Substrate) record(what string, undo func() error) {
	s.mu.Lock()
	s.undo = append(s.undo, step{what, undo})
	s.mu.Unlock()
}

func (s *Substrate) name(n string) (string, error) {
	full := s.Prefix + n
	if len(full) > MaxNameLen {
		return "", fmt.Errorf("link name %q is longer than %d bytes", full, MaxNameLen)
	}
	return full, nil
}

// Bridge is a bridge in the host's network namespace, or in a node's
// (BridgeIn).
type Bridge struct {
	Name string
	Addr netip.Prefix // its address (the gateway of the namespaces on it)
	link netlink.Link
	ns   *NS // nil: the host's namespace
}

// Bridge creates bridge PREFIX+name with addr, up.
func (s *Substrate) Bridge(name string, addr netip.Prefix) (*Bridge, error) {
	full, err := s.name(name)
	if err != nil {
		return nil, err
	}
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: full}}
	if err := netlink.LinkAdd(br); err != nil {
		return nil, fmt.Errorf("creating bridge %s: %w", full, err)
	}
	s.record("bridge "+full, func() error { return delLink(full) })
	l, err := netlink.LinkByName(full)
	if err != nil {
		return nil, err
	}
	if err := netlink.AddrAdd(l, &netlink.Addr{IPNet: ipNet(addr)}); err != nil {
		return nil, fmt.Errorf("adding %s to %s: %w", addr, full, err)
	}
	if err := netlink.LinkSetUp(l); err != nil {
		return nil, fmt.Errorf("setting %s up: %w", full, err)
	}
	return &Bridge{Name: full, Addr: addr, link: l}, nil
}

// BridgeIn creates bridge PREFIX+name with addr, up, inside ns (a node's
// namespace: the node's pods hang on it, as on a Kubernetes node's CNI
// bridge). It goes with ns.
func (s *Substrate) BridgeIn(ns *NS, name string, addr netip.Prefix) (*Bridge, error) {
	full, err := s.name(name)
	if err != nil {
		return nil, err
	}
	// A bridge cannot change namespaces (NETIF_F_NETNS_LOCAL): it is
	// made inside, and goes with the namespace.
	br := &Bridge{Name: full, Addr: addr, ns: ns}
	err = ns.Do(func() error {
		if err := netlink.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: full}}); err != nil {
			return fmt.Errorf("creating bridge %s in %s: %w", full, ns.Name, err)
		}
		l, err := netlink.LinkByName(full)
		if err != nil {
			return err
		}
		if err := netlink.AddrAdd(l, &netlink.Addr{IPNet: ipNet(addr)}); err != nil {
			return fmt.Errorf("adding %s to %s in %s: %w", addr, full, ns.Name, err)
		}
		br.link = l
		return netlink.LinkSetUp(l)
	})
	if err != nil {
		return nil, err
	}
	return br, nil
}

// NS is a named network namespace (a file under /run/netns).
type NS struct {
	Name string
	h    netns.NsHandle
}

// Path is the namespace's file, for setns(2) or nsenter --net.
func (n *NS) Path() string { return filepath.Join("/run/netns", n.Name) }

// Namespace creates network namespace PREFIX+name with its loopback up.
func (s *Substrate) Namespace(name string) (*NS, error) {
	full, err := s.name(name)
	if err != nil {
		return nil, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return nil, err
	}
	defer orig.Close()
	// NewNamed moves this thread into the new namespace: come back
	// before anything else runs on it.
	h, err := netns.NewNamed(full)
	if err != nil {
		_ = netns.Set(orig)
		return nil, fmt.Errorf("creating network namespace %s: %w", full, err)
	}
	if err := netns.Set(orig); err != nil {
		// This thread is stuck in the new namespace: let it die with
		// the goroutine rather than run other goroutines there.
		runtime.LockOSThread()
		return nil, fmt.Errorf("returning from network namespace %s: %w", full, err)
	}
	ns := &NS{Name: full, h: h}
	s.record("netns "+full, func() error {
		h.Close()
		if err := netns.DeleteNamed(full); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	})
	if err := ns.Do(func() error {
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return err
		}
		return netlink.LinkSetUp(lo)
	}); err != nil {
		return nil, fmt.Errorf("setting lo up in %s: %w", full, err)
	}
	return ns, nil
}

// Do runs fn on a thread that is in the namespace (and returns to the
// host's namespace afterwards). Processes started in fn with os/exec are
// born in the namespace.
func (n *NS) Do(fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return err
	}
	defer orig.Close()
	if err := netns.Set(n.h); err != nil {
		return fmt.Errorf("entering network namespace %s: %w", n.Name, err)
	}
	ferr := fn()
	if err := netns.Set(orig); err != nil {
		runtime.LockOSThread() // see Namespace
		return errors.Join(ferr, fmt.Errorf("returning from network namespace %s: %w", n.Name, err))
	}
	return ferr
}

// Dial connects from inside the namespace: the socket is made there (and
// stays there), so addresses are the namespace's own, its loopback
// included.
func (n *NS) Dial(ctx context.Context, network, addr string) (c net.Conn, err error) {
	err = n.Do(func() error {
		var d net.Dialer
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// HTTPClient is an HTTP client whose connections start inside the
// namespace (Dial), e.g. to reach a proxy's admin port on the namespace's
// loopback.
func (n *NS) HTTPClient(timeout time.Duration, keepAlive bool) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		DisableKeepAlives: !keepAlive, DialContext: n.Dial,
	}}
}

// Veth joins ns to br: a veth pair PREFIX+hostName on the bridge (in the
// bridge's namespace), its peer
// named ifName inside ns with addr, up; with defaultRoute, a default route
// via the bridge's address. Without one, the namespace reaches only the
// bridge's subnet and the routes added to it: anything else fails at once
// with "network is unreachable" (the way to keep test traffic in).
func (s *Substrate) Veth(br *Bridge, ns *NS, hostName, ifName string, addr netip.Prefix, defaultRoute bool) error {
	full, err := s.name(hostName)
	if err != nil {
		return err
	}
	// The peer is made under a temporary unique name in the host and
	// renamed as it moves: two substrates' "eth0" would collide here.
	tmp, err := s.name(hostName + "p")
	if err != nil {
		return err
	}
	attrs := netlink.LinkAttrs{Name: full}
	if br.ns == nil {
		attrs.MasterIndex = br.link.Attrs().Index
	}
	v := &netlink.Veth{LinkAttrs: attrs, PeerName: tmp}
	if err := netlink.LinkAdd(v); err != nil {
		return fmt.Errorf("creating veth %s: %w", full, err)
	}
	s.record("veth "+full, func() error { return delLink(full) })
	host, err := netlink.LinkByName(full)
	if err != nil {
		return err
	}
	if br.ns != nil {
		// The bridge is in a node's namespace: the host end goes there.
		if err := netlink.LinkSetNsFd(host, int(br.ns.h)); err != nil {
			return fmt.Errorf("moving %s into %s: %w", full, br.ns.Name, err)
		}
		if err := br.ns.Do(func() error {
			l, err := netlink.LinkByName(full)
			if err != nil {
				return err
			}
			if err := netlink.LinkSetMasterByIndex(l, br.link.Attrs().Index); err != nil {
				return err
			}
			return netlink.LinkSetUp(l)
		}); err != nil {
			return fmt.Errorf("putting %s on %s: %w", full, br.Name, err)
		}
	} else if err := netlink.LinkSetUp(host); err != nil {
		return err
	}
	peer, err := netlink.LinkByName(tmp)
	if err != nil {
		return err
	}
	if err := netlink.LinkSetNsFd(peer, int(ns.h)); err != nil {
		return fmt.Errorf("moving %s into %s: %w", tmp, ns.Name, err)
	}
	return ns.Do(func() error {
		l, err := netlink.LinkByName(tmp)
		if err != nil {
			return err
		}
		if err := netlink.LinkSetName(l, ifName); err != nil {
			return err
		}
		if err := netlink.AddrAdd(l, &netlink.Addr{IPNet: ipNet(addr)}); err != nil {
			return fmt.Errorf("adding %s in %s: %w", addr, ns.Name, err)
		}
		if err := netlink.LinkSetUp(l); err != nil {
			return err
		}
		if !defaultRoute {
			return nil
		}
		gw := br.Addr.Addr().AsSlice()
		return netlink.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Gw: gw})
	})
}

// HostRoute routes dst via gw in the host's namespace; Close deletes it.
func (s *Substrate) HostRoute(dst netip.Prefix, gw netip.Addr) error {
	r := &netlink.Route{Dst: ipNet(dst.Masked()), Gw: gw.AsSlice()}
	if err := netlink.RouteAdd(r); err != nil {
		return fmt.Errorf("adding route %s via %s: %w", dst, gw, err)
	}
	s.record("route "+dst.String(), func() error {
		if err := netlink.RouteDel(r); err != nil && !errors.Is(err, netlink.ErrNotImplemented) && !isNotFound(err) {
			return err
		}
		return nil
	})
	return nil
}

// Route routes dst via gw inside ns (on-link on its ifName), e.g. to
// another namespace's pod subnet across the bridge. It goes with ns.
func (ns *NS) Route(ifName string, dst netip.Prefix, gw netip.Addr) error {
	return ns.Do(func() error {
		l, err := netlink.LinkByName(ifName)
		if err != nil {
			return err
		}
		if err := netlink.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Dst: ipNet(dst.Masked()), Gw: gw.AsSlice()}); err != nil {
			return fmt.Errorf("adding route %s via %s in %s: %w", dst, gw, ns.Name, err)
		}
		return nil
	})
}

// Sysctl writes a net sysctl (e.g. "net/ipv4/ip_forward") in ns.
func (ns *NS) Sysctl(key, value string) error {
	return ns.Do(func() error {
		return os.WriteFile(filepath.Join("/proc/sys", key), []byte(value), 0o644)
	})
}

// OnClose adds a step to Close (run in reverse order with the others), for
// things a user of the substrate makes in it (e.g. a CNI bridge inside a
// namespace goes with the namespace, but a host-side file does not).
func (s *Substrate) OnClose(what string, undo func() error) { s.record(what, undo) }

// Close removes everything in reverse order of making, going on past
// failures, and reports them all. Safe to call more than once.
func (s *Substrate) Close() error {
	s.mu.Lock()
	undo := s.undo
	s.undo = nil
	s.closed = true
	s.mu.Unlock()
	var errs []error
	for i := len(undo) - 1; i >= 0; i-- {
		if err := undo[i].do(); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", undo[i].what, err))
		}
	}
	return errors.Join(errs...)
}

func delLink(name string) error {
	l, err := netlink.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil // gone with its namespace or its peer
		}
		return err
	}
	return netlink.LinkDel(l)
}

func isNotFound(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "no such process") || errors.Is(err, os.ErrNotExist))
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// InUse reports whether p overlaps an address or a route of the host's
// namespace, or a link or a named namespace already has a name starting
// with prefix: a substrate there would collide with someone else's.
func InUse(p netip.Prefix, prefix string) (bool, error) {
	return retryDump(func() (bool, error) { return inUse(p, prefix) })
}

// NamesInUse reports whether a link or a named namespace has a name
// starting with prefix: what a substrate of that prefix leaves behind if
// it leaves anything (its addresses and routes go with its links). A
// check after a lab's teardown asks this, not InUse: another lab may
// take the same subnet as soon as it is free, but not the same prefix
// while a name of it remains.
func NamesInUse(prefix string) (bool, error) {
	if prefix == "" {
		return false, errors.New("netns: NamesInUse needs a prefix")
	}
	return retryDump(func() (bool, error) { return namesInUse(prefix) })
}

// retryDump runs f again when a dump was interrupted by a change made
// meanwhile (other labs, other tests on the host): it is incomplete.
func retryDump(f func() (bool, error)) (bool, error) {
	for attempt := 0; ; attempt++ {
		busy, err := f()
		if attempt < 5 && errors.Is(err, netlink.ErrDumpInterrupted) {
			time.Sleep(time.Duration(attempt+1) * 20 * time.Millisecond)
			continue
		}
		return busy, err
	}
}

func inUse(p netip.Prefix, prefix string) (bool, error) {
	if prefix != "" {
		if busy, err := namesInUse(prefix); err != nil || busy {
			return busy, err
		}
	}
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return false, err
	}
	for _, a := range addrs {
		if pa, ok := netip.AddrFromSlice(a.IP); ok && (p.Contains(pa.Unmap()) || prefixOf(a.IPNet).Contains(p.Addr())) {
			return true, nil
		}
	}
	routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		return false, err
	}
	for _, r := range routes {
		if r.Dst == nil {
			continue // the default route overlaps everything
		}
		if rp := prefixOf(r.Dst); rp.Bits() > 0 && rp.Overlaps(p) {
			return true, nil
		}
	}
	return false, nil
}

func namesInUse(prefix string) (bool, error) {
	links, err := netlink.LinkList()
	if err != nil {
		return false, err
	}
	for _, l := range links {
		if strings.HasPrefix(l.Attrs().Name, prefix) {
			return true, nil
		}
	}
	if names, err := os.ReadDir("/run/netns"); err == nil {
		if slices.ContainsFunc(names, func(e os.DirEntry) bool { return strings.HasPrefix(e.Name(), prefix) }) {
			return true, nil
		}
	}
	return false, nil
}

func prefixOf(n *net.IPNet) netip.Prefix {
	a, _ := netip.AddrFromSlice(n.IP)
	ones, _ := n.Mask.Size()
	return netip.PrefixFrom(a.Unmap(), ones)
}
