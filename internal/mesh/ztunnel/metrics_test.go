package ztunnel

import (
	"os"
	"reflect"
	"testing"

	"github.com/meshbench/meshbench/internal/results"
)

// TestParseMetrics reads a real scrape of the production ztunnel's stats
// port (the server node's, mid-run, 50 rps through one HBONE connection
// pool: testdata/metrics-server-node.txt) into the cell's stats.
func TestParseMetrics(t *testing.T) {
	b, err := os.ReadFile("testdata/metrics-server-node.txt")
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseMetrics(string(b))
	if err != nil {
		t.Fatal(err)
	}
	got := c.Stats()
	want := results.NodeProxyStats{ConnectionsOpened: 17, ConnectionsClosed: 1, BytesSent: 205062, BytesReceived: 18304,
		OpenedBySecurity: map[string]uint64{"mutual_tls": 17}, OpenedByReporter: map[string]uint64{"destination": 17}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
	if got.MTLSOpened() != 17 || got.PlaintextOpened() != 0 {
		t.Errorf("mTLS %d plaintext %d, want 17 and 0", got.MTLSOpened(), got.PlaintextOpened())
	}
}

func TestCountersSub(t *testing.T) {
	opened := func(sec string) Series { return Series{Metric: metricOpened, Reporter: "source", Security: sec} }
	tests := []struct {
		name          string
		now, base     Counters
		opened, plain uint64
	}{
		// a reused proxy: only what happened since the base counts
		{"delta", Counters{opened("mutual_tls"): 30}, Counters{opened("mutual_tls"): 12}, 18, 0},
		// a series new since the base counts from 0
		{"new series", Counters{opened("mutual_tls"): 5, opened("unknown"): 2}, Counters{opened("mutual_tls"): 5}, 2, 2},
		// a counter that went down (the proxy restarted) counts from 0
		{"restart", Counters{opened("mutual_tls"): 3}, Counters{opened("mutual_tls"): 40}, 3, 0},
		// nothing happened: no connections, no maps
		{"idle", Counters{opened("mutual_tls"): 7}, Counters{opened("mutual_tls"): 7}, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.now.Sub(tc.base).Stats()
			if s.ConnectionsOpened != tc.opened || s.PlaintextOpened() != tc.plain {
				t.Errorf("opened %d plaintext %d, want %d and %d (%+v)", s.ConnectionsOpened, s.PlaintextOpened(), tc.opened, tc.plain, s)
			}
			if tc.opened == 0 && s.OpenedBySecurity != nil {
				t.Errorf("idle stats carry a security map: %+v", s)
			}
		})
	}
}

// FuzzParseMetrics: any text is read or refused, never a panic, and the
// stats of what is read add up.
func FuzzParseMetrics(f *testing.F) {
	if b, err := os.ReadFile("testdata/metrics-server-node.txt"); err == nil {
		f.Add(string(b))
	}
	f.Add("istio_tcp_connections_opened_total{reporter=\"source\",connection_security_policy=\"unknown\"} 3\n# EOF\n")
	f.Add("# TYPE x counter\nx_total 1\n")
	f.Fuzz(func(t *testing.T, text string) {
		c, err := ParseMetrics(text)
		if err != nil {
			return
		}
		s := c.Stats()
		var sum uint64
		for _, n := range s.OpenedBySecurity {
			sum += n
		}
		if s.OpenedBySecurity != nil && sum != s.ConnectionsOpened {
			t.Errorf("by security %v sums to %d, opened %d", s.OpenedBySecurity, sum, s.ConnectionsOpened)
		}
	})
}
