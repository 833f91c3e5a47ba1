package results

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestRunDirWriteRead(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	d, err := CreateRunDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := RunManifest{Schema: RunSchema, Platform: "local", StartedAt: time.Unix(1, 0).UTC(), Host: ReadHost(), Valid: true,
		Options: map[string]any{"mesh": "sidecar"}}
	if err := d.WriteJSON(ManifestFile, m); err != nil {
		t.Fatal(err)
	}
	back, err := ReadManifest(dir)
	if err != nil || back.Options["mesh"] != "sidecar" || back.Host.CPUs < 1 {
		t.Fatalf("read back %+v, %v", back, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ManifestFile+".tmp")); !os.IsNotExist(err) {
		t.Error("temporary file left behind")
	}
	// A directory with results is never reused.
	if _, err := CreateRunDir(dir); err == nil {
		t.Fatal("reused a non-empty results directory")
	}
}
