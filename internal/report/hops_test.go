package report

import (
	"bytes"
	"testing"

	"github.com/meshbench/meshbench/internal/hops"
	"github.com/meshbench/meshbench/internal/testutil"
)

// TestHopsText: the waterfall of a sidecar path and of a faces path with
// a missing record, from hops.Join on fixed records (golden files).
func TestHopsText(t *testing.T) {
	rec := func(id, hop, svc string, down, up int64) hops.Record {
		return hops.Record{RequestID: id, Proxy: "p", Hop: hop, Service: svc, DownstreamUs: down, UpstreamUs: up, Status: 200}
	}
	var reqs []hops.Request
	var recs []hops.Record
	for i := range 100 {
		id := string(rune('A'+i/26)) + string(rune('a'+i%26))
		reqs = append(reqs, hops.Request{ID: id, Measured: true, ServiceNs: int64(6_000_000 + 1000*i)})
		app := int64(5000 + i)
		recs = append(recs,
			rec(id, "client sidecar outbound", "server", app+150+300+int64(i), app+150+200),
			rec(id, "server sidecar inbound", "server", app+150, app))
	}
	for _, tc := range []struct {
		golden string
		reqs   []hops.Request
		recs   []hops.Record
		o      hops.Options
	}{
		// Two sidecars: both timed, the app seen from the server sidecar.
		{"hops-sidecar", reqs, recs, hops.Options{Entry: "server", Traversals: 2}},
		// Ambient: no HTTP hop, everything untimed, the L4 hops named.
		{"hops-ambient", reqs, nil, hops.Options{Entry: "server", Traversals: 2,
			L4: []string{"node proxy, client side (tcp_proxy into HBONE)", "node proxy, server side (HBONE to the app)"}}},
		// A request missing at the server sidecar, a failed one, and a call.
		{"hops-missing", append(reqs, hops.Request{ID: "zz", Measured: true, ServiceNs: 300_000, Code: 503}),
			append(recs, rec("zz", "client sidecar outbound", "server", 250, -1),
				rec("Aa", "face sidecar outbound", "smiley", 900, 700), rec("Aa", "smiley sidecar inbound", "smiley", 650, 600)),
			hops.Options{Entry: "server", Traversals: 2}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			res, err := hops.Join(tc.reqs, tc.recs, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if tc.golden == "hops-sidecar" { // as the lab fills it from its sampler
				res.ProxyCPU = []hops.ProxyCPU{{Proxy: "client-sidecar", CPUMsPer1000Rq: 412.4}, {Proxy: "server-0-sidecar", CPUMsPer1000Rq: 398.6}}
			}
			var buf bytes.Buffer
			if err := HopsText(&buf, res); err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, tc.golden+".txt.golden", buf.Bytes())
		})
	}
}
