package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/meshbench/meshbench/internal/measure/hops"
	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/mesh/envoy"
	"github.com/meshbench/meshbench/internal/mesh/envoy/bootstrap"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/results"
)

// Hop timing's files: the proxies' records in the lab's directory, the
// load's requests and the join in the cell's.
const (
	HopLogsDir   = "hops"           // NAME.hops.jsonl: every record proxy NAME wrote
	RequestsFile = "requests.jsonl" // every request the load sent (hops.Request)
	HopsFile     = "hops.json"      // the cell's attribution (hops.Result)
)

// render writes nothing: it renders every proxy's config, with hop
// records on when the lab times hops.
func (l *Lab) render(certs bootstrap.CertPaths) (map[string][]byte, error) {
	if !l.opts.Hops {
		return bootstrap.Render(l.topo, certs)
	}
	dir := filepath.Join(l.dir, HopLogsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	rendered, hs, err := bootstrap.RenderHopLogs(l.topo, certs, dir)
	if err != nil {
		return nil, err
	}
	l.hopList = hs
	return rendered, nil
}

// requestArgs are the load's flags for hop timing: ids of the cell's
// own prefix (so records of an earlier cell on the lab never match) and
// its request log.
func (c *cell) requestArgs() []string {
	if !c.opts.Hops {
		return nil
	}
	c.requestPrefix = "c" + strconv.Itoa(c.number) + "-" + strconv.FormatInt(time.Now().UnixNano()%(1<<32), 36)
	// Where each proxy's log ends now: on a lab reused across cells the
	// cell reads only what was written after (earlier cells' records,
	// flushed at their collect, are not read again). A record of this
	// cell cannot come before: its load has not started.
	c.hopOffsets = map[string]int64{}
	names, _ := filepath.Glob(filepath.Join(c.lab.dir, HopLogsDir, "*.hops.jsonl"))
	for _, n := range names {
		if fi, err := os.Stat(n); err == nil {
			c.hopOffsets[n] = fi.Size()
		}
	}
	return []string{"--request-ids", c.requestPrefix, "--request-log", filepath.Join(c.dir.Path, RequestsFile)}
}

// collectHops makes every Envoy write out its records, joins them with
// the load's requests and writes the cell's attribution.
func (c *cell) collectHops(ctx context.Context, lr *results.LoadResult, s sample.Summary) (*hops.Result, error) {
	l := c.lab
	for _, p := range l.procs {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := envoy.ReopenLogs(cctx, p.AdminAddr)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("flushing %s's hop records: %w", p.Name, err)
		}
	}
	dir := filepath.Join(l.dir, HopLogsDir)
	waitStable(dir, 3*time.Second)
	rf, err := os.Open(filepath.Join(c.dir.Path, RequestsFile))
	if err != nil {
		return nil, fmt.Errorf("the load's requests: %w", err)
	}
	reqs, badReqs, err := hops.ReadRequests(rf)
	rf.Close()
	if err != nil {
		return nil, fmt.Errorf("the load's requests: %w", err)
	}
	var recs []hops.Record
	var st hops.LogStats
	names, _ := filepath.Glob(filepath.Join(dir, "*.hops.jsonl"))
	sort.Strings(names)
	for _, n := range names {
		f, err := os.Open(n)
		if err != nil {
			return nil, err
		}
		if _, err := f.Seek(c.hopOffsets[n], 0); err != nil {
			f.Close()
			return nil, err
		}
		rs, s, err := hops.ParseLog(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", n, err)
		}
		recs = append(recs, rs...)
		st.Malformed += s.Malformed
		st.NoID += s.NoID
	}
	entry, l4, traversals := hopPath(l.topo)
	res, err := hops.Join(reqs, recs, hops.Options{Entry: entry, L4: l4, Traversals: traversals})
	if err != nil {
		return nil, err
	}
	res.Malformed = st.Malformed + badReqs
	res.NoID = st.NoID
	if rate := lr.AchievedRatePerSec(); rate > 0 {
		for _, p := range s.Processes {
			if l.topo.Proxy(p.Name) != nil {
				// m millicores at r requests per second: m/1000 s of CPU
				// per second over r requests, so 1000·m/r ms per 1000.
				res.ProxyCPU = append(res.ProxyCPU, hops.ProxyCPU{Proxy: p.Name, CPUMsPer1000Rq: p.CPUMillicores.Avg / rate * 1000})
			}
		}
	}
	if err := c.dir.WriteJSON(HopsFile, res); err != nil {
		return nil, err
	}
	return res, nil
}

// waitStable waits until the files in dir stop growing (two readings
// 100 ms apart alike), at most limit.
func waitStable(dir string, limit time.Duration) {
	size := func() int64 {
		var n int64
		names, _ := filepath.Glob(filepath.Join(dir, "*"))
		for _, name := range names {
			if fi, err := os.Stat(name); err == nil {
				n += fi.Size()
			}
		}
		return n
	}
	deadline := time.Now().Add(limit)
	last, same := size(), 0
	for same < 2 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		if n := size(); n == last {
			same++
		} else {
			last, same = n, 0
		}
	}
}

// hopPath is the load's path through topo as hop timing reports it: the
// service the load calls, the proxies on it that are L4 only (named with
// what they do), and how many proxies one request passes through, its
// app's calls included (the seed's method divides by it).
func hopPath(t *topology.Topology) (entry string, l4 []string, traversals int) {
	o := t.Options
	entry = t.Service.Name
	edges := 1
	if s := t.Svc(entry); s != nil {
		edges += len(s.Backends)
	}
	tcp := o.Protocol == topology.ProtocolTCP
	switch o.Mode {
	case topology.ModeSidecar:
		traversals = 2 * edges
		if tcp {
			l4 = append(l4, "sidecars (tcp_proxy: --protocol tcp)")
		}
	case topology.ModeAmbient:
		traversals = 2 * edges
		l4 = append(l4, "node proxy, client side (tcp_proxy into HBONE)", "node proxy, server side (HBONE to the app)")
	case topology.ModeWaypoint:
		traversals = 3 * edges
		l4 = append(l4, "node proxy, client side (tcp_proxy into HBONE)", "waypoint's HBONE in and out (connect_terminate, connect_originate)",
			"node proxy, server side (HBONE to the app)")
		if tcp {
			l4 = append(l4, "waypoint (tcp_proxy: --protocol tcp)")
		}
	}
	if o.Gateway {
		traversals++
		if tcp {
			l4 = append(l4, "gateway (tcp_proxy: --protocol tcp)")
		}
	}
	return entry, l4, traversals
}
