package capture

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	"golang.org/x/sys/unix"

	"github.com/meshbench/meshbench/internal/sys/netns"
)

// The capture is nftables rules sent over netlink (github.com/google/nftables),
// as istio-cni's nftables mode and Cilium put theirs in: no iptables
// command, so a machine without the iptables package runs every mesh,
// and each set of rules goes in as one transaction (all or nothing).
// Every rule carries what `nft list ruleset` prints for it as its
// comment, which is also how tests and people read them back.

// table is one nftables table of a capture: its base chains (hooked into
// the kernel), its regular chains (jumped to) and its rules in order.
type table struct {
	name   string
	chains []chain
	rules  []nfRule
}

// chain is one chain of a table; hook nil for a regular chain.
type chain struct {
	name     string
	hook     *nftables.ChainHook
	priority *nftables.ChainPriority
	kind     nftables.ChainType
}

// nfRule is one rule: its chain, what nft prints for it (its comment) and
// its expressions.
type nfRule struct {
	chain string
	text  string
	exprs []expr.Any
}

// Base chains, as iptables' mangle and nat tables hook them. mangle's
// output is of type route: only such a chain routes a packet again when
// a rule changed its mark, as iptables' mangle OUTPUT does (the replies
// ztunnel's connections restore their mark for).
var (
	manglePrerouting = chain{"prerouting", nftables.ChainHookPrerouting, nftables.ChainPriorityMangle, nftables.ChainTypeFilter}
	mangleOutput     = chain{"output", nftables.ChainHookOutput, nftables.ChainPriorityMangle, nftables.ChainTypeRoute}
	natPrerouting    = chain{"prerouting", nftables.ChainHookPrerouting, nftables.ChainPriorityNATDest, nftables.ChainTypeNAT}
	natOutput        = chain{"output", nftables.ChainHookOutput, nftables.ChainPriorityNATDest, nftables.ChainTypeNAT}
)

// regular is a chain that rules jump to.
func regular(name string) chain { return chain{name: name} }

// install adds tables to ns in one netlink transaction: either every
// table, chain and rule is there afterwards, or none (a table that
// exists already fails the whole transaction).
func install(ns *netns.NS, what string, tables []table) error {
	return ns.Do(func() error {
		c, err := nftables.New()
		if err != nil {
			return fmt.Errorf("%s in %s: nftables: %w", what, ns.Name, err)
		}
		for _, tb := range tables {
			t := &nftables.Table{Name: tb.name, Family: nftables.TableFamilyIPv4}
			// NEWTABLE with NLM_F_CREATE alone would accept an existing
			// table; asking for EXCL makes a second install fail.
			c.CreateTable(t)
			chains := map[string]*nftables.Chain{}
			for _, ch := range tb.chains {
				if chains[ch.name] != nil {
					return fmt.Errorf("%s: table %s declares chain %s twice", what, tb.name, ch.name)
				}
				nc := &nftables.Chain{Name: ch.name, Table: t, Hooknum: ch.hook, Priority: ch.priority, Type: ch.kind}
				if ch.hook != nil {
					accept := nftables.ChainPolicyAccept
					nc.Policy = &accept
				}
				chains[ch.name] = c.AddChain(nc)
			}
			for _, r := range tb.rules {
				ch := chains[r.chain]
				if ch == nil {
					return fmt.Errorf("%s: rule %q in chain %s, which table %s does not declare", what, r.text, r.chain, tb.name)
				}
				c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: r.exprs,
					UserData: userdata.AppendString(nil, userdata.TypeComment, r.text)})
			}
		}
		if err := c.Flush(); err != nil {
			return fmt.Errorf("%s in %s: nftables: %w", what, ns.Name, err)
		}
		return nil
	})
}

// remove deletes the named tables from ns; a table that is not there is
// not an error.
func remove(ns *netns.NS, what string, names []string) error {
	return ns.Do(func() error {
		c, err := nftables.New()
		if err != nil {
			return fmt.Errorf("removing %s in %s: nftables: %w", what, ns.Name, err)
		}
		have, err := c.ListTablesOfFamily(nftables.TableFamilyIPv4)
		if err != nil {
			return fmt.Errorf("removing %s in %s: listing tables: %w", what, ns.Name, err)
		}
		n := 0
		for _, t := range have {
			if slices.Contains(names, t.Name) {
				c.DelTable(t)
				n++
			}
		}
		if n == 0 {
			return nil
		}
		if err := c.Flush(); err != nil {
			return fmt.Errorf("removing %s in %s: nftables: %w", what, ns.Name, err)
		}
		return nil
	})
}

// Listed is one rule read back from a namespace: its table, chain and
// comment (what nft prints for it).
type Listed struct {
	Table, Chain, Comment string
}

// List reads back the rules of the ip-family tables named in ns (all
// tables when names is empty), in order, for tests and the doctor.
func List(ns *netns.NS, names ...string) ([]Listed, error) {
	var out []Listed
	err := ns.Do(func() error {
		var err error
		out, err = listHere(names)
		return err
	})
	return out, err
}

// listHere is List in the calling thread's namespace.
func listHere(names []string) ([]Listed, error) {
	c, err := nftables.New()
	if err != nil {
		return nil, err
	}
	chains, err := c.ListChainsOfTableFamily(nftables.TableFamilyIPv4)
	if err != nil {
		return nil, err
	}
	var out []Listed
	var errs []error
	for _, ch := range chains {
		if len(names) > 0 && !slices.Contains(names, ch.Table.Name) {
			continue
		}
		rs, err := c.GetRules(ch.Table, ch)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", ch.Table.Name, ch.Name, err))
			continue
		}
		for _, r := range rs {
			comment, _ := userdata.GetString(r.UserData, userdata.TypeComment)
			out = append(out, Listed{Table: ch.Table.Name, Chain: ch.Name, Comment: comment})
		}
	}
	return out, errors.Join(errs...)
}

// Matches and statements, each a piece of a rule's expressions. Values
// the kernel keeps in host order (marks, uids) are written in host order;
// packet fields in network order.

func cat(parts ...[]expr.Any) []expr.Any { return slices.Concat(parts...) }

func host32(v uint32) []byte { return binaryutil.NativeEndian.PutUint32(v) }

// tcp matches TCP packets (meta l4proto tcp).
func tcp() []expr.Any {
	return []expr.Any{&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_TCP}}}
}

// op is == or != .
func op(not bool) expr.CmpOp {
	if not {
		return expr.CmpOpNeq
	}
	return expr.CmpOpEq
}

// markMatch matches meta mark & mask (==|!=) value.
func markMatch(value, mask uint32, not bool) []expr.Any {
	return []expr.Any{&expr.Meta{Key: expr.MetaKeyMARK, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: host32(mask), Xor: host32(0)},
		&expr.Cmp{Op: op(not), Register: 1, Data: host32(value)}}
}

// ctMarkMatch matches ct mark & mask == value.
func ctMarkMatch(value, mask uint32) []expr.Any {
	return []expr.Any{&expr.Ct{Key: expr.CtKeyMARK, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: host32(mask), Xor: host32(0)},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: host32(value)}}
}

// setCtMark is iptables' CONNMARK --set-xmark value/mask: ct mark set
// ct mark & ~mask ^ value.
func setCtMark(value, mask uint32) []expr.Any {
	return []expr.Any{&expr.Ct{Key: expr.CtKeyMARK, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: host32(^mask), Xor: host32(value)},
		&expr.Ct{Key: expr.CtKeyMARK, Register: 1, SourceRegister: true}}
}

// setMark is the mark part of iptables' TPROXY --tproxy-mark value/mask:
// meta mark set meta mark & ~mask ^ value.
func setMark(value, mask uint32) []expr.Any {
	return []expr.Any{&expr.Meta{Key: expr.MetaKeyMARK, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: host32(^mask), Xor: host32(value)},
		&expr.Meta{Key: expr.MetaKeyMARK, Register: 1, SourceRegister: true}}
}

// restoreMark is CONNMARK --restore-mark with full masks: meta mark set
// ct mark.
func restoreMark() []expr.Any {
	return []expr.Any{&expr.Ct{Key: expr.CtKeyMARK, Register: 1},
		&expr.Meta{Key: expr.MetaKeyMARK, Register: 1, SourceRegister: true}}
}

// ctEstablished matches ct state established,related.
func ctEstablished() []expr.Any {
	return []expr.Any{&expr.Ct{Key: expr.CtKeySTATE, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: host32(expr.CtStateBitESTABLISHED | expr.CtStateBitRELATED), Xor: host32(0)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: host32(0)}}
}

// addr matches ip saddr (src) or daddr (==|!=) a.
func addr(src bool, a netip.Addr, not bool) []expr.Any {
	offset := uint32(16)
	if src {
		offset = 12
	}
	b := a.As4()
	return []expr.Any{&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: 4},
		&expr.Cmp{Op: op(not), Register: 1, Data: b[:]}}
}

var localhost = netip.MustParseAddr("127.0.0.1")

// ifname matches iifname (in) or oifname (==|!=) name.
func ifname(in bool, name string, not bool) []expr.Any {
	key := expr.MetaKeyOIFNAME
	if in {
		key = expr.MetaKeyIIFNAME
	}
	b := make([]byte, unix.IFNAMSIZ)
	copy(b, name)
	return []expr.Any{&expr.Meta{Key: key, Register: 1}, &expr.Cmp{Op: op(not), Register: 1, Data: b}}
}

// dport matches tcp dport == port (after tcp()).
func dport(port uint16) []expr.Any {
	return []expr.Any{&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(port)}}
}

// owner matches meta skuid (gid: skgid) (==|!=) id: the socket's owner,
// as iptables' owner match.
func owner(gid bool, id int, not bool) []expr.Any {
	key := expr.MetaKeySKUID
	if gid {
		key = expr.MetaKeySKGID
	}
	return []expr.Any{&expr.Meta{Key: key, Register: 1}, &expr.Cmp{Op: op(not), Register: 1, Data: host32(uint32(id))}}
}

// redirect is redirect to :port (the nat REDIRECT of iptables).
func redirect(port uint16) []expr.Any {
	return []expr.Any{&expr.Immediate{Register: 1, Data: binaryutil.BigEndian.PutUint16(port)},
		&expr.Redir{RegisterProtoMin: 1}}
}

// tproxyTo is tproxy to a:port. The kernel's tproxy goes on to the next
// statement when it found a socket and leaves the rule otherwise (where
// iptables' TPROXY target drops): the rules after it say what follows.
func tproxyTo(a netip.Addr, port uint16) []expr.Any {
	b := a.As4()
	return []expr.Any{&expr.Immediate{Register: 1, Data: b[:]},
		&expr.Immediate{Register: 2, Data: binaryutil.BigEndian.PutUint16(port)},
		&expr.TProxy{Family: byte(nftables.TableFamilyIPv4), TableFamily: byte(nftables.TableFamilyIPv4), RegAddr: 1, RegPort: 2}}
}

func verdict(k expr.VerdictKind) []expr.Any { return []expr.Any{&expr.Verdict{Kind: k}} }

func accept() []expr.Any { return verdict(expr.VerdictAccept) }
func drop() []expr.Any   { return verdict(expr.VerdictDrop) }
func ret() []expr.Any    { return verdict(expr.VerdictReturn) }

func jump(to string) []expr.Any { return []expr.Any{&expr.Verdict{Kind: expr.VerdictJump, Chain: to}} }

// probeTable is what Probe installs: one rule of each kind the captures
// use (a tproxy, a redirect, an owner match, a ct mark), hooked in but
// matching only a mark nothing carries.
const probeTable = "meshbench-probe"

// Probe says whether the kernel takes the captures' rules in ns (a
// throw-away namespace): it installs a table with one rule of each kind
// in one transaction and removes it. An error names what is missing
// (nf_tables, its tproxy, redirect, ct or owner expressions).
func Probe(ns *netns.NS) error {
	never := markMatch(0xbad, 0xfff, false)
	t := table{name: probeTable, chains: []chain{manglePrerouting, mangleOutput},
		rules: []nfRule{
			{"prerouting", "tproxy", cat(never, tcp(), tproxyTo(localhost, PortHBONE), setMark(ConnMark, markMask), accept())},
			{"prerouting", "ct", cat(never, ctEstablished(), setCtMark(ConnMark, markMask))},
			{"output", "restore", cat(never, ctMarkMatch(ConnMark, markMask), restoreMark())},
		}}
	nat := table{name: probeTable + "-nat", chains: []chain{natOutput},
		rules: []nfRule{{"output", "redirect", cat(never, tcp(), owner(false, 0, true), owner(true, 0, true), redirect(PortOutbound))}}}
	if err := install(ns, "nftables probe", []table{t, nat}); err != nil {
		return err
	}
	return remove(ns, "nftables probe", []string{t.name, nat.name})
}
