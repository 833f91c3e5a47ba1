package plot

import (
	"bytes"
	"fmt"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

var meshes = []string{"none", "sidecar", "ambient", "waypoint"}

// latencyVsRate returns a realistic p99-latency-vs-rate chart input: four
// mesh modes, six rates, a ±8–15 % band on every series but "ambient"
// unless bands is false.
func latencyVsRate(bands bool) []Series {
	rates := []float64{250, 500, 1000, 2000, 4000, 8000}
	base := map[string]float64{"none": 0.42, "sidecar": 1.35, "ambient": 0.71, "waypoint": 1.62}
	var out []Series
	for i, m := range meshes {
		s := Series{Name: m, X: slices.Clone(rates)}
		for _, r := range rates {
			// Latency rises slowly, then sharply as the proxies saturate.
			y := base[m] * (1 + 0.15*math.Log2(r/250) + math.Pow(r/9000, 4)*float64(2+i))
			s.Y = append(s.Y, math.Round(y*1000)/1000)
		}
		if bands && m != "ambient" {
			for _, y := range s.Y {
				s.Lo = append(s.Lo, y*(0.92-0.01*float64(i)))
				s.Hi = append(s.Hi, y*(1.08+0.02*float64(i)))
			}
		}
		out = append(out, s)
	}
	return out
}

// spectrumInput returns a realistic latency spectrum per mesh: percentiles
// from 0 to 99.999 in HDR-style half-steps toward 100.
func spectrumInput(bands bool) []SpectrumSeries {
	var pcts []float64
	for q := 0.0; q <= 99.999; {
		pcts = append(pcts, q)
		q += (100 - q) / 2
		q = math.Round(q*1e6) / 1e6
	}
	base := map[string]float64{"none": 0.3, "sidecar": 0.9, "ambient": 0.5, "waypoint": 1.1}
	var out []SpectrumSeries
	for _, m := range meshes {
		s := SpectrumSeries{Name: m, Percentiles: pcts}
		for _, q := range pcts {
			v := base[m] * (1 + 0.35*math.Log10(spectrumX(q)))
			s.Values = append(s.Values, v)
			if bands {
				s.Lo = append(s.Lo, v*0.93)
				s.Hi = append(s.Hi, v*1.09)
			}
		}
		out = append(out, s)
	}
	return out
}

func mustSVG(t *testing.T, c *Chart) svgDoc {
	t.Helper()
	b, err := c.SVG(DefaultWidthPx, DefaultHeightPx)
	if err != nil {
		t.Fatal(err)
	}
	return parseSVG(t, b)
}

func styleOf(t *testing.T, names []string, name string) seriesStyle {
	t.Helper()
	i := slices.Index(names, name)
	if i < 0 {
		t.Fatalf("no series %q", name)
	}
	return stylesFor(names)[i]
}

func TestLineChartSVGStructure(t *testing.T) {
	opts := ChartOptions{Title: "p99 latency vs request rate", XLabel: "Rate (req/s)", YLabel: "p99 latency (ms)"}
	for _, bands := range []bool{false, true} {
		t.Run(fmt.Sprintf("bands=%v", bands), func(t *testing.T) {
			series := latencyVsRate(bands)
			c, err := LineChart(opts, series)
			if err != nil {
				t.Fatal(err)
			}
			doc := mustSVG(t, c)
			for _, s := range []string{opts.Title, opts.XLabel, opts.YLabel} {
				if !doc.hasText(s) {
					t.Errorf("no text %q in the svg", s)
				}
			}
			if got := doc.textsIn(meshes); !slices.Equal(got, meshes) {
				t.Errorf("legend entries = %q, want %q (one per series, in order)", got, meshes)
			}
			// A linear y axis starts at zero, whatever the data's minimum.
			if !doc.hasZeroTick() {
				t.Errorf("no tick labelled 0 on the linear y axis")
			}
			for _, s := range series {
				st := styleOf(t, meshes, s.Name)
				lines := doc.linePaths(st.color)
				if len(lines) == 0 {
					t.Errorf("series %q: no line path in %v", s.Name, st.color)
					continue
				}
				if n := len(pathVertices(longest(lines).d)); n < len(s.X) {
					t.Errorf("series %q: longest line has %d vertices, want >= %d", s.Name, n, len(s.X))
				}
				wantBand := s.Lo != nil
				if got := len(doc.bandPaths(st.color)) > 0; got != wantBand {
					t.Errorf("series %q: band drawn = %v, want %v", s.Name, got, wantBand)
				}
			}
		})
	}
}

func TestSpectrumSVGStructure(t *testing.T) {
	for _, bands := range []bool{false, true} {
		t.Run(fmt.Sprintf("bands=%v", bands), func(t *testing.T) {
			c, err := Spectrum(ChartOptions{Title: "Latency spectrum at 2000 req/s"}, spectrumInput(bands))
			if err != nil {
				t.Fatal(err)
			}
			doc := mustSVG(t, c)
			for _, s := range []string{"Latency spectrum at 2000 req/s", "Percentile", "Latency (ms)"} {
				if !doc.hasText(s) {
					t.Errorf("no text %q in the svg", s)
				}
			}
			wantTicks := []string{"0%", "90%", "99%", "99.9%", "99.99%", "99.999%"}
			if got := doc.textsMatching(regexp.MustCompile(`%$`)); !slices.Equal(got, wantTicks) {
				t.Errorf("x tick labels = %q, want %q", got, wantTicks)
			}
			if got := doc.textsIn(meshes); !slices.Equal(got, meshes) {
				t.Errorf("legend entries = %q, want %q", got, meshes)
			}
			for _, m := range meshes {
				st := styleOf(t, meshes, m)
				if len(doc.linePaths(st.color)) == 0 {
					t.Errorf("series %q: no line path", m)
				}
				if got := len(doc.bandPaths(st.color)) > 0; got != bands {
					t.Errorf("series %q: band drawn = %v, want %v", m, got, bands)
				}
			}
		})
	}
}

// TestSpectrumTicksFollowData: the x axis shows at least 0%..99.999%, and a
// decade more for each nine the data reaches beyond.
func TestSpectrumTicksFollowData(t *testing.T) {
	s := SpectrumSeries{Name: "sidecar", Percentiles: []float64{0, 50, 99.99999}, Values: []float64{1, 2, 9}}
	c, err := Spectrum(ChartOptions{}, []SpectrumSeries{s})
	if err != nil {
		t.Fatal(err)
	}
	got := mustSVG(t, c).textsMatching(regexp.MustCompile(`%$`))
	want := []string{"0%", "90%", "99%", "99.9%", "99.99%", "99.999%", "99.9999%", "99.99999%"}
	if !slices.Equal(got, want) {
		t.Errorf("x tick labels = %q, want %q", got, want)
	}
}

// TestSVGSelfContained: the SVG can be inlined in an HTML page as it is and
// loads nothing: no declaration, no ids to collide between charts, no links,
// images, scripts or style sheets, and every font has a generic fallback.
func TestSVGSelfContained(t *testing.T) {
	c, err := LineChart(ChartOptions{Title: "t", XLabel: "x", YLabel: "y"}, latencyVsRate(true))
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.SVG(640, 400)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.HasPrefix(b, []byte("<?xml")) {
		t.Errorf("svg starts with an XML declaration")
	}
	for _, s := range []string{"url(", "@import", "@font-face", "<!DOCTYPE"} {
		if bytes.Contains(b, []byte(s)) {
			t.Errorf("svg contains %q", s)
		}
	}
	doc := parseSVG(t, b)
	banned := map[string]bool{"image": true, "use": true, "script": true, "foreignObject": true, "a": true, "link": true, "style": true, "iframe": true}
	for _, e := range doc.elements {
		if banned[e.Name.Local] {
			t.Errorf("svg has a <%s> element", e.Name.Local)
		}
		for _, a := range e.Attr {
			isNS := a.Name.Space == "xmlns" || a.Name.Local == "xmlns"
			switch {
			case a.Name.Local == "href":
				t.Errorf("<%s> has an href: %q", e.Name.Local, a.Value)
			case a.Name.Local == "id":
				t.Errorf("<%s> has an id %q; ids collide when charts share a page", e.Name.Local, a.Value)
			case !isNS && strings.Contains(a.Value, "://"):
				t.Errorf("<%s %s> refers outside: %q", e.Name.Local, a.Name.Local, a.Value)
			}
		}
	}
	if len(doc.texts) == 0 {
		t.Fatal("svg has no text")
	}
	for _, tx := range doc.texts {
		fam := tx.style["font-family"]
		if !strings.HasPrefix(fam, "'Liberation Sans',") || !strings.HasSuffix(fam, ",sans-serif") {
			t.Errorf("text %q: font-family %q lacks the sans-serif fallback", tx.text, fam)
			break
		}
	}
	if w, h := attr(doc.elements[0], "width"), attr(doc.elements[0], "height"); w != "480pt" || h != "300pt" {
		t.Errorf("svg size = %s×%s, want 480pt×300pt (640×400 CSS px)", w, h)
	}
}

func TestPNGSize(t *testing.T) {
	c, err := LineChart(ChartOptions{Title: "t", XLabel: "x", YLabel: "y"}, latencyVsRate(true))
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range [][2]int{{800, 500}, {MinWidthPx, MinHeightPx}, {1333, 777}} {
		b, err := c.PNG(size[0], size[1])
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%v: png does not decode: %v", size, err)
		}
		if got := img.Bounds().Size(); got.X != size[0] || got.Y != size[1] {
			t.Errorf("png is %d×%d, want %d×%d", got.X, got.Y, size[0], size[1])
		}
		if size[0] < 800 {
			continue
		}
		// Every series is drawn: some pixels carry its colour (black is
		// shared with the axes, so it proves nothing).
		for _, m := range meshes[1:] {
			col := styleOf(t, meshes, m).color
			n := 0
			for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
				for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
					if nearColor(img.At(x, y), col, 24) {
						n++
					}
				}
			}
			if n < 50 {
				t.Errorf("%v: only %d pixels near the colour of %q", size, n, m)
			}
		}
	}
}

func nearColor(c color.Color, want color.NRGBA, tol int) bool {
	n := color.NRGBAModel.Convert(c).(color.NRGBA)
	d := func(a, b uint8) bool { return int(a)-int(b) <= tol && int(b)-int(a) <= tol }
	return d(n.R, want.R) && d(n.G, want.G) && d(n.B, want.B)
}

// TestSummaryGolden compares a structural summary of each chart with a
// golden file: texts that are ours (title, labels, legend order, spectrum
// ticks) and each series' colour, dash pattern and band. Coordinates,
// gonum's own tick choice and draw order are left out on purpose, so a
// gonum upgrade only fails it when something a reader sees changes.
func TestSummaryGolden(t *testing.T) {
	line, err := LineChart(ChartOptions{Title: "p99 latency vs request rate", XLabel: "Rate (req/s)", YLabel: "p99 latency (ms)"}, latencyVsRate(true))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := Spectrum(ChartOptions{Title: "Latency spectrum"}, spectrumInput(false))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		golden string
		chart  *Chart
		labels []string
	}{
		{"latency_vs_rate.summary.golden", line, []string{"p99 latency vs request rate", "Rate (req/s)", "p99 latency (ms)"}},
		{"spectrum.summary.golden", spec, []string{"Latency spectrum", "Percentile", "Latency (ms)"}},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			doc := mustSVG(t, tt.chart)
			var b strings.Builder
			for _, l := range tt.labels {
				fmt.Fprintf(&b, "text %q: %v\n", l, doc.hasText(l))
			}
			fmt.Fprintf(&b, "legend: %s\n", strings.Join(doc.textsIn(meshes), ", "))
			if ticks := doc.textsMatching(regexp.MustCompile(`%$`)); ticks != nil {
				fmt.Fprintf(&b, "x ticks: %s\n", strings.Join(ticks, " "))
			}
			for _, m := range meshes {
				st := styleOf(t, meshes, m)
				l := longest(doc.linePaths(st.color))
				dash := l.style["stroke-dasharray"]
				if dash == "" {
					dash = "solid"
				}
				fmt.Fprintf(&b, "series %s: stroke %s width %s dash %s band %v outlined %v\n",
					m, l.style["stroke"], l.style["stroke-width"], dash, len(doc.bandPaths(st.color)) > 0, len(doc.edgePaths(st.color)) > 0)
			}
			testutil.Golden(t, tt.golden, []byte(b.String()))
		})
	}
}

// TestUnsortedInput: points are drawn in order of x, and the caller's
// slices are left as they were.
func TestUnsortedInput(t *testing.T) {
	s := Series{Name: "sidecar", X: []float64{4000, 250, 1000}, Y: []float64{3, 1, 2}, Lo: []float64{2.5, 0.9, 1.8}, Hi: []float64{3.5, 1.1, 2.2}}
	before := fmt.Sprint(s)
	c, err := LineChart(ChartOptions{}, []Series{s})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(s) != before {
		t.Errorf("input changed: %s, was %s", fmt.Sprint(s), before)
	}
	doc := mustSVG(t, c)
	v := pathVertices(longest(doc.linePaths(stylesFor([]string{"sidecar"})[0].color)).d)
	if len(v) != 3 {
		t.Fatalf("line has %d vertices, want 3", len(v))
	}
	for i := 1; i < len(v); i++ {
		if v[i][0] <= v[i-1][0] || v[i][1] <= v[i-1][1] {
			t.Errorf("vertices %v are not in order of x (y rises with x in this data)", v)
		}
	}
}

// TestEdgeCasesRender: inputs that are valid but unusual render without
// error.
func TestEdgeCasesRender(t *testing.T) {
	for _, tt := range []struct {
		name   string
		opts   ChartOptions
		series []Series
	}{
		// One point, with a band: the band becomes a bar.
		{"single point with band", ChartOptions{}, []Series{{Name: "none", X: []float64{1}, Y: []float64{2}, Lo: []float64{1.5}, Hi: []float64{2.5}}}},
		// One point on log axes: the range is widened by ×2, not to zero.
		{"single point log", ChartOptions{LogX: true, LogY: true}, []Series{{Name: "none", X: []float64{10}, Y: []float64{3}}}},
		// All y zero on a linear axis.
		{"all zero", ChartOptions{}, []Series{{Name: "none", X: []float64{1, 2}, Y: []float64{0, 0}}}},
		// Negative y on a linear axis (a difference to the baseline).
		{"negative", ChartOptions{}, []Series{{Name: "ambient", X: []float64{1, 2}, Y: []float64{-0.2, 0.3}}}},
		// A log y range narrower than a decade.
		{"narrow log", ChartOptions{LogY: true}, []Series{{Name: "waypoint", X: []float64{1, 2, 3}, Y: []float64{2.1, 2.5, 2.9}}}},
		// Replicas on x, CPU on y, every mesh plus linkerd and an unknown name.
		{"many series", ChartOptions{Title: "CPU vs replicas", XLabel: "Replicas", YLabel: "CPU (millicores)"}, manySeries()},
		// Names no mesh has, in any number.
		{"unknown names", ChartOptions{}, []Series{{Name: "a", X: []float64{1}, Y: []float64{1}}, {Name: "b", X: []float64{1}, Y: []float64{2}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := LineChart(tt.opts, tt.series)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.PNG(400, 300); err != nil {
				t.Fatal(err)
			}
			doc := mustSVG(t, c)
			names := make([]string, len(tt.series))
			for i, s := range tt.series {
				names[i] = s.Name
			}
			if got := doc.textsIn(names); !slices.Equal(got, names) {
				t.Errorf("legend entries = %q, want %q", got, names)
			}
		})
	}
}

func manySeries() []Series {
	names := []string{"none", "sidecar", "ambient", "waypoint", "linkerd", "istio-1.24 sidecar"}
	var out []Series
	for i, n := range names {
		s := Series{Name: n}
		for r := 1.0; r <= 8; r *= 2 {
			s.X = append(s.X, r)
			s.Y = append(s.Y, (20+float64(i)*15)*r)
		}
		out = append(out, s)
	}
	return out
}

func TestDeterministic(t *testing.T) {
	c, err := Spectrum(ChartOptions{Title: "t"}, spectrumInput(true))
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.SVG(800, 500)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PNG(300, 200); err != nil { // a render in between at another size
		t.Fatal(err)
	}
	b, err := c.SVG(800, 500)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("rendering the same chart twice gave different SVGs")
	}
}

func TestBadInput(t *testing.T) {
	ok := func() Series { return Series{Name: "sidecar", X: []float64{1, 2}, Y: []float64{3, 4}} }
	with := func(f func(*Series)) []Series { s := ok(); f(&s); return []Series{s} }
	okSpec := func() SpectrumSeries {
		return SpectrumSeries{Name: "ambient", Percentiles: []float64{0, 90, 99}, Values: []float64{1, 2, 3}}
	}
	withSpec := func(f func(*SpectrumSeries)) []SpectrumSeries { s := okSpec(); f(&s); return []SpectrumSeries{s} }

	tests := []struct {
		name string
		run  func() error
		want string // a substring of the error
	}{
		// Nothing to draw.
		{"no series", line(ChartOptions{}, nil), "no series to plot"},
		// The legend needs a name.
		{"no name", line(ChartOptions{}, with(func(s *Series) { s.Name = " " })), "series[0] has no name"},
		// A series without points.
		{"no points", line(ChartOptions{}, with(func(s *Series) { s.X, s.Y = nil, nil })), `series "sidecar": no points`},
		// X and Y disagree.
		{"x y lengths", line(ChartOptions{}, with(func(s *Series) { s.X = []float64{1, 2, 3} })), `series "sidecar": x has 3 values but y has 2`},
		// Half a band.
		{"lo without hi", line(ChartOptions{}, with(func(s *Series) { s.Lo = []float64{1, 2} })), `series "sidecar": lo is given without hi`},
		{"hi without lo", line(ChartOptions{}, with(func(s *Series) { s.Hi = []float64{1, 2} })), `series "sidecar": hi is given without lo`},
		// A band of the wrong length.
		{"lo length", line(ChartOptions{}, with(func(s *Series) { s.Lo, s.Hi = []float64{1}, []float64{5, 5} })), `series "sidecar": lo has 1 values but y has 2`},
		{"hi length", line(ChartOptions{}, with(func(s *Series) { s.Lo, s.Hi = []float64{1, 1}, []float64{5} })), `series "sidecar": hi has 1 values but y has 2`},
		// NaN and infinity have no place on an axis.
		{"nan y", line(ChartOptions{}, with(func(s *Series) { s.Y[1] = math.NaN() })), `series "sidecar": y[1] is NaN`},
		{"inf x", line(ChartOptions{}, with(func(s *Series) { s.X[0] = math.Inf(1) })), `series "sidecar": x[0] is +Inf`},
		// A band upside down.
		{"lo above hi", line(ChartOptions{}, with(func(s *Series) { s.Lo, s.Hi = []float64{2, 5}, []float64{4, 4} })), `series "sidecar": lo[1] = 5 is above hi[1] = 4`},
		// Zero and negatives on log axes.
		{"log y zero", line(ChartOptions{LogY: true}, with(func(s *Series) { s.Y[0] = 0 })), `series "sidecar": y[0] = 0 is not positive, so it cannot go on the log y axis`},
		{"log x negative", line(ChartOptions{LogX: true}, with(func(s *Series) { s.X[1] = -1 })), `series "sidecar": x[1] = -1 is not positive, so it cannot go on the log x axis`},
		{"log y band", line(ChartOptions{LogY: true}, with(func(s *Series) { s.Lo, s.Hi = []float64{0, 1}, []float64{5, 5} })), `series "sidecar": lo[0] = 0 is not positive, so it cannot go on the log y axis`},
		// Zero is fine on a linear axis next to a log one.
		{"log x zero y", line(ChartOptions{LogX: true}, with(func(s *Series) { s.Y[0] = 0 })), ""},
		// Two legend entries alike, whatever the case.
		{"duplicate", line(ChartOptions{}, []Series{ok(), func() Series { s := ok(); s.Name = "Sidecar"; return s }()}), `series "Sidecar" appears twice (series[0] and series[1])`},
		// The spectrum's axis ends before 100 %.
		{"spectrum 100", spectrum(ChartOptions{}, withSpec(func(s *SpectrumSeries) { s.Percentiles[2] = 100 })), `series "ambient": percentiles[2] = 100 is outside 0..99.9999999`},
		{"spectrum negative", spectrum(ChartOptions{}, withSpec(func(s *SpectrumSeries) { s.Percentiles[0] = -1 })), `series "ambient": percentiles[0] = -1 is outside`},
		{"spectrum nan", spectrum(ChartOptions{}, withSpec(func(s *SpectrumSeries) { s.Percentiles[0] = math.NaN() })), `series "ambient": percentiles[0] = NaN is outside`},
		// The spectrum names its own fields.
		{"spectrum lengths", spectrum(ChartOptions{}, withSpec(func(s *SpectrumSeries) { s.Values = s.Values[:2] })), `series "ambient": percentiles has 3 values but values has 2`},
		{"spectrum log y", spectrum(ChartOptions{LogY: true}, withSpec(func(s *SpectrumSeries) { s.Values[0] = 0 })), `series "ambient": values[0] = 0 is not positive, so it cannot go on the log y axis`},
		{"spectrum empty", spectrum(ChartOptions{}, nil), "no series to plot"},
		{"spectrum no points", spectrum(ChartOptions{}, withSpec(func(s *SpectrumSeries) { s.Percentiles, s.Values = nil, nil })), `series "ambient": no points`},
		// Output sizes out of range.
		{"png too small", render(func(c *Chart) error { _, err := c.PNG(50, 40); return err }), "png size 50×40 px is out of range"},
		{"svg too large", render(func(c *Chart) error { _, err := c.SVG(9000, 500); return err }), "svg size 9000×500 px is out of range"},
		// WriteFiles takes a name, not a path.
		{"file name with dir", render(func(c *Chart) error { return WriteFiles(t.TempDir(), "a/b", c) }), `chart file name "a/b" must be a plain name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want one containing %q", tt.want)
			}
			if msg := err.Error(); !strings.Contains(msg, tt.want) || strings.Contains(msg, "\n") {
				t.Errorf("error = %q, want one line containing %q", msg, tt.want)
			}
		})
	}
}

func line(opts ChartOptions, s []Series) func() error {
	return func() error { _, err := LineChart(opts, s); return err }
}

func spectrum(opts ChartOptions, s []SpectrumSeries) func() error {
	return func() error { _, err := Spectrum(opts, s); return err }
}

func render(f func(*Chart) error) func() error {
	return func() error {
		c, err := LineChart(ChartOptions{}, []Series{{Name: "none", X: []float64{1, 2}, Y: []float64{1, 2}}})
		if err != nil {
			return err
		}
		return f(c)
	}
}

func TestStyles(t *testing.T) {
	all := []string{"none", "sidecar", "ambient", "waypoint", "linkerd"}
	fixed := stylesFor(all)
	// A mesh keeps its style whatever its position and case.
	rev := slices.Clone(all)
	slices.Reverse(rev)
	for i, st := range stylesFor(rev) {
		if want := fixed[len(all)-1-i]; st.color != want.color || !slices.Equal(st.dashes, want.dashes) {
			t.Errorf("%s: style depends on series order", rev[i])
		}
	}
	if got := stylesFor([]string{" Sidecar "})[0].color; got != fixed[1].color {
		t.Errorf("Sidecar colour %v, want sidecar's %v", got, fixed[1].color)
	}
	// Meshes differ in colour, dash and glyph, so greyscale print keeps
	// them apart.
	for i := range fixed {
		for j := range i {
			a, b := fixed[i], fixed[j]
			if a.color == b.color || slices.Equal(a.dashes, b.dashes) || a.glyph == b.glyph {
				t.Errorf("%s and %s share a colour, dash or glyph", all[i], all[j])
			}
		}
	}
	// Other names get distinct styles in order, around the fixed ones.
	st := stylesFor([]string{"x", "none", "y"})
	if st[0].color == st[2].color || st[0].color == st[1].color {
		t.Errorf("other names share colours: %v", st)
	}
	if stylesFor([]string{"x", "none", "y"})[2].color != st[2].color {
		t.Errorf("styles are not stable")
	}
}

func TestLogTicks(t *testing.T) {
	labels := func(min, max float64) []string {
		var out []string
		for _, tk := range (logTicks{}).Ticks(min, max) {
			if tk.Label != "" && tk.Value >= min && tk.Value <= max {
				out = append(out, tk.Label)
			}
		}
		return out
	}
	for _, tt := range []struct {
		min, max float64
		want     []string
	}{
		// Several decades: powers of ten only.
		{1, 1000, []string{"1", "10", "100", "1000"}},
		{0.03, 20, []string{"0.1", "1", "10"}},
		// One decade inside: 1-2-5 as well.
		{0.5, 3, []string{"0.5", "1", "2"}},
		// No decade, one 1-2-5 value: every multiple.
		{2.1, 4.9, []string{"3", "4"}},
		// Labels are exact decimals, not 0.30000000000000004.
		{0.25, 0.45, []string{"0.3", "0.4"}},
		// Large values stay plain up to ten million.
		{1e5, 1e7, []string{"100000", "1000000", "1e+07"}},
	} {
		if got := labels(tt.min, tt.max); !slices.Equal(got, tt.want) {
			t.Errorf("labels(%g, %g) = %q, want %q", tt.min, tt.max, got, tt.want)
		}
	}
}

func TestLinearTicks(t *testing.T) {
	for _, tt := range []struct {
		min, max float64
		want     []string
	}{
		// Round steps, every label with the decimals the step needs.
		{0, 8.2, []string{"0", "2", "4", "6", "8"}},
		{0, 760, []string{"0", "200", "400", "600"}},
		{0, 1.3, []string{"0.00", "0.25", "0.50", "0.75", "1.00", "1.25"}},
		{0.42, 0.97, []string{"0.5", "0.6", "0.7", "0.8", "0.9"}},
		// Across zero: no "-0".
		{-0.2, 0.3, []string{"-0.2", "-0.1", "0.0", "0.1", "0.2", "0.3"}},
		// Large and tiny ranges.
		{250, 8000, []string{"2000", "4000", "6000", "8000"}},
		{1e-6, 6e-6, []string{"0.000001", "0.000002", "0.000003", "0.000004", "0.000005", "0.000006"}},
		// An empty range gives no ticks rather than looping.
		{1, 1, nil},
	} {
		var got []string
		for _, tk := range (linearTicks{}).Ticks(tt.min, tt.max) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("labels(%g, %g) = %q, want %q", tt.min, tt.max, got, tt.want)
		}
	}
}

func TestSpectrumAxis(t *testing.T) {
	for _, tt := range []struct {
		k    int
		want string
	}{{0, "0%"}, {1, "90%"}, {2, "99%"}, {3, "99.9%"}, {5, "99.999%"}, {7, "99.99999%"}} {
		if got := percentileLabel(tt.k); got != tt.want {
			t.Errorf("percentileLabel(%d) = %q, want %q", tt.k, got, tt.want)
		}
	}
	for _, tt := range []struct {
		maxPct float64
		want   int
	}{
		{0, 5},          // at least 0%..99.999%
		{99.999, 5},     // exactly the last default decade
		{99.9991, 6},    // just past it
		{99.9999, 6},    //
		{99.9999999, 9}, // the largest accepted
	} {
		if got := spectrumDecades(tt.maxPct); got != tt.want {
			t.Errorf("spectrumDecades(%g) = %d, want %d", tt.maxPct, got, tt.want)
		}
	}
}

// TestRenderSamples renders the charts a report has, for a person to look
// at: into t.TempDir(), or into $MESHBENCH_PLOT_SAMPLES when set (which
// keeps them after the test).
func TestRenderSamples(t *testing.T) {
	dir := os.Getenv("MESHBENCH_PLOT_SAMPLES")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	latency, err := LineChart(ChartOptions{
		Title: "p99 latency vs request rate (static 615 B, HTTP/1.1)", XLabel: "Request rate (req/s)", YLabel: "p99 latency (ms)", LogX: true,
	}, latencyVsRate(true))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := Spectrum(ChartOptions{Title: "Latency spectrum at 2000 req/s"}, spectrumInput(true))
	if err != nil {
		t.Fatal(err)
	}
	cpu, err := LineChart(ChartOptions{Title: "Data-plane CPU vs replicas", XLabel: "Replicas", YLabel: "CPU (millicores)"}, manySeries())
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*Chart{"latency-vs-rate": latency, "spectrum": spec, "cpu-vs-replicas": cpu} {
		if err := WriteFiles(dir, name, c); err != nil {
			t.Fatal(err)
		}
		for _, ext := range []string{".png", ".svg"} {
			if fi, err := os.Stat(filepath.Join(dir, name+ext)); err != nil || fi.Size() == 0 {
				t.Errorf("%s%s not written: %v", name, ext, err)
			}
		}
	}
	t.Logf("sample charts: %s", filepath.Join(dir, "latency-vs-rate.png"))
}

// TestCaption: a chart's caption is drawn under it, wrapped at word
// boundaries to the chart's width, every word kept in order; a chart
// without one draws none of its words.
func TestCaption(t *testing.T) {
	caption := "Median over the valid runs of each configuration; band: the bootstrap interval of the median at 95% confidence, outlined in the series' colour and dash; with 5 runs or fewer it is the range of the runs."
	with, err := LineChart(ChartOptions{Title: "t", Caption: caption}, latencyVsRate(true))
	if err != nil {
		t.Fatal(err)
	}
	doc := mustSVG(t, with)
	var words []string
	lines := 0
	for _, tx := range doc.texts {
		if strings.HasPrefix(caption, tx.text) || strings.Contains(caption, " "+tx.text+" ") || strings.HasSuffix(caption, tx.text) {
			if strings.Contains(tx.text, " ") {
				words = append(words, strings.Fields(tx.text)...)
				lines++
			}
		}
	}
	if strings.Join(words, " ") != caption {
		t.Errorf("caption drawn as %q, want %q", strings.Join(words, " "), caption)
	}
	if lines < 2 {
		t.Errorf("caption of %d characters on %d line(s) at 800 px: want it wrapped", len(caption), lines)
	}
	without, err := LineChart(ChartOptions{Title: "t"}, latencyVsRate(true))
	if err != nil {
		t.Fatal(err)
	}
	if mustSVG(t, without).hasText("Median") {
		t.Error("a chart without a caption drew one")
	}
}

// TestLongTitleWrapped: a title wider than the plot (an over-time chart's
// cell ID) is drawn in lines, the ID broken after its hyphens, each line
// no wider than the plot, nothing of it lost; a short title is one line.
func TestLongTitleWrapped(t *testing.T) {
	title := "achieved rate over time (ambient-static-r200-x2-p0-http-pod-mtls-fnoisy-neighbour-1500m-at3s-for3s-rep1)"
	c, err := LineChart(ChartOptions{Title: title, XLabel: "s", YLabel: "answers per second"}, latencyVsRate(false))
	if err != nil {
		t.Fatal(err)
	}
	doc := mustSVG(t, c)
	// The title's lines are the texts in the first line's font.
	var got []string
	font := ""
	for _, tx := range doc.texts {
		if font == "" && strings.HasPrefix(title, tx.text) && len(tx.text) > 10 {
			font = fmt.Sprint(tx.style)
		}
		if font != "" && fmt.Sprint(tx.style) == font {
			got = append(got, tx.text)
		}
	}
	if len(got) < 2 || strings.ReplaceAll(strings.Join(got, " "), "- ", "-") != title {
		t.Fatalf("title drawn as %q, want it in lines that join back to %q", got, title)
	}
	sty := c.p.Title.TextStyle
	width := sty.Width("achieved rate over time (ambient-static-r200-x2-p0-")
	for _, l := range wrapTitle(sty, title, width) {
		if sty.Width(l) > width {
			t.Errorf("line %q wider than %v", l, width)
		}
	}
	short := "p99 latency vs request rate"
	if lines := wrapTitle(sty, short, sty.Width(short)); len(lines) != 1 || lines[0] != short {
		t.Errorf("a title that fits: %q", lines)
	}
}
