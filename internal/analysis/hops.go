package analysis

import (
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/meshbench/meshbench/internal/measure/hops"
)

// HopsFile is a cell's hop attribution (the local lab's, with hop
// timing on).
const HopsFile = "hops.json"

// ReadHops reads a cell's hop attribution; nil, nil when the cell ran
// without hop timing.
func ReadHops(dir string) (*hops.Result, error) {
	b, err := os.ReadFile(filepath.Join(dir, HopsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r hops.Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	if r.Schema != hops.Schema {
		return nil, errors.New("schema " + r.Schema + ", want " + hops.Schema)
	}
	return &r, nil
}

// HopPart is one part of a configuration's waterfall: the median over
// its valid repetitions of the part's mean and percentiles, in ms.
type HopPart struct {
	Name                        string
	MeanMs, P50Ms, P95Ms, P99Ms float64
	// Timed is false for the untimed rest and the app.
	Timed bool
}

// HopSplit is a mesh's waterfall in one scenario, beside the baseline.
type HopSplit struct {
	Scenario Scenario
	Mesh     string
	Baseline string
	// Cells are the valid repetitions with hop timing.
	Cells int
	// Parts: the timed hops outermost first, the untimed rest, the app.
	Parts []HopPart
	// AddedMeanMs, AddedP50Ms, AddedP95Ms: the mesh's latency minus the
	// baseline's (medians over repetitions); NaN without a baseline.
	AddedMeanMs, AddedP50Ms, AddedP95Ms float64
	// UntimedAddedMs is AddedMeanMs minus the timed hops' means: what
	// the mesh adds that no proxy timed (L4 hops, more kernel hops).
	UntimedAddedMs float64
	// Traversals: proxies per request (the seed's method divides by it).
	Traversals int
	L4         []string
}

// HopSplits reads the hop attribution of every group whose cells had
// hop timing on and splits each mesh's added latency over its hops;
// groups without it are left out. Unreadable files are returned as
// errors beside the splits that could be made.
func HopSplits(a *Analysis) ([]HopSplit, []error) {
	var out []HopSplit
	var errs []error
	for _, s := range a.Scenarios {
		for _, m := range a.Meshes {
			g := a.Group(m, s)
			if g == nil {
				continue
			}
			var rs []*hops.Result
			for _, c := range g.Cells {
				if !c.Valid {
					continue
				}
				r, err := ReadHops(c.Dir)
				if err != nil {
					errs = append(errs, &CellError{ID: c.ID, File: HopsFile, Err: err})
					continue
				}
				if r != nil {
					rs = append(rs, r)
				}
			}
			if len(rs) == 0 {
				continue
			}
			hs := HopSplit{Scenario: s, Mesh: m, Baseline: a.Baseline, Cells: len(rs), Traversals: rs[0].Traversals, L4: rs[0].L4,
				AddedMeanMs: math.NaN(), AddedP50Ms: math.NaN(), AddedP95Ms: math.NaN()}
			hs.Parts = hopParts(rs)
			if b := a.Group(a.Baseline, s); b != nil && m != a.Baseline {
				d := func(fig string) float64 {
					mi, ok1 := g.Figures[fig]
					bi, ok2 := b.Figures[fig]
					if !ok1 || !ok2 {
						return math.NaN()
					}
					return mi.Estimate - bi.Estimate
				}
				hs.AddedMeanMs, hs.AddedP50Ms, hs.AddedP95Ms = d(LatencyMean), d(LatencyP50), d(LatencyP95)
				hs.UntimedAddedMs = hs.AddedMeanMs
				for _, p := range hs.Parts {
					if p.Timed {
						hs.UntimedAddedMs -= p.MeanMs
					}
				}
			}
			out = append(out, hs)
		}
	}
	return out, errs
}

// hopParts are the medians over repetitions of every part, in the first
// repetition's order.
func hopParts(rs []*hops.Result) []HopPart {
	type acc struct {
		timed               bool
		mean, p50, p95, p99 []float64
	}
	byName := map[string]*acc{}
	var order []string
	add := func(s hops.Stat, timed bool) {
		a := byName[s.Name]
		if a == nil {
			a = &acc{timed: timed}
			byName[s.Name] = a
			order = append(order, s.Name)
		}
		a.mean = append(a.mean, s.MeanNs/1e6)
		a.p50 = append(a.p50, float64(s.P50Ns)/1e6)
		a.p95 = append(a.p95, float64(s.P95Ns)/1e6)
		a.p99 = append(a.p99, float64(s.P99Ns)/1e6)
	}
	for _, r := range rs {
		for _, h := range r.Hops {
			add(h, true)
		}
		add(r.Untimed, false)
		if r.App != nil {
			add(*r.App, false)
		}
	}
	med := func(v []float64) float64 {
		s := slices.Clone(v)
		slices.Sort(s)
		if len(s)%2 == 1 {
			return s[len(s)/2]
		}
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	var out []HopPart
	for _, n := range order {
		a := byName[n]
		out = append(out, HopPart{Name: n, Timed: a.timed, MeanMs: med(a.mean), P50Ms: med(a.p50), P95Ms: med(a.p95), P99Ms: med(a.p99)})
	}
	return out
}
