package report

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/meshbench/meshbench/internal/results"
)

// NodeProxyTable prints the substrate node proxies' own counters
// over the cell (ztunnel's istio_tcp_* metrics as deltas), one line per
// proxy, and what they say about mTLS.
func NodeProxyTable(w io.Writer, st map[string]results.NodeProxyStats) {
	names := make([]string, 0, len(st))
	for n := range st {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintln(w, "Node proxies (ztunnel's own counters over the cell):")
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, "  proxy\tconn opened\tconn closed\tmutual_tls\tother\tbytes sent\tbytes received")
	var mtls, other uint64
	for _, n := range names {
		s := st[n]
		mtls += s.MTLSOpened()
		other += s.PlaintextOpened()
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\t%d\t%d\n", n, s.ConnectionsOpened, s.ConnectionsClosed, s.MTLSOpened(), s.PlaintextOpened(), s.BytesSent, s.BytesReceived)
	}
	_ = tw.Flush()
	switch {
	case mtls > 0 && other == 0:
		fmt.Fprintf(w, "mTLS verified: all %d connections the node proxies opened were mutual TLS (connection_security_policy).\n", mtls)
	default:
		fmt.Fprintf(w, "mTLS NOT verified: %d mutual TLS and %d other connections.\n", mtls, other)
	}
}
