package cli

import (
	"bytes"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestProgressLineGolden pins the live line's rendering: warm-up, running,
// and the final clear.
func TestProgressLineGolden(t *testing.T) {
	var buf bytes.Buffer
	p := &progressLine{w: &buf, total: 10 * time.Second}
	p.show(loadgen.Progress{Elapsed: -700 * time.Millisecond, Sent: 300})
	p.show(loadgen.Progress{Elapsed: 2 * time.Second, Sent: 2000, Completed: 1999, Errors: 3, Dropped: 1, P50Ns: 151_234, P99Ns: 2_345_678})
	p.clear()
	testutil.Golden(t, "progress.golden", buf.Bytes())
}

// TestProgressPlain: with stderr not a terminal (or TERM=dumb) progress is
// a whole line every 5 s of the window, with no cursor codes: one line for
// the warm-up, then at 0 s, 5 s, 10 s; the 1-s ticks between print nothing.
func TestProgressPlain(t *testing.T) {
	var buf bytes.Buffer
	p := &progressLine{w: &buf, total: 12 * time.Second, plain: true}
	p.show(loadgen.Progress{Elapsed: -700 * time.Millisecond, Sent: 300})
	p.show(loadgen.Progress{Elapsed: -300 * time.Millisecond, Sent: 700})
	for s := 0; s <= 12; s++ {
		p.show(loadgen.Progress{Elapsed: time.Duration(s)*time.Second + 3*time.Millisecond, Sent: int64(s) * 1000,
			Completed: int64(s) * 1000, P50Ns: 151_234, P99Ns: 2_345_678})
	}
	p.clear()
	testutil.Golden(t, "progress-plain.golden", buf.Bytes())
	if bytes.ContainsAny(buf.Bytes(), "\r\033") {
		t.Errorf("plain progress has cursor codes: %q", buf.String())
	}
}
