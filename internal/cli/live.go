package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/bench/runner"
	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/report"
	"github.com/meshbench/meshbench/internal/report/liveview"
	"github.com/meshbench/meshbench/internal/results"
)

// The live view of `meshbench bench`: a frame of a few lines on stderr,
// redrawn in place while a plan runs. report.LiveFrame is a pure function of a
// report.LiveState; liveView gathers the state from the runner's events, the
// lab's phases and the sampler's rounds; frameWriter redraws.

// liveRedrawEvery is how often the live view is redrawn: at most 4 frames
// a second.
const liveRedrawEvery = 250 * time.Millisecond

// lastOf extracts a finished cell's figures from the runner's event.
func lastOf(ev runner.Event) *report.LiveLast {
	l := &report.LiveLast{ID: ev.Cell.ID}
	if ev.Result != nil {
		l.ControlPlane = analysis.CellControlPlane(ev.Result.Manifest)
	}
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

// frameWriter redraws a frame in place on a terminal: it moves the cursor
// back up over the previous frame (ANSI cursor-up), rewrites each line and
// clears what is left of it and below. Frames must not hold lines wider
// than the terminal (report.LiveFrame sees to it).
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

// liveView gathers a report.LiveState while a plan runs and redraws it every
// liveRedrawEvery. Its methods are safe to call from any goroutine.
type liveView struct {
	now   func() time.Time
	width func() int

	mu         sync.Mutex
	fw         frameWriter
	st         report.LiveState
	started    time.Time // the plan
	cellStart  time.Time
	phaseStart time.Time
	ranTotal   time.Duration // summed durations of the cells ended in this run
	measuring  bool
	rounds     []sample.Round     // the current cell's measured window and drain so far
	nodes      []sample.NodeRound // a cluster cell's node rounds, the same span
	// outDir is the plan's results directory (the state line names the
	// cell's directory in it); loopback says the cells run on the lab's
	// loopback substrate (cellEndText).
	outDir   string
	loopback bool

	stop, stopped chan struct{}
}

// newLiveView returns a view of a plan of total cells starting now; it
// draws nothing until start.
func newLiveView(env *Env, total int, workingSet bool) *liveView {
	v := &liveView{now: env.Now, width: func() int { return termWidth(env) }, fw: frameWriter{w: env.Stderr}}
	v.started = v.now()
	v.st = report.LiveState{Total: total, ETA: -1, WorkingSet: workingSet}
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
	return report.LiveDefaultWidth
}

// start draws the first frame and redraws every liveRedrawEvery until
// Finish.
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

// Finish stops redrawing and draws the final frame, which stays on screen.
func (v *liveView) Finish() {
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
	v.fw.above(text, report.LiveFrame(v.stateLocked(), w))
}

// state returns the state as of now.
func (v *liveView) state() report.LiveState {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.stateLocked()
}

func (v *liveView) stateLocked() report.LiveState {
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

// Cell (bench.Observer): a cell starts or ends.
func (v *liveView) Cell(ev runner.Event) {
	if !ev.Done {
		v.mu.Lock()
		now := v.now()
		v.st.Index, v.st.Total, v.st.Skipped = ev.Index, ev.Total, ev.Skipped
		v.st.CellID, v.st.Phase = ev.Cell.ID, ""
		v.st.Load = nil
		if g := ev.Cell.Settings.Generator; g != "" && g != "meshbench" {
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
	v.redraw(fmt.Sprintf("[%d/%d] %s: %s\n", ev.Index, ev.Total, ev.Cell.ID, cellEndText(ev, v.loopback)))
}

// Phase (platform.Observer): the current cell enters a phase.
func (v *liveView) Phase(name string) {
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

// LoadProgress (platform.LoadObserver): the load's running figures.
func (v *liveView) LoadProgress(p results.LoadProgress) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if p.ElapsedNs <= 0 {
		return // the warm-up: the measured window's figures only
	}
	v.st.Load = &liveview.Load{Known: true, RatePerSec: p.RatePerSec, P50Ns: p.P50Ns, P99Ns: p.P99Ns, Sent: p.Sent, Errors: p.Errors, Workers: p.Workers}
}

// Source (platform.Observer): the source a cluster cell chose (for
// --metrics-source auto, which one).
func (v *liveView) Source(name string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.st.MetricsSource = name
}

// NodeRound (platform.Observer): a cluster cell's node samples.
func (v *liveView) NodeRound(r sample.NodeRound) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.measuring {
		v.nodes = append(v.nodes, r)
	}
}

// Round (platform.Observer): a sampling round of the current cell.
func (v *liveView) Round(r sample.Round) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.measuring {
		return
	}
	v.rounds = append(v.rounds, r)
}

// Log (bench.Observer): a cell's log lines (a cluster cell's idle gate,
// drain, mesh install) go above the frame, which is then redrawn.
func (v *liveView) Log() io.Writer { return liveLog{v} }

// liveLog writes a cell's log lines above the live view's frame.
type liveLog struct{ v *liveView }

func (l liveLog) Write(p []byte) (int, error) {
	l.v.redraw(string(p))
	return len(p), nil
}
