package plan

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/workload"
)

// MaxRequestsPerConnection bounds axes.requests_per_connection.
const MaxRequestsPerConnection = 1_000_000

// laterAxes reads the axes added after the first ten: connections,
// payload, proxy_threads, requests_per_connection, placement, arrivals.
// Each is nil when not given. connections and payload have a plan-wide
// key of one value too (connections, body_size): a plan gives one or the
// other.
func (b *builder) laterAxes() {
	a := &b.p.Axes
	intAxis := func(key string, lo, hi int, want string, dst *[]int) {
		var parsed int
		b.axis(key, func(it item) (string, bool) {
			n, err := strconv.Atoi(it.text)
			if err != nil || n < lo || n > hi {
				b.s.badItem(key, it, want)
				return "", false
			}
			parsed = n
			return strconv.Itoa(n), true
		}, func() { *dst = nil }, func(item) { *dst = append(*dst, parsed) })
	}
	intAxis("axes.connections", 1, math.MaxInt32, "allowed: a whole number, 1 or more", &a.Connections)
	intAxis("axes.payload", 1, workload.MaxBodySize, fmt.Sprintf("allowed: 1 to %d bytes (the static app's answer)", workload.MaxBodySize), &a.Payload)
	intAxis("axes.proxy_threads", 1, topology.MaxProxyThreads, fmt.Sprintf("allowed: 1 to %d worker threads per proxy", topology.MaxProxyThreads), &a.ProxyThreads)
	intAxis("axes.requests_per_connection", 0, MaxRequestsPerConnection,
		fmt.Sprintf("allowed: 0 (keep every connection) or 1 to %d requests per connection (1: a connection per request)", MaxRequestsPerConnection), &a.RequestsPerConnection)
	var place topology.Placement
	b.axis("axes.placement", func(it item) (string, bool) {
		place = topology.Placement(strings.ToLower(it.text))
		if !slices.Contains(topology.Placements, place) {
			b.s.badItem("axes.placement", it, "allowed: cross-node (the client on a node of its own), same-node (on the app's first node)")
			return "", false
		}
		return string(place), true
	}, func() { a.Placement = nil }, func(item) { a.Placement = append(a.Placement, place) })
	var arr loadgen.Arrivals
	b.axis("axes.arrivals", func(it item) (string, bool) {
		v, err := loadgen.ParseArrivals(it.text)
		if err != nil || it.text == "" {
			b.s.badItem("axes.arrivals", it, "allowed: constant (every 1/rate), poisson (exponential gaps, the same mean rate)")
			return "", false
		}
		arr = v
		return string(v), true
	}, func() { a.Arrivals = nil }, func(item) { a.Arrivals = append(a.Arrivals, arr) })

	for _, pair := range [][2]string{{"connections", "axes.connections"}, {"body_size", "axes.payload"}} {
		if it, ok := b.one(pair[0]); ok && b.s.entries[pair[1]] != nil {
			b.s.badItem(pair[0], it, "given with "+b.s.field(pair[1])+": remove it and list the values under "+b.s.field(pair[1]))
		}
	}
	// On kube, payload is the app Deployment's --body-size; requests per
	// connection and arrivals are the load workers' arguments; placement
	// is the load pods' affinity to the app pods (or away from them);
	// proxy_threads is each per-pod proxy's own setting
	// (kube.ProxyThreadsAnnotations), the waypoint Gateway's
	// infrastructure annotation, and ztunnel's DaemonSet env (rolled out
	// before the cell, restored after the plan).
	if b.p.Search != nil {
		if e := b.s.entries["axes.arrivals"]; e != nil && slices.Contains(a.Arrivals, loadgen.ArrivalsPoisson) {
			b.s.bad("axes.arrivals", e.line, `"poisson"`, "a capacity search judges a constant schedule's lag; remove axes.arrivals or the search")
		}
	}
}

// loadMatrix checks that every value of the load's own axes has a cell
// on some topology that runs (kept): a value every load skips is an
// error, as a topology value no cell has is.
func (b *builder) loadMatrix(kept []topo) {
	p, a := b.p, &b.p.Axes
	type axis struct {
		key   string
		n     int
		match func(lp LoadParams, i int) bool
		show  func(i int) string
	}
	axes := []axis{
		{"axes.connections", len(a.Connections), func(lp LoadParams, i int) bool { return lp.Connections == a.Connections[i] },
			func(i int) string { return strconv.Itoa(a.Connections[i]) }},
		{"axes.requests_per_connection", len(a.RequestsPerConnection), func(lp LoadParams, i int) bool { return lp.RequestsPerConnection == a.RequestsPerConnection[i] },
			func(i int) string { return strconv.Itoa(a.RequestsPerConnection[i]) }},
		{"axes.arrivals", len(a.Arrivals), func(lp LoadParams, i int) bool { return lp.Arrivals == a.Arrivals[i] },
			func(i int) string { return strconv.Quote(string(a.Arrivals[i])) }},
	}
	for _, ax := range axes {
		for i := range ax.n {
			var why []string
			used := false
			for _, t := range kept {
				for _, r := range a.Rate {
					for _, g := range p.generators() {
						for _, lp := range p.loadParams() {
							if !ax.match(lp, i) {
								continue
							}
							if w := p.loadSkipReason(t, r, g, lp); w == "" {
								used = true
							} else if !slices.Contains(why, w) {
								why = append(why, w)
							}
						}
					}
				}
			}
			if !used {
				b.s.bad(ax.key, b.lines[ax.key][i], ax.show(i), "no cell has it: "+strings.Join(why, "; "))
			}
		}
	}
}
