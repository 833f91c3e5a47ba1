package analysis

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/meshbench/meshbench/internal/load/latency"
	"github.com/meshbench/meshbench/internal/results"
)

// TestUnloadedServiceFromFirstProbe: a probe's unloaded service time is
// the mean service time its search's first probe wrote (a sibling cell
// directory); the first probe itself, a cell that is not a probe and a
// search whose first probe left no result have none.
func TestUnloadedServiceFromFirstProbe(t *testing.T) {
	cells := t.TempDir()
	o := SearchOptions{
		ProbeID: func(sid string, n int) string { return sid + "-probe" + string(rune('0'+n)) },
		ParseProbeID: func(id string) (string, int, bool) {
			if len(id) < 7 || id[len(id)-7:len(id)-1] != "-probe" {
				return "", 0, false
			}
			return id[:len(id)-7], int(id[len(id)-1] - '0'), true
		},
	}
	write := func(id string, svcNs ...int64) string {
		t.Helper()
		dir := filepath.Join(cells, id)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		rec := latency.NewRecorder()
		for _, v := range svcNs {
			rec.Record(v)
		}
		enc, err := rec.Encode()
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(filepath.Join(dir, results.LoadFile))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := (&results.LoadResult{Schema: results.LoadSchema, Model: results.ModelOpen, Workers: 1,
			Sent: int64(len(svcNs)), Completed: int64(len(svcNs)), Success: int64(len(svcNs)), ServiceTime: enc, Latency: enc, ScheduleLag: enc}).Write(f); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	first := write("s-probe1", 1e6, 3e6)
	third := write("s-probe3", 40e6)
	if got := unloadedService(third, o); got < 1.9e6 || got > 2.1e6 {
		t.Errorf("probe 3's unloaded service time %v ns, want probe 1's mean, 2 ms", got)
	}
	if got := unloadedService(first, o); got != 0 {
		t.Errorf("probe 1's unloaded service time %v, want none", got)
	}
	if got := unloadedService(write("t-probe2", 5e6), o); got != 0 {
		t.Errorf("a search without its first probe: %v, want none", got)
	}
	if got := unloadedService(write("plain-cell", 5e6), o); got != 0 {
		t.Errorf("a cell that is not a probe: %v, want none", got)
	}
}
