package netlab

import (
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/mesh/linkerd/proxy"
)

// TestVerdict: Linkerd's per-cell mTLS verdict from the proxies'
// counters, one row per way it can go wrong.
func TestVerdict(t *testing.T) {
	const client, server = "client.default.serviceaccount.identity.linkerd.cluster.local", "server.default.serviceaccount.identity.linkerd.cluster.local"
	in := map[string][]string{"server-0": {client}}
	out := map[string][]string{"client": {server}}
	good := func() map[string]proxy.Stats {
		return map[string]proxy.Stats{
			"client":   {OutboundTLS: 100, ServerIDs: map[string]float64{server: 100}},
			"server-0": {InboundTLS: 100, ClientIDs: map[string]float64{client: 100}},
		}
	}
	for _, tc := range []struct {
		name    string
		change  func(map[string]proxy.Stats)
		invalid string // "" valid; else a substring of a reason
	}{
		// every request over mTLS with the peers' identities
		{"all mTLS", func(map[string]proxy.Stats) {}, ""},
		// one plaintext request on the server side
		{"plaintext", func(c map[string]proxy.Stats) { s := c["server-0"]; s.InboundPlain = 1; c["server-0"] = s }, "plaintext through the Linkerd proxies: server-0 inbound 1"},
		// the server saw another identity than the client's
		{"wrong client identity", func(c map[string]proxy.Stats) {
			s := c["server-0"]
			s.ClientIDs = map[string]float64{"attacker.default.serviceaccount.identity.linkerd.cluster.local": 100}
			c["server-0"] = s
		}, "server-0's proxy saw no request from " + client},
		// the client reached nobody over mTLS
		{"no outbound mTLS", func(c map[string]proxy.Stats) { c["client"] = proxy.Stats{OutboundPlain: 100} }, "client's proxy sent no request to " + server},
		// a proxy's counters are missing
		{"server not scraped", func(c map[string]proxy.Stats) { delete(c, "server-0") }, "no counters from server-0's proxy"},
		// nothing went through the mesh at all
		{"no traffic", func(c map[string]proxy.Stats) { c["client"], c["server-0"] = proxy.Stats{}, proxy.Stats{} }, "carried no request over mTLS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cell := good()
			tc.change(cell)
			v := Verdict(cell, in, out)
			reasons := strings.Join(v.Invalid, "\n")
			switch {
			case tc.invalid == "" && len(v.Invalid) > 0:
				t.Errorf("invalid: %s", reasons)
			case tc.invalid != "" && !strings.Contains(reasons, tc.invalid):
				t.Errorf("reasons %q, want one with %q", reasons, tc.invalid)
			}
			verified := strings.Contains(strings.Join(v.Lines, "\n"), "mTLS verified")
			if verified != (tc.invalid == "") {
				t.Errorf("printed verdict %v with reasons %q:\n%s", verified, reasons, strings.Join(v.Lines, "\n"))
			}
		})
	}
}
