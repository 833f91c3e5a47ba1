package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/results"
)

// TestRunBenchBadInput: run and bench check every flag before anything
// starts, with load's one-line messages, and exit 2 at once: no lab is
// built, no results directory is made. (Once, `run --rate abc` built the
// whole lab, then failed with exit 1 and "open …/load.json: no such file".)
func TestRunBenchBadInput(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A plan directory whose manifest was cut short, and one from a
	// future meshbench.
	truncated, future := copyPlan(t, planSmall), copyPlan(t, planSmall)
	if err := os.Truncate(filepath.Join(truncated, results.PlanManifestFile), 40); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(future, results.PlanManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.Replace(string(b), `"meshbench.plan/v1"`, `"meshbench.plan/v9"`, 1))
	if err := os.WriteFile(filepath.Join(future, results.PlanManifestFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "never-made")
	tests := []struct {
		name string
		args []string
		want string // in the one stderr line
	}{
		{"run rate not a number", []string{"run", "--rate", "abc", "--out", out}, `--rate "abc": allowed: a positive number`},
		{"run rate 0", []string{"run", "--rate", "0", "--out", out}, `--rate "0": allowed`},
		{"run rate NaN", []string{"run", "--rate", "NaN", "--out", out}, `--rate "NaN": allowed`},
		{"run rate too high", []string{"run", "--rate", "1e12", "--out", out}, `--rate "1e12"`},
		// 0 once silently became 16, and -5 was recorded while 1 ran.
		{"run connections 0", []string{"run", "--connections", "0", "--out", out}, "--connections 0: allowed: 1 or more"},
		{"run connections -5", []string{"run", "--connections", "-5", "--out", out}, "--connections -5: allowed: 1 or more"},
		{"run out is a file", []string{"run", "--out", file}, "--out " + file + " is a file: allowed: a new or empty directory"},
		{"run out under a file", []string{"run", "--out", filepath.Join(file, "x")}, "is a file, not a directory"},
		{"bench out is a file", []string{"bench", "--mesh", "none", "--out", file}, "--out " + file + " is a file"},
		{"bench resume truncated manifest", []string{"bench", "--resume", truncated}, "--resume " + truncated + ": "},
		{"bench resume future manifest", []string{"bench", "--resume", future}, `schema "meshbench.plan/v9"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			inv := runCLI(t, nil, tt.args...)
			if inv.code != ExitUsage {
				t.Errorf("exit %d, want %d; stderr %q", inv.code, ExitUsage, inv.stderr)
			}
			lines := strings.Split(strings.TrimSpace(inv.stderr), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], tt.want) {
				t.Errorf("stderr %q, want one line containing %q", inv.stderr, tt.want)
			}
			// Refused before anything started: well under the ~5 s a lab
			// takes to come up, even on a loaded machine.
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("took %v to refuse", took)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("results directory made on bad input: %v", err)
			}
		})
	}
}
