package kube

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/results"
)

// TestEvidenceNotKept: a cluster cell's evidence file that cannot be
// written (here a directory stands where k8s/mesh-checks.json goes, as a
// full disk would refuse it) is said in the log and marks the cell
// invalid, naming the file; it was once dropped without a word. One
// written is not.
func TestEvidenceNotKept(t *testing.T) {
	dir, err := results.CreateRunDir(filepath.Join(t.TempDir(), "run"))
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join("k8s", "mesh-checks.json")
	if err := os.MkdirAll(filepath.Join(dir.Path, name, "in-the-way"), 0o755); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	r := &run{o: Options{Log: &log}, dir: dir, manifest: &results.RunManifest{Valid: true}}
	r.keepJSON(filepath.Join("k8s", "enrolment-checks.json"), []string{"ok"})
	if !r.manifest.Valid {
		t.Fatalf("a file written marked the cell: %v", r.manifest.Invalid)
	}
	r.keepJSON(name, []string{"ok"})
	if r.manifest.Valid || len(r.manifest.Invalid) != 1 || !strings.HasPrefix(r.manifest.Invalid[0], "evidence not kept: "+name+": ") {
		t.Errorf("manifest valid %v, invalid %q; want invalid: evidence not kept: %s: …", r.manifest.Valid, r.manifest.Invalid, name)
	}
	if !strings.Contains(log.String(), "warning: "+name+" not kept: ") {
		t.Errorf("log %q does not say it", log.String())
	}
}
