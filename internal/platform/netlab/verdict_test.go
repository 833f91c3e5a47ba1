package netlab

import (
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/mesh/linkerd/proxy"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform/local"
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

// TestIstiodServerVerdict: the istiod sidecars' mTLS verdict from the
// server sidecars' counters, over the cell (d) and since their Envoys
// started (life). A cell whose requests rode connections pooled before it
// (its warm-up, an earlier cell on the lab) is valid when every connection
// the inbound listener ever accepted was a TLS handshake, and only then.
func TestIstiodServerVerdict(t *testing.T) {
	on := topology.DefaultOptions()
	on.MTLS = true
	off := on
	off.MTLS = false
	for _, tc := range []struct {
		name    string
		o       topology.Options
		d, life podCounters
		invalid string // "" valid; else a substring of a reason
		line    string // a substring of a line
	}{
		{"handshakes in the cell", on, podCounters{tls: 3, cx: 3, http: 100}, podCounters{tls: 3, cx: 3, http: 100}, "", "accepted 3 TLS handshakes over the cell"},
		{"pooled connections, all TLS", on, podCounters{http: 100}, podCounters{tls: 16, cx: 16, http: 900}, "", "every one of the 16 connections"},
		{"pooled connections, one not TLS", on, podCounters{http: 100}, podCounters{tls: 15, cx: 16, http: 900}, "1 of the 16 connections", ""},
		{"no connection ever", on, podCounters{http: 100}, podCounters{http: 100}, "no connection since they started", ""},
		{"mtls off, handshakes", off, podCounters{tls: 2, cx: 2, http: 100}, podCounters{tls: 2, cx: 2, http: 100}, "want none", ""},
		{"mtls off, plaintext", off, podCounters{cx: 2, http: 100}, podCounters{cx: 2, http: 100}, "", "accepted 0 TLS handshakes"},
		{"no request", on, podCounters{tls: 1, cx: 1}, podCounters{tls: 1, cx: 1}, "completed no request", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mc := local.MeshCheck{Derived: map[string]float64{}}
			serverVerdict(tc.o, tc.d, tc.life, &mc)
			got := strings.Join(mc.Invalid, "; ")
			if tc.invalid == "" && got != "" || tc.invalid != "" && !strings.Contains(got, tc.invalid) {
				t.Errorf("invalid %q, want %q", got, tc.invalid)
			}
			if lines := strings.Join(mc.Lines, "\n"); tc.line != "" && !strings.Contains(lines, tc.line) {
				t.Errorf("lines %q, want one with %q", lines, tc.line)
			}
		})
	}
}
