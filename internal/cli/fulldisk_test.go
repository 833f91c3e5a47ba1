package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReportFullDisk: on a full disk (a small tmpfs), `report` fails in one
// line with exit 1 and leaves the previous report files whole and no
// temporary file behind (figures.csv was once left cut at 4096 bytes).
// It needs to mount a tmpfs (root); elsewhere it is skipped with one line.
func TestReportFullDisk(t *testing.T) {
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=2m"); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v): the full-disk case needs root", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(mnt, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", mnt, err)
		}
	})
	dir := filepath.Join(mnt, "plan")
	if err := os.CopyFS(dir, os.DirFS(planSmall)); err != nil {
		t.Fatal(err)
	}
	if inv := runCLI(t, nil, "report", "-q", dir); inv.code != ExitOK {
		t.Fatalf("first report: exit %d: %s", inv.code, inv.stderr)
	}
	before := map[string][]byte{}
	reportDir := filepath.Join(dir, ReportDir)
	plots, _ := filepath.Glob(filepath.Join(reportDir, "plots", "*"))
	if len(plots) == 0 {
		t.Fatal("the first report wrote no plot")
	}
	for _, name := range []string{"report.txt", "figures.csv", "latency.csv", "report.html", filepath.Join("plots", filepath.Base(plots[0]))} {
		b, err := os.ReadFile(filepath.Join(reportDir, name))
		if err != nil {
			t.Fatal(err)
		}
		before[name] = b
	}
	// Fill the disk.
	f, err := os.Create(filepath.Join(mnt, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte("x"), 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the disk: %v", err)
			}
			break
		}
	}
	f.Close()

	inv := runCLI(t, nil, "report", "-q", "--confidence", "0.9", dir)
	if inv.code != ExitFailure {
		t.Errorf("exit %d on a full disk, want %d; stderr %q", inv.code, ExitFailure, inv.stderr)
	}
	lines := strings.Split(strings.TrimSpace(inv.stderr), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "no space left on device") {
		t.Errorf("stderr %q, want one line naming the full disk", inv.stderr)
	}
	for name, b := range before {
		now, err := os.ReadFile(filepath.Join(reportDir, name))
		if err != nil || !bytes.Equal(now, b) {
			t.Errorf("%s changed on a failed write (%d bytes before, %d now, %v): a report file is replaced whole or not at all", name, len(b), len(now), err)
		}
	}
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".tmp") {
			t.Errorf("temporary file left: %s", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
