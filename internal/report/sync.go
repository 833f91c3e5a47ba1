package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/meshbench/meshbench/internal/mesh/istio"
)

// SyncTable prints istiod's ACK table: one row per proxy, one column per
// xDS type any proxy was sent ("-": not sent to this one).
func SyncTable(w io.Writer, rows []istio.SyncRow) error {
	cols := map[string]bool{}
	for _, r := range rows {
		for t := range r.States {
			cols[t] = true
		}
	}
	var names []string
	for t := range cols {
		names = append(names, t)
	}
	slices.Sort(names)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "PROXY\tTYPE\tVERSION\t%s\n", strings.Join(names, "\t"))
	for _, r := range rows {
		var cells []string
		for _, t := range names {
			s, ok := r.States[t]
			if !ok {
				s = "-"
			}
			cells = append(cells, s)
		}
		v := r.Version
		if v == "" {
			v = "-" // the proxy reported none (a ztunnel built without version stamps)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Proxy, r.Type, v, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}
