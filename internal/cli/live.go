package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/meshbench/meshbench/internal/liveview"
	"github.com/meshbench/meshbench/internal/report"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/runner"
	"github.com/meshbench/meshbench/internal/sample"
)

// The live view of `meshbench bench`: a frame of a few lines on stderr,
// redrawn in place while a plan runs. renderLive is a pure function of a
// liveState; liveView gathers the state from the runner's events, the
// lab's phases and the sampler's rounds; frameWriter redraws.

// liveRedrawEvery is how often the live view is redrawn: at most 4 frames
// a second.
const liveRedrawEvery = 250 * time.Millisecond

// liveMaxComponents is how many component rows the frame shows at most;
// the others are counted on one line.
const liveMaxComponents = 10

// defaultWidth is the terminal width assumed when it is unknown, in
// columns.
const defaultWidth = 80

// liveState is everything a frame shows.
type liveState struct {
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
	Last *liveLast
	// Finished is true for the final frame: the plan has ended or was
	// interrupted.
	Finished bool
	// Nodes are a cluster's node lines (metrics.k8s.io) over Rounds' span.
	Nodes []liveview.Node
	// WorkingSet: the rounds come from metrics.k8s.io (a cluster), whose
	// one memory figure is the working set, not RSS and PSS.
	WorkingSet bool
}

// liveLast is a finished cell's headline figures.
type liveLast struct {
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
}

// lastOf extracts a finished cell's figures from the runner's event.
func lastOf(ev runner.Event) *liveLast {
	l := &liveLast{ID: ev.Cell.ID}
	if ev.Status != nil {
		if ev.Status.State == "failed" {
			l.Error = ev.Status.Error
		} else if !ev.Status.Valid {
			l.Invalid = ev.Status.Invalid
		}
	}
	if ev.Result != nil && ev.Result.Load != nil {
		lr := ev.Result.Load
		if lat, _, _, err := lr.Histograms(); err == nil && lat.Count() > 0 {
			l.HasLatency = true
			l.P50Ns, l.P99Ns = lat.Percentile(50), lat.Percentile(99)
			l.SuccessRatio, l.RatePerSec = lr.SuccessRatio(), lr.AchievedRatePerSec()
		}
	}
	return l
}

// renderLive draws one frame of the live view, each line at most width-1
// columns wide (width <= 0: defaultWidth), so that no line wraps and the
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
func renderLive(s liveState, width int) string {
	if width <= 0 {
		width = defaultWidth
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
					report.DurNs(l.P50Ns), report.DurNs(l.P99Ns), l.SuccessRatio*100)
			} else {
				line += "no latency recorded"
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

// frameWriter redraws a frame in place on a terminal: it moves the cursor
// back up over the previous frame (ANSI cursor-up), rewrites each line and
// clears what is left of it and below. Frames must not hold lines wider
// than the terminal (renderLive sees to it).
type frameWriter struct {
	w     io.Writer
	lines int // lines of the frame on screen
}

// rewind moves the cursor to the start of the frame on screen.
func (f *frameWriter) rewind(b *strings.Builder) {
	if f.lines > 0 {
		fmt.Fprintf(b, "\r\033[%dA", f.lines)
	}
}

// draw replaces the frame on screen with frame (lines ending in "\n").
func (f *frameWriter) draw(frame string) { f.above("", frame) }

// above prints text (lines ending in "\n", or "") where the frame was,
// where it stays as the terminal scrolls, then draws frame below it.
func (f *frameWriter) above(text, frame string) {
	var b strings.Builder
	f.rewind(&b)
	n := 0
	for i, part := range []string{text, frame} {
		for line := range strings.Lines(part) {
			b.WriteString(strings.TrimSuffix(line, "\n"))
			b.WriteString("\033[K\n")
			if i == 1 {
				n++
			}
		}
	}
	b.WriteString("\033[J")
	f.lines = n
	_, _ = io.WriteString(f.w, b.String())
}

// liveView gathers a liveState while a plan runs and redraws it every
// liveRedrawEvery. Its methods are safe to call from any goroutine.
type liveView struct {
	now   func() time.Time
	width func() int

	mu         sync.Mutex
	fw         frameWriter
	st         liveState
	started    time.Time // the plan
	cellStart  time.Time
	phaseStart time.Time
	ranTotal   time.Duration // summed durations of the cells ended in this run
	measuring  bool
	rounds     []sample.Round     // the current cell's measured window and drain so far
	nodes      []sample.NodeRound // a cluster cell's node rounds, the same span
	// outDir is the plan's results directory (the state line names the
	// cell's directory in it).
	outDir string

	stop, stopped chan struct{}
}

// newLiveView returns a view of a plan of total cells starting now; it
// draws nothing until start.
func newLiveView(env *Env, total int, workingSet bool) *liveView {
	v := &liveView{now: env.Now, width: func() int { return termWidth(env) }, fw: frameWriter{w: env.Stderr}}
	v.started = v.now()
	v.st = liveState{Total: total, ETA: -1, WorkingSet: workingSet}
	return v
}

// termWidth is stderr's width: Env.StderrWidth, else $COLUMNS, else 80.
func termWidth(env *Env) int {
	if env.StderrWidth != nil {
		if w := env.StderrWidth(); w > 0 {
			return w
		}
	}
	if w, err := strconv.Atoi(env.Getenv("COLUMNS")); err == nil && w > 0 {
		return w
	}
	return defaultWidth
}

// start draws the first frame and redraws every liveRedrawEvery until
// finish.
func (v *liveView) start() {
	v.stop, v.stopped = make(chan struct{}), make(chan struct{})
	v.redraw("")
	go func() {
		defer close(v.stopped)
		t := time.NewTicker(liveRedrawEvery)
		defer t.Stop()
		for {
			select {
			case <-v.stop:
				return
			case <-t.C:
				v.redraw("")
			}
		}
	}()
}

// finish stops redrawing and draws the final frame, which stays on screen.
func (v *liveView) finish() {
	if v.stop != nil {
		close(v.stop)
		<-v.stopped
	}
	v.mu.Lock()
	v.st.Finished = true
	v.mu.Unlock()
	v.redraw("")
}

// redraw draws the current state, with text above it (see
// frameWriter.above).
func (v *liveView) redraw(text string) {
	w := v.width()
	v.mu.Lock()
	defer v.mu.Unlock()
	v.fw.above(text, renderLive(v.stateLocked(), w))
}

// state returns the state as of now.
func (v *liveView) state() liveState {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.stateLocked()
}

func (v *liveView) stateLocked() liveState {
	now := v.now()
	s := v.st
	s.Now = now
	s.Rounds = v.rounds
	if len(v.nodes) > 0 {
		s.Nodes = liveview.NodesOf(v.nodes)
	}
	s.Elapsed = now.Sub(v.started)
	if s.CellID != "" {
		s.PhaseElapsed = now.Sub(v.phaseStart)
	}
	if s.Done > 0 {
		// Cells left, the current one included, at the mean duration so
		// far, less what the current one has already run.
		mean := v.ranTotal / time.Duration(s.Done)
		left := s.Total - s.Skipped - s.Done
		eta := mean * time.Duration(left)
		if s.CellID != "" && !s.Finished {
			eta -= now.Sub(v.cellStart)
		}
		s.ETA = max(eta, 0)
	}
	return s
}

// progress is runner.Options.Progress: a cell starts or ends.
func (v *liveView) progress(ev runner.Event) {
	if !ev.Done {
		v.mu.Lock()
		now := v.now()
		v.st.Index, v.st.Total, v.st.Skipped = ev.Index, ev.Total, ev.Skipped
		v.st.CellID, v.st.Phase = ev.Cell.ID, ""
		v.st.Load = nil
		if g := ev.Cell.Lab.Generator; g != "" && g != "meshbench" {
			v.st.Load = &liveview.Load{Generator: g}
		}
		if v.outDir != "" {
			v.st.Output = filepath.Join(v.outDir, results.CellsDir, ev.Cell.ID+".partial")
		}
		v.cellStart, v.phaseStart = now, now
		v.measuring, v.rounds, v.nodes = false, nil, nil
		v.mu.Unlock()
		v.redraw("")
		return
	}
	last := lastOf(ev)
	v.mu.Lock()
	v.ranTotal += v.now().Sub(v.cellStart)
	v.st.Done++
	switch {
	case last.Error != "":
		v.st.Failed++
	case ev.Status != nil && !ev.Status.Valid:
		v.st.Invalid++
	}
	v.st.Last = last
	v.measuring = false
	v.mu.Unlock()
	// The cell's line stays in the scrollback above the frame.
	v.redraw(fmt.Sprintf("[%d/%d] %s: %s\n", ev.Index, ev.Total, ev.Cell.ID, cellEndText(ev)))
}

// phase is local.Options.Phase: the current cell enters a phase.
func (v *liveView) phase(name string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.st.Phase, v.phaseStart = name, v.now()
	switch name {
	case "measure":
		v.measuring, v.rounds, v.nodes = true, nil, nil
	case "drain":
		// the seed tool records the drain too: keep sampling
	default:
		v.measuring = false
	}
}

// loadProgress is local.Options.OnLoadProgress: the load's running
// figures.
func (v *liveView) loadProgress(p results.LoadProgress) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if p.ElapsedNs <= 0 {
		return // the warm-up: the measured window's figures only
	}
	v.st.Load = &liveview.Load{Known: true, RatePerSec: p.RatePerSec, P50Ns: p.P50Ns, P99Ns: p.P99Ns, Sent: p.Sent, Errors: p.Errors, Workers: p.Workers}
}

// metricsSource is kube.Options.OnMetricsSource: the source a cluster
// cell chose (for --metrics-source auto, which one).
func (v *liveView) metricsSource(name string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.st.MetricsSource = name
}

// nodeRound is kube.Options.OnNodeRound: a cluster cell's node samples.
func (v *liveView) nodeRound(r sample.NodeRound) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.measuring {
		v.nodes = append(v.nodes, r)
	}
}

// round is local.Options.OnRound: a sampling round of the current cell.
func (v *liveView) round(r sample.Round) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.measuring {
		return
	}
	v.rounds = append(v.rounds, r)
}

// liveLog writes a cell's log lines (a cluster cell's idle gate, drain,
// mesh install) above the live view's frame, which is then redrawn.
type liveLog struct{ v *liveView }

func (l liveLog) Write(p []byte) (int, error) {
	l.v.redraw(string(p))
	return len(p), nil
}
