package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/platform/kube/loadjob"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestLoadWritesWorkerShare: `load --workers 2 --worker-index I` writes
// its index and count into its JSON (an unsplit run writes none); merge
// takes the two shares, and refuses one share given twice.
func TestLoadWritesWorkerShare(t *testing.T) {
	addr := testutil.StartServe(t, "static")
	dir := t.TempDir()
	run := func(file string, flags ...string) *results.LoadResult {
		t.Helper()
		args := append([]string{"load", "--rate", "100", "--duration", "500ms", "--warmup", "0s", "-o", file}, flags...)
		inv := runCLI(t, nil, append(args, "http://"+addr+"/")...)
		if inv.code != 0 {
			t.Fatalf("load %v: exit %d: %s", flags, inv.code, inv.stderr)
		}
		return readResult(t, file)
	}
	w0, w1, whole := filepath.Join(dir, "w0.json"), filepath.Join(dir, "w1.json"), filepath.Join(dir, "whole.json")
	if r := run(w0, "--workers", "2", "--worker-index", "0"); r.Worker == nil || *r.Worker != (results.WorkerShare{Index: 0, Count: 2}) {
		t.Errorf("worker 0 of 2 wrote worker %+v", r.Worker)
	}
	// The index from the Job's environment, as in a kube load pod.
	inv := runCLI(t, &Env{Getenv: func(k string) string {
		if k == loadjob.CompletionIndexEnv {
			return "1"
		}
		return ""
	}}, "load", "--rate", "100", "--duration", "500ms",
		"--warmup", "0s", "--workers", "2", "-o", w1, "http://"+addr+"/")
	if inv.code != 0 {
		t.Fatalf("worker 1: %s", inv.stderr)
	}
	if r := readResult(t, w1); r.Worker == nil || *r.Worker != (results.WorkerShare{Index: 1, Count: 2}) {
		t.Errorf("worker 1 of 2 (from $%s) wrote worker %+v", loadjob.CompletionIndexEnv, r.Worker)
	}
	if r := run(whole); r.Worker != nil {
		t.Errorf("unsplit run wrote worker %+v", r.Worker)
	}
	if inv := runCLI(t, nil, "merge", "--output-format", "json", "-o", filepath.Join(dir, "m.json"), w0, w1); inv.code != 0 {
		t.Errorf("merging the two shares: exit %d: %s", inv.code, inv.stderr)
	} else if m := readResult(t, filepath.Join(dir, "m.json")); m.Worker != nil || m.Workers != 2 {
		t.Errorf("merged: worker %+v, workers %d", m.Worker, m.Workers)
	}
	if inv := runCLI(t, nil, "merge", w0, w1, w0); inv.code != ExitUsage || !strings.Contains(inv.stderr, "parts 1 and 3 are both worker 0 of 2") {
		t.Errorf("merging a share twice: exit %d stderr %q", inv.code, inv.stderr)
	}
}
