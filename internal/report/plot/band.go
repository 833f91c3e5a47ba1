package plot

import (
	"image/color"
	"math"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// band is a gonum plotter that draws the area between lo and hi along x (a
// confidence band): a faint fill in the series' colour, outlined at lo and
// hi by thin lines in the series' colour and dash pattern, so overlapping
// bands stay told apart by their edges instead of blending into a grey that
// reads as another series' band. A band of a single point has no area; it
// is drawn as an error bar (a thin vertical line with end caps) instead.
type band struct {
	x, lo, hi []float64 // same length, x ascending
	fill      color.Color
	edge      draw.LineStyle
}

var (
	_ gplot.Plotter     = (*band)(nil)
	_ gplot.DataRanger  = (*band)(nil)
	_ gplot.Thumbnailer = (*band)(nil)
)

// errorBarCapPt is the width of the end caps of the error bar that stands
// for the band of a one-point series, in points.
const errorBarCapPt = 6

// Plot implements gplot.Plotter.
func (b *band) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, trY := p.Transforms(&c)
	if len(b.x) == 1 {
		x, lo, hi := trX(b.x[0]), trY(b.lo[0]), trY(b.hi[0])
		solid := b.edge
		solid.Dashes = nil
		w := vg.Points(errorBarCapPt) / 2
		c.StrokeLines(solid, c.ClipLinesY([]vg.Point{{X: x, Y: lo}, {X: x, Y: hi}})...)
		c.StrokeLines(solid, c.ClipLinesY([]vg.Point{{X: x - w, Y: lo}, {X: x + w, Y: lo}})...)
		c.StrokeLines(solid, c.ClipLinesY([]vg.Point{{X: x - w, Y: hi}, {X: x + w, Y: hi}})...)
		return
	}
	poly := make([]vg.Point, 0, 2*len(b.x))
	for i := range b.x {
		poly = append(poly, vg.Point{X: trX(b.x[i]), Y: trY(b.hi[i])})
	}
	for i := len(b.x) - 1; i >= 0; i-- {
		poly = append(poly, vg.Point{X: trX(b.x[i]), Y: trY(b.lo[i])})
	}
	c.FillPolygon(b.fill, c.ClipPolygonXY(poly))
	lo := make([]vg.Point, len(b.x))
	hi := make([]vg.Point, len(b.x))
	for i := range b.x {
		lo[i] = vg.Point{X: trX(b.x[i]), Y: trY(b.lo[i])}
		hi[i] = vg.Point{X: trX(b.x[i]), Y: trY(b.hi[i])}
	}
	c.StrokeLines(b.edge, c.ClipLinesXY(lo)...)
	c.StrokeLines(b.edge, c.ClipLinesXY(hi)...)
}

// DataRange implements gplot.DataRanger.
func (b *band) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax = math.Inf(1), math.Inf(-1)
	ymin, ymax = math.Inf(1), math.Inf(-1)
	for i := range b.x {
		xmin, xmax = math.Min(xmin, b.x[i]), math.Max(xmax, b.x[i])
		ymin, ymax = math.Min(ymin, b.lo[i]), math.Max(ymax, b.hi[i])
	}
	return xmin, xmax, ymin, ymax
}

// Thumbnail implements gplot.Thumbnailer: the legend icon gets a strip of
// the band's fill, outlined as the band is, behind the series' line.
func (b *band) Thumbnail(c *draw.Canvas) {
	mid := c.Center().Y
	h := (c.Max.Y - c.Min.Y) / 3
	c.FillPolygon(b.fill, []vg.Point{
		{X: c.Min.X, Y: mid - h}, {X: c.Min.X, Y: mid + h},
		{X: c.Max.X, Y: mid + h}, {X: c.Max.X, Y: mid - h},
	})
	c.StrokeLine2(b.edge, c.Min.X, mid-h, c.Max.X, mid-h)
	c.StrokeLine2(b.edge, c.Min.X, mid+h, c.Max.X, mid+h)
}
