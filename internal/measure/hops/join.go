package hops

import (
	"cmp"
	"fmt"
	"slices"
	"sort"

	"github.com/meshbench/meshbench/internal/load/latency"
)

// Schema names the format of Result on disk.
const Schema = "meshbench.hops/v1"

// Options describe the path a join attributes.
type Options struct {
	// Entry is the service the load calls: its hops are the waterfall.
	// Records of other services are calls its app makes (Result.Calls).
	Entry string
	// L4 names the path's hops that are L4 only (tcp_proxy, HBONE
	// tunnels): no per-request timing, their time is in Untimed.
	L4 []string
	// Traversals is how many proxies one request passes through, timed
	// and L4, its app's calls included: the seed's method divides the
	// added latency by it.
	Traversals int
}

// Stat is one part of the waterfall: a histogram of ns values with its
// summary (p50, p90, p95, p99, mean…).
type Stat struct {
	Name string `json:"name"`
	latency.Encoded
}

// Call is a call the entry's app makes for each request (the face app's
// calls to smiley and color): its hops and its app's time, within the
// entry app's time.
type Call struct {
	Service string  `json:"service"`
	Hops    []Stat  `json:"hops"`
	App     *Stat   `json:"app,omitempty"`
	Missing []Count `json:"missing,omitempty"`
}

// Count is a number of requests with what they lack.
type Count struct {
	Hop      string `json:"hop"`
	Requests int64  `json:"requests"`
}

// Result is the hop attribution of one run.
type Result struct {
	Schema string `json:"schema"`
	Entry  string `json:"entry"`
	// Requests are the measured requests the load logged; Complete those
	// found at every hop of the path (the waterfall's); Failed those the
	// load counted as failed (complete or not).
	Requests int64 `json:"requests"`
	Complete int64 `json:"complete"`
	Failed   int64 `json:"failed"`
	// Missing counts, per hop, the measured requests without its record.
	Missing []Count `json:"missing,omitempty"`
	// Unmatched are records of requests the load did not measure (its
	// warm-up, or another cell on the same lab); Duplicates second records
	// of one request at one hop (kept: the longest); Malformed lines that
	// were not records; NoID records without a request id.
	Unmatched  int64 `json:"unmatched"`
	Duplicates int64 `json:"duplicates"`
	Malformed  int64 `json:"malformed"`
	NoID       int64 `json:"no_id"`
	// OverTotal counts complete requests whose timed hops and app took
	// longer than the load's service time (clock granularity, at most a µs
	// per term; more would be a bug): their untimed rest counts as 0.
	OverTotal int64 `json:"over_total"`
	// Hops are the path's HTTP hops, outermost first, each its own time.
	Hops []Stat `json:"hops"`
	// App is the app's time seen from the last proxy (nil: no HTTP proxy
	// on the path sees it).
	App *Stat `json:"app,omitempty"`
	// Untimed is the service time minus the hops and the app: L4 hops,
	// the kernel, scheduling.
	Untimed Stat `json:"untimed"`
	// Total is the load's service time of the complete requests.
	Total      Stat     `json:"total"`
	Calls      []Call   `json:"calls,omitempty"`
	L4         []string `json:"l4,omitempty"`
	Traversals int      `json:"traversals"`
	// ProxyCPU is each proxy's CPU per 1000 requests in the measured
	// window with hop logging on (filled by the platform from its
	// sampler): compare with a run without, see the README.
	ProxyCPU []ProxyCPU `json:"proxy_cpu,omitempty"`
}

// ProxyCPU is one proxy's CPU time per 1000 achieved requests, in ms.
type ProxyCPU struct {
	Proxy          string  `json:"proxy"`
	CPUMsPer1000Rq float64 `json:"cpu_ms_per_1000_requests"`
}

// UntimedName is the untimed rest's name in reports.
const UntimedName = "untimed (L4 hops, kernel, scheduling)"

// chain is one request's records for one service, by hop label.
type chain map[string]Record

// Join attributes the measured requests' service time to the hops of
// their path. Records are matched to requests by id; records of requests
// the load did not measure are counted (Unmatched) and left out.
func Join(reqs []Request, recs []Record, o Options) (*Result, error) {
	res := &Result{Schema: Schema, Entry: o.Entry, L4: o.L4, Traversals: o.Traversals}
	measured := map[string]*Request{}
	for i := range reqs {
		if reqs[i].Measured {
			measured[reqs[i].ID] = &reqs[i]
			res.Requests++
			if reqs[i].Failed() {
				res.Failed++
			}
		}
	}
	// id → service → hop → record (the longest of duplicates).
	byID := map[string]map[string]chain{}
	for _, r := range recs {
		if measured[r.RequestID] == nil {
			res.Unmatched++
			continue
		}
		svcs := byID[r.RequestID]
		if svcs == nil {
			svcs = map[string]chain{}
			byID[r.RequestID] = svcs
		}
		c := svcs[r.Service]
		if c == nil {
			c = chain{}
			svcs[r.Service] = c
		}
		if old, dup := c[r.Hop]; dup {
			res.Duplicates++
			if old.DownstreamUs >= r.DownstreamUs {
				continue
			}
		}
		c[r.Hop] = r
	}
	paths := orderHops(byID)

	entry := newPart(paths[o.Entry])
	total, untimed := latency.NewRecorder(), latency.NewRecorder()
	calls := map[string]*part{}
	for svc, path := range paths {
		if svc != o.Entry {
			calls[svc] = newPart(path)
		}
	}
	ids := make([]string, 0, len(measured))
	for id := range measured {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		q := measured[id]
		svcs := byID[id]
		sum, ok := entry.add(svcs[o.Entry])
		if ok {
			res.Complete++
			total.Record(q.ServiceNs)
			rest := q.ServiceNs - sum
			if rest < 0 {
				res.OverTotal++
				rest = 0
			}
			untimed.Record(rest)
		}
		for svc, p := range calls {
			p.add(svcs[svc])
		}
	}
	var err error
	if res.Hops, res.App, res.Missing, err = entry.stats(); err != nil {
		return nil, err
	}
	if res.Hops == nil {
		res.Hops = []Stat{} // a path without HTTP hops (ambient): [], as its schema says
	}
	if res.Untimed, err = stat(UntimedName, untimed); err != nil {
		return nil, err
	}
	if res.Total, err = stat("total (service time)", total); err != nil {
		return nil, err
	}
	callSvcs := mapsKeys(calls)
	sort.Strings(callSvcs)
	for _, svc := range callSvcs {
		c := Call{Service: svc}
		if c.Hops, c.App, c.Missing, err = calls[svc].stats(); err != nil {
			return nil, err
		}
		if c.Hops == nil {
			c.Hops = []Stat{}
		}
		res.Calls = append(res.Calls, c)
	}
	return res, nil
}

func mapsKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// orderHops gives every service's hop labels, outermost first: a hop
// that contains another (its upstream window holds the next proxy)
// lasts longer from downstream, so within each request the records of a
// service sorted by downstream duration, longest first, are the path in
// order; a label's place is its mean rank over the requests.
func orderHops(byID map[string]map[string]chain) map[string][]string {
	type rank struct {
		sum float64
		n   int
	}
	ranks := map[string]map[string]*rank{}
	for _, svcs := range byID {
		for svc, c := range svcs {
			recs := make([]Record, 0, len(c))
			for _, r := range c {
				recs = append(recs, r)
			}
			slices.SortFunc(recs, func(a, b Record) int {
				return cmp.Or(cmp.Compare(b.DownstreamUs, a.DownstreamUs), cmp.Compare(a.Hop, b.Hop))
			})
			if ranks[svc] == nil {
				ranks[svc] = map[string]*rank{}
			}
			for i, r := range recs {
				rk := ranks[svc][r.Hop]
				if rk == nil {
					rk = &rank{}
					ranks[svc][r.Hop] = rk
				}
				rk.sum += float64(i)
				rk.n++
			}
		}
	}
	out := map[string][]string{}
	for svc, rs := range ranks {
		labels := mapsKeys(rs)
		slices.SortFunc(labels, func(a, b string) int {
			return cmp.Or(cmp.Compare(rs[a].sum/float64(rs[a].n), rs[b].sum/float64(rs[b].n)), cmp.Compare(a, b))
		})
		out[svc] = labels
	}
	return out
}

// part accumulates one service's hops over the requests.
type part struct {
	path    []string
	own     []*latency.Recorder
	app     *latency.Recorder
	missing []int64
}

func newPart(path []string) *part {
	p := &part{path: path, app: latency.NewRecorder(), missing: make([]int64, len(path))}
	for range path {
		p.own = append(p.own, latency.NewRecorder())
	}
	return p
}

// add records one request's chain when it is complete, and returns the
// sum of its hops and app in ns; an incomplete chain is counted per
// missing hop and recorded nowhere.
func (p *part) add(c chain) (sumNs int64, complete bool) {
	complete = true
	for i, h := range p.path {
		if _, ok := c[h]; !ok {
			p.missing[i]++
			complete = false
		}
	}
	if !complete {
		return 0, false
	}
	for i, h := range p.path {
		own := max(c[h].Own(), 0) * 1000
		p.own[i].Record(own)
		sumNs += own
	}
	if len(p.path) > 0 {
		if up := c[p.path[len(p.path)-1]].UpstreamUs; up >= 0 {
			p.app.Record(up * 1000)
			sumNs += up * 1000
		}
	}
	return sumNs, true
}

func (p *part) stats() ([]Stat, *Stat, []Count, error) {
	var hops []Stat
	var missing []Count
	for i, h := range p.path {
		s, err := stat(h, p.own[i])
		if err != nil {
			return nil, nil, nil, err
		}
		hops = append(hops, s)
		if p.missing[i] > 0 {
			missing = append(missing, Count{Hop: h, Requests: p.missing[i]})
		}
	}
	if len(p.path) == 0 {
		return hops, nil, missing, nil
	}
	app, err := stat("app (seen from "+p.path[len(p.path)-1]+")", p.app)
	if err != nil {
		return nil, nil, nil, err
	}
	return hops, &app, missing, nil
}

func stat(name string, r *latency.Recorder) (Stat, error) {
	e, err := r.Encode()
	if err != nil {
		return Stat{}, fmt.Errorf("hop %s: %w", name, err)
	}
	return Stat{Name: name, Encoded: e}, nil
}
