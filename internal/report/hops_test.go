package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/measure/hops"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
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

// TestPlanHopsGolden: a plan whose sidecar and ambient cells had hop
// timing (hops.json written from fixed records into a copy of the
// plan-small fixture): the text report's per-mesh waterfall, the split of
// the added latency against the baseline and the seed's method.
func TestPlanHopsGolden(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join("..", "analysis", "testdata", "plan-small")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	write := func(cell string, r *hops.Result) {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cells", cell, analysis.HopsFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for rep, scale := range map[int]int64{1: 1, 2: 2} {
		var reqs []hops.Request
		var recs []hops.Record
		for i := range 50 {
			id := fmt.Sprintf("r%d", i)
			reqs = append(reqs, hops.Request{ID: id, Measured: true, ServiceNs: 900_000 + int64(i)*1000})
			recs = append(recs,
				hops.Record{RequestID: id, Proxy: "c", Hop: "client sidecar outbound", Service: "server", DownstreamUs: 700, UpstreamUs: 700 - 100*scale},
				hops.Record{RequestID: id, Proxy: "s", Hop: "server sidecar inbound", Service: "server", DownstreamUs: 500, UpstreamUs: 500 - 80*scale})
		}
		sc, err := hops.Join(reqs, recs, hops.Options{Entry: "server", Traversals: 2})
		if err != nil {
			t.Fatal(err)
		}
		write(fmt.Sprintf("sidecar-static-r200-x1-p0-http-pod-mtls-rep%d", rep), sc)
		amb, err := hops.Join(reqs, nil, hops.Options{Entry: "server", Traversals: 2, L4: []string{"node proxy, client side", "node proxy, server side"}})
		if err != nil {
			t.Fatal(err)
		}
		write(fmt.Sprintf("ambient-static-r200-x1-p0-http-pod-mtls-rep%d", rep), amb)
	}
	p, err := analysis.ReadPlan(dir)
	if err != nil {
		t.Fatal(err)
	}
	a := analysis.Analyze(p, analysis.Options{Level: 0.95, Seed: uint64(p.Manifest.Seed)})
	var b bytes.Buffer
	if err := PlanText(&b, a); err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, "plan-hops.txt.golden", b.Bytes())
	// The HTML report's stacked bars: one chart per scenario with hop
	// timing, its layers the parts of the waterfall.
	charts, err := PlanCharts(a)
	if err != nil {
		t.Fatal(err)
	}
	var hopCharts []NamedChart
	for _, c := range charts {
		if strings.HasPrefix(c.Name, "hops-") {
			hopCharts = append(hopCharts, c)
		}
	}
	if len(hopCharts) != 1 || hopCharts[0].Title != "where the latency goes (static, 200 rps, 1 replica)" {
		t.Fatalf("hop charts %+v", hopCharts)
	}
	svg, err := hopCharts[0].Chart.SVG(800, 500)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"client sidecar outbound", "server sidecar inbound", "untimed (L4 hops, kernel, scheduling)", "sidecar", "ambient"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("the stacked bars lack %q", want)
		}
	}
	if out := os.Getenv("MESHBENCH_HOPS_PNG"); out != "" { // to look at it
		png, _ := hopCharts[0].Chart.PNG(800, 500)
		_ = os.WriteFile(out, png, 0o644)
	}
	var h bytes.Buffer
	if err := PlanHTML(&h, a, charts); err != nil || !strings.Contains(h.String(), "where the latency goes") {
		t.Errorf("HTML report without the hop chart: %v", err)
	}
}
