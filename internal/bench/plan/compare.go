package plan

import (
	"slices"
	"strings"

	"github.com/meshbench/meshbench/internal/load/loadgen"
)

// CompareAxes are the axes `compare:` can name: every pair of
// configurations that differ only on a named axis is compared (relative
// differences with intervals, verdict lines), mesh as before and the
// others with interaction lines (a mesh's overhead at two values). The
// names match internal/analysis's Axis constants.
var CompareAxes = []string{"mesh", "policies", "mtls", "load_model", "gateway", "protocol", "replicas", "rate", "app", "generator", "fault",
	"connections", "payload", "proxy_threads", "requests_per_connection", "placement", "arrivals"}

// Load models, the values of axes.load_model.
const (
	// LoadOpen is the open loop: a constant rate, the rate axis's rates.
	LoadOpen = "open"
	// LoadClosed is the closed loop: every connection sends when its last
	// answer arrives (loadgen.ClosedLoop).
	LoadClosed = "closed"
	// LoadBulk is bulk throughput: every connection reads one endless
	// answer (loadgen.Bulk).
	LoadBulk = "bulk"
)

// LoadModels are the plan's load models in canonical order: open when the
// rate axis has a rate per second, closed when it has the closed loop.
func (a Axes) LoadModels() []string {
	var out []string
	if slices.ContainsFunc(a.Rate, Rate.open) {
		out = append(out, LoadOpen)
	}
	if slices.ContainsFunc(a.Rate, Rate.Closed) {
		out = append(out, LoadClosed)
	}
	if slices.ContainsFunc(a.Rate, Rate.Bulk) {
		out = append(out, LoadBulk)
	}
	return out
}

// open reports whether r is an open-loop rate.
func (r Rate) open() bool { return !r.Closed() && !r.Bulk() }

// OpenRates are the rate axis without the closed loop and bulk.
func (a Axes) OpenRates() []Rate {
	return slices.DeleteFunc(slices.Clone(a.Rate), func(r Rate) bool { return !r.open() })
}

// loadModel reads axes.load_model: open keeps the rate axis's rates,
// closed adds the closed loop once (last). Without the key, a
// rate axis that lists max (as plans before load_model did) is read the
// same way: max moves last.
func (b *builder) loadModel() {
	a := &b.p.Axes
	e := b.s.entries["axes.load_model"]
	if i := slices.IndexFunc(a.Rate, Rate.Closed); i >= 0 && i < len(a.Rate)-1 {
		a.Rate = append(slices.Delete(a.Rate, i, i+1), RateOf(loadgen.ClosedLoop))
		lines := b.lines["axes.rate"]
		if i < len(lines) {
			b.lines["axes.rate"] = append(slices.Delete(lines, i, i+1), lines[i])
		}
	}
	if e == nil {
		return
	}
	const want = "allowed: open (a constant rate, each of axes.rate), closed (every connection sends when its last answer arrives), bulk (every connection reads one endless answer: bytes per second)"
	var open, closed, bulk bool
	var closedLine, bulkLine int
	for _, it := range e.items {
		switch strings.ToLower(it.text) {
		case LoadOpen:
			if open {
				b.s.badItem("axes.load_model", it, "given twice")
			}
			open = true
		case LoadClosed:
			if closed {
				b.s.badItem("axes.load_model", it, "given twice")
			}
			closed, closedLine = true, it.line
		case LoadBulk:
			if bulk {
				b.s.badItem("axes.load_model", it, "given twice")
			}
			bulk, bulkLine = true, it.line
		default:
			b.s.badItem("axes.load_model", it, want)
			b.axisBad = true
			return
		}
	}
	if b.p.Search != nil {
		b.s.bad("axes.load_model", e.line, "", "a capacity search runs open loop at the rates it chooses; remove axes.load_model")
		return
	}
	if slices.ContainsFunc(a.Rate, Rate.Closed) {
		b.s.bad("axes.rate", b.s.lineOf("axes.rate"), `"max"`, "with axes.load_model, the closed loop is load_model: closed; list only rates per second in axes.rate")
		b.axisBad = true
		return
	}
	if !open {
		if b.s.entries["axes.rate"] != nil {
			b.s.bad("axes.rate", b.s.lineOf("axes.rate"), "", "unused: axes.load_model has no open; remove axes.rate or add open to axes.load_model")
			b.axisBad = true
			return
		}
		a.Rate, b.lines["axes.rate"] = nil, nil
	}
	if closed {
		a.Rate = append(a.Rate, RateOf(loadgen.ClosedLoop))
		b.lines["axes.rate"] = append(b.lines["axes.rate"], closedLine)
	}
	if bulk {
		a.Rate = append(a.Rate, RateOf(loadgen.Bulk))
		b.lines["axes.rate"] = append(b.lines["axes.rate"], bulkLine)
	}
}

// compare reads compare: the axes to compare along, each of CompareAxes
// once; an axis other than mesh must have two values or more.
func (b *builder) compare() {
	e := b.s.entries["compare"]
	if e == nil {
		return
	}
	var out []string
	for _, it := range e.items {
		name := strings.ToLower(it.text)
		switch {
		case !slices.Contains(CompareAxes, name):
			b.s.badItem("compare", it, "allowed: "+strings.Join(CompareAxes, ", "))
		case slices.Contains(out, name):
			b.s.badItem("compare", it, "given twice")
		case name != "mesh" && b.p.Search == nil && b.axisValues(name) < 2:
			b.s.badItem("compare", it, "axes."+name+" has one value: nothing to compare along it; give it two or more")
		default:
			out = append(out, name)
		}
	}
	b.p.Compare = out
}

// axisValues is how many values the plan has on a compared axis.
func (b *builder) axisValues(name string) int {
	if name == "load_model" {
		return len(b.p.Axes.LoadModels())
	}
	return b.axisLen("axes." + name)
}
