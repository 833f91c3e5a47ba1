package report

import (
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
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
	last := &LiveLast{ID: "none-static-r50-1", HasLatency: true, P50Ns: 845_884, P99Ns: 1_537_000, SuccessRatio: 1, RatePerSec: 50}
	for _, tt := range []struct {
		name  string
		width int
		st    LiveState
	}{
		// The first cell starting: no ETA yet, no table, no last cell.
		{"live-prepare.golden", 0, LiveState{Now: at, Output: "results/bench-x/cells/cell.partial", Index: 1, Total: 12, ETA: -1, Elapsed: 1200 * time.Millisecond,
			CellID: "sidecar-static-r100-1", Phase: "prepare/envoys", PhaseElapsed: 700 * time.Millisecond}},
		// Mid-plan, in the measured window: the table, the ratios, the
		// last cell, a resumed plan's earlier cells.
		{"live-measure.golden", 100, LiveState{Now: at, Output: "results/bench-x/cells/cell.partial", Index: 5, Total: 12, Skipped: 1, Done: 3, Invalid: 1, Elapsed: 62 * time.Second, ETA: 250 * time.Second,
			CellID: "sidecar-static-r100-1", Phase: "measure", PhaseElapsed: 4200 * time.Millisecond,
			Rounds: liveRounds(5), Last: last}},
		// The same on a narrow terminal: every line cut to 49 columns.
		{"live-narrow.golden", 50, LiveState{Now: at, Output: "results/bench-x/cells/cell.partial", Index: 5, Total: 12, Done: 3, Elapsed: 62 * time.Second, ETA: 250 * time.Second,
			CellID: "sidecar-static-r100-1", Phase: "measure", PhaseElapsed: 4200 * time.Millisecond,
			Rounds: liveRounds(5), Last: last}},
		// Mode none in drain (window ended, no data plane); the last cell
		// invalid.
		{"live-none-drain.golden", 0, LiveState{Now: at, Output: "results/bench-x/cells/cell.partial", Index: 2, Total: 2, Done: 1, Invalid: 1, Elapsed: 14 * time.Second, ETA: 3 * time.Second,
			CellID: "none-static-r100-1", Phase: "drain", PhaseElapsed: 300 * time.Millisecond,
			Rounds: noDataPlane(liveRounds(4)),
			Last:   &LiveLast{ID: "none-static-r50-1", HasLatency: true, P50Ns: 151_234, P99Ns: 2_345_678, SuccessRatio: 0.9876, RatePerSec: 49.4, Invalid: []string{"load CPU-starved"}}}},
		// A cluster cell: metrics.k8s.io's working set is the one memory
		// column.
		{"live-kube.golden", 0, LiveState{Now: at, Output: "results/bench-x/cells/cell.partial", Index: 2, Total: 24, Done: 1, Elapsed: 150 * time.Second, ETA: 3450 * time.Second,
			CellID: "sidecar-static-r200-x3-p0-http-pod-mtls-rep1", Phase: "measure", PhaseElapsed: 31 * time.Second,
			Rounds: liveRounds(3), WorkingSet: true}},
		// The final frame after a failed cell.
		{"live-final.golden", 0, LiveState{Now: at, Output: "results/bench-x/cells/cell.partial", Index: 12, Total: 12, Done: 12, Failed: 1, Elapsed: 3*time.Minute + 4*time.Second, ETA: 0,
			CellID: "ambient-static-r100-3", Phase: "teardown", Finished: true,
			Last: &LiveLast{ID: "ambient-static-r100-3", Error: "starting ztunnel-node1: address in use"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := LiveFrame(tt.st, tt.width)
			w := tt.width
			if w <= 0 {
				w = LiveDefaultWidth
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
