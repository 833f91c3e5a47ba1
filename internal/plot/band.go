package plot

import (
	"image/color"
	"math"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// band is a gonum plotter that fills the area between lo and hi along x (a
// confidence band). A band of a single point has no area; it is drawn as a
// wide translucent vertical bar instead, so it still shows.
type band struct {
	x, lo, hi []float64 // same length, x ascending
	fill      color.Color
}

var (
	_ gplot.Plotter     = (*band)(nil)
	_ gplot.DataRanger  = (*band)(nil)
	_ gplot.Thumbnailer = (*band)(nil)
)

// singlePointBandWidthPt is the width of the bar that stands for the band of
// a one-point series, in points.
const singlePointBandWidthPt = 6

// Plot implements gplot.Plotter.
func (b *band) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, trY := p.Transforms(&c)
	if len(b.x) == 1 {
		x := trX(b.x[0])
		bar := c.ClipLinesY([]vg.Point{{X: x, Y: trY(b.lo[0])}, {X: x, Y: trY(b.hi[0])}})
		c.StrokeLines(draw.LineStyle{Color: b.fill, Width: vg.Points(singlePointBandWidthPt)}, bar...)
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
// the band's fill behind the series' line.
func (b *band) Thumbnail(c *draw.Canvas) {
	mid := c.Center().Y
	h := (c.Max.Y - c.Min.Y) / 3
	c.FillPolygon(b.fill, []vg.Point{
		{X: c.Min.X, Y: mid - h}, {X: c.Min.X, Y: mid + h},
		{X: c.Max.X, Y: mid + h}, {X: c.Max.X, Y: mid - h},
	})
}
