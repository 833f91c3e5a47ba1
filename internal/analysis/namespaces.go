package analysis

import (
	"github.com/meshbench/meshbench/internal/analysis/stats"
	"github.com/meshbench/meshbench/internal/measure/sample"
)

// Namespaces is the group's per-namespace table (the seed reports') from
// its valid cells that have one (cluster cells): each row's CPU and memory
// min, max and avg the median of those figures over the cells, rows in
// the first such cell's order, TOTAL and the load's row alike. ok is false
// when no valid cell has a table. A figure's Rounds is the number of cells
// it is the median of.
func (g *Group) Namespaces() (t sample.NamespaceTable, ok bool) {
	var tables []*sample.NamespaceTable
	for _, c := range g.Cells {
		if c.Valid && c.Namespaces != nil && len(c.Namespaces.Rows) > 0 {
			tables = append(tables, c.Namespaces)
		}
	}
	if len(tables) == 0 {
		return t, false
	}
	median := func(pick func(*sample.NamespaceTable) (sample.Figures, bool)) sample.Figures {
		var figs []sample.Figures
		for _, tb := range tables {
			if f, ok := pick(tb); ok && f.Rounds > 0 {
				figs = append(figs, f)
			}
		}
		return medianFigures(figs)
	}
	for _, r := range tables[0].Rows {
		row := sample.GroupSummary{Name: r.Name, Figures: median(func(tb *sample.NamespaceTable) (sample.Figures, bool) {
			for _, x := range tb.Rows {
				if x.Name == r.Name {
					return x.Figures, true
				}
			}
			return sample.Figures{}, false
		})}
		t.Rows = append(t.Rows, row)
	}
	t.Total = median(func(tb *sample.NamespaceTable) (sample.Figures, bool) { return tb.Total, true })
	if l := tables[0].Load; l != nil {
		t.Load = &sample.GroupSummary{Name: l.Name, Figures: median(func(tb *sample.NamespaceTable) (sample.Figures, bool) {
			if tb.Load == nil {
				return sample.Figures{}, false
			}
			return tb.Load.Figures, true
		})}
	}
	return t, true
}

// medianFigures is each of figs' CPU and memory (PSS: a cluster's working
// set) statistics' median, with Rounds (and PSSRounds) the number of
// figures (none: the zero Figures).
func medianFigures(figs []sample.Figures) sample.Figures {
	if len(figs) == 0 {
		return sample.Figures{}
	}
	med := func(get func(sample.Figures) float64) float64 {
		xs := make([]float64, len(figs))
		for i, f := range figs {
			xs[i] = get(f)
		}
		return stats.Median(xs)
	}
	out := sample.Figures{Rounds: len(figs),
		CPUMillicores: sample.Stats{Min: med(func(f sample.Figures) float64 { return f.CPUMillicores.Min }),
			Max: med(func(f sample.Figures) float64 { return f.CPUMillicores.Max }),
			Avg: med(func(f sample.Figures) float64 { return f.CPUMillicores.Avg })}}
	var pss []sample.Figures
	for _, f := range figs {
		if f.PSSRounds > 0 {
			pss = append(pss, f)
		}
	}
	if len(pss) == len(figs) {
		out.PSSRounds = len(figs)
		out.PSSBytes = sample.Stats{Min: med(func(f sample.Figures) float64 { return f.PSSBytes.Min }),
			Max: med(func(f sample.Figures) float64 { return f.PSSBytes.Max }),
			Avg: med(func(f sample.Figures) float64 { return f.PSSBytes.Avg })}
	}
	return out
}
