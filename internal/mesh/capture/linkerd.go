package capture

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/coreos/go-iptables/iptables"

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

// Linkerd's proxy-init chain names.
const (
	linkerdInboundChain  = "PROXY_INIT_REDIRECT"
	linkerdOutboundChain = "PROXY_INIT_OUTPUT"
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

// rules are proxy-init's nat rules, in order, with its comments: inbound
// TCP (but the ignored ports) to the inbound port from PREROUTING; the
// pod's outbound TCP (but the proxy's own, loopback and ignored ports) to
// the outbound port from OUTPUT.
func (o ProxyInit) rules() []rule {
	o = o.withDefaults()
	c := func(s string) []string { return []string{"-m", "comment", "--comment", "proxy-init/" + s} }
	cat := func(a ...[]string) []string {
		var out []string
		for _, x := range a {
			out = append(out, x...)
		}
		return out
	}
	var rs []rule
	if len(o.IgnoreInboundPorts) > 0 {
		rs = append(rs, rule{"nat", linkerdInboundChain, cat([]string{"-p", "tcp", "-m", "multiport", "--dports", ports(o.IgnoreInboundPorts), "-j", "RETURN"}, c("ignore-port-"+ports(o.IgnoreInboundPorts)))})
	}
	rs = append(rs,
		rule{"nat", linkerdInboundChain, cat([]string{"-p", "tcp", "-j", "REDIRECT", "--to-ports", strconv.Itoa(o.InboundPort)}, c("redirect-all-incoming-to-proxy-port"))},
		rule{"nat", "PREROUTING", cat([]string{"-j", linkerdInboundChain}, c("install-proxy-init-prerouting"))},
		rule{"nat", linkerdOutboundChain, cat([]string{"-m", "owner", "--uid-owner", strconv.Itoa(o.ProxyUID), "-j", "RETURN"}, c("ignore-proxy-user-id"))},
		rule{"nat", linkerdOutboundChain, cat([]string{"-o", "lo", "-j", "RETURN"}, c("ignore-loopback"))},
	)
	if len(o.IgnoreOutboundPorts) > 0 {
		rs = append(rs, rule{"nat", linkerdOutboundChain, cat([]string{"-p", "tcp", "-m", "multiport", "--dports", ports(o.IgnoreOutboundPorts), "-j", "RETURN"}, c("ignore-port-"+ports(o.IgnoreOutboundPorts)))})
	}
	rs = append(rs,
		rule{"nat", linkerdOutboundChain, cat([]string{"-p", "tcp", "-j", "REDIRECT", "--to-ports", strconv.Itoa(o.OutboundPort)}, c("redirect-all-outgoing-to-proxy-port"))},
		rule{"nat", "OUTPUT", cat([]string{"-j", linkerdOutboundChain}, c("install-proxy-init-output"))},
	)
	return rs
}

// Linkerd installs Linkerd's proxy-init capture in ns (a pod's namespace):
// inbound TCP to the proxy's inbound port, the pod's outbound TCP to its
// outbound port, the proxy's own packets (by its uid), loopback and the
// ignored ports exempt. The rules go with the namespace.
func Linkerd(ns *netns.NS, o ProxyInit) error {
	return ns.Do(func() error {
		ipt, err := iptables.New()
		if err != nil {
			return fmt.Errorf("linkerd capture in %s: %w", ns.Name, err)
		}
		for _, ch := range []string{linkerdInboundChain, linkerdOutboundChain} {
			if err := ipt.NewChain("nat", ch); err != nil {
				return fmt.Errorf("linkerd capture in %s: chain %s: %w", ns.Name, ch, err)
			}
		}
		for _, r := range o.rules() {
			if err := ipt.Append(r.table, r.chain, r.args...); err != nil {
				return fmt.Errorf("linkerd capture in %s: %s %s: %w", ns.Name, r.table, r.chain, err)
			}
		}
		return nil
	})
}

// RemoveLinkerd removes what Linkerd installed in ns: the two hooks and
// proxy-init's chains (so the pod can be meshed again, or serve a cell
// without a mesh). Missing rules or chains are not an error.
func RemoveLinkerd(ns *netns.NS, o ProxyInit) error {
	return ns.Do(func() error {
		ipt, err := iptables.New()
		if err != nil {
			return fmt.Errorf("removing linkerd capture in %s: %w", ns.Name, err)
		}
		var errs []error
		for _, ch := range []string{linkerdInboundChain, linkerdOutboundChain} {
			ok, err := ipt.ChainExists("nat", ch)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if !ok {
				continue
			}
			// The hook that jumps to the chain first, then the chain.
			for _, r := range o.rules() {
				if (r.chain == "PREROUTING" || r.chain == "OUTPUT") && r.args[1] == ch {
					if err := ipt.DeleteIfExists(r.table, r.chain, r.args...); err != nil {
						errs = append(errs, fmt.Errorf("removing linkerd capture in %s: %s %s: %w", ns.Name, r.table, r.chain, err))
					}
				}
			}
			if err := ipt.ClearAndDeleteChain("nat", ch); err != nil {
				errs = append(errs, fmt.Errorf("removing linkerd capture in %s: chain %s: %w", ns.Name, ch, err))
			}
		}
		return errors.Join(errs...)
	})
}
