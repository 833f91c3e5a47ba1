package plot

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	gplot "gonum.org/v1/plot"
)

// logTicks marks a log axis: a labelled tick at every power of ten and an
// unlabelled one at each multiple in between. When fewer than two powers of
// ten fall inside the axis range it also labels the 2× and 5× multiples, and
// if that still gives fewer than two labels, every multiple, so a range
// narrower than a decade is never left with one label or none.
type logTicks struct{}

var _ gplot.Ticker = logTicks{}

// Ticks implements gplot.Ticker. min and max must be positive.
func (logTicks) Ticks(min, max float64) []gplot.Tick {
	if !(min > 0) || !(max >= min) || math.IsInf(max, 0) {
		return nil
	}
	lo := int(math.Floor(math.Log10(min)))
	hi := int(math.Ceil(math.Log10(max)))
	type cand struct {
		v float64
		m int // multiple of the power of ten, 1..9
	}
	var cands []cand
	for e := lo; e <= hi; e++ {
		for m := 1; m <= 9; m++ {
			if m > 1 && e == hi {
				break
			}
			cands = append(cands, cand{decimal(m, e), m})
		}
	}
	inRange := func(v float64) bool { return v >= min*(1-1e-9) && v <= max*(1+1e-9) }
	labelled := func(keep func(m int) bool) int {
		n := 0
		for _, c := range cands {
			if keep(c.m) && inRange(c.v) {
				n++
			}
		}
		return n
	}
	keep := func(m int) bool { return m == 1 }
	if labelled(keep) < 2 {
		keep = func(m int) bool { return m == 1 || m == 2 || m == 5 }
		if labelled(keep) < 2 {
			keep = func(int) bool { return true }
		}
	}
	ticks := make([]gplot.Tick, 0, len(cands))
	for _, c := range cands {
		t := gplot.Tick{Value: c.v}
		if keep(c.m) {
			t.Label = formatTick(c.v)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// decimal returns m×10^e as the float64 nearest to it (m*math.Pow10(e) can
// be off by an ulp, and that shows in labels as 0.30000000000000004).
func decimal(m, e int) float64 {
	v, err := strconv.ParseFloat(fmt.Sprintf("%de%d", m, e), 64)
	if err != nil {
		return float64(m) * math.Pow10(e)
	}
	return v
}

// formatTick writes a tick value in plain decimal notation from 0.0001 up to
// ten million, and in exponent notation outside that.
func formatTick(v float64) string {
	if a := math.Abs(v); v == 0 || (a >= 1e-4 && a < 1e7) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// The spectrum's x axis. A percentile q (0..100) sits at 1/(1−q/100), on a
// log scale, so 0%, 90%, 99%, 99.9%… are evenly spaced decades.

// minSpectrumDecades is the fewest decades the spectrum's x axis shows:
// 0% to 99.999%, so spectra of different runs line up.
const minSpectrumDecades = 5

// maxSpectrumPercentile is the largest percentile the spectrum accepts. 100
// itself lies at infinity; 99.9999999 is nine nines, beyond any histogram a
// run records.
const maxSpectrumPercentile = 99.9999999

// spectrumX maps a percentile (0..100, less than 100) to the x axis.
func spectrumX(percentile float64) float64 {
	return 1 / (1 - percentile/100)
}

// spectrumDecades returns how many decades of the x axis are needed to show
// percentiles up to maxPercentile, at least minSpectrumDecades.
func spectrumDecades(maxPercentile float64) int {
	n := int(math.Ceil(math.Log10(spectrumX(maxPercentile)) - 1e-6))
	return max(n, minSpectrumDecades)
}

// spectrumTicks returns the x ticks of a spectrum with n decades: 0%, 90%,
// 99%, 99.9%, … one per decade.
func spectrumTicks(n int) gplot.ConstantTicks {
	ticks := make(gplot.ConstantTicks, 0, n+1)
	for k := 0; k <= n; k++ {
		ticks = append(ticks, gplot.Tick{Value: math.Pow10(k), Label: percentileLabel(k)})
	}
	return ticks
}

// percentileLabel is the label of the k-th decade of the spectrum axis,
// the percentile 100×(1−10^−k): "0%", "90%", "99%", "99.9%", ….
func percentileLabel(k int) string {
	switch k {
	case 0:
		return "0%"
	case 1:
		return "90%"
	case 2:
		return "99%"
	}
	return "99." + strings.Repeat("9", k-2) + "%"
}

// linearTicks marks a linear axis with 3.5 to 7 intervals of a round step
// (1, 2, 2.5 or 5 times a power of ten), labelled with the fewest decimals
// the step needs, the same for every label ("0", "0.5", "1.0" is not
// written; "0.0", "0.5", "1.0" is), and an unlabelled tick halfway between.
type linearTicks struct{}

var _ gplot.Ticker = linearTicks{}

// linearIntervals is the number of intervals linearTicks aims for.
const linearIntervals = 5

// Ticks implements gplot.Ticker.
func (linearTicks) Ticks(min, max float64) []gplot.Tick {
	if !(max > min) || math.IsInf(min, 0) || math.IsInf(max, 0) {
		return nil
	}
	step, decimals := niceStep((max - min) / linearIntervals)
	eps := step * 1e-9
	var ticks []gplot.Tick
	for k := math.Ceil(2 * (min - eps) / step); ; k++ {
		v := (k / 2) * step
		if v > max+eps {
			break
		}
		if v < min-eps {
			continue
		}
		if math.Abs(v) < eps {
			v = 0 // not "-0"
		}
		t := gplot.Tick{Value: v}
		if math.Mod(k, 2) == 0 {
			t.Label = strconv.FormatFloat(v, 'f', decimals, 64)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// niceStep returns the round step nearest to raw on a log scale — 1, 2, 2.5
// or 5 times a power of ten — so an axis gets between about 3.5 and 7
// intervals, and the decimals a label of a multiple of that step needs.
func niceStep(raw float64) (step float64, decimals int) {
	exp := int(math.Floor(math.Log10(raw)))
	f := raw / math.Pow10(exp)
	best, bestDist := 1.0, math.Inf(1)
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if d := math.Abs(math.Log(f / m)); d < bestDist {
			best, bestDist = m, d
		}
	}
	extra := 0
	switch best {
	case 2.5:
		extra = 1
	case 10:
		best, exp = 1, exp+1
	}
	return best * math.Pow10(exp), max(0, extra-exp)
}
