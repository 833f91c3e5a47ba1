package plot

import (
	"math"
	"strings"
	"testing"
)

// TestStackedBars: a waterfall renders, and bad input is one error
// naming the layer.
func TestStackedBars(t *testing.T) {
	ok := []Layer{{Name: "client sidecar", Values: []float64{0.15, 0}}, {Name: "untimed", Values: []float64{0.3, 0.9}}}
	c, err := StackedBars(ChartOptions{Title: "t", YLabel: "ms"}, []string{"sidecar", "ambient"}, ok)
	if err != nil {
		t.Fatal(err)
	}
	if svg, err := c.SVG(400, 300); err != nil || !strings.Contains(string(svg), "client sidecar") {
		t.Errorf("svg: %v", err)
	}
	for _, tc := range []struct {
		name   string
		layers []Layer
		want   string
	}{
		{"no layers", nil, "no bars"},                                  // nothing to draw
		{"unnamed", []Layer{{Values: []float64{1, 2}}}, "has no name"}, // the legend needs a name
		{"twice", []Layer{{Name: "a", Values: []float64{1, 2}}, {Name: "a", Values: []float64{1, 2}}}, "appears twice"}, // names differ
		{"short", []Layer{{Name: "a", Values: []float64{1}}}, "1 values for 2 categories"},                              // one value per bar
		{"negative", []Layer{{Name: "a", Values: []float64{1, -1}}}, "allowed: 0 or more"},                              // a time is not negative
		{"NaN", []Layer{{Name: "a", Values: []float64{math.NaN(), 1}}}, "allowed: 0 or more"},                           // nor NaN
	} {
		if _, err := StackedBars(ChartOptions{}, []string{"x", "y"}, tc.layers); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
