package plot

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// TestPanels: one panel per figure with a point, a panel without any left
// out, every category named under each panel, and bad points refused with
// the panel and category named.
func TestPanels(t *testing.T) {
	nan := math.NaN()
	meshes := []string{"none", "sidecar", "ambient", "waypoint", "linkerd"}
	pts := func(v ...float64) []Point {
		var out []Point
		for _, x := range v {
			if math.IsNaN(x) {
				out = append(out, Point{Missing: true})
				continue
			}
			out = append(out, Point{Value: x, Lo: x * 0.9, Hi: x * 1.1})
		}
		return out
	}
	c, err := Panels(ChartOptions{Title: "static, 50 rps, 1 replica", Caption: "dots and bars"}, meshes, []Panel{
		{YLabel: "p50 latency (ms)", Points: pts(0.3, 1.2, 0.8, 1.1, 0.9)},
		{YLabel: "data-plane CPU (mCPU)", Points: pts(nan, 60, 20, 45, 30)},
		{YLabel: "nothing", Points: pts(nan, nan, nan, nan, nan)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.PanelNames(); !slices.Equal(got, []string{"p50 latency (ms)", "data-plane CPU (mCPU)"}) {
		t.Errorf("panels %v", got)
	}
	svg, err := c.SVG(760, 330)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range meshes {
		if n := strings.Count(string(svg), ">"+m+"</text>"); n != 2 {
			t.Errorf("%s named %d times, want under each of 2 panels", m, n)
		}
	}
	if _, err := c.PNG(760, 330); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		name   string
		panels []Panel
		want   string
	}{
		{"count", []Panel{{YLabel: "p50", Points: pts(1)}}, "1 points for 5 categories"},
		{"inverted", []Panel{{YLabel: "p50", Points: []Point{{Value: 1, Lo: 2, Hi: 0.5}, {Missing: true}, {Missing: true}, {Missing: true}, {Missing: true}}}}, "none: value 1 [2, 0.5]"},
		{"half a bound", []Panel{{YLabel: "p50", Points: []Point{{Value: 1, Lo: nan, Hi: 2}, {Missing: true}, {Missing: true}, {Missing: true}, {Missing: true}}}}, "none"},
		{"all missing", []Panel{{YLabel: "p50", Points: pts(nan, nan, nan, nan, nan)}}, "no panel has a point"},
	} {
		if _, err := Panels(ChartOptions{}, meshes, bad.panels); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: err %v, want %q", bad.name, err, bad.want)
		}
	}
}
