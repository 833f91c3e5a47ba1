package image

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

var pauseBuild struct {
	once sync.Once
	path string
	err  error
}

// staticBinary builds hack/k8s/pause (a small static Go program) once.
func staticBinary(t *testing.T) string {
	t.Helper()
	pauseBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "image-test-")
		if err != nil {
			pauseBuild.err = err
			return
		}
		pauseBuild.path = filepath.Join(dir, "pause")
		cmd := exec.Command("go", "build", "-o", pauseBuild.path, "../../../hack/k8s/pause")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			pauseBuild.err = err
			pauseBuild.path = string(out)
		}
	})
	if pauseBuild.err != nil {
		t.Fatalf("building a static binary: %v\n%s", pauseBuild.err, pauseBuild.path)
	}
	return pauseBuild.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if pauseBuild.path != "" {
		os.RemoveAll(filepath.Dir(pauseBuild.path))
	}
	os.Exit(code)
}

func mustBuild(t *testing.T, s Spec) v1.Image {
	t.Helper()
	img, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func digest(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestBuildReproducible: the same inputs give the same digest; each input
// (a file's bytes, the time, an annotation) changes it.
func TestBuildReproducible(t *testing.T) {
	bin := staticBinary(t)
	base := Spec{Binary: bin, Version: "v1.2.3", Revision: "abc", Source: "https://example.com/x"}
	a, b := digest(t, mustBuild(t, base)), digest(t, mustBuild(t, base))
	if a != b {
		t.Fatalf("two builds: %s and %s", a, b)
	}
	other := filepath.Join(t.TempDir(), "other")
	data, _ := os.ReadFile(bin)
	os.WriteFile(other, append(data, 0), 0o755)
	for name, s := range map[string]Spec{
		// another binary's bytes
		"binary": {Binary: other, Version: "v1.2.3", Revision: "abc", Source: "https://example.com/x"},
		// another timestamp
		"created": {Binary: bin, Version: "v1.2.3", Revision: "abc", Source: "https://example.com/x", Created: time.Unix(1e9, 0)},
		// another version annotation
		"version": {Binary: bin, Version: "v1.2.4", Revision: "abc", Source: "https://example.com/x"},
		// an extra binary
		"extra": {Binary: bin, Extra: []string{other}, Version: "v1.2.3", Revision: "abc", Source: "https://example.com/x"},
	} {
		if d := digest(t, mustBuild(t, s)); d == a {
			t.Errorf("%s: same digest %s as the base", name, d)
		}
	}
}

// TestBuildContents: user, entrypoint, annotations, labels and the
// layer's files, owners and modes.
func TestBuildContents(t *testing.T) {
	bin := staticBinary(t)
	img := mustBuild(t, Spec{Binary: bin, Version: "v9", Revision: "deadbeef", Source: "https://github.com/meshbench/meshbench"})
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" || !slices.Equal(cf.Config.Entrypoint, []string{"/usr/local/bin/pause"}) || cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("config: user %q, entrypoint %q, %s/%s", cf.Config.User, cf.Config.Entrypoint, cf.OS, cf.Architecture)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{AnnotationVersion: "v9", AnnotationRevision: "deadbeef", AnnotationSource: "https://github.com/meshbench/meshbench",
		AnnotationCreated: "1970-01-01T00:00:00Z", AnnotationTitle: "pause"} {
		if m.Annotations[k] != want || cf.Config.Labels[k] != want {
			t.Errorf("annotation %s: manifest %q, label %q; want %q", k, m.Annotations[k], cf.Config.Labels[k], want)
		}
	}
	if m.MediaType != "application/vnd.oci.image.manifest.v1+json" {
		t.Errorf("media type %s", m.MediaType)
	}
	layers, _ := img.Layers()
	if len(layers) != 1 {
		t.Fatalf("%d layers", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	got := map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[h.Name] = h
		if !h.ModTime.Equal(time.Unix(0, 0)) {
			t.Errorf("%s: mtime %v", h.Name, h.ModTime)
		}
		if h.Name == "etc/passwd" {
			b, _ := io.ReadAll(tr)
			if !strings.Contains(string(b), "nonroot:x:65532:65532:") {
				t.Errorf("/etc/passwd: %q", b)
			}
		}
	}
	for name, mode := range map[string]int64{"usr/local/bin/pause": 0o755, "etc/passwd": 0o644, "tmp/": 0o1777, "home/nonroot/": 0o700} {
		h := got[name]
		if h == nil || h.Mode != mode {
			t.Errorf("%s: %+v, want mode %o", name, h, mode)
		}
	}
	if h := got["home/nonroot/"]; h == nil || h.Uid != UID {
		t.Errorf("home/nonroot/ not owned by %d", UID)
	}
}

// TestInspectOwnBinary: a Go binary's build information gives the source
// (and the test binary has no VCS stamp, which is fine).
func TestInspectOwnBinary(t *testing.T) {
	in, err := Inspect(staticBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	if in.Source != "https://github.com/meshbench/meshbench" {
		t.Errorf("source %q", in.Source)
	}
}

func TestCheckStatic(t *testing.T) {
	if err := CheckStatic(staticBinary(t)); err != nil {
		t.Errorf("static binary refused: %v", err)
	}
	// A dynamically linked system binary.
	if err := CheckStatic("/bin/ls"); err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("/bin/ls: %v", err)
	}
	// Not an executable at all.
	f := filepath.Join(t.TempDir(), "x")
	os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755)
	if err := CheckStatic(f); err == nil {
		t.Error("a script passed as a static binary")
	}
}

// TestWriteArchive: the same image gives the same bytes; the archive is
// an OCI layout with the same digest and a docker archive with the same
// config.
func TestWriteArchive(t *testing.T) {
	img := mustBuild(t, Spec{Binary: staticBinary(t)})
	ref, _ := ParseRef("example.com/meshbench:dev")
	var a, b bytes.Buffer
	if err := WriteArchive(&a, img, ref); err != nil {
		t.Fatal(err)
	}
	WriteArchive(&b, img, ref)
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two archives of one image differ")
	}
	dir := t.TempDir()
	tr := tar.NewReader(bytes.NewReader(a.Bytes()))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, h.Name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		data, _ := io.ReadAll(tr)
		os.WriteFile(p, data, 0o644)
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Digest != digest(t, img) || im.Manifests[0].Annotations["io.containerd.image.name"] != "example.com/meshbench:dev" {
		t.Errorf("OCI index %+v, want the image's digest %s named example.com/meshbench:dev", im.Manifests, digest(t, img))
	}
	f := filepath.Join(t.TempDir(), "image.tar")
	if err := WriteArchiveFile(f, img, ref); err != nil {
		t.Fatal(err)
	}
	tag := ref.(name.Tag)
	dimg, err := tarball.ImageFromPath(f, &tag)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.ConfigName()
	if got, err := dimg.ConfigName(); err != nil || got != want {
		t.Errorf("docker archive config %s (%v), want %s", got, err, want)
	}
}

// TestPushToRegistry pushes to go-containerregistry's registry server,
// in-process, and pulls the image back by the same digest.
func TestPushToRegistry(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	img := mustBuild(t, Spec{Binary: staticBinary(t), Version: "v1"})
	host := strings.TrimPrefix(srv.URL, "http://")
	ref, err := ParseRef(host + "/meshbench/meshbench:v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := Push(context.Background(), img, ref); err != nil {
		t.Fatal(err)
	}
	got, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	if digest(t, got) != digest(t, img) {
		t.Errorf("pulled %s, pushed %s", digest(t, got), digest(t, img))
	}
}

func TestParseRef(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"ghcr.io/meshbench/meshbench:dev", true},      // the default
		{"localhost:5000/m:v1", true},                  // a local registry
		{"meshbench", false},                           // no tag means latest
		{"meshbench:latest", false},                    // latest: always pulled
		{"m@sha256:" + strings.Repeat("a", 64), false}, // a digest names no image
		{"UPPER/case:v1", false},                       // not a reference
	} {
		if _, err := ParseRef(tc.in); (err == nil) != tc.ok {
			t.Errorf("ParseRef(%q): %v", tc.in, err)
		}
	}
}

func TestParseTarget(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string // the command for archive A, nil when refused
	}{
		{"kind:bench", []string{"kind", "load", "image-archive", "A", "--name", "bench"}},                                         // kind
		{"k3d:bench", []string{"k3d", "image", "import", "A", "--cluster", "bench"}},                                              // k3d
		{"containerd:/run/c.sock", []string{"ctr", "--address", "/run/c.sock", "--namespace", "k8s.io", "images", "import", "A"}}, // ctr
		{"docker:x", nil}, // unknown kind
		{"kind:", nil},    // no name
		{"bench", nil},    // no kind
	} {
		tg, err := ParseTarget(tc.in)
		if tc.want == nil {
			if err == nil {
				t.Errorf("ParseTarget(%q) accepted", tc.in)
			}
			continue
		}
		if err != nil || !slices.Equal(tg.Command("A", ""), tc.want) {
			t.Errorf("ParseTarget(%q): %v %v", tc.in, tg.Command("A", ""), err)
		}
	}
}
