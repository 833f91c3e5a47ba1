package cli

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestImageGenerators: `meshbench image` puts the install step's vegeta
// and fortio (MESHBENCH_GENERATORS_BIN) beside meshbench in
// /usr/local/bin by default, says which are missing when they are not
// built, and leaves them out with --generators=false. The tools here are
// small stand-in files (the image only copies them; a cluster run of the
// real ones is internal/e2e's TestGeneratorsOnRealNodes).
func TestImageGenerators(t *testing.T) {
	bin := testutil.BuildMeshbench(t)
	full := t.TempDir()
	for _, n := range []string{"vegeta", "fortio"} {
		if err := os.WriteFile(filepath.Join(full, n), []byte("#!/bin/true\n"+n+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name    string
		dir     string
		args    []string
		want    []string // files in /usr/local/bin
		stderr  string   // a line stderr must hold ("": none about generators)
		lacking []string
	}{
		// Both built: both in the image.
		{"built", full, nil, []string{"meshbench", "vegeta", "fortio"}, "", nil},
		// None built: the image without them, and the line saying so.
		{"not built", t.TempDir(), nil, []string{"meshbench"}, "no vegeta or fortio in ", []string{"vegeta", "fortio"}},
		// Left out on purpose: no line.
		{"left out", full, []string{"--generators=false"}, []string{"meshbench"}, "", []string{"vegeta", "fortio"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("MESHBENCH_GENERATORS_BIN", tt.dir)
			out := filepath.Join(t.TempDir(), "image.tar")
			inv := runCLI(t, nil, append([]string{"image", "--binary", bin, "--tag", "example.com/meshbench:t1", "-o", out}, tt.args...)...)
			if inv.code != 0 {
				t.Fatalf("exit %d: %s", inv.code, inv.stderr)
			}
			if tt.stderr != "" && !strings.Contains(inv.stderr, tt.stderr) || tt.stderr == "" && strings.Contains(inv.stderr, "make generators") {
				t.Errorf("stderr %q, want a line with %q", inv.stderr, tt.stderr)
			}
			files := imageBinFiles(t, out, "example.com/meshbench:t1")
			for _, w := range tt.want {
				if !slices.Contains(files, w) {
					t.Errorf("/usr/local/bin lacks %s: %v", w, files)
				}
			}
			for _, l := range tt.lacking {
				if slices.Contains(files, l) {
					t.Errorf("/usr/local/bin holds %s: %v", l, files)
				}
			}
		})
	}
}

// imageBinFiles lists the files in /usr/local/bin of the image archive.
func imageBinFiles(t *testing.T, archive, ref string) []string {
	t.Helper()
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(archive, &tag)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if dir, base := filepath.Split(strings.TrimPrefix(h.Name, "/")); dir == "usr/local/bin/" {
				files = append(files, base)
			}
		}
		rc.Close()
	}
	return files
}
