package kubetest

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"github.com/vishvananda/netlink"
)

// nodeAddrLabel marks the addresses kubetest puts on lo, so a leftover
// (from a test process killed before Stop) is recognisable:
// `ip addr show dev lo label lo:kubetest`.
const nodeAddrLabel = "lo:kubetest"

// nodeAddress is the address the kwok nodes' kubelet endpoint listens on.
//
// The API server's node proxy (/api/v1/nodes/NODE/proxy/..., what
// `kubectl get --raw .../proxy/metrics/resource` and meshbench's kubelet
// sampler use) refuses node addresses that are not global unicast
// ("address not allowed"), so with kwok on 127.0.0.1 it cannot reach the
// nodes. When the test process may change links (root), Start puts one
// /32 address of 10.254.0.0/16, derived from kwok's port so that clusters
// running at the same time differ, on lo: traffic to it never leaves the
// machine, and Go's and the API server's checks see a global unicast
// address. Without that permission the nodes stay on 127.0.0.1 and only
// the node proxy is unavailable (Cluster.NodeProxy is false).
type nodeAddress struct {
	ip    netip.Addr
	owned bool // added by this cluster: removed by release
}

// addNodeAddress puts 10.254.(port>>8).(port&255)/32 on lo, or returns
// 127.0.0.1 and why it could not.
func addNodeAddress(port int) (nodeAddress, error) {
	loopback := nodeAddress{ip: netip.MustParseAddr("127.0.0.1")}
	ip := netip.AddrFrom4([4]byte{10, 254, byte(port >> 8), byte(port)})
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return loopback, fmt.Errorf("finding lo: %w", err)
	}
	a := &netlink.Addr{IPNet: &net.IPNet{IP: ip.AsSlice(), Mask: net.CIDRMask(32, 32)}, Label: nodeAddrLabel}
	switch err := netlink.AddrAdd(lo, a); {
	case errors.Is(err, syscall.EEXIST):
		// Left by a killed test process that had the same port: usable,
		// but not this cluster's to remove.
		return nodeAddress{ip: ip}, nil
	case err != nil:
		return loopback, fmt.Errorf("adding %s to lo: %w", ip, err)
	}
	return nodeAddress{ip: ip, owned: true}, nil
}

// release removes the address if this cluster added it.
func (a *nodeAddress) release() error {
	if !a.owned {
		return nil
	}
	a.owned = false
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return err
	}
	err = netlink.AddrDel(lo, &netlink.Addr{IPNet: &net.IPNet{IP: a.ip.AsSlice(), Mask: net.CIDRMask(32, 32)}, Label: nodeAddrLabel})
	if err != nil && !errors.Is(err, syscall.EADDRNOTAVAIL) {
		return fmt.Errorf("removing %s from lo: %w", a.ip, err)
	}
	return nil
}
