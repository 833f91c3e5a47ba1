package local

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/load/extgen"
	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// generatorsInstalled makes sure the pinned vegeta and fortio are where
// `meshbench load` looks (extgen.InstallDir): `make test` installs them
// first (make generators); elsewhere the install script builds them into
// a temporary directory the lab's load child is pointed at.
func generatorsInstalled(t *testing.T) {
	t.Helper()
	testutil.RealPart(t, "the load generators vegeta and fortio")
	dir := extgen.InstallDir()
	if fileExists(filepath.Join(dir, "vegeta")) && fileExists(filepath.Join(dir, "fortio")) {
		return
	}
	dir = t.TempDir()
	out, err := exec.Command(filepath.Join("..", "..", "..", "hack", "generators", "install.sh"), dir).CombinedOutput()
	if err != nil {
		t.Fatalf("hack/generators/install.sh: %v: %s", err, out)
	}
	t.Setenv("MESHBENCH_GENERATORS_BIN", dir)
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestRunExternalGenerator: a sidecar cell on the lab measured by vegeta
// and by fortio instead of meshbench's engine. The tool's own processes
// (its warm-up and its measured run, children of `meshbench load`) are
// found while they run and sampled as load; its result and its own
// output are in the cell; the manifest records the generator.
func TestRunExternalGenerator(t *testing.T) {
	generatorsInstalled(t)
	for _, tt := range []struct {
		gen  string
		kept string // the tool's own results beside load.json
	}{
		{extgen.Vegeta, results.LoadFile + ".vegeta.bin"},
		{extgen.Fortio, results.LoadFile + ".fortio.json"},
	} {
		t.Run(tt.gen, func(t *testing.T) {
			o := labOptions(t, topology.ModeSidecar, 1, 24)
			// 1000 rps for 3 s: the tool's CPU is then well above one
			// 10-ms clock tick per sampling round on any machine (at even
			// 20 µs of CPU per request, 20m: 5 ticks per 250-ms round).
			o.Generator, o.Load, o.Duration = tt.gen, loadgen.OpenLoopPerSecond(1000), 3*time.Second
			res, err := Run(context.Background(), o)
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			assertNothingLeft(t, res.Manifest)
			if g := res.Load.Generator; g == nil || g.Name != tt.gen {
				t.Fatalf("load result's generator %+v, want %s", g, tt.gen)
			}
			if res.Load.Success == 0 || res.Load.Success != res.Load.Completed {
				t.Errorf("success %d of %d through the sidecars", res.Load.Success, res.Load.Completed)
			}
			if s, err := res.Manifest.Settings(); err != nil || s.Generator != tt.gen {
				t.Errorf("manifest generator %q (%v), want %s", s.Generator, err, tt.gen)
			}
			if _, err := os.Stat(filepath.Join(res.Dir, tt.kept)); err != nil {
				t.Errorf("%s's own results not kept: %v", tt.gen, err)
			}
			var tool []string
			for _, p := range res.Manifest.Processes {
				if p.Category == sample.CategoryLoad && strings.HasPrefix(p.Name, "load "+tt.gen) {
					tool = append(tool, p.Name)
					if !strings.Contains(p.Command, tt.gen) {
						t.Errorf("process %s: command %q", p.Name, p.Command)
					}
				}
			}
			if len(tool) < 1 {
				t.Fatalf("no %s process sampled; processes %+v", tt.gen, res.Manifest.Processes)
			}
			// The measured window's load CPU is the tool's (meshbench's
			// own load process only waits for it).
			var toolCPU float64
			rounds, err := sample.ReadRounds(mustOpen(t, filepath.Join(res.Dir, results.SamplesFile)))
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rounds {
				for _, s := range r.Samples {
					if strings.HasPrefix(s.Name, "load "+tt.gen) {
						toolCPU = max(toolCPU, s.CPUMillicores)
					}
				}
			}
			if toolCPU < 20 {
				t.Errorf("the tool's highest CPU reading %.1fm, want ≥ 20m at 1000 rps", toolCPU)
			}
			if g := res.Summary.Category(sample.CategoryLoad); g == nil || g.CPUMillicores.Avg < 20 {
				t.Errorf("load category CPU %+v, want the tool's ≥ 20m", g)
			}
		})
	}
}

func mustOpen(t *testing.T, p string) *os.File {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
