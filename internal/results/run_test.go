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

// TestDrainString: how a drain ended, in a few words, for each ending.
func TestDrainString(t *testing.T) {
	tests := []struct {
		d    Drain
		want string
	}{
		{Drain{Ended: DrainIdle, Seconds: 14.4, MaxSeconds: 60, AppPods: 2, AppPodsSampled: 2, AppCPUMillicores: 2, IdleMillicores: 20},
			"app idle again after 14s (2m < 20m by samples taken wholly after the load's end)"},
		// Every pod sampled, still busy.
		{Drain{Ended: DrainMaximum, Seconds: 60.01, MaxSeconds: 60, AppPods: 2, AppPodsSampled: 2, AppCPUMillicores: 35, IdleMillicores: 20},
			"maximum of 1m0s reached before the app was seen idle again (app CPU 35m, not under 20m)"},
		// Not every pod sampled after the load's end.
		{Drain{Ended: DrainMaximum, Seconds: 20, MaxSeconds: 20, AppPods: 3, AppPodsSampled: 1, AppCPUMillicores: 1, IdleMillicores: 30},
			"maximum of 20s reached before the app was seen idle again (1 of 3 app pods had a sample taken wholly after the load's end)"},
		{Drain{Ended: DrainInterrupted, Seconds: 3.2, MaxSeconds: 60}, "interrupted after 3s"},
		{Drain{Ended: DrainOff}, "none"},
	}
	for _, tt := range tests {
		if got := tt.d.String(); got != tt.want {
			t.Errorf("%+v:\n got %q\nwant %q", tt.d, got, tt.want)
		}
	}
}
