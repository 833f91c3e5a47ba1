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

	"github.com/meshbench/meshbench/internal/bench/runner"
	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/platform"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

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
	return runner.Event{Index: i, Total: 4, Cell: platform.Cell{ID: id}}
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
	// Only how many rounds the view keeps is checked here; their content
	// is the frame's (report.LiveFrame's goldens).
	rounds := make([]sample.Round, 6)
	for i := range rounds {
		rounds[i] = sample.Round{Index: i, Time: clock.t.Add(time.Duration(i) * time.Second)}
	}

	ev := liveEvent(1, "cell-a")
	v.Cell(ev)
	v.Phase("warmup")
	v.Round(rounds[0]) // before the window: not counted
	v.Phase("measure")
	v.Round(rounds[1])
	v.Round(rounds[2])
	v.Phase("drain")
	v.Round(rounds[3]) // the drain: recorded, as the seed tool does
	v.Phase("collect")
	v.Round(rounds[4]) // after the drain: not counted
	if s := v.state(); len(s.Rounds) != 3 || s.Phase != "collect" || s.ETA >= 0 {
		t.Errorf("cell a: %d rounds, phase %q, ETA %v; want 3, collect, unknown", len(s.Rounds), s.Phase, s.ETA)
	}
	clock.advance(10 * time.Second)
	v.Cell(doneEvent(ev, false))

	ev = liveEvent(2, "cell-b")
	v.Cell(ev)
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
	v.Finish()
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
	t.Parallel() // waits on short loads: beside the other parallel ones, not after them
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
