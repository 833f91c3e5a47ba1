package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestNodestat: `meshbench nodestat` refuses bad input with exit 2; on
// this machine, with a real cgroup laid out as a kubelet's holding "its
// pod", it prints a reading a tick for --for and stops; with a pod UID
// no cgroup holds it fails and says why in its --report file.
func TestNodestat(t *testing.T) {
	for _, args := range [][]string{
		{"nodestat", "--for", "1s"},                                      // no pod UID
		{"nodestat", "--pod-uid", "x", "--for", "0s"},                    // no bound
		{"nodestat", "--pod-uid", "x", "--for", "1s", "--every", "10ms"}, // too often
	} {
		if inv := runCLI(t, nil, args...); inv.code != ExitUsage || !strings.Contains(inv.stderr, "--") {
			t.Errorf("%v: exit %d, %q; want 2 naming the flag", args, inv.code, inv.stderr)
		}
	}
	uid := fmt.Sprintf("0d0e0f00-4444-5555-6666-%012d", os.Getpid())
	testutil.KubepodsCgroup(t, uid)
	inv := runCLI(t, nil, "nodestat", "--pod-uid", uid, "--every", "100ms", "--for", "450ms")
	if inv.code != ExitOK {
		t.Fatalf("exit %d: %s", inv.code, inv.stderr)
	}
	lines := strings.Split(strings.TrimSpace(inv.stdout), "\n")
	var first, last sample.NodeReading
	for i, l := range lines {
		var r sample.NodeReading
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("line %d %q: %v", i, l, err)
		}
		if i == 0 {
			first = r
		}
		last = r
	}
	if len(lines) < 4 || len(lines) > 6 || first.BootID == "" || last.Stat.Idle <= first.Stat.Idle || last.TimeUnixNs <= first.TimeUnixNs {
		t.Errorf("%d readings, first %+v, last %+v; want 5 or so, 100 ms apart, the machine's idle time growing", len(lines), first, last)
	}
	report := filepath.Join(t.TempDir(), "termination-log")
	inv = runCLI(t, nil, "nodestat", "--pod-uid", "no-such-pod", "--for", "1s", "--report", report)
	b, _ := os.ReadFile(report)
	if inv.code == ExitOK || !strings.Contains(string(b), "no kubepods cgroup") {
		t.Errorf("a pod UID no cgroup holds: exit %d, report %q", inv.code, b)
	}
}
