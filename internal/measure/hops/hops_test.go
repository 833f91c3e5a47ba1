package hops

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestParseLog: records as Envoy 1.40 writes them with LogFormat (typed
// json_format: numbers, null for a time point that never came), and
// what is not a record.
func TestParseLog(t *testing.T) {
	log := strings.Join([]string{
		// A proxied request, as the real Envoy wrote it (cluster names the service).
		`{"attempts":1,"cluster":"outbound|8080||server.default.svc.cluster.local","downstream_us":1234,"flags":"-","hop":"client sidecar outbound","proxy":"client-sidecar","request_id":"r-01","start":"2026-11-24T10:29:21.155Z","status":200,"upstream_us":1000}`,
		// Failed at this proxy: no upstream time (null), flags UF.
		`{"attempts":1,"cluster":"inbound|8080||","downstream_us":1567,"flags":"UF","hop":"server sidecar inbound","proxy":"server-0-sidecar","request_id":"r-02","service":"server","status":503,"upstream_us":null}`,
		// Numbers as strings and Envoy's "-" are read too.
		`{"downstream_us":"20","upstream_us":"-","hop":"gateway","proxy":"gateway","request_id":"r-03","status":"200"}`,
		// No request id (null): a request the load did not send.
		`{"downstream_us":5,"hop":"gateway","proxy":"gateway","request_id":null}`,
		// A line cut short by a flush.
		`{"downstream_us":5,"hop":"gat`,
		// A negative duration is not Envoy's.
		`{"downstream_us":-5,"hop":"gateway","proxy":"gateway","request_id":"r-04"}`,
		// Not a record at all.
		`[1,2,3]`,
		``,
	}, "\n")
	recs, st, err := ParseLog(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if st.Lines != 7 || st.Malformed != 3 || st.NoID != 1 || len(recs) != 3 {
		t.Fatalf("stats %+v, %d records", st, len(recs))
	}
	want := []Record{
		{RequestID: "r-01", Proxy: "client-sidecar", Hop: "client sidecar outbound", Service: "server", DownstreamUs: 1234, UpstreamUs: 1000, Status: 200, Attempts: 1},
		{RequestID: "r-02", Proxy: "server-0-sidecar", Hop: "server sidecar inbound", Service: "server", DownstreamUs: 1567, UpstreamUs: -1, Status: 503, Flags: "UF", Attempts: 1},
		{RequestID: "r-03", Proxy: "gateway", Hop: "gateway", DownstreamUs: 20, UpstreamUs: -1, Status: 200},
	}
	for i, w := range want {
		if recs[i] != w {
			t.Errorf("record %d:\n got %+v\nwant %+v", i, recs[i], w)
		}
	}
	if recs[0].Own() != 234 || recs[1].Own() != 1567 {
		t.Errorf("own %d %d", recs[0].Own(), recs[1].Own())
	}
}

func FuzzParseLog(f *testing.F) {
	f.Add([]byte(`{"downstream_us":1234,"upstream_us":1000,"hop":"h","proxy":"p","request_id":"r","status":200}`))
	f.Add([]byte(`{"downstream_us":null,"hop":"h","proxy":"p","request_id":"r"}` + "\n" + `{"x":`))
	f.Add([]byte(`{"downstream_us":"9223372036854775807","hop":"h","proxy":"p","request_id":"r","cluster":"outbound|1||a.b"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, st, err := ParseLog(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err) // only read errors are errors, and a bytes.Reader has none
		}
		if int64(len(recs))+st.Malformed+st.NoID != st.Lines {
			t.Fatalf("%d records + %d malformed + %d without id != %d lines", len(recs), st.Malformed, st.NoID, st.Lines)
		}
		for _, r := range recs {
			if r.RequestID == "" || r.Proxy == "" || r.Hop == "" {
				t.Fatalf("record without id, proxy or hop: %+v", r)
			}
			if r.DownstreamUs < -1 || r.DownstreamUs > maxMicros || r.UpstreamUs < -1 || r.UpstreamUs > maxMicros {
				t.Fatalf("duration out of range: %+v", r)
			}
		}
		// Whatever was read joins without panicking.
		var reqs []Request
		for _, r := range recs {
			reqs = append(reqs, Request{ID: r.RequestID, Measured: true, ServiceNs: 1e6})
		}
		if _, err := Join(reqs, recs, Options{Entry: "server"}); err != nil {
			t.Fatal(err)
		}
	})
}

func rec(id, hop, svc string, down, up int64) Record {
	return Record{RequestID: id, Proxy: strings.ReplaceAll(hop, " ", "-"), Hop: hop, Service: svc, DownstreamUs: down, UpstreamUs: up, Status: 200}
}

// TestJoin: a sidecar path (client sidecar → server sidecar → app),
// every figure by hand.
func TestJoin(t *testing.T) {
	reqs := []Request{
		{ID: "a", Measured: true, ServiceNs: 1_000_000},
		{ID: "b", Measured: true, ServiceNs: 2_000_000},
		{ID: "w", Measured: false, ServiceNs: 9_000_000}, // warm-up: its records are unmatched
	}
	recs := []Record{
		// a: client sidecar 900 µs down, 700 up → own 200; server sidecar 650 down, 500 up → own 150; app 500.
		rec("a", "server sidecar inbound", "server", 650, 500),
		rec("a", "client sidecar outbound", "server", 900, 700),
		// b: own 300 and 200, app 1200.
		rec("b", "client sidecar outbound", "server", 1800, 1500),
		rec("b", "server sidecar inbound", "server", 1400, 1200),
		rec("w", "client sidecar outbound", "server", 10, 5),
	}
	res, err := Join(reqs, recs, Options{Entry: "server", Traversals: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 2 || res.Complete != 2 || res.Unmatched != 1 || len(res.Missing) != 0 || res.OverTotal != 0 {
		t.Fatalf("counts: %+v", res)
	}
	if len(res.Hops) != 2 || res.Hops[0].Name != "client sidecar outbound" || res.Hops[1].Name != "server sidecar inbound" {
		t.Fatalf("hops in order: %+v", res.Hops)
	}
	near := func(name string, got, want int64) {
		t.Helper()
		if d := got - want; d < -want/500 || d > want/500 { // HDR keeps 3 digits
			t.Errorf("%s = %d ns, want %d", name, got, want)
		}
	}
	near("client sidecar max", res.Hops[0].MaxNs, 300_000)
	near("client sidecar min", res.Hops[0].MinNs, 200_000)
	near("server sidecar max", res.Hops[1].MaxNs, 200_000)
	near("app max", res.App.MaxNs, 1_200_000)
	// untimed: a 1000 − 200 − 150 − 500 = 150 µs; b 2000 − 300 − 200 − 1200 = 300 µs.
	near("untimed min", res.Untimed.MinNs, 150_000)
	near("untimed max", res.Untimed.MaxNs, 300_000)
	// Means add up: total = hops + app + untimed.
	sum := res.Hops[0].MeanNs + res.Hops[1].MeanNs + res.App.MeanNs + res.Untimed.MeanNs
	if d := sum - res.Total.MeanNs; d > 1 || d < -1 {
		t.Errorf("means: hops+app+untimed %.0f, total %.0f", sum, res.Total.MeanNs)
	}
}

// TestJoinMissing: requests missing from some proxy's log are counted
// per hop, not dropped silently; the waterfall is over the complete ones.
func TestJoinMissing(t *testing.T) {
	reqs := []Request{
		{ID: "ok", Measured: true, ServiceNs: 1_000_000},
		// Failed at the client sidecar: the server sidecar never saw it.
		{ID: "uf", Measured: true, ServiceNs: 300_000, Code: 503},
		// Refused before any proxy: in no log at all.
		{ID: "gone", Measured: true, ServiceNs: 50_000, Error: "connection refused"},
	}
	recs := []Record{
		rec("ok", "client sidecar outbound", "server", 900, 700),
		rec("ok", "server sidecar inbound", "server", 650, 500),
		{RequestID: "uf", Proxy: "client-sidecar", Hop: "client sidecar outbound", Service: "server", DownstreamUs: 250, UpstreamUs: -1, Status: 503},
		// A retry: the inbound sidecar logged "ok" twice; the longer is kept.
		rec("ok", "server sidecar inbound", "server", 100, 50),
	}
	res, err := Join(reqs, recs, Options{Entry: "server"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 3 || res.Complete != 1 || res.Failed != 2 || res.Duplicates != 1 {
		t.Fatalf("counts: requests %d complete %d failed %d duplicates %d", res.Requests, res.Complete, res.Failed, res.Duplicates)
	}
	want := []Count{{Hop: "client sidecar outbound", Requests: 1}, {Hop: "server sidecar inbound", Requests: 2}}
	if len(res.Missing) != 2 || res.Missing[0] != want[0] || res.Missing[1] != want[1] {
		t.Errorf("missing %+v, want %+v", res.Missing, want)
	}
	if res.Hops[1].Count != 1 || res.Hops[1].MaxNs < 149_000 {
		t.Errorf("server sidecar from the longer record: %+v", res.Hops[1].Summary)
	}
}

// TestJoinCalls: the face app's calls (records of other services with
// the same id) are their own parts, within the entry app's time; a path
// without any HTTP hop (ambient: L4 only) is all untimed.
func TestJoinCalls(t *testing.T) {
	reqs := []Request{{ID: "f", Measured: true, ServiceNs: 5_000_000}}
	recs := []Record{
		rec("f", "client sidecar outbound", "face", 4000, 3800),
		rec("f", "face sidecar inbound", "face", 3700, 3500),
		rec("f", "face sidecar outbound", "smiley", 1000, 800),
		rec("f", "smiley sidecar inbound", "smiley", 700, 600),
		rec("f", "face sidecar outbound", "color", 1200, 900),
		rec("f", "color sidecar inbound", "color", 850, 700),
	}
	res, err := Join(reqs, recs, Options{Entry: "face"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hops) != 2 || len(res.Calls) != 2 || res.Calls[0].Service != "color" || res.Calls[1].Service != "smiley" {
		t.Fatalf("hops %d, calls %+v", len(res.Hops), res.Calls)
	}
	if h := res.Calls[1].Hops; len(h) != 2 || h[0].Name != "face sidecar outbound" || h[0].MaxNs < 199_000 || h[0].MaxNs > 201_000 {
		t.Errorf("smiley call hops %+v", h)
	}
	l4, err := Join(reqs, nil, Options{Entry: "server", L4: []string{"node proxy node1 (tcp_proxy)", "node proxy node2 (HBONE)"}})
	if err != nil {
		t.Fatal(err)
	}
	if l4.Complete != 1 || len(l4.Hops) != 0 || l4.App != nil || l4.Untimed.MaxNs < 4_990_000 {
		t.Errorf("L4 only: %+v", l4)
	}
}

// TestRequestLog: what the load writes reads back; a line cut short is
// counted; an id twice is refused.
func TestRequestLog(t *testing.T) {
	var buf bytes.Buffer
	l := NewRequestLog(&buf)
	l.Add(Request{ID: "a", Measured: true, ServiceNs: 5, LatencyNs: 6, Code: 200})
	l.Add(Request{ID: "b", ServiceNs: 7, Error: "reset"})
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	got, bad, err := ReadRequests(strings.NewReader(buf.String() + `{"id":"c","meas`))
	if err != nil || bad != 1 || len(got) != 2 || got[0].ID != "a" || !got[1].Failed() || got[0].Failed() {
		t.Fatalf("read %+v, %d malformed, %v", got, bad, err)
	}
	if _, _, err := ReadRequests(strings.NewReader(buf.String() + buf.String())); err == nil {
		t.Error("an id given twice was accepted")
	}
}

func FuzzReadRequests(f *testing.F) {
	f.Add([]byte(`{"id":"a","measured":true,"service_ns":5,"latency_ns":6,"code":200}` + "\n" + `{"id":"b","error":"reset"}`))
	f.Add([]byte(`{"id":"a"}` + "\n" + `{"id":"a"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		reqs, _, err := ReadRequests(bytes.NewReader(data))
		seen := map[string]bool{}
		for _, q := range reqs {
			if q.ID == "" || seen[q.ID] {
				t.Fatalf("request without id or twice: %+v", q)
			}
			seen[q.ID] = true
		}
		if err == nil {
			if _, err := Join(reqs, nil, Options{Entry: "x"}); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestJoinNoHTTPHops: a path without an HTTP proxy (ambient: L4 only) has
// no hops; the result says so as an empty list, not null, as its schema
// (hops.v1) wants.
func TestJoinNoHTTPHops(t *testing.T) {
	res, err := Join([]Request{{ID: "a", Measured: true, ServiceNs: 1_000_000}}, nil, Options{Entry: "server", L4: []string{"ztunnel-node1", "ztunnel-node2"}, Traversals: 2})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hops) != 0 || !bytes.Contains(b, []byte(`"hops":[]`)) {
		t.Errorf("hops %v in %s: want an empty list", res.Hops, b)
	}
}
