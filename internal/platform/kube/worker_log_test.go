package kube

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseWorkerLog: a worker's log is its indented JSON result, possibly
// after warning lines; a log without one is an error saying so.
func TestParseWorkerLog(t *testing.T) {
	js, err := os.ReadFile(filepath.Join("..", "..", "analysis", "testdata", "plan-invalid", "cells",
		"none-static-r50-x1-p0-http-pod-mtls-rep2", "load.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), "\n  ") {
		t.Fatal("fixture is not indented JSON: the test would not show multi-line parsing")
	}
	for name, log := range map[string]string{
		"bare":          string(js),
		"after warning": "WARNING: target rate not reached\n" + string(js),
	} {
		lr, err := parseWorkerLog([]byte(log))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if lr.Completed == 0 {
			t.Errorf("%s: parsed a result with no requests", name)
		}
	}
	if _, err := parseWorkerLog([]byte("exec format error\n")); err == nil || !strings.Contains(err.Error(), "no JSON result") {
		t.Errorf("log without JSON: %v", err)
	}
}
