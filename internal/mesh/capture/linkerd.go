package capture

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/meshbench/meshbench/internal/sys/netns"
)

// Linkerd's proxy-init defaults: the proxy's ports and user.
const (
	// LinkerdInboundPort is linkerd2-proxy's inbound listener.
	LinkerdInboundPort = 4143
	// LinkerdOutboundPort is linkerd2-proxy's outbound listener.
	LinkerdOutboundPort = 4140
	// LinkerdProxyUID is the proxy's user: its own packets are not
	// captured again.
	LinkerdProxyUID = 2102
)

// ProxyInit is one pod's Linkerd capture: what linkerd2-proxy-init sets
// up in the pod before the proxy starts.
type ProxyInit struct {
	// ProxyUID is the proxy's user (default LinkerdProxyUID).
	ProxyUID int
	// InboundPort and OutboundPort are the proxy's listeners (defaults
	// 4143 and 4140).
	InboundPort, OutboundPort int
	// IgnoreInboundPorts are never redirected inbound: the proxy's own
	// admin (4191) and control (4190) ports, and proxy-init's default
	// 4567, 4568. Nil means those.
	IgnoreInboundPorts []int
	// IgnoreOutboundPorts are never redirected outbound; nil means
	// proxy-init's default 4567, 4568.
	IgnoreOutboundPorts []int
}

// Linkerd's proxy-init chain names, and the table that holds them.
const (
	linkerdInboundChain  = "PROXY_INIT_REDIRECT"
	linkerdOutboundChain = "PROXY_INIT_OUTPUT"
	linkerdTable         = "linkerd-proxy-init"
)

func (o ProxyInit) withDefaults() ProxyInit {
	if o.ProxyUID == 0 {
		o.ProxyUID = LinkerdProxyUID
	}
	if o.InboundPort == 0 {
		o.InboundPort = LinkerdInboundPort
	}
	if o.OutboundPort == 0 {
		o.OutboundPort = LinkerdOutboundPort
	}
	if o.IgnoreInboundPorts == nil {
		o.IgnoreInboundPorts = []int{4190, 4191, 4567, 4568}
	}
	if o.IgnoreOutboundPorts == nil {
		o.IgnoreOutboundPorts = []int{4567, 4568}
	}
	return o
}

func ports(ps []int) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ",")
}

// table is proxy-init's nat rules, in order, with its comments (after
// "proxy-init/", proxy-init's own): inbound TCP (but the ignored ports) to
// the inbound port from PREROUTING; the pod's outbound TCP (but the
// proxy's own, loopback and ignored ports) to the outbound port from
// OUTPUT. An ignored port list is a rule per port (proxy-init's one
// multiport rule), each with the list's comment.
func (o ProxyInit) table() table {
	o = o.withDefaults()
	c := func(s, nft string) string { return "proxy-init/" + s + ": " + nft }
	var rs []nfRule
	ignore := func(ch string, ps []int) {
		for _, p := range ps {
			rs = append(rs, nfRule{ch, c("ignore-port-"+ports(ps), fmt.Sprintf("tcp dport %d return", p)), cat(tcp(), dport(uint16(p)), ret())})
		}
	}
	ignore(linkerdInboundChain, o.IgnoreInboundPorts)
	in, out := uint16(o.InboundPort), uint16(o.OutboundPort)
	rs = append(rs,
		nfRule{linkerdInboundChain, c("redirect-all-incoming-to-proxy-port", fmt.Sprintf("meta l4proto tcp redirect to :%d", in)), cat(tcp(), redirect(in))},
		nfRule{"prerouting", c("install-proxy-init-prerouting", "jump "+linkerdInboundChain), jump(linkerdInboundChain)},
		nfRule{linkerdOutboundChain, c("ignore-proxy-user-id", fmt.Sprintf("meta skuid %d return", o.ProxyUID)), cat(owner(false, o.ProxyUID, false), ret())},
		nfRule{linkerdOutboundChain, c("ignore-loopback", `oifname "lo" return`), cat(ifname(false, "lo", false), ret())},
	)
	ignore(linkerdOutboundChain, o.IgnoreOutboundPorts)
	rs = append(rs,
		nfRule{linkerdOutboundChain, c("redirect-all-outgoing-to-proxy-port", fmt.Sprintf("meta l4proto tcp redirect to :%d", out)), cat(tcp(), redirect(out))},
		nfRule{"output", c("install-proxy-init-output", "jump "+linkerdOutboundChain), jump(linkerdOutboundChain)},
	)
	return table{name: linkerdTable,
		chains: []chain{natPrerouting, natOutput, regular(linkerdInboundChain), regular(linkerdOutboundChain)},
		rules:  rs}
}

// Linkerd installs Linkerd's proxy-init capture in ns (a pod's namespace):
// inbound TCP to the proxy's inbound port, the pod's outbound TCP to its
// outbound port, the proxy's own packets (by its uid), loopback and the
// ignored ports exempt. The rules go with the namespace; a second install
// in the same namespace fails (the table exists).
func Linkerd(ns *netns.NS, o ProxyInit) error {
	return install(ns, "linkerd capture", []table{o.table()})
}

// RemoveLinkerd removes what Linkerd installed in ns: its table, hooks and
// chains with it (so the pod can be meshed again, or serve a cell without
// a mesh). A capture that is not there is not an error.
func RemoveLinkerd(ns *netns.NS, o ProxyInit) error {
	return remove(ns, "linkerd capture", []string{linkerdTable})
}
