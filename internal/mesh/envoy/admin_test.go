package envoy

import (
	"context"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// A /stats?format=json answer in Envoy 1.40's shape (abridged): numbers,
// a text readout, and a histogram with nulls where there is no sample.
const statsFixture = `{"stats":[
{"name":"cluster_manager.active_clusters","value":0},
{"name":"http.in.downstream_rq_2xx","value":3},
{"name":"listener.127.0.77.1_18080.http.in.downstream_rq_2xx","value":3},
{"name":"http.admin.downstream_rq_2xx","value":4},
{"name":"server.memory_allocated","value":18446744073709551615},
{"name":"server.version_text","value":"1.40.0"},
{"histograms":{"supported_quantiles":[0,50,99.9,100],"computed_quantiles":[
 {"name":"http.in.downstream_rq_time","values":[{"interval":null,"cumulative":0},{"interval":null,"cumulative":0.105},{"interval":null,"cumulative":1.5},{"interval":null,"cumulative":2}]},
 {"name":"http.admin.downstream_cx_length_ms","values":[{"interval":null,"cumulative":null},{"interval":null,"cumulative":null},{"interval":null,"cumulative":null},{"interval":null,"cumulative":null}]}
]}}]}`

func TestParseStats(t *testing.T) {
	snap, err := parseStats([]byte(statsFixture))
	if err != nil {
		t.Fatal(err)
	}
	snap.classify(
		map[string]bool{"http.in.downstream_rq_2xx": true, "listener.127.0.77.1_18080.http.in.downstream_rq_2xx": true, "http.admin.downstream_rq_2xx": true},
		map[string]bool{"cluster_manager.active_clusters": true, "server.memory_allocated": true})
	if v, ok := snap.Counter("http.in.downstream_rq_2xx"); !ok || v != 3 {
		t.Errorf("counter = %d, %v", v, ok)
	}
	if _, ok := snap.Counter("cluster_manager.active_clusters"); ok {
		t.Error("a gauge is among the counters")
	}
	// uint64 range, no float rounding.
	if v, _ := snap.Gauge("server.memory_allocated"); v != math.MaxUint64 {
		t.Errorf("gauge = %d", v)
	}
	if got := snap.SumCounters("", ".downstream_rq_2xx"); got != 10 {
		t.Errorf("SumCounters(\"\", .downstream_rq_2xx) = %d, want 10", got)
	}
	if got := snap.SumCounters("http.", "_2xx"); got != 7 {
		t.Errorf("SumCounters(http., _2xx) = %d, want 7", got)
	}
	if snap.TextReadouts["server.version_text"] != "1.40.0" {
		t.Errorf("text readouts %v", snap.TextReadouts)
	}
	h := snap.Histograms["http.in.downstream_rq_time"]
	if !slices.Equal(h.Quantiles, []float64{0, 50, 99.9, 100}) || !slices.Equal(h.Cumulative, []float64{0, 0.105, 1.5, 2}) {
		t.Errorf("histogram %+v", h)
	}
	if !math.IsNaN(h.Interval[0]) {
		t.Errorf("null interval = %v, want NaN", h.Interval[0])
	}
	if v, ok := h.CumulativeAt(99.9); !ok || v != 1.5 {
		t.Errorf("CumulativeAt(99.9) = %v, %v", v, ok)
	}
	if _, ok := snap.Histograms["http.admin.downstream_cx_length_ms"].CumulativeAt(50); ok {
		t.Error("CumulativeAt on a null value reports a value")
	}
	if string(snap.Raw) != statsFixture {
		t.Error("Raw is not the answer byte for byte")
	}

	for _, bad := range []string{`not json`, `{"stats":[{"name":"x","value":-1}]}`, `{"stats":[{"name":"x","value":1.5}]}`} {
		if _, err := parseStats([]byte(bad)); err == nil {
			t.Errorf("parseStats(%s) accepted it", bad)
		}
	}
}

func TestParseListeners(t *testing.T) {
	raw := `{"listener_statuses":[
{"name":"in","local_address":{"socket_address":{"address":"127.0.2.10","port_value":15006}},
 "additional_local_addresses":[{"socket_address":{"address":"::1","port_value":15006}}]},
{"name":"main_internal","local_address":{"envoy_internal_address":{"server_listener_name":"main_internal"}}},
{"name":"open","local_address":{"socket_address":{"address":"0.0.0.0","port_value":15001}}}]}`
	ls, err := parseListeners([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		addrs    []string
		loopback bool
	}{
		{[]string{"127.0.2.10:15006", "[::1]:15006"}, true}, // both loopback
		{[]string{"internal:main_internal"}, true},          // binds no socket
		{[]string{"0.0.0.0:15001"}, false},                  // the wildcard is caught
	}
	if len(ls) != len(want) {
		t.Fatalf("listeners %+v", ls)
	}
	for i, w := range want {
		if !slices.Equal(ls[i].Addrs, w.addrs) || ls[i].LoopbackOnly() != w.loopback {
			t.Errorf("listener %d = %+v (loopback only %v), want %v %v", i, ls[i], ls[i].LoopbackOnly(), w.addrs, w.loopback)
		}
	}
	if ls, err := parseListeners([]byte(`{}`)); err != nil || len(ls) != 0 {
		t.Errorf("no listeners: %v, %v", ls, err)
	}
}

// The admin helpers talk to loopback only.
func TestAdminRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"10.0.0.1:15000", "0.0.0.0:15000", "example.com:15000"} {
		if _, err := Stats(context.Background(), addr); err == nil || !strings.Contains(err.Error(), "admin address") {
			t.Errorf("Stats(%s) = %v", addr, err)
		}
		if _, err := Listeners(context.Background(), addr); err == nil {
			t.Errorf("Listeners(%s) accepted it", addr)
		}
	}
}

// TestVersioned: the stored /stats body gains its version as the first key
// and keeps every other byte; it still parses as Envoy's body.
func TestVersioned(t *testing.T) {
	tests := []struct {
		raw, want string
	}{
		// Envoy's body: the key goes first, the rest byte for byte
		{`{"stats":[{"name":"a","value":1}]}`, `{"schema":"meshbench.envoy-admin-stats/v1","stats":[{"name":"a","value":1}]}`},
		// leading white space and an empty object: no dangling comma
		{" { }", `{"schema":"meshbench.envoy-admin-stats/v1"}`},
		// not an object: left alone rather than made invalid
		{`[1]`, `[1]`},
	}
	for _, tt := range tests {
		got := (&StatsSnapshot{Raw: []byte(tt.raw)}).Versioned()
		if string(got) != tt.want {
			t.Errorf("Versioned(%q) = %s, want %s", tt.raw, got, tt.want)
		}
	}
	snap, err := parseStats([]byte(statsFixture))
	if err != nil {
		t.Fatal(err)
	}
	again, err := parseStats(snap.Versioned())
	if err != nil || !reflect.DeepEqual(again.Counters, snap.Counters) || len(again.Histograms) != len(snap.Histograms) {
		t.Errorf("the versioned body reads back differently: %v", err)
	}
}
