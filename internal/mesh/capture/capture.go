// Package capture installs traffic capture inside a pod's network
// namespace the way Istio does it: for ambient, the in-pod redirection that
// istio-cni sets up for a shared-mode ztunnel (outbound to 15001, inbound
// plaintext to 15006 and HBONE to 15008 by TPROXY, ztunnel's own packets
// exempt by their mark, original-source routing through table 100); for
// sidecars, istio-init's nat rules (IstioInit: outbound to 15001, inbound
// to 15006, the proxy's uid and gid exempt); for Linkerd, proxy-init's.
//
// Rules go in as nftables over netlink (github.com/google/nftables, nft.go),
// each beside the iptables rule it stands for; routes and rules with
// netlink. No command is run, so no iptables package is needed. They go
// with the namespace: deleting it removes them.
package capture

import (
	"fmt"
	"net"
	"net/netip"

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

// Table names, as istio-cni's and istio-init's nftables modes name theirs.
const (
	inPodMangle = "istio-ambient-mangle"
	inPodNAT    = "istio-ambient-nat"
	sidecarNAT  = "istio-proxy-nat"
)

// inPodTables are the tables InPod installs: istio-cni's in-pod rules for
// a shared-mode ztunnel (the iptables rules each stands for beside it).
func inPodTables() []table {
	ztunnel := markMatch(ZtunnelMark, markMask, false)
	notZtunnel := markMatch(ZtunnelMark, markMask, true)
	hbone := cat(tcp(), dport(PortHBONE), notZtunnel)
	plain := cat(addr(false, localhost, true), tcp(), notZtunnel)
	return []table{{
		name:   inPodMangle,
		chains: []chain{manglePrerouting, mangleOutput},
		rules: []nfRule{
			// -m mark --mark 0x539/0xfff -j CONNMARK --set-xmark 0x111/0xfff:
			// connections ztunnel accepts keep ConnMark, so the app's
			// replies are routed back into ztunnel's transparent socket
			{"prerouting", "meta mark & 0xfff == 0x539 ct mark set ct mark & 0xfffff000 ^ 0x111",
				cat(ztunnel, setCtMark(ConnMark, markMask))},
			// ! -d 127.0.0.1/32 -p tcp -i lo -j ACCEPT
			{"prerouting", `ip daddr != 127.0.0.1 meta l4proto tcp iifname "lo" accept`,
				cat(addr(false, localhost, true), tcp(), ifname(true, "lo", false), accept())},
			// -p tcp --dport 15008 -m mark ! --mark 0x539/0xfff -j TPROXY
			// --on-port 15008 --on-ip 127.0.0.1 --tproxy-mark 0x111/0xfff
			{"prerouting", "tcp dport 15008 meta mark & 0xfff != 0x539 tproxy to 127.0.0.1:15008 meta mark set meta mark & 0xfffff000 ^ 0x111 accept",
				cat(hbone, tproxyTo(localhost, PortHBONE), setMark(ConnMark, markMask), accept())},
			// TPROXY drops what finds no socket; nft's tproxy leaves the rule
			{"prerouting", "tcp dport 15008 meta mark & 0xfff != 0x539 drop", cat(hbone, drop())},
			// -p tcp -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
			{"prerouting", "meta l4proto tcp ct state established,related accept", cat(tcp(), ctEstablished(), accept())},
			// ! -d 127.0.0.1/32 -p tcp -m mark ! --mark 0x539/0xfff -j TPROXY
			// --on-port 15006 --on-ip 127.0.0.1 --tproxy-mark 0x111/0xfff
			{"prerouting", "ip daddr != 127.0.0.1 meta l4proto tcp meta mark & 0xfff != 0x539 tproxy to 127.0.0.1:15006 meta mark set meta mark & 0xfffff000 ^ 0x111 accept",
				cat(plain, tproxyTo(localhost, PortInboundPlaintext), setMark(ConnMark, markMask), accept())},
			{"prerouting", "ip daddr != 127.0.0.1 meta l4proto tcp meta mark & 0xfff != 0x539 drop", cat(plain, drop())},
			// -m connmark --mark 0x111/0xfff -j CONNMARK --restore-mark
			{"output", "ct mark & 0xfff == 0x111 meta mark set ct mark", cat(ctMarkMatch(ConnMark, markMask), restoreMark())},
		},
	}, {
		name:   inPodNAT,
		chains: []chain{natOutput},
		rules: []nfRule{
			// -p tcp -m mark --mark 0x111/0xfff -j ACCEPT: replies of
			// connections ztunnel accepted
			{"output", "meta l4proto tcp meta mark & 0xfff == 0x111 accept", cat(tcp(), markMatch(ConnMark, markMask, false), accept())},
			// ! -d 127.0.0.1/32 -o lo -j ACCEPT
			{"output", `ip daddr != 127.0.0.1 oifname "lo" accept`, cat(addr(false, localhost, true), ifname(false, "lo", false), accept())},
			// ! -d 127.0.0.1/32 -p tcp -m mark ! --mark 0x539/0xfff -j
			// REDIRECT --to-ports 15001: the app's outbound TCP to ztunnel
			{"output", "ip daddr != 127.0.0.1 meta l4proto tcp meta mark & 0xfff != 0x539 redirect to :15001",
				cat(plain, redirect(PortOutbound))},
		},
	}}
}

// InPod installs ztunnel's in-pod redirection in ns (a pod's namespace
// with its interfaces up).
func InPod(ns *netns.NS) error {
	if err := install(ns, "in-pod capture", inPodTables()); err != nil {
		return err
	}
	return ns.Do(func() error {
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

// istioInitTable is istio-init's nat rules for a sidecar running as uid
// and gid, in order, with the iptables rules they stand for.
func istioInitTable(uid, gid int) table {
	const (
		inbound, inRedirect = "istio-inbound", "istio-in-redirect"
		output, redir       = "istio-output", "istio-redirect"
	)
	u, g := fmt.Sprint(uid), fmt.Sprint(gid)
	notLocal := addr(false, localhost, true)
	lo := ifname(false, "lo", false)
	rs := []nfRule{
		// -A ISTIO_REDIRECT -p tcp -j REDIRECT --to-ports 15001
		{redir, "meta l4proto tcp redirect to :15001", cat(tcp(), redirect(PortSidecarOutbound))},
		// -A ISTIO_IN_REDIRECT -p tcp -j REDIRECT --to-ports 15006
		{inRedirect, "meta l4proto tcp redirect to :15006", cat(tcp(), redirect(PortSidecarInbound))},
		// -A PREROUTING -p tcp -j ISTIO_INBOUND
		{"prerouting", "meta l4proto tcp jump istio-inbound", cat(tcp(), jump(inbound))},
	}
	for _, p := range sidecarInboundExcluded {
		// -A ISTIO_INBOUND -p tcp --dport P -j RETURN
		rs = append(rs, nfRule{inbound, fmt.Sprintf("tcp dport %d return", p), cat(tcp(), dport(uint16(p)), ret())})
	}
	passthrough := netip.MustParseAddr(InboundPassthroughSource)
	rs = append(rs,
		// -A ISTIO_INBOUND -p tcp -j ISTIO_IN_REDIRECT
		nfRule{inbound, "meta l4proto tcp jump istio-in-redirect", cat(tcp(), jump(inRedirect))},
		// -A OUTPUT -p tcp -j ISTIO_OUTPUT
		nfRule{"output", "meta l4proto tcp jump istio-output", cat(tcp(), jump(output))},
		// the sidecar's own connections to the app
		// (-s 127.0.0.6/32 -o lo -j RETURN)
		nfRule{output, `ip saddr 127.0.0.6 oifname "lo" return`, cat(addr(true, passthrough, false), lo, ret())},
		// the sidecar calling its own pod's IP: inbound, through 15006
		// (! -d 127.0.0.1/32 -o lo -p tcp -m owner --uid-owner U -j ISTIO_IN_REDIRECT)
		nfRule{output, `ip daddr != 127.0.0.1 oifname "lo" meta l4proto tcp meta skuid ` + u + " jump istio-in-redirect",
			cat(notLocal, lo, tcp(), owner(false, uid, false), jump(inRedirect))},
		// -o lo -m owner ! --uid-owner U -j RETURN
		nfRule{output, `oifname "lo" meta skuid != ` + u + " return", cat(lo, owner(false, uid, true), ret())},
		// everything else the sidecar sends goes out as it is
		// (-m owner --uid-owner U -j RETURN)
		nfRule{output, "meta skuid " + u + " return", cat(owner(false, uid, false), ret())},
		// the same by group (--gid-owner G)
		nfRule{output, `ip daddr != 127.0.0.1 oifname "lo" meta l4proto tcp meta skgid ` + g + " jump istio-in-redirect",
			cat(notLocal, lo, tcp(), owner(true, gid, false), jump(inRedirect))},
		nfRule{output, `oifname "lo" meta skgid != ` + g + " return", cat(lo, owner(true, gid, true), ret())},
		nfRule{output, "meta skgid " + g + " return", cat(owner(true, gid, false), ret())},
		// -d 127.0.0.1/32 -j RETURN
		nfRule{output, "ip daddr 127.0.0.1 return", cat(addr(false, localhost, false), ret())},
		// the app's outbound TCP: to the sidecar's 15001 (-j ISTIO_REDIRECT)
		nfRule{output, "jump istio-redirect", jump(redir)},
	)
	return table{name: sidecarNAT,
		chains: []chain{natPrerouting, natOutput, regular(inbound), regular(inRedirect), regular(output), regular(redir)},
		rules:  rs}
}

// IstioInit installs istio-init's sidecar capture in ns (a pod's
// namespace): TCP arriving at the pod goes to the sidecar's inbound port
// 15006 (except 15008, 15090, 15021, 15020), the pod's outbound TCP to its
// outbound port 15001, and the sidecar's own traffic (uid or gid, Istio's
// 1337) and its connections to the app from 127.0.0.6 are left alone.
// The sidecar finds each connection's original destination with
// SO_ORIGINAL_DST (Envoy's original_dst listener filter).
func IstioInit(ns *netns.NS, uid, gid int) error {
	return install(ns, "istio-init capture", []table{istioInitTable(uid, gid)})
}
