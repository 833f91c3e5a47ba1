// Package testutil holds helpers shared by meshbench's tests: golden files,
// a throw-away PKI, and starting meshbench's own processes.
package testutil

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files with the current output")

// Golden compares got with testdata/NAME (relative to the test's package),
// or rewrites the file when the test runs with -update.
func Golden(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden file %s: %v (run the test with -update to create it)", path, err)
	}
	if string(want) != string(got) {
		t.Errorf("output differs from %s (run with -update after checking the change):\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}
