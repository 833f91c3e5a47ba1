package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestHog: `meshbench hog` keeps a thread busy for --for and says so, on
// stdout and in its --report file (a pod's termination message); bad
// input is refused with exit 2 before anything runs.
func TestHog(t *testing.T) {
	report := filepath.Join(t.TempDir(), "termination-log")
	inv := runCLI(t, nil, "hog", "--millicores", "500", "--for", "300ms", "--report", report)
	stdout := inv.stdout
	if inv.code != ExitOK {
		t.Fatalf("exit %d: %s", inv.code, inv.stderr)
	}
	m := regexp.MustCompile(`^hog: busy (0\.[0-9]+)s on 1 thread\(s\) from \S+ to \S+, CPU ([0-9.]+)s`).FindStringSubmatch(stdout)
	if m == nil || m[1] < "0.300" {
		t.Fatalf("stdout %q; want a line of 0.3 s busy on one thread", stdout)
	}
	if b, err := os.ReadFile(report); err != nil || string(b) != stdout {
		t.Errorf("report %q (%v); want stdout's line", b, err)
	}
	for _, args := range [][]string{{"hog", "--millicores", "5", "--for", "1s"}, {"hog", "--millicores", "100"}} {
		if inv := runCLI(t, nil, args...); inv.code != ExitUsage || !strings.Contains(inv.stderr, "allowed") {
			t.Errorf("%v: exit %d, %q; want 2 with what is allowed", args, inv.code, inv.stderr)
		}
	}
}
