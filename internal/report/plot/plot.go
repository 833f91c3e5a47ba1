// Package plot renders meshbench's report charts with gonum/plot: lines with
// points and optional confidence bands per series (latency, CPU or memory
// against request rate or replicas), and HDR-style latency percentile
// spectra. It is pure: data in, PNG or SVG bytes out. It computes nothing
// from results; callers pass the numbers to draw.
//
// Mesh modes (none, sidecar, ambient, waypoint, linkerd) always get the same
// colour, dash pattern and point glyph, so a mode looks alike on every chart
// and the charts read in greyscale. Other series get styles in series order.
//
// SVG output is self-contained, so an HTML report can inline it: no XML
// declaration, no ids, no links, no images, no fonts, no scripts. Text names
// Liberation Sans (the font gonum measures text with) and falls back to the
// metric-compatible Arial or Helvetica, then to any sans-serif font.
package plot

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Sizes in pixels. PNG and SVG share a layout: a chart rendered at w×h is
// w×h device pixels as PNG (at 96 dpi) and w×h CSS pixels as SVG.
const (
	// DefaultWidthPx and DefaultHeightPx are the size WriteFiles renders at.
	DefaultWidthPx  = 800
	DefaultHeightPx = 500

	// MinWidthPx and MinHeightPx are the smallest size PNG and SVG accept;
	// below it the axes leave no room for data.
	MinWidthPx  = 200
	MinHeightPx = 150

	// MaxSidePx is the largest width or height PNG and SVG accept.
	MaxSidePx = 8000
)

// dpi is the resolution of PNG output, and the CSS pixel size of SVG
// output: 96 pixels per inch.
const dpi = 96

// Chart layout, in points.
const (
	marginPt       = 8  // blank border around the whole chart
	legendGapPt    = 10 // between the plot area and the legend on its right
	titlePaddingPt = 8  // between the title and the plot area
	captionGapPt   = 6  // between the plot area and the caption under it
)

// ChartOptions are the texts and axis scales of a chart.
type ChartOptions struct {
	// Title is drawn above the chart; empty for none.
	Title string
	// XLabel and YLabel name the axes, with units, e.g. "rate (req/s)".
	// Empty for none (Spectrum has defaults: "Percentile", "Latency (ms)").
	XLabel, YLabel string
	// LogX and LogY put an axis on a base-10 log scale; every value on that
	// axis, band bounds included, must then be positive. Spectrum ignores
	// LogX: its x axis is always the percentile scale.
	LogX, LogY bool
	// Caption is drawn under the chart, wrapped to its width: what the
	// lines and the bands are. Empty for none.
	Caption string
	// Marks are vertical dashed lines across a LineChart at X, each with
	// its legend entry (a fault's start and end). Other charts ignore
	// them.
	Marks []Mark
}

// Mark is one vertical line of a LineChart (ChartOptions.Marks).
type Mark struct {
	X     float64
	Label string
}

// Series is one line of a LineChart: points (X[i], Y[i]) joined in order of
// X, with an optional band from Lo[i] to Hi[i] around them (a confidence
// interval or a min–max range of repetitions). Units are the caller's; the
// axis labels should state them.
type Series struct {
	// Name is the legend entry, unique within a chart. Mesh mode names
	// (none, sidecar, ambient, waypoint, linkerd; any case) get fixed styles.
	Name string
	// X and Y have the same length, at least 1. The points need not be
	// sorted: they are drawn in order of X.
	X, Y []float64
	// Lo and Hi are both nil or both the length of Y, with Lo[i] <= Hi[i].
	// Y[i] need not lie between them.
	Lo, Hi []float64
}

// SpectrumSeries is one line of a Spectrum: the latency at each percentile.
type SpectrumSeries struct {
	// Name is the legend entry, unique within a chart; as Series.Name.
	Name string
	// Percentiles are in percent, 0 <= p <= 99.9999999 (100 lies at infinity
	// on the spectrum's axis; leave the maximum out or pass 99.9999). Need
	// not be sorted.
	Percentiles []float64
	// Values are the latencies at Percentiles, same length, in the unit the
	// y label names (milliseconds by default).
	Values []float64
	// Lo and Hi are an optional band, as in Series.
	Lo, Hi []float64
}

// Chart is a chart ready to render, any number of times, at any size. It is
// not safe for concurrent use.
type Chart struct {
	title   string
	caption string
	names   []string // legend entries, in order
	p       *gplot.Plot
	legend  gplot.Legend
	// panels, when set, are drawn side by side instead of p and its
	// legend (Panels).
	panels []*gplot.Plot
}

// curve is a validated series, sorted by x, in axis coordinates.
type curve struct {
	name         string
	x, y, lo, hi []float64 // lo, hi nil without a band
}

// LineChart returns a chart of series as lines with points, one style per
// series, translucent bands where Lo and Hi are given, and a legend in
// series order on the right. On a linear y axis the axis starts at zero
// (or below, for negative data), so differences are not magnified.
//
// It returns an error for an empty list, a series without a name or points,
// duplicate names, mismatched lengths, NaN or infinite values, Lo above Hi,
// or a non-positive value on a log axis; the error names the series.
func LineChart(opts ChartOptions, series []Series) (*Chart, error) {
	if len(series) == 0 {
		return nil, errors.New("no series to plot")
	}
	curves := make([]curve, len(series))
	for i, s := range series {
		c, err := newCurve(i, s.Name, axisData{
			xName: "x", yName: "y", x: s.X, y: s.Y, lo: s.Lo, hi: s.Hi,
			logX: opts.LogX, logY: opts.LogY,
		})
		if err != nil {
			return nil, err
		}
		curves[i] = c
	}
	if err := checkNames(curves); err != nil {
		return nil, err
	}
	p := newPlot(opts)
	if opts.LogX {
		p.X.Scale, p.X.Tick.Marker = gplot.LogScale{}, logTicks{}
	}
	if opts.LogY {
		p.Y.Scale, p.Y.Tick.Marker = gplot.LogScale{}, logTicks{}
	}
	c, err := newChart(opts.Title, p, curves, true)
	if err != nil {
		return nil, err
	}
	for i, m := range opts.Marks {
		// The first mark red, the others grey: a fault's start and end.
		col := color.NRGBA{R: 0xC0, G: 0x30, B: 0x30, A: 0xFF}
		if i > 0 {
			col = color.NRGBA{R: 0x60, G: 0x60, B: 0x60, A: 0xFF}
		}
		v := &vline{x: m.X, style: draw.LineStyle{Color: col, Width: vg.Points(1), Dashes: pts(4, 2)}}
		p.Add(v)
		c.legend.Add(m.Label, v)
		c.names = append(c.names, m.Label)
	}
	fitRange(&p.X, opts.LogX, false)
	fitRange(&p.Y, opts.LogY, true)
	c.caption = opts.Caption
	return c, nil
}

// Spectrum returns an HDR-style latency percentile spectrum: latency against
// percentile, with percentile q drawn at 1/(1−q) on a log axis labelled 0%,
// 90%, 99%, 99.9%, 99.99%, 99.999% (and further nines when the data reaches
// them). One line per series, with an optional band, and a legend. Lines have
// no point glyphs: spectra are dense. The y axis starts at zero, or is a log
// scale with opts.LogY.
//
// It returns an error on the same bad input as LineChart, and for a
// percentile outside 0..99.9999999.
func Spectrum(opts ChartOptions, series []SpectrumSeries) (*Chart, error) {
	if len(series) == 0 {
		return nil, errors.New("no series to plot")
	}
	if opts.XLabel == "" {
		opts.XLabel = "Percentile"
	}
	if opts.YLabel == "" {
		opts.YLabel = "Latency (ms)"
	}
	curves := make([]curve, len(series))
	maxPct := 0.0
	for i, s := range series {
		for j, q := range s.Percentiles {
			if !(q >= 0 && q <= maxSpectrumPercentile) {
				return nil, fmt.Errorf("%s: percentiles[%d] = %g is outside 0..%g (100 lies at infinity on the spectrum's axis; pass 99.9999 for the maximum)",
					seriesRef(i, s.Name), j, q, maxSpectrumPercentile)
			}
			maxPct = math.Max(maxPct, q)
		}
		x := make([]float64, len(s.Percentiles))
		for j, q := range s.Percentiles {
			x[j] = spectrumX(q)
		}
		c, err := newCurve(i, s.Name, axisData{
			xName: "percentiles", yName: "values", x: x, y: s.Values, lo: s.Lo, hi: s.Hi,
			logY: opts.LogY,
		})
		if err != nil {
			return nil, err
		}
		curves[i] = c
	}
	if err := checkNames(curves); err != nil {
		return nil, err
	}
	p := newPlot(opts)
	n := spectrumDecades(maxPct)
	p.X.Scale, p.X.Tick.Marker = gplot.LogScale{}, spectrumTicks(n)
	if opts.LogY {
		p.Y.Scale, p.Y.Tick.Marker = gplot.LogScale{}, logTicks{}
	}
	c, err := newChart(opts.Title, p, curves, false)
	if err != nil {
		return nil, err
	}
	p.X.Min, p.X.Max = 1, math.Pow10(n)
	fitRange(&p.Y, opts.LogY, true)
	c.caption = opts.Caption
	return c, nil
}

// PNG renders the chart as a PNG image of widthPx×heightPx pixels (96 dpi:
// text sizes are in points at that resolution). Sizes must be within
// MinWidthPx×MinHeightPx and MaxSidePx.
func (c *Chart) PNG(widthPx, heightPx int) ([]byte, error) {
	if err := checkSize("png", widthPx, heightPx); err != nil {
		return nil, err
	}
	img := image.NewRGBA(image.Rect(0, 0, widthPx, heightPx))
	cv := vgimg.NewWith(vgimg.UseImage(img), vgimg.UseDPI(dpi))
	if err := c.draw(cv); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: cv}).WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("encoding chart %q as png: %w", c.title, err)
	}
	return buf.Bytes(), nil
}

// SVG renders the chart as a self-contained SVG document of widthPx×heightPx
// CSS pixels (written in points, 0.75 pt per pixel, with a matching
// viewBox), fit to inline in HTML: it starts at the <svg> element (no XML
// declaration) and refers to nothing outside itself. Sizes as for PNG.
func (c *Chart) SVG(widthPx, heightPx int) ([]byte, error) {
	if err := checkSize("svg", widthPx, heightPx); err != nil {
		return nil, err
	}
	cv := vgsvg.NewWith(vgsvg.UseWH(pxToLength(widthPx), pxToLength(heightPx)))
	if err := c.draw(cv); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := cv.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("encoding chart %q as svg: %w", c.title, err)
	}
	return inlineSVG(buf.Bytes()), nil
}

// WriteFiles writes the chart to dir/name.png and dir/name.svg at
// DefaultWidthPx×DefaultHeightPx. name is a plain file name without
// extension or directory; dir must exist.
func WriteFiles(dir, name string, c *Chart) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		return fmt.Errorf("chart file name %q must be a plain name, without a directory", name)
	}
	pngData, err := c.PNG(DefaultWidthPx, DefaultHeightPx)
	if err != nil {
		return err
	}
	svgData, err := c.SVG(DefaultWidthPx, DefaultHeightPx)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		ext  string
		data []byte
	}{{".png", pngData}, {".svg", svgData}} {
		path := filepath.Join(dir, name+f.ext)
		if err := writeWhole(path, f.data); err != nil {
			return fmt.Errorf("writing chart %s: %w", path, err)
		}
	}
	return nil
}

// writeWhole writes data to path through a temporary file in the same
// directory renamed over it: a full disk leaves the previous file whole and
// no temporary file behind.
func writeWhole(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if err := errors.Join(werr, f.Chmod(0o644), f.Close()); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

// axisData is one series' raw input, named as the caller's type names it.
type axisData struct {
	xName, yName string
	x, y, lo, hi []float64
	logX, logY   bool
}

// newCurve validates one series and returns it sorted by x. i and name
// identify the series in errors.
func newCurve(i int, name string, d axisData) (curve, error) {
	ref := seriesRef(i, name)
	if strings.TrimSpace(name) == "" {
		return curve{}, fmt.Errorf("%s has no name; the legend needs one", ref)
	}
	if len(d.x) == 0 && len(d.y) == 0 {
		return curve{}, fmt.Errorf("%s: no points", ref)
	}
	if len(d.x) != len(d.y) {
		return curve{}, fmt.Errorf("%s: %s has %d values but %s has %d", ref, d.xName, len(d.x), d.yName, len(d.y))
	}
	n := len(d.y)
	hasBand := d.lo != nil || d.hi != nil
	if hasBand {
		switch {
		case d.lo == nil:
			return curve{}, fmt.Errorf("%s: hi is given without lo; give both or neither", ref)
		case d.hi == nil:
			return curve{}, fmt.Errorf("%s: lo is given without hi; give both or neither", ref)
		case len(d.lo) != n:
			return curve{}, fmt.Errorf("%s: lo has %d values but %s has %d", ref, len(d.lo), d.yName, n)
		case len(d.hi) != n:
			return curve{}, fmt.Errorf("%s: hi has %d values but %s has %d", ref, len(d.hi), d.yName, n)
		}
	}
	cols := []struct {
		name string
		v    []float64
		log  bool
	}{{d.xName, d.x, d.logX}, {d.yName, d.y, d.logY}, {"lo", d.lo, d.logY}, {"hi", d.hi, d.logY}}
	for _, col := range cols {
		for j, v := range col.v {
			switch {
			case math.IsNaN(v) || math.IsInf(v, 0):
				return curve{}, fmt.Errorf("%s: %s[%d] is %v", ref, col.name, j, v)
			case col.log && v <= 0:
				axis := "y"
				if col.name == d.xName {
					axis = "x"
				}
				return curve{}, fmt.Errorf("%s: %s[%d] = %g is not positive, so it cannot go on the log %s axis", ref, col.name, j, v, axis)
			}
		}
	}
	if hasBand {
		for j := range d.lo {
			if d.lo[j] > d.hi[j] {
				return curve{}, fmt.Errorf("%s: lo[%d] = %g is above hi[%d] = %g", ref, j, d.lo[j], j, d.hi[j])
			}
		}
	}

	order := make([]int, n)
	for j := range order {
		order[j] = j
	}
	sort.SliceStable(order, func(a, b int) bool { return d.x[order[a]] < d.x[order[b]] })
	pick := func(v []float64) []float64 {
		if v == nil {
			return nil
		}
		out := make([]float64, n)
		for j, k := range order {
			out[j] = v[k]
		}
		return out
	}
	return curve{name: name, x: pick(d.x), y: pick(d.y), lo: pick(d.lo), hi: pick(d.hi)}, nil
}

// seriesRef names series i in an error.
func seriesRef(i int, name string) string {
	if strings.TrimSpace(name) == "" {
		return fmt.Sprintf("series[%d]", i)
	}
	return fmt.Sprintf("series %q", name)
}

// checkNames reports the first name that two series share.
func checkNames(curves []curve) error {
	seen := make(map[string]int, len(curves))
	for i, c := range curves {
		key := strings.ToLower(strings.TrimSpace(c.name))
		if j, dup := seen[key]; dup {
			return fmt.Errorf("series %q appears twice (series[%d] and series[%d]); legend entries must differ", c.name, j, i)
		}
		seen[key] = i
	}
	return nil
}

// newPlot returns an empty gonum plot with meshbench's texts, fonts and grid.
func newPlot(opts ChartOptions) *gplot.Plot {
	p := gplot.New()
	p.Title.Text = opts.Title
	p.Title.TextStyle.Font = font.From(boldFont, titleSizePt)
	p.Title.Padding = vg.Points(titlePaddingPt)
	for _, a := range []*gplot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sansFont, labelSizePt)
		a.Tick.Label.Font = font.From(sansFont, tickSizePt)
		a.Label.Padding = vg.Points(4)
		a.Tick.Marker = linearTicks{}
	}
	p.X.Label.Text = opts.XLabel
	p.Y.Label.Text = opts.YLabel
	grid := plotter.NewGrid()
	grid.Vertical = draw.LineStyle{Color: gridColor, Width: vg.Points(0.5)}
	grid.Horizontal = grid.Vertical
	p.Add(grid)
	return p
}

// newChart adds the curves to p (bands first, so lines stay on top) and
// builds the legend. glyphs adds a point glyph at every point.
func newChart(title string, p *gplot.Plot, curves []curve, glyphs bool) (*Chart, error) {
	names := make([]string, len(curves))
	for i, c := range curves {
		names[i] = c.name
	}
	styles := stylesFor(names)
	thumbs := make([][]gplot.Thumbnailer, len(curves))
	for i, c := range curves {
		if c.lo == nil {
			continue
		}
		b := &band{x: c.x, lo: c.lo, hi: c.hi, fill: styles[i].bandFill(), edge: styles[i].bandEdge()}
		p.Add(b)
		thumbs[i] = append(thumbs[i], b)
	}
	for i, c := range curves {
		xys := make(plotter.XYs, len(c.x))
		for j := range c.x {
			xys[j] = plotter.XY{X: c.x[j], Y: c.y[j]}
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", seriesRef(i, c.name), err)
		}
		line.LineStyle = styles[i].line()
		p.Add(line)
		thumbs[i] = append(thumbs[i], line)
		if glyphs {
			sc, err := plotter.NewScatter(xys)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", seriesRef(i, c.name), err)
			}
			sc.GlyphStyle = styles[i].points()
			p.Add(sc)
			thumbs[i] = append(thumbs[i], sc)
		}
	}
	legend := gplot.NewLegend()
	legend.TextStyle.Font = font.From(sansFont, legendSizePt)
	legend.Top, legend.Left = true, true
	legend.Padding = vg.Points(3)
	legend.ThumbnailWidth = vg.Points(28)
	for i, c := range curves {
		legend.Add(c.name, thumbs[i]...)
	}
	return &Chart{title: title, names: names, p: p, legend: legend}, nil
}

// fitRange settles an axis range after the data is added. A linear y axis
// (startAtZero) includes zero. A log axis whose data is a single value gets
// a factor of two either side: gonum would widen it by ±1, to zero or below.
func fitRange(a *gplot.Axis, log, startAtZero bool) {
	switch {
	case log && a.Min == a.Max:
		a.Min, a.Max = a.Min/2, a.Max*2
	case !log && startAtZero:
		a.Min = math.Min(a.Min, 0)
		if a.Min == a.Max { // all zero
			a.Max = 1
		}
	}
}

// draw lays the chart out on cv: the plot on the left, the legend in a
// column on its right, top-aligned with the plot area. gonum panics on some
// inputs validation should have caught; draw turns that into an error
// rather than take the caller down.
func (c *Chart) draw(cv vg.CanvasSizer) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("drawing chart %q: %v", c.title, r)
		}
	}()
	dc := draw.New(cv)
	// Fill the whole canvas: the plot only fills its own area.
	dc.SetColor(c.p.BackgroundColor)
	dc.Fill(dc.Rectangle.Path())
	m := vg.Points(marginPt)
	dc = draw.Crop(dc, m, -m, m, -m)
	if c.caption != "" {
		sty := captionStyle()
		lines := wrap(sty, c.caption, dc.Max.X-dc.Min.X)
		lineH := sty.Rectangle("Mg").Size().Y * 1.2
		h := lineH*vg.Length(len(lines)) + vg.Points(captionGapPt)
		for i, l := range lines {
			dc.FillText(sty, vg.Point{X: dc.Min.X, Y: dc.Min.Y + lineH*vg.Length(len(lines)-1-i)}, l)
		}
		dc = draw.Crop(dc, 0, 0, h, 0)
	}
	if len(c.panels) > 0 {
		c.drawPanels(dc)
		return nil
	}

	legendW := c.legendWidth()
	pc := draw.Crop(dc, 0, -(legendW + vg.Points(legendGapPt)), 0, 0)
	// gonum centres the title over the plot and lets a wider one run off
	// the canvas: wrap it to the plot's width (a cell ID at its hyphens).
	if t := c.p.Title.Text; t != "" && c.p.Title.TextStyle.Width(t) > pc.Max.X-pc.Min.X {
		c.p.Title.Text = strings.Join(wrapTitle(c.p.Title.TextStyle, t, pc.Max.X-pc.Min.X), "\n")
	}
	c.p.Draw(pc)

	lc := dc
	lc.Min.X = dc.Max.X - legendW
	if c.p.Title.Text != "" {
		lc.Max.Y -= c.p.Title.TextStyle.Rectangle(c.p.Title.Text).Size().Y + c.p.Title.Padding
	}
	c.legend.Draw(lc)
	return nil
}

// Caption is the text the chart draws under itself ("" for none).
func (c *Chart) Caption() string { return c.caption }

// captionStyle is the caption's text: small, grey, left-aligned, the
// baseline-to-bottom anchor at its point.
func captionStyle() text.Style {
	return text.Style{Color: captionColor, Font: font.From(sansFont, captionSizePt), XAlign: draw.XLeft, YAlign: draw.YBottom,
		Handler: gplot.DefaultTextHandler}
}

// wrap breaks s into lines no wider than width in sty, at spaces (a word
// wider than width gets a line of its own).
func wrap(sty text.Style, s string, width vg.Length) []string {
	return fill(sty, strings.Fields(s), width)
}

// fill puts words into lines no wider than width in sty, a space between
// two words of a line (a word wider than width gets a line of its own).
func fill(sty text.Style, words []string, width vg.Length) []string {
	var lines []string
	line := ""
	for _, w := range words {
		next := w
		if line != "" {
			next = line + " " + w
		}
		if line != "" && sty.Width(next) > width {
			lines = append(lines, line)
			next = w
		}
		line = next
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// wrapTitle is wrap for a title: its lines no wider than width where
// they can be, a word wider than that (a cell ID) broken after hyphens.
func wrapTitle(sty text.Style, s string, width vg.Length) []string {
	var words []string
	for _, w := range strings.Fields(s) {
		if sty.Width(w) <= width {
			words = append(words, w)
			continue
		}
		part := ""
		for _, piece := range strings.SplitAfter(w, "-") {
			if part != "" && sty.Width(part+piece) > width {
				words = append(words, part)
				part = ""
			}
			part += piece
		}
		words = append(words, part)
	}
	return fill(sty, words, width)
}

// legendWidth is the width of the legend column: thumbnail, a space, and
// the longest name, with legendTextSlack to spare.
func (c *Chart) legendWidth() vg.Length {
	w := vg.Length(0)
	for _, n := range c.names {
		w = max(w, c.legend.TextStyle.Rectangle(" "+n).Max.X)
	}
	return c.legend.ThumbnailWidth + w*legendTextSlack
}

// legendTextSlack widens the legend column beyond the names' width in
// Liberation Sans, so that an SVG viewer that has neither it nor Arial and
// falls back to a wider sans-serif (DejaVu Sans is about 12 % wider) does not
// clip names at the chart's right edge.
const legendTextSlack = 1.15

func checkSize(format string, w, h int) error {
	if w < MinWidthPx || h < MinHeightPx || w > MaxSidePx || h > MaxSidePx {
		return fmt.Errorf("%s size %d×%d px is out of range: width %d..%d, height %d..%d",
			format, w, h, MinWidthPx, MaxSidePx, MinHeightPx, MaxSidePx)
	}
	return nil
}

// pxToLength converts CSS pixels (96 per inch) to a vg length.
func pxToLength(px int) vg.Length {
	return vg.Length(px) * vg.Inch / dpi
}

// fontFamily matches a font-family declaration in gonum's SVG style
// attributes, up to the next ';' or the end of the attribute.
var fontFamily = regexp.MustCompile(`font-family:([^;"]*)`)

// inlineSVG makes gonum's SVG fit to inline in HTML: it drops the XML
// declaration (HTML reads it as a bogus comment; a standalone SVG file is
// valid without it) and gives every font-family a fallback list ending in
// the generic sans-serif, so viewers without Liberation Sans use a
// metric-compatible font and fetch nothing.
func inlineSVG(b []byte) []byte {
	if bytes.HasPrefix(b, []byte("<?xml")) {
		if _, rest, ok := bytes.Cut(b, []byte("?>")); ok {
			b = bytes.TrimLeft(rest, "\r\n")
		}
	}
	return fontFamily.ReplaceAllFunc(b, func(m []byte) []byte {
		fam := strings.TrimSpace(string(fontFamily.FindSubmatch(m)[1]))
		if strings.Contains(fam, ",") {
			return m // already a list
		}
		fam = strings.Trim(fam, `'`)
		return []byte("font-family:'" + fam + "',Arial,Helvetica,sans-serif")
	})
}
