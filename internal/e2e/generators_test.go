package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/load/extgen"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testkit/kubetest"
)

// TestGeneratorsOnRealNodes: the seeds' tools drive a cluster run. The
// test cluster's image holds the install step's vegeta and fortio (as
// `meshbench image` puts them in); each runs a short bounded cell in its
// two load pods (`meshbench load --generator X` running the tool as its
// child), and the merged result is the tool's own, parsed as on the lab:
// the tool named with its version and both workers' command lines, about
// the rate asked, every request answered.
func TestGeneratorsOnRealNodes(t *testing.T) {
	if _, missing := extgen.ImageBinaries(); len(missing) > 0 {
		t.Fatalf("no %v in %s: make generators (make test runs it) builds them", missing, extgen.InstallDir())
	}
	kc := kubetest.Require(t)
	for _, gen := range []string{extgen.Vegeta, extgen.Fortio} {
		t.Run(gen, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			prefix := "e2g" + gen[:1]
			inv := meshbench(t, nil, "run", "--platform", "kube", "--kubeconfig", kc.Kubeconfig, "--namespace-prefix", prefix,
				"--mesh", "none", "--generator", gen, "--workers", "2", "--rate", "40", "--duration", "10s", "--warmup", "1s", "--out", out)
			if inv.code != 0 {
				// A tool that skips what it was late for (fortio's
				// -nocatchup) can lose a request or two on a loaded
				// 2-core machine (2 of 400 beside two niced hogs, twice):
				// the run is then rightly invalid and says why (exit 1).
				// That is the tool's lateness, not meshbench's; the checks
				// below bound the loss as for a valid run.
				if inv.code != 1 || !onlyToolSkipped(inv.stdout, gen) {
					t.Fatalf("exit %d", inv.code)
				}
				t.Logf("invalid only because %s skipped requests it was late for, said plainly; checked as a valid run would be", gen)
			}
			lr, err := results.ReadFile(filepath.Join(out, results.LoadFile))
			if err != nil {
				t.Fatal(err)
			}
			if lr.Generator == nil || lr.Generator.Name != gen || lr.Generator.Version == "" || len(lr.Generator.Commands) != 2 {
				t.Fatalf("generator %+v, want %s with its version and 2 workers' commands", lr.Generator, gen)
			}
			for _, c := range lr.Generator.Commands {
				if !strings.Contains(c, "/usr/local/bin/"+gen) {
					t.Errorf("command %q does not run the image's %s", c, gen)
				}
			}
			// 2 × 20/s for 10 s: 400 requests; a tool on a loaded 2-core
			// machine may lose a few at the window's edges, never add.
			if lr.Workers != 2 || lr.Sent < 380 || lr.Sent > 400 || lr.Success != lr.Completed || lr.Completed < lr.Sent-2 {
				t.Errorf("merged result: %d workers, %d sent, %d completed, %d ok; want 2, about 400, all ok", lr.Workers, lr.Sent, lr.Completed, lr.Success)
			}
			// The rate over the tool's own window: fortio's stretched to
			// 10.6 s here (37.8/s for its 400), and a loaded machine
			// stretches it further; 30 to 44 tells a run at the rate
			// asked from one at half or double it.
			if r := lr.AchievedRatePerSec(); r < 30 || r > 44 {
				t.Errorf("achieved %.1f/s, want about 40", r)
			}
			if !strings.Contains(inv.stdout, fmt.Sprintf("merged from 2 workers; generator %s ", gen)) {
				t.Errorf("stdout does not say the 2 workers ran %s", gen)
			}
			checkClean(t, connect(t, kc), prefix+"-app", prefix+"-load")
		})
	}
}

// onlyToolSkipped reports whether run's stdout names one reason for an
// invalid run: the rate missed because the tool gen skipped requests it
// was late for.
func onlyToolSkipped(stdout, gen string) bool {
	var invalid []string
	for _, l := range strings.Split(stdout, "\n") {
		if r, ok := strings.CutPrefix(strings.TrimSpace(l), "INVALID: "); ok {
			invalid = append(invalid, r)
		}
	}
	return len(invalid) == 1 && strings.HasPrefix(invalid[0], "target rate not reached: ") &&
		strings.Contains(invalid[0], "not sent: "+gen+" skipped them")
}

func TestOnlyToolSkipped(t *testing.T) {
	const skipped = "INVALID: target rate not reached: sent 398 of 400 scheduled (2 not sent: fortio skipped them (-nocatchup): each was due while its connection's thread was still busy or late)"
	for _, tc := range []struct {
		stdout string
		want   bool
	}{
		{"Requests ...\n            " + skipped + "\n\nResults: x\n", true},
		{skipped + "\nINVALID: 3 errors\n", false},
		{"INVALID: target rate not reached: sent 300 of 400 scheduled\n", false},
		{"INVALID: app CPU 40m > 10m before the load\n", false},
		{"Results: x\n", false},
	} {
		if got := onlyToolSkipped(tc.stdout, "fortio"); got != tc.want {
			t.Errorf("onlyToolSkipped(%q) = %v, want %v", tc.stdout, got, tc.want)
		}
	}
	if onlyToolSkipped(skipped, "vegeta") {
		t.Error("fortio's skips excused a vegeta run")
	}
}
