package loadjob

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/meshbench/meshbench/internal/results"
)

// TestParseWorkerLog: a worker's log is its indented JSON result, possibly
// after warning lines; a log without one is an error saying so.
func TestParseWorkerLog(t *testing.T) {
	js, err := os.ReadFile(filepath.Join("..", "..", "..", "analysis", "testdata", "plan-invalid", "cells",
		"none-static-r50-x1-p0-http-pod-mtls-rep2", "load.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), "\n  ") {
		t.Fatal("fixture is not indented JSON: the test would not show multi-line parsing")
	}
	want, err := ParseWorkerLog(js)
	if err != nil {
		t.Fatal(err)
	}
	progress := string(results.ProgressLine(results.LoadProgress{ElapsedNs: 1e9, Sent: 50})) + "\n"
	for name, log := range map[string]string{
		"bare":          string(js),
		"after warning": "WARNING: target rate not reached\n" + string(js),
		// The engine's running figures (--progress-log, stderr) precede
		// the result in the pod's log.
		"after progress lines": progress + progress + string(js),
		// The runtime copies stdout and stderr from two goroutines, line
		// by line: the last progress line can land between the result's
		// lines (seen on the real nodes: "invalid character 'm' looking
		// for beginning of object key string") ...
		"progress between its lines": strings.Replace(string(js), "\n  ", "\n"+progress+"  ", 3) + progress,
		// ... or inside one the runtime split into partial entries.
		"progress inside a line": strings.Replace(string(js), "HISTF", "HIST"+progress+"F", 2),
	} {
		if strings.Contains(name, "progress") && !strings.Contains(log, progress) {
			t.Fatalf("%s: no progress line put in: the case shows nothing", name)
		}
		lr, err := ParseWorkerLog([]byte(log))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if lr.Completed == 0 {
			t.Errorf("%s: parsed a result with no requests", name)
		}
		if !reflect.DeepEqual(lr, want) {
			t.Errorf("%s: the result read back differs from the worker's", name)
		}
	}
	if _, err := ParseWorkerLog([]byte("exec format error\n")); err == nil || !strings.Contains(err.Error(), "no JSON result") {
		t.Errorf("log without JSON: %v", err)
	}
}

// TestWorkerIndex: a worker's index is the one its result reports, the
// pod's completion index only a cross-check; a result of another split,
// one without an index in a split load, or a pod whose completion index
// disagrees is refused with what was found.
func TestWorkerIndex(t *testing.T) {
	pod := func(ann string) *corev1.Pod {
		p := &corev1.Pod{}
		if ann != "-" {
			p.Annotations = map[string]string{batchv1.JobCompletionIndexAnnotation: ann}
		}
		return p
	}
	share := func(i, n int) *results.LoadResult {
		return &results.LoadResult{Workers: 1, Worker: &results.WorkerShare{Index: i, Count: n}}
	}
	tests := []struct {
		name    string
		lr      *results.LoadResult
		pod     *corev1.Pod // "-": no completion index annotation
		workers int
		want    int
		err     string
	}{
		// The normal case: worker 2 of 3 in the pod of completion index 2.
		{"share", share(2, 3), pod("2"), 3, 2, ""},
		// One worker writes no share: it is worker 0 of 1.
		{"unsplit", &results.LoadResult{Workers: 1}, pod("0"), 1, 0, ""},
		// The log of another index's pod (or a mixed-up log).
		{"index disagrees", share(1, 3), pod("2"), 3, 0, `its completion index is "2" but its result is worker 1 of 3`},
		{"index not a number", share(0, 2), pod("x"), 2, 0, `its completion index is "x"`},
		{"no completion index", share(0, 2), pod("-"), 2, 0, "no completion index"},
		// A result of a differently split load.
		{"other count", share(0, 4), pod("0"), 3, 0, "worker 0 of 4, but the load is split among 3 workers"},
		// A meshbench that writes no share, in a split load.
		{"no share in a split load", &results.LoadResult{Workers: 1}, pod("0"), 2, 0, "says no worker index"},
	}
	for _, tt := range tests {
		got, err := workerIndex(tt.lr, tt.pod, tt.workers)
		switch {
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("%s: %d, %v; want %d", tt.name, got, err, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: %v, want %q", tt.name, err, tt.err)
		}
	}
}
