package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/platform/kube"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/sample"
)

// TestPrintKubeRunSamplingNotes: the kube run's printout says, in plain
// words, how many metrics samples were stale, in how many rounds only
// some pods had a new sample (MixedRounds), and how the drain ended.
func TestPrintKubeRunSamplingNotes(t *testing.T) {
	var out bytes.Buffer
	res := &kube.Result{Dir: "results/x", Manifest: &results.RunManifest{Valid: true},
		Summary: sample.Summary{Rounds: 3}, StalePods: 4, StaleNodes: 1, MixedRounds: 2,
		Drain: results.Drain{Ended: results.DrainMaximum, Seconds: 60, MaxSeconds: 60, AppPods: 2, AppPodsSampled: 1}}
	printKubeRun(&Env{Stdout: &out}, mesh.DefaultOptions(), res)
	for _, want := range []string{
		"Metrics samples seen again (stale, not counted twice): 4 pod, 1 node.\n",
		"Metrics rounds where only some pods had a new sample: 2 (those rounds' totals leave out the pods whose sample was old).\n",
		"Drain: maximum of 1m0s reached before the app was seen idle again (1 of 2 app pods had a sample taken wholly after the load's end).\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
}
