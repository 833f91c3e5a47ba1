package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/report/liveview"
)

// The frame of `meshbench bench`'s live view: a few lines redrawn in place
// on a terminal while a plan runs. LiveFrame is a pure function of a
// LiveState; the CLI gathers the state and redraws.

// LiveDefaultWidth is the terminal width LiveFrame assumes when it is
// unknown, in columns.
const LiveDefaultWidth = 80

// LiveState is everything a frame of bench's live view shows.
type LiveState struct {
	// Index is the current cell's position in the plan, from 1 (0: no cell
	// started yet); Total the plan's cells.
	Index, Total int
	// Skipped is the number of cells finished before this run (resume).
	Skipped int
	// Done counts the cells that ended in this run; Invalid and Failed
	// those of them that are invalid or failed.
	Done, Invalid, Failed int
	// Elapsed is the time since the plan started.
	Elapsed time.Duration
	// ETA is the time left, estimated from the mean duration of the cells
	// that ended in this run; negative when unknown (none ended yet).
	ETA time.Duration
	// CellID and Phase are the current cell and its phase (lab phase
	// names: prepare, prepare/apps, idle, warmup, measure, drain, collect,
	// teardown); PhaseElapsed is the time spent in that phase so far.
	CellID       string
	Phase        string
	PhaseElapsed time.Duration
	// Rounds are the current cell's sampling rounds since its measured
	// window started, the drain's included (the seed tool records those
	// too); none yet while it starts.
	Rounds []sample.Round
	// Now is the frame's wall clock; Output the current cell's results
	// directory; Load the load's running figures (nil before it runs).
	Now    time.Time
	Output string
	Load   *liveview.Load
	// MetricsSource says where a cluster's figures come from; "" on the
	// lab (/proc).
	MetricsSource string
	// Last is the last cell that ended, nil before the first.
	Last *LiveLast
	// Finished is true for the final frame: the plan has ended or was
	// interrupted.
	Finished bool
	// Nodes are a cluster's node lines (metrics.k8s.io) over Rounds' span.
	Nodes []liveview.Node
	// WorkingSet: the rounds come from metrics.k8s.io (a cluster), whose
	// one memory figure is the working set, not RSS and PSS.
	WorkingSet bool
}

// LiveLast is a finished cell's headline figures.
type LiveLast struct {
	ID string
	// Error is set for a failed cell; Invalid lists why a cell is invalid.
	Error   string
	Invalid []string
	// HasLatency is false when the cell recorded no latency.
	HasLatency   bool
	P50Ns, P99Ns int64
	// SuccessRatio is from 0 to 1.
	SuccessRatio float64
	RatePerSec   float64
	// ControlPlane is who configured the cell's proxies, as its manifest
	// recorded it (analysis.CellControlPlane); "" without a record.
	ControlPlane string
}

// LiveFrame draws one frame of bench's live view, each line at most width-1
// columns wide (width <= 0: LiveDefaultWidth), so that no line wraps and the
// frame can be redrawn by moving the cursor up one row per line. Every
// line ends with a newline.
//
//	cell 5/12  done 3 (1 invalid, 0 failed) +1 earlier  elapsed 1m2s  ETA 4m10s
//	sidecar-static-r100-1  measure 4.2s
//	  measured window (so far): 5 rounds
//	  Component       CPU avg (min-max)       RSS avg    PSS avg
//	  app static      19.8m (11-33m)           20.0Mi     16.0Mi
//	  …
//	  TOTAL           149.4m (83-249m)        272.0Mi    106.0Mi
//	  data-plane/app: CPU 2.64x  PSS 3.62x
//	last none-static-r50-1: 50.0/s  p50 845.884µs  p99 1.537ms  100.00% ok
//
// "ended: " starts the final frame's first line.
func LiveFrame(s LiveState, width int) string {
	if width <= 0 {
		width = LiveDefaultWidth
	}
	var lines []string
	add := func(format string, a ...any) { lines = append(lines, fmt.Sprintf(format, a...)) }

	head := ""
	if s.Finished {
		head = "ended: "
	}
	if s.Index > 0 {
		head += fmt.Sprintf("cell %d/%d", s.Index, s.Total)
	} else {
		head += fmt.Sprintf("%d cells", s.Total)
	}
	head += fmt.Sprintf("  done %d (%d invalid, %d failed)", s.Done, s.Invalid, s.Failed)
	if s.Skipped > 0 {
		head += fmt.Sprintf(" +%d earlier", s.Skipped)
	}
	head += "  elapsed " + roundDur(s.Elapsed)
	switch {
	case s.Finished:
	case s.ETA >= 0:
		head += "  ETA " + roundDur(s.ETA)
	default:
		head += "  ETA -"
	}
	lines = append(lines, head)

	if s.CellID != "" {
		phase := s.Phase
		if phase == "" {
			phase = "starting"
		}
		if s.Finished {
			add("%s  %s", s.CellID, phase)
		} else {
			add("%s  %s %.1fs", s.CellID, phase, s.PhaseElapsed.Seconds())
		}
		mem := "PSS"
		if s.WorkingSet {
			mem = "working set"
		}
		if !s.Finished || len(s.Rounds) > 0 {
			lines = append(lines, liveview.Render(liveview.State{Time: s.Now, Phase: s.Phase, Output: s.Output, Rounds: s.Rounds,
				Memory: mem, Load: s.Load, MetricsSource: s.MetricsSource, Nodes: s.Nodes})...)
		}
	}

	if l := s.Last; l != nil {
		line := "last " + l.ID + ": "
		switch {
		case l.Error != "":
			line += "FAILED: " + l.Error
		default:
			if l.HasLatency {
				line += fmt.Sprintf("%.1f/s  p50 %s  p99 %s  %.2f%% ok", l.RatePerSec,
					DurNs(l.P50Ns), DurNs(l.P99Ns), l.SuccessRatio*100)
			} else {
				line += "no latency recorded"
			}
			if l.ControlPlane != "" {
				line += "  configs: " + l.ControlPlane
			}
			if len(l.Invalid) > 0 {
				line += "  INVALID: " + strings.Join(l.Invalid, "; ")
			}
		}
		lines = append(lines, line)
	}

	var b strings.Builder
	for _, line := range lines {
		b.WriteString(truncate(line, width-1))
		b.WriteByte('\n')
	}
	return b.String()
}

// roundDur formats a duration to the second (under a minute: tenths).
func roundDur(d time.Duration) string {
	if d < time.Minute {
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	}
	return d.Round(time.Second).String()
}

// truncate cuts s to at most n runes, ending with "…" when cut.
func truncate(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
