package latency

import (
	"fmt"
	"io"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// LogInterval is one interval of an HdrHistogram interval log: the
// histogram r of the values whose events ended in [Start, End), tagged
// (latency, service, lag) so one log holds several series.
type LogInterval struct {
	Start, End time.Time
	Tag        string // no comma, space or line break
	R          *Compact
}

// WriteIntervalLog writes HdrHistogram's interval log (.hlog, format 1.3)
// with hdrhistogram-go's writer: a comment, the start time, the legend and
// one line per interval (start and length in seconds since start, the
// interval's max in milliseconds, the compressed histogram in
// nanoseconds). HdrHistogram's Java, Python and Go readers and its
// plotters (HistogramLogAnalyzer) read it.
func WriteIntervalLog(w io.Writer, start time.Time, comment string, ivs []LogInterval) error {
	lw := hdr.NewHistogramLogWriter(w)
	ms := start.UnixMilli()
	lw.SetBaseTime(ms)
	if err := lw.OutputLogFormatVersion(); err != nil {
		return err
	}
	if comment != "" {
		if err := lw.OutputComment(comment); err != nil {
			return err
		}
	}
	if err := lw.OutputStartTime(ms); err != nil {
		return err
	}
	if err := lw.OutputBaseTime(ms); err != nil {
		return err
	}
	if err := lw.OutputLegend(); err != nil {
		return err
	}
	for _, iv := range ivs {
		h, err := iv.R.Packed()
		if err != nil {
			return fmt.Errorf("interval log: %w", err)
		}
		h.SetTag(iv.Tag)
		h.SetStartTimeMs(iv.Start.UnixMilli())
		h.SetEndTimeMs(iv.End.UnixMilli())
		if err := lw.OutputIntervalPackedHistogram(h); err != nil {
			return fmt.Errorf("interval log: %w", err)
		}
	}
	return nil
}
