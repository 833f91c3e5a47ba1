package plan

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/analysis/capacity"
	"github.com/meshbench/meshbench/internal/analysis/slo"
	"github.com/meshbench/meshbench/internal/workload"
)

// Search is a plan's capacity search (the `search:` key): per
// configuration and repetition, the highest open-loop rate that meets
// Objective, found by capacity.Next within Config.
type Search struct {
	Objective slo.Objective
	Config    capacity.Config
}

// Search-mode defaults: shorter probes than a plan's cells, so a search
// of four meshes stays within minutes (see the package doc).
const (
	DefaultSearchDuration = 3 * time.Second
	DefaultSearchWarmup   = time.Second
	DefaultSearchDrain    = time.Second
)

// search reads the search.* keys and the app bound.
func (b *builder) search() {
	s, p := b.s, b.p
	b.integer("app_concurrency", 0, workload.MaxConcurrency, fmt.Sprintf("allowed: 0 (unbounded) to %d requests served at once by each app replica", workload.MaxConcurrency), &p.AppConcurrency)
	b.duration("app_service_time", true, &p.AppServiceTime)
	switch {
	case p.AppConcurrency > 0 && p.AppServiceTime <= 0:
		s.bad("app_concurrency", s.lineOf("app_concurrency"), strconv.Itoa(p.AppConcurrency), "needs "+s.field("app_service_time")+" too (each request's time in service)")
	case p.AppConcurrency == 0 && p.AppServiceTime > 0:
		s.bad("app_service_time", s.lineOf("app_service_time"), p.AppServiceTime.String(), "needs "+s.field("app_concurrency")+" too (requests served at once)")
	case p.AppServiceTime > workload.MaxDelay:
		s.bad("app_service_time", s.lineOf("app_service_time"), p.AppServiceTime.String(), "allowed: at most 1h")
	}
	if p.AppConcurrency > 0 && p.Platform == PlatformKube {
		s.bad("app_concurrency", s.lineOf("app_concurrency"), strconv.Itoa(p.AppConcurrency), "only on platform local (the lab's own app)")
	}

	given := false
	for _, k := range []string{"search.slo", "search.from", "search.to", "search.precision", "search.growth", "search.confirm"} {
		if s.entries[k] != nil {
			given = true
		}
	}
	if !given {
		return
	}
	sr := &Search{Config: capacity.Config{Precision: capacity.DefaultPrecision, Growth: capacity.DefaultGrowth, Confirm: true}}
	ok := true
	if e := s.entries["search.slo"]; e == nil {
		s.bad("search.slo", s.lineOf("search.from"), "", "a search needs an objective, such as {p99: 5ms, errors: 0.1%}")
		ok = false
	} else {
		var terms []slo.Term
		for _, it := range e.items {
			for _, part := range strings.Split(it.text, ",") {
				name, value, found := strings.Cut(strings.TrimSpace(part), "<=")
				t := slo.Term{Name: strings.TrimSpace(name), Value: strings.TrimSpace(value)}
				if !found {
					s.badItem("search.slo", it, "missing <=: "+slo.Allowed)
					ok = false
					continue
				}
				if _, err := slo.FromTerms([]slo.Term{t}); err != nil {
					s.bad("search.slo", it.line, "", err.Error())
					ok = false
					continue
				}
				terms = append(terms, t)
			}
		}
		if ok {
			o, err := slo.FromTerms(terms)
			if err != nil { // duplicates
				for _, e2 := range unjoin(err) {
					s.bad("search.slo", e.line, "", e2.Error())
				}
				ok = false
			}
			sr.Objective = o
		}
	}
	rate := func(key string, dst *float64) {
		it, found := b.one(key)
		if !found {
			s.bad(key, s.lineOf("search.slo"), "", "a search needs it: the "+map[string]string{"search.from": "first", "search.to": "highest"}[key]+" rate probed, per second")
			ok = false
			return
		}
		v, err := strconv.ParseFloat(it.text, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 || v > capacity.MaxRatePerSec {
			s.badItem(key, it, fmt.Sprintf("allowed: a rate above 0, at most %d per second", capacity.MaxRatePerSec))
			ok = false
			return
		}
		*dst = v
	}
	rate("search.from", &sr.Config.From)
	rate("search.to", &sr.Config.To)
	if sr.Config.From > 0 && sr.Config.To > 0 && sr.Config.To <= sr.Config.From {
		it, _ := b.one("search.to")
		s.badItem("search.to", it, "allowed: a rate above "+s.field("search.from")+" ("+capacity.FormatRate(sr.Config.From)+")")
		ok = false
	}
	if it, found := b.one("search.precision"); found {
		v, good := parsePercent(it.text)
		if !good || v <= 0 || v >= 1 {
			s.badItem("search.precision", it, "allowed: above 0% and below 100%, such as 5% or 0.05")
			ok = false
		} else {
			sr.Config.Precision = v
		}
	}
	if it, found := b.one("search.growth"); found {
		v, err := strconv.ParseFloat(it.text, 64)
		if err != nil || math.IsNaN(v) || v <= 1 || v > 10 {
			s.badItem("search.growth", it, "allowed: a factor above 1, at most 10, such as 2")
			ok = false
		} else {
			sr.Config.Growth = v
		}
	}
	if it, found := b.one("search.confirm"); found {
		v, good := parseBool(it.text)
		if !good {
			s.badItem("search.confirm", it, "allowed: true (probe a missed rate again before believing the miss), false")
			ok = false
		} else {
			sr.Config.Confirm = v
		}
	}
	if e := s.entries["axes.rate"]; e != nil {
		s.bad("axes.rate", e.line, "", "a search chooses its rates ("+s.field("search.from")+" to "+s.field("search.to")+"); remove "+s.field("axes.rate"))
	}
	if !ok {
		return
	}
	p.Search = sr
	if s.entries["duration"] == nil {
		p.Duration = DefaultSearchDuration
	}
	if s.entries["warmup"] == nil {
		p.Warmup = DefaultSearchWarmup
	}
	if s.entries["drain"] == nil {
		p.Drain = DefaultSearchDrain
	}
}

// parsePercent reads "5%" or "0.05" as a fraction.
func parsePercent(s string) (float64, bool) {
	t, scale := strings.TrimSpace(s), 1.0
	if strings.HasSuffix(t, "%") {
		t, scale = strings.TrimSuffix(t, "%"), 100
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v / scale, true
}

// SearchSpec is one search of a plan: one configuration (the axis values
// other than rate) and one repetition.
type SearchSpec struct {
	// ID names the search: Config plus "-repN".
	ID string
	// Config is the configuration's ID with rate "search":
	// "sidecar-static-rsearch-x1-p0-http-pod-mtls".
	Config     string
	Cell       Cell // the configuration (Rate unset), for its mesh options and topology key
	Repetition int
}

// ProbeID is the cell ID of probe n (from 1) of search id.
func ProbeID(searchID string, n int) string { return searchID + "-probe" + strconv.Itoa(n) }

// ParseProbeID splits a probe cell ID into its search ID and probe number.
func ParseProbeID(id string) (searchID string, n int, ok bool) {
	i := strings.LastIndex(id, "-probe")
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(id[i+len("-probe"):])
	if err != nil || n < 1 {
		return "", 0, false
	}
	return id[:i], n, true
}

// Searches returns the plan's searches in rounds, one per repetition,
// each round's configurations in an order drawn from seed as Order draws
// cells. A runner steps through a round: probe 1 of every search in this
// order, then probe 2 of those still searching, and so on, so drift lands
// on every configuration alike (the plan's interleaving rule for
// searches).
func (p *Plan) Searches(seed int64) [][]SearchSpec {
	if p.Search == nil {
		return nil
	}
	var cfgs []Cell
	p.eachTopology(func(t topo) {
		if p.skipReason(t) != "" {
			return
		}
		for _, lp := range p.loadParams() {
			if p.loadSkipReason(t, Rate{}, "", lp) != "" {
				continue
			}
			cfgs = append(cfgs, Cell{Config: p.configID(t, Rate{}, "", lp), Mesh: t.o, Payload: t.payload, Load: lp, TopologyKey: p.topologyKey(t)})
		}
	})
	rng := newOrderRNG(seed)
	out := make([][]SearchSpec, p.Repetitions)
	for rep := 1; rep <= p.Repetitions; rep++ {
		round := append([]Cell(nil), cfgs...)
		shuffle(rng, len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		for _, c := range round {
			c.Repetition = rep
			out[rep-1] = append(out[rep-1], SearchSpec{ID: c.Config + "-rep" + strconv.Itoa(rep), Config: c.Config, Cell: c, Repetition: rep})
		}
	}
	return out
}

// SearchConfigOf is the search configuration ID of a probe cell's mesh
// options, for matching the baseline: BaselineOf with rate "search".
func (p *Plan) SearchBaselineOf(c Cell) (string, bool) {
	c.Rate = Rate{} // "search"
	saved := p.Axes.Rate
	p.Axes.Rate = []Rate{{}}
	defer func() { p.Axes.Rate = saved }()
	return p.BaselineOf(c)
}
