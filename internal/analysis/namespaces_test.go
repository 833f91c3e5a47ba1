package analysis

import (
	"testing"

	"github.com/meshbench/meshbench/internal/measure/sample"
)

// TestGroupNamespaces: a configuration's per-namespace table is the
// median of its valid cells' tables, figure by figure; an invalid cell and
// a cell without a table are left out, and so is a row a cell lacks.
func TestGroupNamespaces(t *testing.T) {
	fig := func(avg float64) sample.Figures {
		return sample.Figures{Rounds: 5, PSSRounds: 5, CPUMillicores: sample.Stats{Min: avg - 1, Max: avg + 1, Avg: avg},
			PSSBytes: sample.Stats{Min: avg * 10, Max: avg * 10, Avg: avg * 10}}
	}
	table := func(l5d, app float64) *sample.NamespaceTable {
		return &sample.NamespaceTable{Rows: []sample.GroupSummary{{Name: "linkerd", Figures: fig(l5d)}, {Name: "app", Figures: fig(app)}},
			Total: fig(l5d + app), Load: &sample.GroupSummary{Name: "load", Figures: fig(1)}}
	}
	g := &Group{Cells: []*Cell{
		{Valid: true, Namespaces: table(2, 10)},
		{Valid: true, Namespaces: table(4, 30)},
		{Valid: true, Namespaces: table(3, 20)},
		{Valid: false, Namespaces: table(100, 100)}, // invalid: never in a figure
		{Valid: true}, // no table (an older result)
	}}
	tb, ok := g.Namespaces()
	if !ok || len(tb.Rows) != 2 {
		t.Fatalf("%v %+v", ok, tb)
	}
	if r := tb.Rows[0]; r.Name != "linkerd" || r.CPUMillicores != (sample.Stats{Min: 2, Max: 4, Avg: 3}) || r.Rounds != 3 || r.PSSBytes.Avg != 30 {
		t.Errorf("linkerd row %+v", r)
	}
	if tb.Total.CPUMillicores.Avg != 23 || tb.Rows[1].CPUMillicores.Avg != 20 || tb.Load == nil || tb.Load.CPUMillicores.Avg != 1 {
		t.Errorf("total %+v, app %+v, load %+v", tb.Total, tb.Rows[1], tb.Load)
	}
	if _, ok := (&Group{Cells: []*Cell{{Valid: true}}}).Namespaces(); ok {
		t.Error("a table from cells without one")
	}
}
