package kubelet

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/meshbench/meshbench/internal/measure/sample"
)

// point is one fresh reading of a cumulative counter.
type point struct {
	t     time.Time // the counter's timestamp, else the read time
	cpu   float64   // core-seconds
	mem   uint64    // working set, bytes
	round int
}

// segment is one incarnation of a container's (or a node's) counter: a
// reset starts a new one.
type segment struct {
	key, node, component, category string
	points                         []point
	// start is the container's start time when the kubelet gave a
	// plausible one (a Unix time not after the first point): its counter
	// was 0 then.
	start time.Time
}

// plausibleStart: kwok's emulation reports seconds since the start where
// the kubelet reports a Unix time; only the latter is a start time.
func plausibleStart(sec float64, first time.Time) (time.Time, bool) {
	if sec < 1e9 {
		return time.Time{}, false
	}
	t := time.Unix(0, int64(sec*1e9)).UTC()
	return t, !t.After(first)
}

// series collects the segments of every container and node from raw
// records, in round order, skipping stale records.
type series struct {
	containers map[string][]*segment
	nodes      map[string][]*segment
	resets     []sample.CounterReset
	ended      int // readings after a container ended (ignored)
	stale      int
	fresh      int
	lags       []time.Duration
}

func newSeries() *series {
	return &series{containers: map[string][]*segment{}, nodes: map[string][]*segment{}}
}

// add folds one record in; it returns the segment and the point before
// the new one in it (nil when the record started a segment or was not
// used).
func (s *series) add(rec *Record) (seg *segment, prev *point) {
	var key string
	var m map[string][]*segment
	switch rec.Kind {
	case RawContainer:
		key, m = rec.Namespace+"/"+rec.Pod+"/"+rec.Container, s.containers
	case RawNode:
		key, m = "node "+rec.Node, s.nodes
	default:
		return nil, nil
	}
	if rec.LagNs != nil {
		s.lags = append(s.lags, time.Duration(*rec.LagNs))
	}
	if rec.Stale {
		s.stale++
		return nil, nil
	}
	if !rec.HasCPU {
		return nil, nil
	}
	s.fresh++
	p := point{t: rec.cpuTime(), cpu: rec.CPUSeconds, mem: uint64(max(rec.MemoryBytes, 0)), round: rec.Round}
	segs := m[key]
	newSeg := func() *segment {
		sg := &segment{key: key, node: rec.Node, component: rec.Component, category: rec.Category, points: []point{p}}
		if st, ok := plausibleStart(rec.StartTimeSeconds, p.t); ok {
			sg.start = st
		}
		m[key] = append(m[key], sg)
		return sg
	}
	if len(segs) == 0 {
		newSeg()
		return nil, nil
	}
	last := segs[len(segs)-1]
	lp := last.points[len(last.points)-1]
	st, stOK := plausibleStart(rec.StartTimeSeconds, p.t)
	newStart := stOK && !last.start.IsZero() && !st.Equal(last.start)
	if p.cpu < lp.cpu && stOK && !last.start.IsZero() && !newStart {
		// Down with the same start time: not a new incarnation but the
		// same container ended (the kubelet reports a terminated
		// container's counter as 0): its series ends here.
		s.ended++
		return nil, nil
	}
	if p.cpu < lp.cpu || newStart {
		s.resets = append(s.resets, sample.CounterReset{Key: key, Node: rec.Node, Time: p.t, From: lp.cpu, To: p.cpu})
		sg := newSeg()
		if !sg.start.IsZero() && !sg.start.After(lp.t) {
			sg.start = time.Time{} // not this incarnation's start
		}
		return nil, nil
	}
	if !p.t.After(lp.t) {
		return nil, nil // no later than the last point: nothing new
	}
	last.points = append(last.points, p)
	last.node = rec.Node
	return last, &last.points[len(last.points)-2]
}

// at interpolates the counter at t linearly between the points on both
// sides (the start time counting as a point at 0); ok is false outside
// the segment's span.
func (sg *segment) at(t time.Time) (float64, bool) {
	pts := sg.points
	if !sg.start.IsZero() && sg.start.Before(pts[0].t) {
		pts = append([]point{{t: sg.start}}, pts...)
	}
	if t.Before(pts[0].t) || t.After(pts[len(pts)-1].t) {
		return 0, false
	}
	i, _ := slices.BinarySearchFunc(pts, t, func(p point, t time.Time) int { return p.t.Compare(t) })
	if i < len(pts) && pts[i].t.Equal(t) {
		return pts[i].cpu, true
	}
	a, b := pts[i-1], pts[i]
	f := float64(t.Sub(a.t)) / float64(b.t.Sub(a.t))
	return a.cpu + f*(b.cpu-a.cpu), true
}

// span is the time the segment's counter is known over.
func (sg *segment) span() (from, to time.Time) {
	from = sg.points[0].t
	if !sg.start.IsZero() && sg.start.Before(from) {
		from = sg.start
	}
	return from, sg.points[len(sg.points)-1].t
}

// memAt is the working set of the newest point at or before t (else the
// first point).
func (sg *segment) memAt(t time.Time) uint64 {
	m := sg.points[0].mem
	for _, p := range sg.points {
		if p.t.After(t) {
			break
		}
		m = p.mem
	}
	return m
}

// Intervals turns raw records into one sample.Round per round read: for
// every container with a fresh reading in the round and an earlier one of
// the same incarnation, its CPU between the two readings (counter
// difference over the counters' timestamp difference) and its working set
// at the newer one. Each sample's Time is its counter's timestamp. A
// round's Overhead is its cost (RawRound). It is a pure function of the
// records, which must be in round order (as a Sampler writes them).
func Intervals(recs []Record) []sample.Round {
	st := &intervalState{s: newSeries()}
	for i := range recs {
		st.add(&recs[i])
	}
	return st.rounds
}

// intervalState builds Intervals incrementally.
type intervalState struct {
	s      *series
	rounds []sample.Round
}

func (st *intervalState) add(rec *Record) {
	if n := len(st.rounds); n == 0 || st.rounds[n-1].Index != rec.Round {
		st.rounds = append(st.rounds, sample.Round{Index: rec.Round, Time: time.Unix(0, rec.TUnixNs).UTC()})
	}
	r := &st.rounds[len(st.rounds)-1]
	switch rec.Kind {
	case RawRound:
		r.Overhead.Wall, r.Overhead.CPU = time.Duration(rec.WallNs), time.Duration(rec.CPUNs)
		return
	case RawContainer:
		r.Overhead.Processes++
	}
	seg, prev := st.s.add(rec)
	if seg == nil || rec.Kind != RawContainer {
		return
	}
	cur := seg.points[len(seg.points)-1]
	r.Samples = append(r.Samples, sample.Sample{
		Target:        sample.Target{Name: seg.key, Component: seg.component, Category: seg.category},
		Time:          cur.t,
		CPUMillicores: (cur.cpu - prev.cpu) / cur.t.Sub(prev.t).Seconds() * 1000,
		RSSBytes:      cur.mem, PSSBytes: cur.mem, HasPSS: true,
	})
}

// Within returns the interval rounds' samples whose interval lies inside
// [from, to] (a zero from or to leaves that end open); rounds left
// without samples are left out. recs are the records rounds were made
// of (Intervals).
func Within(rounds []sample.Round, recs []Record, from, to time.Time) []sample.Round {
	// A sample's interval starts at the previous reading of its series.
	begins := map[[2]any]time.Time{}
	s := newSeries()
	for i := range recs {
		seg, prev := s.add(&recs[i])
		if seg == nil || recs[i].Kind != RawContainer {
			continue
		}
		begins[[2]any{recs[i].Round, seg.key}] = prev.t
	}
	var out []sample.Round
	for _, r := range rounds {
		var kept []sample.Sample
		for _, x := range r.Samples {
			b := begins[[2]any{r.Index, x.Name}]
			if (!from.IsZero() && b.Before(from)) || (!to.IsZero() && x.Time.After(to)) {
				continue
			}
			kept = append(kept, x)
		}
		if len(kept) > 0 {
			r.Samples, r.Gaps = kept, nil
			out = append(out, r)
		}
	}
	return out
}

// NodeValue is one node's CPU and working set in one interval of the
// window.
type NodeValue struct {
	Name          string  `json:"name"`
	CPUMillicores float64 `json:"cpu_millicores"`
	MemoryBytes   uint64  `json:"memory_bytes"`
}

// NodeRound is the node values of one interval (ending at Time).
type NodeRound struct {
	Index int         `json:"round"`
	Time  time.Time   `json:"time"`
	Nodes []NodeValue `json:"nodes"`
}

// WindowResult is what the counters say about one measured window.
type WindowResult struct {
	From, To time.Time
	// Step is the length of each of the window's equal intervals.
	Step time.Duration
	// Rounds: one per interval, each with every container's CPU over it
	// (counter difference interpolated to the interval's edges, over the
	// interval's length) and its working set at the newest reading before
	// the interval's end. Their CPU averages are exactly the window's CPU
	// (equal intervals), their min and max the intervals'.
	Rounds     []sample.Round
	Nodes      []NodeRound
	Containers []sample.ContainerWindow
	// Resets inside the window, and every reset of the run (AllResets).
	Resets, AllResets []sample.CounterReset
	// StaleRecords: reads whose counter timestamp had not advanced (no new
	// information); FreshRecords: the others with a CPU counter.
	StaleRecords, FreshRecords int
	Lag                        sample.CounterLag
}

// Window computes every container's and node's CPU over [from, to] from
// the raw records, cut into n = round((to−from)/period) equal intervals
// (at least 1). It is a pure function of its arguments.
func Window(recs []Record, from, to time.Time, period time.Duration) (WindowResult, error) {
	if !to.After(from) {
		return WindowResult{}, fmt.Errorf("window [%s, %s]: it must end after it starts", from, to)
	}
	if period <= 0 {
		return WindowResult{}, fmt.Errorf("period %v: must be > 0", period)
	}
	s := newSeries()
	overhead := map[int]sample.Overhead{}
	roundTime := map[int]time.Time{}
	for i := range recs {
		s.add(&recs[i])
		if recs[i].Kind == RawRound {
			overhead[recs[i].Round] = sample.Overhead{Wall: time.Duration(recs[i].WallNs), CPU: time.Duration(recs[i].CPUNs)}
			roundTime[recs[i].Round] = time.Unix(0, recs[i].TUnixNs)
		}
	}
	n := max(1, int(math.Round(float64(to.Sub(from))/float64(period))))
	step := to.Sub(from) / time.Duration(n)
	grid := make([]time.Time, n+1)
	for i := range grid {
		grid[i] = from.Add(time.Duration(i) * step)
	}
	grid[n] = to
	res := WindowResult{From: from, To: to, Step: step, StaleRecords: s.stale, FreshRecords: s.fresh, AllResets: s.resets}
	for _, r := range s.resets {
		if !r.Time.Before(from) && !r.Time.After(to) {
			res.Resets = append(res.Resets, r)
		}
	}
	res.Lag = lagStats(s.lags)

	// The sampler's rounds inside the window carry its cost.
	var costs []sample.Overhead
	for _, i := range slices.Sorted(maps.Keys(roundTime)) {
		if t := roundTime[i]; t.After(from) && !t.After(to) {
			costs = append(costs, overhead[i])
		}
	}
	res.Rounds = make([]sample.Round, n)
	res.Nodes = make([]NodeRound, n)
	for i := range n {
		res.Rounds[i] = sample.Round{Index: i, Time: grid[i+1]}
		res.Nodes[i] = NodeRound{Index: i, Time: grid[i+1], Nodes: []NodeValue{}}
		if i < len(costs) {
			res.Rounds[i].Overhead = costs[i]
		}
	}
	// interval returns the segment's CPU (core-seconds) over [a, b] cut
	// to its span, and whether it covers any of it.
	interval := func(sg *segment, a, b time.Time) (float64, bool) {
		lo, hi := sg.span()
		a, b = maxTime(a, lo), minTime(b, hi)
		if !b.After(a) {
			return 0, false
		}
		ca, _ := sg.at(a)
		cb, _ := sg.at(b)
		return cb - ca, true
	}
	for _, key := range sortedKeys(s.containers) {
		for _, sg := range s.containers[key] {
			cw := sample.ContainerWindow{Key: sg.key, Node: sg.node, Component: sg.component, Category: sg.category}
			for i := range n {
				cpu, ok := interval(sg, grid[i], grid[i+1])
				if !ok {
					continue
				}
				cw.CPUSeconds += cpu
				mem := sg.memAt(grid[i+1])
				res.Rounds[i].Samples = append(res.Rounds[i].Samples, sample.Sample{
					Target: sample.Target{Name: sg.key, Component: sg.component, Category: sg.category},
					Time:   grid[i+1], CPUMillicores: cpu / step.Seconds() * 1000,
					RSSBytes: mem, PSSBytes: mem, HasPSS: true,
				})
			}
			lo, hi := sg.span()
			cw.From, cw.To = maxTime(from, lo), minTime(to, hi)
			if !cw.To.After(cw.From) {
				continue // not inside the window
			}
			cw.Partial = cw.From.After(from) || cw.To.Before(to)
			cw.CPUMillicores = cw.CPUSeconds / to.Sub(from).Seconds() * 1000
			res.Containers = append(res.Containers, cw)
		}
	}
	for _, key := range sortedKeys(s.nodes) {
		for _, sg := range s.nodes[key] {
			for i := range n {
				cpu, ok := interval(sg, grid[i], grid[i+1])
				if !ok {
					continue
				}
				res.Nodes[i].Nodes = append(res.Nodes[i].Nodes, NodeValue{Name: sg.node,
					CPUMillicores: cpu / step.Seconds() * 1000, MemoryBytes: sg.memAt(grid[i+1])})
			}
		}
	}
	return res, nil
}

func lagStats(lags []time.Duration) sample.CounterLag {
	if len(lags) == 0 {
		return sample.CounterLag{}
	}
	l := slices.Clone(lags)
	slices.Sort(l)
	return sample.CounterLag{Samples: len(l), Min: l[0], Median: l[len(l)/2], Max: l[len(l)-1]}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cmp.Compare)
	return keys
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
