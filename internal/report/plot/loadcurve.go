package plot

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"sort"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// LoadPoint is one probe of a latency-vs-offered-load curve.
type LoadPoint struct {
	RatePerSec float64 // offered (scheduled) rate
	P50Ms      float64 // median latency
	ObjMs      float64 // latency at the objective's percentile
}

// LoadSeries is one mesh's probes and, when found, its capacity.
type LoadSeries struct {
	// Name is the mesh (fixed styles for mesh mode names).
	Name   string
	Points []LoadPoint
	// CapacityPerSec is the capacity found at the objective; 0 for none
	// (not marked).
	CapacityPerSec float64
}

// LoadCurve draws latency against offered load: per series, the
// objective's percentile (the series' style) and p50 (same colour, thin
// and dotted), every probe a point and a line through each rate's median;
// the objective as a horizontal line; each found capacity as a vertical
// line in the series' colour. Both axes are logarithmic: rates grow
// geometrically in a search, and latency past saturation is orders of
// magnitude above the objective. objName is the percentile's name ("p99"),
// objMs its limit; 0 draws no objective (a plain load sweep).
func LoadCurve(opts ChartOptions, objName string, objMs float64, series []LoadSeries) (*Chart, error) {
	if len(series) == 0 {
		return nil, errors.New("no series to plot")
	}
	if objMs < 0 || math.IsNaN(objMs) || math.IsInf(objMs, 0) {
		return nil, fmt.Errorf("objective %v ms: must be a positive latency, or 0 for none", objMs)
	}
	opts.LogX, opts.LogY = true, true
	p := newPlot(opts)
	p.X.Scale, p.X.Tick.Marker = gplot.LogScale{}, logTicks{}
	p.Y.Scale, p.Y.Tick.Marker = gplot.LogScale{}, logTicks{}
	names := make([]string, len(series))
	for i, s := range series {
		names[i] = s.Name
	}
	styles := stylesFor(names)
	legend := gplot.NewLegend()
	legend.TextStyle.Font = font.From(sansFont, legendSizePt)
	legend.Top, legend.Left = true, true
	legend.Padding = vg.Points(3)
	legend.ThumbnailWidth = vg.Points(28)
	var legendNames []string
	xmin, xmax := math.Inf(1), math.Inf(-1)
	ymin, ymax := math.Inf(1), math.Inf(-1)
	if objMs > 0 {
		ymin, ymax = objMs, objMs
	}
	for i, s := range series {
		if len(s.Points) == 0 {
			return nil, fmt.Errorf("%s: no probes", seriesRef(i, s.Name))
		}
		for j, pt := range s.Points {
			for _, v := range []float64{pt.RatePerSec, pt.P50Ms, pt.ObjMs} {
				if !(v > 0) || math.IsInf(v, 0) {
					return nil, fmt.Errorf("%s: probe %d has %v, not positive: it cannot go on a log axis", seriesRef(i, s.Name), j, v)
				}
			}
			xmin, xmax = math.Min(xmin, pt.RatePerSec), math.Max(xmax, pt.RatePerSec)
			ymin, ymax = math.Min(ymin, pt.P50Ms), math.Max(ymax, pt.ObjMs)
		}
		st := styles[i]
		for _, which := range []struct {
			label string
			y     func(LoadPoint) float64
			main  bool
		}{{objName, func(p LoadPoint) float64 { return p.ObjMs }, true}, {"p50", func(p LoadPoint) float64 { return p.P50Ms }, false}} {
			all := make(plotter.XYs, len(s.Points))
			for j, pt := range s.Points {
				all[j] = plotter.XY{X: pt.RatePerSec, Y: which.y(pt)}
			}
			med := medianByX(all)
			line, err := plotter.NewLine(med)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", seriesRef(i, s.Name), err)
			}
			sc, err := plotter.NewScatter(all)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", seriesRef(i, s.Name), err)
			}
			line.LineStyle = st.line()
			sc.GlyphStyle = st.points()
			if !which.main {
				line.LineStyle = draw.LineStyle{Color: st.color, Width: vg.Points(0.8), Dashes: pts(1, 2)}
				sc.GlyphStyle = draw.GlyphStyle{Color: st.color, Radius: vg.Points(1.5), Shape: draw.RingGlyph{}}
			}
			p.Add(line, sc)
			name := s.Name + " " + which.label
			legend.Add(name, line, sc)
			legendNames = append(legendNames, name)
		}
		if s.CapacityPerSec > 0 {
			xmin, xmax = math.Min(xmin, s.CapacityPerSec), math.Max(xmax, s.CapacityPerSec)
			v := &vline{x: s.CapacityPerSec, style: draw.LineStyle{Color: st.color, Width: vg.Points(1), Dashes: pts(3, 3)}}
			p.Add(v)
			name := fmt.Sprintf("%s capacity %s/s", s.Name, formatRate(s.CapacityPerSec))
			legend.Add(name, v)
			legendNames = append(legendNames, name)
		}
	}
	if objMs > 0 {
		obj := &hline{y: objMs, style: draw.LineStyle{Color: color.NRGBA{R: 0xC0, A: 0xFF}, Width: vg.Points(1.2)}}
		p.Add(obj)
		objLabel := fmt.Sprintf("objective %s ≤ %s ms", objName, formatRate(objMs))
		legend.Add(objLabel, obj)
		legendNames = append(legendNames, objLabel)
	}
	p.X.Min, p.X.Max = xmin/1.2, xmax*1.2
	p.Y.Min, p.Y.Max = ymin/1.5, ymax*1.5
	return &Chart{title: opts.Title, caption: opts.Caption, names: legendNames, p: p, legend: legend}, nil
}

// medianByX keeps one point per x: the median of its ys, sorted by x.
func medianByX(xys plotter.XYs) plotter.XYs {
	by := map[float64][]float64{}
	for _, xy := range xys {
		by[xy.X] = append(by[xy.X], xy.Y)
	}
	out := make(plotter.XYs, 0, len(by))
	for x, ys := range by {
		sort.Float64s(ys)
		m := ys[len(ys)/2]
		if len(ys)%2 == 0 {
			m = (ys[len(ys)/2-1] + ys[len(ys)/2]) / 2
		}
		out = append(out, plotter.XY{X: x, Y: m})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].X < out[j].X })
	return out
}

func formatRate(v float64) string {
	return fmt.Sprint(math.Round(v*100) / 100)
}

// hline is a horizontal line across the plot at y.
type hline struct {
	y     float64
	style draw.LineStyle
}

func (h *hline) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, trY := p.Transforms(&c)
	y := trY(h.y)
	c.StrokeLine2(h.style, trX(p.X.Min), y, trX(p.X.Max), y)
}

func (h *hline) DataRange() (xmin, xmax, ymin, ymax float64) {
	return math.Inf(1), math.Inf(-1), h.y, h.y
}

func (h *hline) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(h.style, c.Min.X, y, c.Max.X, y)
}

// vline is a vertical line across the plot at x.
type vline struct {
	x     float64
	style draw.LineStyle
}

func (v *vline) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, trY := p.Transforms(&c)
	x := trX(v.x)
	c.StrokeLine2(v.style, x, trY(p.Y.Min), x, trY(p.Y.Max))
}

func (v *vline) DataRange() (xmin, xmax, ymin, ymax float64) {
	return v.x, v.x, math.Inf(1), math.Inf(-1)
}

func (v *vline) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(v.style, c.Min.X, y, c.Max.X, y)
}
