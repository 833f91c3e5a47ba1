package report

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// planFixtures are the real plan results directories of the analysis
// tests (see internal/analysis/analysis_test.go): plan-small is a complete
// run, plan-invalid has invalid, failed and pending cells.
var planFixtures = []string{"plan-small", "plan-invalid"}

// analyzeFixture reads a fixture and analyses it as `meshbench report`
// does with its defaults, so the goldens are what the command writes.
func analyzeFixture(t *testing.T, name string) *analysis.Analysis {
	t.Helper()
	p, err := analysis.ReadPlan(filepath.Join("..", "analysis", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return analysis.Analyze(p, analysis.Options{Level: 0.95, Seed: uint64(p.Manifest.Seed)})
}

// TestPlanGolden pins the text report and both CSVs of each fixture.
func TestPlanGolden(t *testing.T) {
	for _, name := range planFixtures {
		t.Run(name, func(t *testing.T) {
			a := analyzeFixture(t, name)
			for _, r := range []struct {
				golden string
				render func(*bytes.Buffer, *analysis.Analysis) error
			}{
				{name + ".txt.golden", func(b *bytes.Buffer, a *analysis.Analysis) error { return PlanText(b, a) }},
				{name + ".latency.csv.golden", func(b *bytes.Buffer, a *analysis.Analysis) error { return NighthawkCSV(b, a) }},
				{name + ".figures.csv.golden", func(b *bytes.Buffer, a *analysis.Analysis) error { return TidyCSV(b, a) }},
			} {
				var b bytes.Buffer
				if err := r.render(&b, a); err != nil {
					t.Fatal(err)
				}
				testutil.Golden(t, r.golden, b.Bytes())
			}
		})
	}
}

// TestPlanTextInvalid: the invalid fixture's text says what is missing,
// lists every invalid and failed cell, and counts only valid runs.
func TestPlanTextInvalid(t *testing.T) {
	a := analyzeFixture(t, "plan-invalid")
	var b bytes.Buffer
	if err := PlanText(&b, a); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{
		"meshbench plan: 9 cells (7 valid)",
		"INCOMPLETE: 1 of 12 cells not run yet",
		"sidecar (1/2)",
		"sidecar-static-r50-x1-p0-http-pod-mtls-rep2: target rate not reached: sent 94 of 100 scheduled",
		"sidecar-static-r200-x1-p0-http-pod-mtls-rep2: teardown: server-0 sidecar: still running after 15s",
		"ambient-static-r200-x1-p0-http-pod-mtls-rep2: failed: prepare: listen tcp",
		"ambient-static-r50-x1-p0-http-pod-mtls-rep2: failed: load generator: exit status 2",
		"(one run on a side, no interval)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks %q:\n%s", want, text)
		}
	}
}

// TestNighthawkCSVMissingFigure: a mesh without a latency figure (no
// answered request in any run) has empty cells, not a latency of 0.
func TestNighthawkCSVMissingFigure(t *testing.T) {
	p := &analysis.Plan{Failed: map[string]string{}}
	for _, mesh := range []string{"none", "sidecar"} {
		f := map[string]float64{analysis.AchievedRate: 50}
		if mesh == "none" {
			f[analysis.LatencyP50], f[analysis.LatencyP90], f[analysis.LatencyP99], f[analysis.LatencyMax] = 1, 2, 3, 4
		}
		p.Cells = append(p.Cells, &analysis.Cell{ID: mesh, Valid: true, Figures: f,
			Config: analysis.Config{Mesh: mesh, App: "static", Rate: "50", Replicas: 1, Protocol: "http", MTLS: true}})
	}
	var b bytes.Buffer
	if err := NighthawkCSV(&b, analysis.Analyze(p, analysis.Options{})); err != nil {
		t.Fatal(err)
	}
	want := `"# static, 50 rps, 1 replica",none,sidecar
p50,1,
p90,2,
p99,3,
max,4,
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// legend is the series names of a rendered chart: the texts of its SVG
// that are mesh names (ticks and titles are not).
func legend(t *testing.T, svg []byte, meshes []string) []string {
	t.Helper()
	var out []string
	for _, m := range regexp.MustCompile(`>([^<>]*)</text>`).FindAllSubmatch(svg, -1) {
		if s := string(m[1]); slices.Contains(meshes, s) {
			out = append(out, s)
		}
	}
	return out
}

// chartFigures maps a chart's name suffix to the figure it draws.
var chartFigures = map[string]string{
	"p50":    analysis.LatencyP50,
	"p95":    analysis.LatencyP95,
	"p99":    analysis.LatencyP99,
	"dp-cpu": analysis.CPUPrefix + "data-plane",
	"dp-mem": analysis.MemPrefix + "data-plane",
}

// TestPlanCharts: the charts' names and titles (golden), and one series per
// mesh with data: every mesh with a valid group and the figure in the
// chart's scenarios, in display order.
func TestPlanCharts(t *testing.T) {
	for _, name := range planFixtures {
		t.Run(name, func(t *testing.T) {
			a := analyzeFixture(t, name)
			charts, err := PlanCharts(a)
			if err != nil {
				t.Fatal(err)
			}
			var list strings.Builder
			for _, c := range charts {
				if c.Scenario != "" {
					checkSummaryChart(t, a, c)
					fmt.Fprintf(&list, "%s\t%s\t%s\n", c.Name, c.Title, c.Scenario)
					continue
				}
				svg, err := c.Chart.SVG(800, 500)
				if err != nil {
					t.Fatal(err)
				}
				got := legend(t, svg, a.Meshes)
				fmt.Fprintf(&list, "%s\t%s\t%s\n", c.Name, c.Title, strings.Join(got, ","))
				if !bytes.Contains(svg, []byte(html.EscapeString(c.Title))) {
					t.Errorf("%s: title %q not drawn", c.Name, c.Title)
				}
				// Every plot says what its lines and band are.
				if c.Chart.Caption() == "" || !strings.Contains(c.Chart.Caption(), "band") && !strings.Contains(c.Chart.Caption(), "Band") {
					t.Errorf("%s: caption %q does not say what the band is", c.Name, c.Chart.Caption())
				}

				// Which meshes have data: computed from the groups.
				parts := strings.SplitN(c.Name, "-", 3) // rate-N-FIG, spectrum-N
				var want []string
				for _, mesh := range a.Meshes {
					has := false
					for i, s := range a.Scenarios {
						g := a.Group(mesh, s)
						if g == nil || g.Valid == 0 {
							continue
						}
						switch parts[0] {
						case "spectrum":
							has = has || parts[1] == fmt.Sprint(i+1)
						case "rate":
							iv, ok := g.Figures[chartFigures[parts[2]]]
							has = has || ok && !math.IsNaN(iv.Estimate)
						default:
							t.Errorf("unexpected chart %s", c.Name)
						}
					}
					if has {
						want = append(want, mesh)
					}
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s: series %v, want the meshes with data %v", c.Name, got, want)
				}
			}
			testutil.Golden(t, name+".charts.golden", []byte(list.String()))
		})
	}
}

// checkSummaryChart: a scenario's summary chart draws its scenario, names
// every mesh with valid cells there (on each of its four panels) and no
// other, and its caption says what the bars are and, where the runs are
// few, that they cover less than the nominal level.
func checkSummaryChart(t *testing.T, a *analysis.Analysis, c NamedChart) {
	t.Helper()
	svg, err := c.Chart.SVG(summaryWidthPx, summaryHeightPx)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(svg, []byte(html.EscapeString(c.Scenario))) {
		t.Errorf("%s: scenario %q not drawn", c.Name, c.Scenario)
	}
	var want []string
	fewest := 0
	for _, s := range a.Scenarios {
		if s.String() != c.Scenario {
			continue
		}
		for _, m := range a.Meshes {
			if g := a.Group(m, s); g != nil && g.Valid > 0 {
				want = append(want, m)
				if fewest == 0 || g.Valid < fewest {
					fewest = g.Valid
				}
			}
		}
	}
	got := legend(t, svg, a.Meshes)
	counts := map[string]int{}
	for _, m := range got {
		counts[m]++
	}
	panels := len(c.Chart.PanelNames())
	for _, m := range a.Meshes {
		if w := slices.Contains(want, m); (counts[m] == panels && panels > 0) != w {
			t.Errorf("%s: mesh %s named %d times on %d panels (want it on every panel: %v)", c.Name, m, counts[m], panels, w)
		}
	}
	cap := c.Chart.Caption()
	if !strings.Contains(cap, "interval (bar") {
		t.Errorf("%s: caption %q does not say what the bars are", c.Name, cap)
	}
	if fewest > 1 && fewest < 6 && !strings.Contains(cap, "Intervals below the nominal 95%") {
		t.Errorf("%s: caption %q does not say its intervals from %d runs cover less than 95%%", c.Name, cap, fewest)
	}
}

// renderHTML renders a fixture's HTML report and its charts' SVGs.
func renderHTML(t *testing.T, a *analysis.Analysis) ([]byte, []NamedChart) {
	t.Helper()
	charts, err := PlanCharts(a)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := PlanHTML(&b, a, charts); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), charts
}

// walk calls fn for every element node.
func walk(n *html.Node, fn func(*html.Node)) {
	if n.Type == html.ElementNode {
		fn(n)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, fn)
	}
}

// nextElement is the element after n (an empty node if none).
func nextElement(n *html.Node) *html.Node {
	for n = n.NextSibling; n != nil; n = n.NextSibling {
		if n.Type == html.ElementNode {
			return n
		}
	}
	return &html.Node{}
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func text(n *html.Node) string {
	var b strings.Builder
	var f func(*html.Node)
	f = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			f(c)
		}
	}
	f(n)
	return b.String()
}

// TestPlanHTML checks the HTML report's structure: every section, one SVG
// per chart (the chart's own SVG, inline), one table per scenario plus the
// environment, nothing fetched from elsewhere, the invalid and failed
// cells listed; then pins the page with the SVGs cut out (so a gonum
// update does not break it).
func TestPlanHTML(t *testing.T) {
	for _, name := range planFixtures {
		t.Run(name, func(t *testing.T) {
			a := analyzeFixture(t, name)
			page, charts := renderHTML(t, a)
			doc, err := html.Parse(bytes.NewReader(page))
			if err != nil {
				t.Fatal(err)
			}
			ids := map[string]*html.Node{}
			counts := map[string]int{}
			var sectionOrder []string
			walk(doc, func(n *html.Node) {
				counts[n.Data]++
				if id, ok := attr(n, "id"); ok {
					if ids[id] != nil {
						t.Errorf("id %q twice", id)
					}
					ids[id] = n
					sectionOrder = append(sectionOrder, id)
				}
				for _, a := range n.Attr {
					v := strings.ToLower(strings.TrimSpace(a.Val))
					switch {
					case a.Key == "src":
						t.Errorf("<%s src=%q>: the report must not load anything", n.Data, a.Val)
					case (a.Key == "href" || strings.HasSuffix(a.Key, ":href")) &&
						(strings.HasPrefix(v, "http") || strings.HasPrefix(v, "//")):
						t.Errorf("<%s %s=%q>: external reference", n.Data, a.Key, a.Val)
					}
				}
				switch n.Data {
				case "link", "script", "img", "iframe", "object", "embed", "image", "use":
					t.Errorf("<%s> in a self-contained report", n.Data)
				}
			})
			if want := []string{"verdicts", "tables", "plots", "invalid", "text", "plan", "environment", "method"}; !slices.Equal(sectionOrder, want) {
				t.Errorf("sections %v, want %v", sectionOrder, want)
			}
			if counts["svg"] != len(charts) || len(charts) == 0 {
				t.Errorf("%d <svg>, want one per chart (%d)", counts["svg"], len(charts))
			}
			if counts["table"] != len(a.Scenarios)+1 {
				t.Errorf("%d <table>, want %d scenarios + environment", counts["table"], len(a.Scenarios))
			}
			if bytes.Contains(page, []byte("@import")) || bytes.Contains(page, []byte("url(")) {
				t.Error("the style fetches something")
			}

			// Every chart's SVG is inlined as rendered; cut them out for the golden.
			golden := page
			for _, c := range charts {
				w, h := 800, 500
				if c.Scenario != "" {
					w, h = summaryWidthPx, summaryHeightPx
				}
				svg, err := c.Chart.SVG(w, h)
				if err != nil {
					t.Fatal(err)
				}
				if bytes.Count(golden, svg) != 1 {
					t.Fatalf("chart %s: its SVG is not in the page exactly once", c.Name)
				}
				golden = bytes.Replace(golden, svg, []byte("<svg><!-- "+c.Name+" --></svg>"), 1)
			}
			if bytes.Contains(golden, []byte("Plotinum")) {
				t.Error("SVG left after cutting out every chart")
			}
			testutil.Golden(t, name+".html.golden", golden)

			// The invalid section: the listed cells, or None.
			var listed []string
			switch list := nextElement(ids["invalid"]); {
			case list.Data == "ul":
				for li := range list.ChildNodes() {
					listed = append(listed, text(li))
				}
			case list.Data != "p" || text(list) != "None.":
				t.Errorf("invalid section holds <%s>%s", list.Data, text(list))
			}
			var want []string
			if name == "plan-invalid" {
				want = []string{
					"sidecar-static-r50-x1-p0-http-pod-mtls-rep2: target rate not reached: sent 94 of 100 scheduled",
					"sidecar-static-r200-x1-p0-http-pod-mtls-rep2: teardown: server-0 sidecar: still running after 15s",
					"ambient-static-r200-x1-p0-http-pod-mtls-rep2: failed: prepare: listen tcp 127.0.2.10:8080: bind: address already in use",
					"ambient-static-r50-x1-p0-http-pod-mtls-rep2: failed: load generator: exit status 2: panic: boom",
				}
			}
			if !slices.Equal(listed, want) {
				t.Errorf("invalid cells listed %q, want %q", listed, want)
			}
			if name == "plan-invalid" && !bytes.Contains(page, []byte("Incomplete: 1 of 12 cells not run yet.")) {
				t.Error("incomplete plan not said")
			}
			// The text section is the text report.
			var txt bytes.Buffer
			if err := PlanText(&txt, a); err != nil {
				t.Fatal(err)
			}
			if pre := nextElement(ids["text"]); pre.Data != "pre" || text(pre) != txt.String() {
				t.Error("the text section is not the text report")
			}
		})
	}
}

// TestPlanUnreadableCell: a finished cell whose load.json is cut short is
// listed on its own (cell, file, reason) in the text and the HTML, the
// report says it is partial, and the other cells are still reported.
func TestPlanUnreadableCell(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "analysis", "testdata", "plan-small"))); err != nil {
		t.Fatal(err)
	}
	const id = "none-static-r50-x1-p0-http-pod-mtls-rep1"
	if err := os.Truncate(filepath.Join(results.CellDir(dir, id), results.LoadFile), 64); err != nil {
		t.Fatal(err)
	}
	p, err := analysis.ReadPlan(dir)
	if err != nil {
		t.Fatalf("one truncated cell sank the plan: %v", err)
	}
	a := analysis.Analyze(p, analysis.Options{Level: 0.95, Seed: uint64(p.Manifest.Seed)})
	var b bytes.Buffer
	if err := PlanText(&b, a); err != nil {
		t.Fatal(err)
	}
	txt := b.String()
	for _, want := range []string{
		"PARTIAL: 1 finished cell(s) cannot be read and are left out (listed at the end)",
		"\nUnreadable cells (PARTIAL: left out of every figure):\n  " + id + ": load.json: ",
		"unexpected EOF",
		"== ", // the readable cells' scenarios are still there
	} {
		if !strings.Contains(txt, want) {
			t.Errorf("text report lacks %q:\n%s", want, txt)
		}
	}
	page, _ := renderHTML(t, a)
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var head *html.Node
	walk(doc, func(n *html.Node) {
		if v, ok := attr(n, "id"); ok && v == "unreadable" {
			head = n
		}
	})
	if head == nil {
		t.Fatal("no unreadable section in the HTML")
	}
	if p := nextElement(head); p.Data != "p" || !strings.Contains(text(p), "partial") {
		t.Errorf("unreadable section starts with <%s>%s", p.Data, text(p))
	}
	if !bytes.Contains(page, []byte("<li class=\"bad\">"+id+": load.json: ")) {
		t.Error("the unreadable cell is not listed in the HTML")
	}
}

// TestSpectrumCutWhereSamplesEnd: the small fixture's cells hold 100
// answers at 50 rps and 400 at 200 rps (2 s each). 100 resolve p99 but
// not p99.5 (latency.Resolves); 400 resolve p99.5 but not p99.9: each
// spectrum ends there, where the uncut one ran to p99.999.
func TestSpectrumCutWhereSamplesEnd(t *testing.T) {
	a := analyzeFixture(t, "plan-small")
	want := map[string]float64{"50": 99, "200": 99.5}
	for _, s := range a.Scenarios {
		series := spectrumSeries(a, s)
		if len(series) == 0 {
			t.Fatalf("%s: no spectrum", s)
		}
		for _, ss := range series {
			if last := ss.Percentiles[len(ss.Percentiles)-1]; last != want[s.Rate] {
				t.Errorf("%s, %s: spectrum ends at p%g, want p%g", s, ss.Name, last, want[s.Rate])
			}
		}
	}
}
