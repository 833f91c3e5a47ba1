package plot

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Point is one mesh's figure in a Panel: the median and its interval.
type Point struct {
	// Value is the median; Lo and Hi its interval, both NaN (or equal to
	// Value) for none: one run.
	Value, Lo, Hi float64
	// Missing: the mesh has no such figure (no data plane without a
	// mesh); the panel leaves its place empty.
	Missing bool
}

// Panel is one figure compared across the meshes: its label with the unit
// ("p99 latency (ms)") and one point per category.
type Panel struct {
	YLabel string
	Points []Point
}

// Panels returns a chart of panels side by side, one per figure, each a
// dot per category (a mesh: its fixed colour and glyph) with its interval
// as an error bar, on a value axis from zero: the meshes compared on every
// figure at a glance. opts.Title and opts.Caption frame the whole chart.
// A panel whose points are all missing is left out.
//
// It returns an error for no categories or panels, a panel with the wrong
// number of points, or a point whose value or bounds are infinite, whose
// bounds are not both set or both NaN, or whose interval lies the wrong
// way round.
func Panels(opts ChartOptions, categories []string, panels []Panel) (*Chart, error) {
	if len(categories) == 0 || len(panels) == 0 {
		return nil, errors.New("no panels to plot")
	}
	styles := stylesFor(categories)
	var plots []*gplot.Plot
	for i, pn := range panels {
		if len(pn.Points) != len(categories) {
			return nil, fmt.Errorf("panel %d (%q): %d points for %d categories", i, pn.YLabel, len(pn.Points), len(categories))
		}
		if !slices.ContainsFunc(pn.Points, func(p Point) bool { return !p.Missing }) {
			continue
		}
		p := newPlot(ChartOptions{YLabel: pn.YLabel})
		p.NominalX(categories...)
		p.X.Tick.Label.Font = font.From(sansFont, tickSizePt)
		p.X.Padding = vg.Points(10)
		if len(categories) > 3 {
			// Five meshes' names do not fit side by side under a panel.
			p.X.Tick.Label.Rotation = math.Pi / 5
			p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
		}
		for j, pt := range pn.Points {
			if pt.Missing {
				continue
			}
			lo, hi := pt.Lo, pt.Hi
			if math.IsNaN(lo) != math.IsNaN(hi) || math.IsInf(pt.Value, 0) || math.IsNaN(pt.Value) || math.IsInf(lo, 0) || math.IsInf(hi, 0) || lo > hi {
				return nil, fmt.Errorf("panel %d (%q), %s: value %g [%g, %g]: want a finite value and bounds lo <= hi, or NaN bounds", i, pn.YLabel, categories[j], pt.Value, lo, hi)
			}
			xy := plotter.XYs{{X: float64(j), Y: pt.Value}}
			if !math.IsNaN(lo) && lo != hi {
				eb := &errBar{x: float64(j), lo: lo, hi: hi, style: draw.LineStyle{Color: styles[j].color, Width: vg.Points(lineWidthPt)}}
				p.Add(eb)
			}
			sc, err := plotter.NewScatter(xy)
			if err != nil {
				return nil, fmt.Errorf("panel %d, %s: %w", i, categories[j], err)
			}
			gs := styles[j].points()
			gs.Radius = vg.Points(glyphRadiusPt * 1.6)
			if _, ok := gs.Shape.(draw.CrossGlyph); ok {
				gs.Shape = boldCross{} // a hairline × is lost at this size
			}
			sc.GlyphStyle = gs
			p.Add(sc)
		}
		// Every category keeps its place, with or without a point.
		p.X.Min, p.X.Max = -0.5, float64(len(categories))-0.5
		fitRange(&p.Y, false, true)
		p.Y.Max *= 1.05 // room above the highest bar's cap
		plots = append(plots, p)
	}
	if len(plots) == 0 {
		return nil, errors.New("no panel has a point")
	}
	return &Chart{title: opts.Title, caption: opts.Caption, names: nil, p: gplot.New(), panels: plots}, nil
}

// errBar is a vertical interval with caps at x, from lo to hi.
type errBar struct {
	x, lo, hi float64
	style     draw.LineStyle
}

// boldCross is draw.CrossGlyph with strokes as wide as the chart's lines.
type boldCross struct{}

func (boldCross) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	r := sty.Radius * 0.8
	ls := draw.LineStyle{Color: sty.Color, Width: vg.Points(lineWidthPt * 1.3)}
	c.StrokeLines(ls, []vg.Point{{X: pt.X - r, Y: pt.Y - r}, {X: pt.X + r, Y: pt.Y + r}})
	c.StrokeLines(ls, []vg.Point{{X: pt.X - r, Y: pt.Y + r}, {X: pt.X + r, Y: pt.Y - r}})
}

// capHalfPt is half the width of an error bar's caps.
const capHalfPt = 5

func (e *errBar) Plot(c draw.Canvas, p *gplot.Plot) {
	tx, ty := p.Transforms(&c)
	x, lo, hi := tx(e.x), ty(e.lo), ty(e.hi)
	w := vg.Points(capHalfPt)
	c.StrokeLines(e.style, []vg.Point{{X: x, Y: lo}, {X: x, Y: hi}})
	c.StrokeLines(e.style, []vg.Point{{X: x - w, Y: lo}, {X: x + w, Y: lo}})
	c.StrokeLines(e.style, []vg.Point{{X: x - w, Y: hi}, {X: x + w, Y: hi}})
}

func (e *errBar) DataRange() (xmin, xmax, ymin, ymax float64) {
	return e.x, e.x, e.lo, e.hi
}

// drawPanels lays the panels out side by side on dc under the title.
func (c *Chart) drawPanels(dc draw.Canvas) {
	if c.title != "" {
		sty := c.p.Title.TextStyle
		sty.Font = font.From(boldFont, titleSizePt)
		sty.XAlign, sty.YAlign = draw.XLeft, draw.YTop
		sty.Handler = gplot.DefaultTextHandler
		dc.FillText(sty, vg.Point{X: dc.Min.X, Y: dc.Max.Y}, c.title)
		h := sty.Rectangle(c.title).Size().Y + vg.Points(titlePaddingPt)
		dc = draw.Crop(dc, 0, 0, 0, -h)
	}
	n := len(c.panels)
	gap := vg.Points(legendGapPt)
	w := (dc.Max.X - dc.Min.X - gap*vg.Length(n-1)) / vg.Length(n)
	for i, p := range c.panels {
		left := dc.Min.X + vg.Length(i)*(w+gap)
		p.Draw(draw.Crop(dc, left-dc.Min.X, -(dc.Max.X - left - w), 0, 0))
	}
}

// PanelNames are a Panels chart's panels' labels, in order (nil for
// another chart).
func (c *Chart) PanelNames() []string {
	var out []string
	for _, p := range c.panels {
		out = append(out, strings.TrimSpace(p.Y.Label.Text))
	}
	return out
}
