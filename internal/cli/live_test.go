package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/runner"
	"github.com/meshbench/meshbench/internal/sample"
	"github.com/meshbench/meshbench/internal/testutil"
)

const mi = 1 << 20

// liveRounds builds n sampling rounds, 1 s apart, of a sidecar lab: two
// app replicas, their sidecars, a client sidecar, the load and meshbench.
// CPU varies by round so min, max and avg differ; PSS is read every
// third round.
func liveRounds(n int) []sample.Round {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	procs := []struct {
		sample.Target
		cpu, rss, pss float64
	}{
		{sample.Target{PID: 11, Name: "server-0 app", Component: "app static", Category: sample.CategoryApp}, 6, 10 * mi, 8 * mi},
		{sample.Target{PID: 12, Name: "server-1 app", Component: "app static", Category: sample.CategoryApp}, 5, 10 * mi, 8 * mi},
		{sample.Target{PID: 21, Name: "load", Component: "load", Category: sample.CategoryLoad}, 40, 14 * mi, 12 * mi},
		{sample.Target{PID: 31, Name: "client-0 sidecar", Component: "client sidecar", Category: sample.CategoryDataPlane}, 12, 69 * mi, 19 * mi},
		{sample.Target{PID: 32, Name: "server-0 sidecar", Component: "server sidecar", Category: sample.CategoryDataPlane}, 9, 69 * mi, 19 * mi},
		{sample.Target{PID: 33, Name: "server-1 sidecar", Component: "server sidecar", Category: sample.CategoryDataPlane}, 8, 70 * mi, 20 * mi},
		{sample.Target{PID: 1, Name: "meshbench", Component: "meshbench", Category: sample.CategoryOverhead}, 3, 30 * mi, 20 * mi},
	}
	var out []sample.Round
	for i := range n {
		r := sample.Round{Index: i, Time: t0.Add(time.Duration(i) * time.Second)}
		for _, p := range procs {
			s := sample.Sample{Target: p.Target, Time: r.Time, CPUMillicores: p.cpu * float64(1+i%3), RSSBytes: uint64(p.rss)}
			if i%3 == 0 {
				s.PSSBytes, s.HasPSS = uint64(p.pss), true
			}
			r.Samples = append(r.Samples, s)
		}
		out = append(out, r)
	}
	return out
}

// TestLiveFrameGolden pins the live view's frames, one golden file each.
func TestLiveFrameGolden(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 5, 0, time.UTC)
	last := &liveLast{ID: "none-static-r50-1", HasLatency: true, P50Ns: 845_884, P99Ns: 1_537_000, SuccessRatio: 1, RatePerSec: 50}
	for _, tt := range []struct {
		name  string
		width int
		st    liveState
	}{
		// The first cell starting: no ETA yet, no table, no last cell.
		{"live-prepare.golden", 0, liveState{Now: at, Output: "results/bench-x/cells/cell.partial", Index: 1, Total: 12, ETA: -1, Elapsed: 1200 * time.Millisecond,
			CellID: "sidecar-static-r100-1", Phase: "prepare/envoys", PhaseElapsed: 700 * time.Millisecond}},
		// Mid-plan, in the measured window: the table, the ratios, the
		// last cell, a resumed plan's earlier cells.
		{"live-measure.golden", 100, liveState{Now: at, Output: "results/bench-x/cells/cell.partial", Index: 5, Total: 12, Skipped: 1, Done: 3, Invalid: 1, Elapsed: 62 * time.Second, ETA: 250 * time.Second,
			CellID: "sidecar-static-r100-1", Phase: "measure", PhaseElapsed: 4200 * time.Millisecond,
			Rounds: liveRounds(5), Last: last}},
		// The same on a narrow terminal: every line cut to 49 columns.
		{"live-narrow.golden", 50, liveState{Now: at, Output: "results/bench-x/cells/cell.partial", Index: 5, Total: 12, Done: 3, Elapsed: 62 * time.Second, ETA: 250 * time.Second,
			CellID: "sidecar-static-r100-1", Phase: "measure", PhaseElapsed: 4200 * time.Millisecond,
			Rounds: liveRounds(5), Last: last}},
		// Mode none in drain (window ended, no data plane); the last cell
		// invalid.
		{"live-none-drain.golden", 0, liveState{Now: at, Output: "results/bench-x/cells/cell.partial", Index: 2, Total: 2, Done: 1, Invalid: 1, Elapsed: 14 * time.Second, ETA: 3 * time.Second,
			CellID: "none-static-r100-1", Phase: "drain", PhaseElapsed: 300 * time.Millisecond,
			Rounds: noDataPlane(liveRounds(4)),
			Last:   &liveLast{ID: "none-static-r50-1", HasLatency: true, P50Ns: 151_234, P99Ns: 2_345_678, SuccessRatio: 0.9876, RatePerSec: 49.4, Invalid: []string{"load CPU-starved"}}}},
		// A cluster cell: metrics.k8s.io's working set is the one memory
		// column.
		{"live-kube.golden", 0, liveState{Now: at, Output: "results/bench-x/cells/cell.partial", Index: 2, Total: 24, Done: 1, Elapsed: 150 * time.Second, ETA: 3450 * time.Second,
			CellID: "sidecar-static-r200-x3-p0-http-pod-mtls-rep1", Phase: "measure", PhaseElapsed: 31 * time.Second,
			Rounds: liveRounds(3), WorkingSet: true}},
		// The final frame after a failed cell.
		{"live-final.golden", 0, liveState{Now: at, Output: "results/bench-x/cells/cell.partial", Index: 12, Total: 12, Done: 12, Failed: 1, Elapsed: 3*time.Minute + 4*time.Second, ETA: 0,
			CellID: "ambient-static-r100-3", Phase: "teardown", Finished: true,
			Last: &liveLast{ID: "ambient-static-r100-3", Error: "starting ztunnel-node1: address in use"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := renderLive(tt.st, tt.width)
			w := tt.width
			if w <= 0 {
				w = defaultWidth
			}
			for line := range strings.Lines(got) {
				if n := len([]rune(strings.TrimSuffix(line, "\n"))); n >= w {
					t.Errorf("line of %d columns on a %d-column terminal: %q", n, w, line)
				}
			}
			testutil.Golden(t, tt.name, []byte(got))
		})
	}
}

// noDataPlane drops the sidecars from rounds.
func noDataPlane(rounds []sample.Round) []sample.Round {
	for i := range rounds {
		var keep []sample.Sample
		for _, s := range rounds[i].Samples {
			if s.Category != sample.CategoryDataPlane {
				keep = append(keep, s)
			}
		}
		rounds[i].Samples = keep
	}
	return rounds
}

// TestLiveFrameWriter pins the redraw's escape codes: the first frame is
// written as is; the next moves up over it, rewrites each line clearing
// its rest, and clears below (a shorter frame leaves nothing behind); text
// printed above stays and is not counted as frame lines.
func TestLiveFrameWriter(t *testing.T) {
	var buf bytes.Buffer
	f := &frameWriter{w: &buf}
	f.draw("a\nbb\n")
	f.draw("c\n")
	f.above("done\n", "d\ne\n")
	f.draw("f\ng\n")
	want := "a\033[K\nbb\033[K\n\033[J" +
		"\r\033[2Ac\033[K\n\033[J" +
		"\r\033[1Adone\033[K\nd\033[K\ne\033[K\n\033[J" +
		"\r\033[2Af\033[K\ng\033[K\n\033[J"
	if got := buf.String(); got != want {
		t.Errorf("escape codes\n got %q\nwant %q", got, want)
	}
}

// fakeNow is a clock a test moves by hand.
type fakeNow struct{ t time.Time }

func (c *fakeNow) now() time.Time          { return c.t }
func (c *fakeNow) advance(d time.Duration) { c.t = c.t.Add(d) }
func liveEvent(i int, id string) runner.Event {
	return runner.Event{Index: i, Total: 4, Cell: runner.Cell{ID: id}}
}
func doneEvent(ev runner.Event, valid bool) runner.Event {
	ev.Done, ev.Status = true, &results.CellStatus{State: results.CellDone, Valid: valid, Invalid: []string{"x"}}
	return ev
}

// TestLiveViewState drives the view with events on a fake clock: counts,
// the ETA from finished cells' mean duration, phases, and rounds counted
// only inside the measured window and the drain; the finished cells' lines go above the
// frame.
func TestLiveViewState(t *testing.T) {
	clock := &fakeNow{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	var buf bytes.Buffer
	v := newLiveView(&Env{Stderr: &buf, Now: clock.now, Getenv: func(string) string { return "" }}, 4, false)
	rounds := liveRounds(6)

	ev := liveEvent(1, "cell-a")
	v.progress(ev)
	v.phase("warmup")
	v.round(rounds[0]) // before the window: not counted
	v.phase("measure")
	v.round(rounds[1])
	v.round(rounds[2])
	v.phase("drain")
	v.round(rounds[3]) // the drain: recorded, as the seed tool does
	v.phase("collect")
	v.round(rounds[4]) // after the drain: not counted
	if s := v.state(); len(s.Rounds) != 3 || s.Phase != "collect" || s.ETA >= 0 {
		t.Errorf("cell a: %d rounds, phase %q, ETA %v; want 3, collect, unknown", len(s.Rounds), s.Phase, s.ETA)
	}
	clock.advance(10 * time.Second)
	v.progress(doneEvent(ev, false))

	ev = liveEvent(2, "cell-b")
	v.progress(ev)
	// A cluster cell's log line goes above the frame.
	fmt.Fprintf(liveLog{v}, "idle: app CPU %.0fm < %.0fm\n", 2.0, 20.0)
	clock.advance(4 * time.Second)
	s := v.state()
	// One cell took 10 s; 3 left (b included), b has run 4 s: 26 s.
	if s.Done != 1 || s.Invalid != 1 || s.Index != 2 || s.ETA != 26*time.Second || len(s.Rounds) != 0 || s.Last.ID != "cell-a" {
		t.Errorf("cell b: %+v", s)
	}
	if s.Elapsed != 14*time.Second || s.PhaseElapsed != 4*time.Second {
		t.Errorf("elapsed %v, phase %v; want 14s, 4s", s.Elapsed, s.PhaseElapsed)
	}
	v.finish()
	out := buf.String()
	if !strings.Contains(out, "idle: app CPU 2m < 20m\033[K\ncell 2/4") || !regexp.MustCompile(`\r\033\[\d+A\[1/4\] cell-a: \033\[K\n`).MatchString(out) ||
		!regexp.MustCompile(`\r\033\[\d+Aended: cell 2/4`).MatchString(out) || !strings.HasSuffix(out, "\n\033[J") {
		t.Errorf("screen output %q", out)
	}
}

// TestBenchPlainPhases runs a one-cell plan with stderr not a terminal:
// plain lines, one per cell start and end and one per phase, and no
// escape codes.
func TestBenchPlainPhases(t *testing.T) {
	bin := testutil.BuildMeshbench(t)
	out := filepath.Join(t.TempDir(), "plan")
	cmd := exec.Command(bin, "bench", "--mesh", "none", "--rate", "50", "--repetitions", "1", "--duration", "1s",
		"--warmup", "200ms", "--drain", "200ms", "--seed", "3", "--out", out, "--loopback-net", "63")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "NO_COLOR=")
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Run(); err != nil {
		t.Fatalf("meshbench bench: %v\n%s", err, se.String())
	}
	stderr := se.String()
	for _, phase := range []string{"prepare", "idle", "warmup", "measure", "drain", "collect", "teardown"} {
		if !strings.Contains(stderr, ": phase "+phase+"\n") {
			t.Errorf("no phase %s line:\n%s", phase, stderr)
		}
	}
	if !strings.Contains(stderr, "[1/1] none-static-r") || !strings.Contains(stderr, ": running\n") || !strings.Contains(stderr, "% ok") {
		t.Errorf("per-cell lines missing:\n%s", stderr)
	}
	if strings.Contains(stderr, "prepare/") || strings.Contains(stderr, "\033[") {
		t.Errorf("sub-phase lines or escape codes in plain mode:\n%s", stderr)
	}
}
