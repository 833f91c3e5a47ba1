package plot

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image/color"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The tests read gonum's SVG output as XML and look at its structure — which
// texts exist and in what order, which paths are stroked or filled in which
// colour — never at coordinates or whole files, so they survive gonum
// releases that move things by a point.

// svgDoc is what the tests look at in an SVG document.
type svgDoc struct {
	texts    []svgText
	paths    []svgPath
	elements []xml.StartElement
}

type svgText struct {
	text  string
	style map[string]string
}

type svgPath struct {
	d     string
	style map[string]string
}

// parseSVG decodes b strictly as XML, failing the test if it is not.
func parseSVG(t *testing.T, b []byte) svgDoc {
	t.Helper()
	var doc svgDoc
	dec := xml.NewDecoder(bytes.NewReader(b))
	var text *svgText
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("svg is not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			doc.elements = append(doc.elements, tok.Copy())
			switch tok.Name.Local {
			case "text":
				text = &svgText{style: parseStyle(attr(tok, "style"))}
			case "path":
				doc.paths = append(doc.paths, svgPath{d: attr(tok, "d"), style: parseStyle(attr(tok, "style"))})
			}
		case xml.CharData:
			if text != nil {
				text.text += string(tok)
			}
		case xml.EndElement:
			if tok.Name.Local == "text" && text != nil {
				doc.texts = append(doc.texts, *text)
				text = nil
			}
		}
	}
	if len(doc.elements) == 0 || doc.elements[0].Name.Local != "svg" {
		t.Fatalf("svg document does not start with an <svg> element")
	}
	return doc
}

func attr(e xml.StartElement, name string) string {
	for _, a := range e.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func parseStyle(s string) map[string]string {
	m := map[string]string{}
	for _, kv := range strings.Split(s, ";") {
		k, v, ok := strings.Cut(kv, ":")
		if ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m
}

// textsIn returns the texts of doc that are in want, in document order.
func (d svgDoc) textsIn(want []string) []string {
	set := map[string]bool{}
	for _, w := range want {
		set[w] = true
	}
	var out []string
	for _, tx := range d.texts {
		if set[tx.text] {
			out = append(out, tx.text)
		}
	}
	return out
}

// textsMatching returns the texts of doc that match re, in document order.
func (d svgDoc) textsMatching(re *regexp.Regexp) []string {
	var out []string
	for _, tx := range d.texts {
		if re.MatchString(tx.text) {
			out = append(out, tx.text)
		}
	}
	return out
}

// hasZeroTick reports whether some text is the number zero ("0", "0.00").
func (d svgDoc) hasZeroTick() bool {
	for _, tx := range d.texts {
		if v, err := strconv.ParseFloat(tx.text, 64); err == nil && v == 0 {
			return true
		}
	}
	return false
}

func (d svgDoc) hasText(s string) bool {
	for _, tx := range d.texts {
		if tx.text == s {
			return true
		}
	}
	return false
}

// linePaths returns the stroked, unfilled paths in colour c with at least
// two points (data lines and legend thumbnails; glyph outlines are closed
// and filled or short).
func (d svgDoc) linePaths(c color.NRGBA) []svgPath {
	var out []svgPath
	for _, p := range d.paths {
		if p.style["fill"] != "none" || !sameColor(p.style["stroke"], c) || isEdge(p) {
			continue
		}
		if strings.Count(p.d, "L") >= 1 && !strings.ContainsAny(p.d, "AZz") {
			out = append(out, p)
		}
	}
	return out
}

// isEdge reports whether p is stroked at a band outline's width.
func isEdge(p svgPath) bool {
	w, err := strconv.ParseFloat(p.style["stroke-width"], 64)
	return err == nil && w == bandEdgeWidthPt
}

// edgePaths returns the band outlines in colour c: stroked, unfilled, at
// bandEdgeWidthPt.
func (d svgDoc) edgePaths(c color.NRGBA) []svgPath {
	var out []svgPath
	for _, p := range d.paths {
		if p.style["fill"] == "none" && sameColor(p.style["stroke"], c) && isEdge(p) {
			out = append(out, p)
		}
	}
	return out
}

// bandPaths returns the filled, translucent paths in colour c. gonum omits
// fill for black (the SVG default) and fill-opacity when it is 1.
func (d svgDoc) bandPaths(c color.NRGBA) []svgPath {
	var out []svgPath
	for _, p := range d.paths {
		fill, ok := p.style["fill"]
		if !ok {
			fill = "#000000"
		}
		op, err := strconv.ParseFloat(p.style["fill-opacity"], 64)
		if err != nil || op >= 1 || fill == "none" || !sameColor(fill, c) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// sameColor reports whether the SVG colour "#RRGGBB" is c, within the
// rounding gonum's un-premultiplying of translucent colours introduces.
func sameColor(s string, c color.NRGBA) bool {
	var r, g, b int
	if _, err := fmt.Sscanf(s, "#%02x%02x%02x", &r, &g, &b); err != nil {
		return false
	}
	near := func(a int, b uint8) bool { return a-int(b) <= 2 && int(b)-a <= 2 }
	return near(r, c.R) && near(g, c.G) && near(b, c.B)
}

// pathVertices returns the points of a path made of M and L commands.
func pathVertices(d string) [][2]float64 {
	var out [][2]float64
	for _, seg := range regexp.MustCompile(`[ML][^ML]*`).FindAllString(d, -1) {
		var x, y float64
		if _, err := fmt.Sscanf(seg[1:], "%g,%g", &x, &y); err == nil {
			out = append(out, [2]float64{x, y})
		}
	}
	return out
}

// longest returns the path with the most vertices.
func longest(ps []svgPath) svgPath {
	var best svgPath
	for _, p := range ps {
		if len(pathVertices(p.d)) > len(pathVertices(best.d)) {
			best = p
		}
	}
	return best
}
