package plot

import (
	"image/color"
	"strings"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// seriesStyle is how one series is drawn: a colour, a dash pattern and a
// point glyph, chosen so that series stay apart in greyscale print too.
type seriesStyle struct {
	color  color.NRGBA
	dashes []vg.Length // nil: solid
	glyph  draw.GlyphDrawer
}

// Line and glyph geometry, in points (1/72 inch).
const (
	lineWidthPt   = 1.5
	glyphRadiusPt = 2.5
	// bandAlpha is the opacity of a confidence band's fill, 0..255: faint,
	// so overlapping bands barely blend; their outlines tell them apart.
	bandAlpha = 0x1C
	// bandEdgeWidthPt is the width of a band's outline.
	bandEdgeWidthPt = 0.75
)

// meshStyles are the fixed styles of the mesh modes meshbench knows, keyed
// by lower-case name, so that a mesh looks the same on every chart whatever
// else is plotted with it. Colours are from the Okabe–Ito palette (safe for
// colour-blind readers); luminance, dashes and glyphs differ too, so the
// charts read in greyscale.
var meshStyles = map[string]seriesStyle{
	"none":     {color: rgb(0x00, 0x00, 0x00), dashes: nil, glyph: draw.CircleGlyph{}},
	"sidecar":  {color: rgb(0xD5, 0x5E, 0x00), dashes: pts(6, 3), glyph: draw.PyramidGlyph{}},
	"ambient":  {color: rgb(0x00, 0x72, 0xB2), dashes: pts(1.5, 2), glyph: draw.BoxGlyph{}},
	"waypoint": {color: rgb(0x00, 0x9E, 0x73), dashes: pts(8, 3, 1.5, 3), glyph: draw.RingGlyph{}},
	"linkerd":  {color: rgb(0xCC, 0x79, 0xA7), dashes: pts(12, 4), glyph: draw.CrossGlyph{}},
}

// Styles for series that are not mesh modes, handed out in series order.
// Colours cycle first; after each full cycle the dash pattern changes.
var (
	otherColors = []color.NRGBA{
		rgb(0xE6, 0x9F, 0x00), // orange
		rgb(0x56, 0xB4, 0xE9), // sky blue
		rgb(0x66, 0x66, 0x66), // grey
		rgb(0x8C, 0x56, 0x1E), // brown
		rgb(0x6A, 0x3D, 0x9A), // violet
	}
	otherDashes = [][]vg.Length{nil, pts(6, 3), pts(1.5, 2), pts(8, 3, 1.5, 3)}
	otherGlyphs = []draw.GlyphDrawer{
		draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PlusGlyph{}, draw.RingGlyph{}, draw.CircleGlyph{},
	}
)

// stylesFor returns one style per name, in order. Mesh mode names (matched
// case-insensitively) get their fixed style; every other name gets the next
// style of the fallback cycle, so the result depends only on the names and
// their order.
func stylesFor(names []string) []seriesStyle {
	out := make([]seriesStyle, len(names))
	k := 0
	for i, name := range names {
		if st, ok := meshStyles[strings.ToLower(strings.TrimSpace(name))]; ok {
			out[i] = st
			continue
		}
		out[i] = seriesStyle{
			color:  otherColors[k%len(otherColors)],
			dashes: otherDashes[(k/len(otherColors))%len(otherDashes)],
			glyph:  otherGlyphs[k%len(otherGlyphs)],
		}
		k++
	}
	return out
}

func (s seriesStyle) line() draw.LineStyle {
	return draw.LineStyle{Color: s.color, Width: vg.Points(lineWidthPt), Dashes: s.dashes}
}

func (s seriesStyle) points() draw.GlyphStyle {
	return draw.GlyphStyle{Color: s.color, Radius: vg.Points(glyphRadiusPt), Shape: s.glyph}
}

func (s seriesStyle) bandFill() color.NRGBA {
	c := s.color
	c.A = bandAlpha
	return c
}

// bandEdge is the outline of the series' band: its colour and dash
// pattern, thinner than its line.
func (s seriesStyle) bandEdge() draw.LineStyle {
	return draw.LineStyle{Color: s.color, Width: vg.Points(bandEdgeWidthPt), Dashes: s.dashes}
}

func rgb(r, g, b uint8) color.NRGBA { return color.NRGBA{R: r, G: g, B: b, A: 0xFF} }

func pts(v ...float64) []vg.Length {
	out := make([]vg.Length, len(v))
	for i, x := range v {
		out[i] = vg.Points(x)
	}
	return out
}

// Text. gonum/plot lays text out with the metrics of the Liberation fonts it
// bundles. Liberation Sans is metric-compatible with Arial, so an SVG viewer
// without Liberation Sans that falls back to Arial or Helvetica keeps the
// layout; see svgFontFallback.
var (
	sansFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
	boldFont = font.Font{Typeface: "Liberation", Variant: "Sans", Weight: xfont.WeightBold}
)

// Font sizes, in points.
const (
	titleSizePt  = 13
	labelSizePt  = 11
	tickSizePt   = 9.5
	legendSizePt = 10
	// captionSizePt is the caption under a chart.
	captionSizePt = 9
)

// captionColor is the caption's text colour.
var captionColor = color.NRGBA{R: 0x44, G: 0x44, B: 0x44, A: 0xFF}

// gridColor is the colour of the grid lines at major ticks.
var gridColor = color.NRGBA{R: 0xDD, G: 0xDD, B: 0xDD, A: 0xFF}
