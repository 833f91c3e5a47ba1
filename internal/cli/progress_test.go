package cli

import (
	"bytes"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/loadgen"
	"github.com/meshbench/meshbench/internal/testutil"
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
