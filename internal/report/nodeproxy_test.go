package report

import (
	"bytes"
	"testing"

	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestNodeProxyTable: the node proxy table as `run` prints it, for
// a cell whose connections were all mTLS and for one with a plaintext
// connection (golden files).
func TestNodeProxyTable(t *testing.T) {
	tests := []struct {
		name string
		st   map[string]results.NodeProxyStats
	}{
		// two node ztunnels, 16 connections each, all mutual TLS
		{"nodeproxy-mtls", map[string]results.NodeProxyStats{
			"ztunnel-node2": {ConnectionsOpened: 16, ConnectionsClosed: 16, BytesSent: 307500, BytesReceived: 41000,
				OpenedBySecurity: map[string]uint64{"mutual_tls": 16}},
			"ztunnel-node1": {ConnectionsOpened: 16, ConnectionsClosed: 16, BytesSent: 41000, BytesReceived: 307500,
				OpenedBySecurity: map[string]uint64{"mutual_tls": 16}},
		}},
		// one connection reported without mTLS
		{"nodeproxy-plaintext", map[string]results.NodeProxyStats{
			"ztunnel-node1": {ConnectionsOpened: 3, OpenedBySecurity: map[string]uint64{"mutual_tls": 2, "unknown": 1}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			NodeProxyTable(&b, tc.st)
			testutil.Golden(t, tc.name+".txt", b.Bytes())
		})
	}
}
