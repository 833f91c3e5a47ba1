// Package capture installs traffic capture inside a pod's network
// namespace the way Istio does it: for ambient, the in-pod redirection that
// istio-cni sets up for a shared-mode ztunnel (outbound to 15001, inbound
// plaintext to 15006 and HBONE to 15008 by TPROXY, ztunnel's own packets
// exempt by their mark, original-source routing through table 100); for
// sidecars, istio-init's nat rules (IstioInit: outbound to 15001, inbound
// to 15006, the proxy's uid and gid exempt).
//
// Rules go in with github.com/coreos/go-iptables (which runs iptables(8)
// born inside the namespace, so they land in the pod's tables); routes and
// rules with netlink. They go with the namespace: deleting it removes them.
package capture

import (
	"fmt"
	"net"

	"github.com/coreos/go-iptables/iptables"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/meshbench/meshbench/internal/sys/netns"
)

// ztunnel's in-pod ports and marks (istio-cni's defaults).
const (
	// PortOutbound is ztunnel's outbound capture port.
	PortOutbound = 15001
	// PortInboundPlaintext is ztunnel's inbound port for plaintext TCP.
	PortInboundPlaintext = 15006
	// PortHBONE is ztunnel's inbound HBONE (mTLS) port.
	PortHBONE = 15008
	// ZtunnelMark marks ztunnel's own sockets (INPOD_MARK, 1337): those
	// packets are never captured again.
	ZtunnelMark = 0x539
	// ConnMark marks connections ztunnel accepted by TPROXY, so their
	// replies route back to it (table 100).
	ConnMark = 0x111
	// markMask is the part of the mark the rules look at.
	markMask = 0xfff
	// RouteTable is the routing table of original-source replies.
	RouteTable = 100
)

// rule is one iptables rule: table, chain, arguments.
type rule struct {
	table, chain string
	args         []string
}

// InPodRules are the rules InPod installs, in order (exported for the
// record a lab writes of what it did).
func inPodRules() []rule {
	zm := fmt.Sprintf("0x%x/0x%x", ZtunnelMark, markMask)
	cm := fmt.Sprintf("0x%x/0x%x", ConnMark, markMask)
	return []rule{
		// mangle: connections ztunnel accepts keep ConnMark so replies
		// from the app are routed back into ztunnel's transparent socket
		{"mangle", "PREROUTING", []string{"-m", "mark", "--mark", zm, "-j", "CONNMARK", "--set-xmark", cm}},
		{"mangle", "PREROUTING", []string{"!", "-d", "127.0.0.1/32", "-p", "tcp", "-i", "lo", "-j", "ACCEPT"}},
		{"mangle", "PREROUTING", []string{"-p", "tcp", "-m", "tcp", "--dport", fmt.Sprint(PortHBONE), "-m", "mark", "!", "--mark", zm,
			"-j", "TPROXY", "--on-port", fmt.Sprint(PortHBONE), "--on-ip", "127.0.0.1", "--tproxy-mark", cm}},
		{"mangle", "PREROUTING", []string{"-p", "tcp", "-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED", "-j", "ACCEPT"}},
		{"mangle", "PREROUTING", []string{"!", "-d", "127.0.0.1/32", "-p", "tcp", "-m", "mark", "!", "--mark", zm,
			"-j", "TPROXY", "--on-port", fmt.Sprint(PortInboundPlaintext), "--on-ip", "127.0.0.1", "--tproxy-mark", cm}},
		{"mangle", "OUTPUT", []string{"-m", "connmark", "--mark", cm, "-j", "CONNMARK", "--restore-mark", "--nfmask", "0xffffffff", "--ctmask", "0xffffffff"}},
		// nat: the app's outbound TCP goes to ztunnel's 15001, except
		// ztunnel's own and replies of accepted connections
		{"nat", "OUTPUT", []string{"-p", "tcp", "-m", "mark", "--mark", cm, "-j", "ACCEPT"}},
		{"nat", "OUTPUT", []string{"!", "-d", "127.0.0.1/32", "-o", "lo", "-j", "ACCEPT"}},
		{"nat", "OUTPUT", []string{"!", "-d", "127.0.0.1/32", "-p", "tcp", "-m", "mark", "!", "--mark", zm,
			"-j", "REDIRECT", "--to-ports", fmt.Sprint(PortOutbound)}},
	}
}

// InPod installs ztunnel's in-pod redirection in ns (a pod's namespace
// with its interfaces up).
func InPod(ns *netns.NS) error {
	return ns.Do(func() error {
		ipt, err := iptables.New()
		if err != nil {
			return fmt.Errorf("in-pod capture in %s: %w", ns.Name, err)
		}
		for _, r := range inPodRules() {
			if err := ipt.Append(r.table, r.chain, r.args...); err != nil {
				return fmt.Errorf("in-pod capture in %s: %s %s: %w", ns.Name, r.table, r.chain, err)
			}
		}
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return err
		}
		_, all, _ := net.ParseCIDR("0.0.0.0/0")
		if err := netlink.RouteAdd(&netlink.Route{LinkIndex: lo.Attrs().Index, Dst: all, Table: RouteTable, Type: unix.RTN_LOCAL, Scope: netlink.SCOPE_HOST}); err != nil {
			return fmt.Errorf("in-pod capture in %s: local route in table %d: %w", ns.Name, RouteTable, err)
		}
		r := netlink.NewRule()
		r.Mark = ConnMark
		m := uint32(markMask)
		r.Mask = &m
		r.Table = RouteTable
		r.Priority = 32764
		if err := netlink.RuleAdd(r); err != nil {
			return fmt.Errorf("in-pod capture in %s: rule fwmark 0x%x lookup %d: %w", ns.Name, ConnMark, RouteTable, err)
		}
		return nil
	})
}

// Sidecar capture (istio-init, Istio's istio-iptables defaults).
const (
	// PortSidecarOutbound is the sidecar's outbound listener: the pod's
	// outbound TCP is redirected there.
	PortSidecarOutbound = 15001
	// PortSidecarInbound is the sidecar's inbound listener: TCP arriving
	// at the pod is redirected there.
	PortSidecarInbound = 15006
	// InboundPassthroughSource is the source address the sidecar gives
	// its connections to the app (Istio's 127.0.0.6): never captured.
	InboundPassthroughSource = "127.0.0.6"
)

// sidecarInboundExcluded are the pod ports istio-init leaves uncaptured:
// HBONE, Envoy's Prometheus port, the readiness port and the agent's.
var sidecarInboundExcluded = []int{15008, 15090, 15021, 15020}

// istioInitChains are the nat chains IstioInit creates.
var istioInitChains = []string{"ISTIO_INBOUND", "ISTIO_IN_REDIRECT", "ISTIO_OUTPUT", "ISTIO_REDIRECT"}

// istioInitRules are the nat rules of istio-init for a sidecar running as
// uid and gid, in order.
func istioInitRules(uid, gid int) []rule {
	u, g := fmt.Sprint(uid), fmt.Sprint(gid)
	rs := []rule{
		{"nat", "ISTIO_REDIRECT", []string{"-p", "tcp", "-j", "REDIRECT", "--to-ports", fmt.Sprint(PortSidecarOutbound)}},
		{"nat", "ISTIO_IN_REDIRECT", []string{"-p", "tcp", "-j", "REDIRECT", "--to-ports", fmt.Sprint(PortSidecarInbound)}},
		{"nat", "PREROUTING", []string{"-p", "tcp", "-j", "ISTIO_INBOUND"}},
	}
	for _, p := range sidecarInboundExcluded {
		rs = append(rs, rule{"nat", "ISTIO_INBOUND", []string{"-p", "tcp", "--dport", fmt.Sprint(p), "-j", "RETURN"}})
	}
	return append(rs,
		rule{"nat", "ISTIO_INBOUND", []string{"-p", "tcp", "-j", "ISTIO_IN_REDIRECT"}},
		rule{"nat", "OUTPUT", []string{"-p", "tcp", "-j", "ISTIO_OUTPUT"}},
		// the sidecar's own connections to the app
		rule{"nat", "ISTIO_OUTPUT", []string{"-s", InboundPassthroughSource + "/32", "-o", "lo", "-j", "RETURN"}},
		// the sidecar calling its own pod's IP: inbound, through 15006
		rule{"nat", "ISTIO_OUTPUT", []string{"!", "-d", "127.0.0.1/32", "-o", "lo", "-p", "tcp", "-m", "owner", "--uid-owner", u, "-j", "ISTIO_IN_REDIRECT"}},
		rule{"nat", "ISTIO_OUTPUT", []string{"-o", "lo", "-m", "owner", "!", "--uid-owner", u, "-j", "RETURN"}},
		// everything else the sidecar sends goes out as it is
		rule{"nat", "ISTIO_OUTPUT", []string{"-m", "owner", "--uid-owner", u, "-j", "RETURN"}},
		rule{"nat", "ISTIO_OUTPUT", []string{"!", "-d", "127.0.0.1/32", "-o", "lo", "-p", "tcp", "-m", "owner", "--gid-owner", g, "-j", "ISTIO_IN_REDIRECT"}},
		rule{"nat", "ISTIO_OUTPUT", []string{"-o", "lo", "-m", "owner", "!", "--gid-owner", g, "-j", "RETURN"}},
		rule{"nat", "ISTIO_OUTPUT", []string{"-m", "owner", "--gid-owner", g, "-j", "RETURN"}},
		rule{"nat", "ISTIO_OUTPUT", []string{"-d", "127.0.0.1/32", "-j", "RETURN"}},
		// the app's outbound TCP: to the sidecar's 15001
		rule{"nat", "ISTIO_OUTPUT", []string{"-j", "ISTIO_REDIRECT"}},
	)
}

// IstioInit installs istio-init's sidecar capture in ns (a pod's
// namespace): TCP arriving at the pod goes to the sidecar's inbound port
// 15006 (except 15008, 15090, 15021, 15020), the pod's outbound TCP to its
// outbound port 15001, and the sidecar's own traffic (uid or gid, Istio's
// 1337) and its connections to the app from 127.0.0.6 are left alone.
// The sidecar finds each connection's original destination with
// SO_ORIGINAL_DST (Envoy's original_dst listener filter).
func IstioInit(ns *netns.NS, uid, gid int) error {
	return ns.Do(func() error {
		ipt, err := iptables.New()
		if err != nil {
			return fmt.Errorf("istio-init capture in %s: %w", ns.Name, err)
		}
		for _, c := range istioInitChains {
			if err := ipt.NewChain("nat", c); err != nil {
				return fmt.Errorf("istio-init capture in %s: chain %s: %w", ns.Name, c, err)
			}
		}
		for _, r := range istioInitRules(uid, gid) {
			if err := ipt.Append(r.table, r.chain, r.args...); err != nil {
				return fmt.Errorf("istio-init capture in %s: %s %s: %w", ns.Name, r.table, r.chain, err)
			}
		}
		return nil
	})
}
