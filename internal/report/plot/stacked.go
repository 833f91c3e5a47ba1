package plot

import (
	"errors"
	"fmt"
	"math"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Layer is one part of every bar of a StackedBars chart: its value per
// category (0 where the part does not exist), in the unit the y label
// names.
type Layer struct {
	// Name is the legend entry, unique within a chart.
	Name string
	// Values has one value per category, each 0 or more.
	Values []float64
}

// StackedBars returns a chart of one bar per category (a mesh), each the
// layers stacked in order from the bottom (a waterfall: the first hop
// lowest), with a legend. Layers get the fallback styles in order; mesh
// names are the categories, not the layers.
//
// It returns an error for no categories or layers, a layer without a name,
// duplicate names, a wrong number of values, or a negative, NaN or
// infinite value.
func StackedBars(opts ChartOptions, categories []string, layers []Layer) (*Chart, error) {
	if len(categories) == 0 || len(layers) == 0 {
		return nil, errors.New("no bars to plot")
	}
	names := make([]string, len(layers))
	seen := map[string]bool{}
	for i, l := range layers {
		ref := seriesRef(i, l.Name)
		if strings.TrimSpace(l.Name) == "" {
			return nil, fmt.Errorf("%s has no name; the legend needs one", ref)
		}
		if seen[l.Name] {
			return nil, fmt.Errorf("layer %q appears twice; legend entries must differ", l.Name)
		}
		seen[l.Name] = true
		if len(l.Values) != len(categories) {
			return nil, fmt.Errorf("%s: %d values for %d categories", ref, len(l.Values), len(categories))
		}
		for j, v := range l.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return nil, fmt.Errorf("%s: values[%d] = %g: allowed: 0 or more", ref, j, v)
			}
		}
		names[i] = l.Name
	}
	p := newPlot(opts)
	p.X.Tick.Marker = nil
	p.NominalX(categories...)
	p.X.Tick.Label.Font = font.From(sansFont, tickSizePt)
	styles := stylesFor(names)
	legend := gplot.NewLegend()
	legend.TextStyle.Font = font.From(sansFont, legendSizePt)
	legend.Top, legend.Left = true, true
	legend.Padding = vg.Points(3)
	legend.ThumbnailWidth = vg.Points(28)
	width := vg.Points(40)
	var below *plotter.BarChart
	var bars []*plotter.BarChart
	for i, l := range layers {
		b, err := plotter.NewBarChart(plotter.Values(l.Values), width)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", seriesRef(i, l.Name), err)
		}
		b.Color = styles[i].color
		b.LineStyle = draw.LineStyle{Color: gridColor, Width: vg.Points(0.5)}
		if below != nil {
			b.StackOn(below)
		}
		below = b
		p.Add(b)
		bars = append(bars, b)
	}
	// The legend lists the top layer first, as the bars read.
	for i := len(bars) - 1; i >= 0; i-- {
		legend.Add(layers[i].Name, bars[i])
	}
	ordered := make([]string, len(names))
	for i := range names {
		ordered[i] = names[len(names)-1-i]
	}
	p.Y.Min = 0
	return &Chart{title: opts.Title, caption: opts.Caption, names: ordered, p: p, legend: legend}, nil
}
