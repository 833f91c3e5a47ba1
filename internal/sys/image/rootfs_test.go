package image

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// unpack extracts img's filesystem into dir (regular files, directories,
// symbolic links: what BuildRootfs writes) and returns the entries' names.
func unpack(t *testing.T, rc io.ReadCloser, dir string) map[string]*tar.Header {
	t.Helper()
	defer rc.Close()
	tr := tar.NewReader(rc)
	seen := map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return seen
		}
		if err != nil {
			t.Fatal(err)
		}
		seen["/"+strings.TrimSuffix(h.Name, "/")] = h
		p := filepath.Join(dir, h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, os.FileMode(h.Mode)); err != nil {
				t.Fatal(err)
			}
		case tar.TypeSymlink:
			if err := os.Symlink(h.Linkname, p); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, os.FileMode(h.Mode)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestRootfsRunsDynamicBinary: an image of a dynamically linked host
// binary plus SharedLibraries runs it in a chroot of the image's files
// alone (nothing from the host), through a symbolic link as Debian's
// iptables are reached, and the same files give the same digest.
func TestRootfsRunsDynamicBinary(t *testing.T) {
	testutil.RequireRoot(t, "running a binary in a chroot of the image needs root")
	bin, err := exec.LookPath("ls")
	if err != nil {
		t.Skip("no ls on PATH")
	}
	bin, _ = filepath.EvalSymlinks(bin)
	libs, err := SharedLibraries(bin)
	if err != nil {
		t.Fatal(err)
	}
	if len(libs) < 2 { // the interpreter and libc at least
		t.Fatalf("libraries of %s: %v; want its interpreter and libc", bin, libs)
	}
	files := append([]File{
		{Path: "/usr/local/bin/ls", Source: bin},
		{Path: "/usr/sbin/list", Link: "/usr/local/bin/ls"},
		{Path: "/etc/passwd", Data: []byte("root:x:0:0::/:/sbin/nologin\nproxy:x:1337:1337::/:/sbin/nologin\n")},
		{Path: "/var/lib/proxy", Dir: true, UID: 1337, GID: 1337},
	}, libs...)
	spec := Rootfs{Files: files, User: "1337:1337", Entrypoint: []string{"/usr/local/bin/ls"}, Title: "ls"}
	img, err := BuildRootfs(spec)
	if err != nil {
		t.Fatal(err)
	}
	again, err := BuildRootfs(spec)
	if err != nil {
		t.Fatal(err)
	}
	if digest(t, img) != digest(t, again) {
		t.Error("two builds of the same files differ")
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "1337:1337" || cf.Config.Entrypoint[0] != "/usr/local/bin/ls" || cf.Config.Labels[AnnotationTitle] != "ls" {
		t.Errorf("config %+v", cf.Config)
	}
	dir := t.TempDir()
	seen := unpack(t, mutate.Extract(img), dir)
	if h := seen["/var/lib/proxy"]; h == nil || h.Uid != 1337 || h.Typeflag != tar.TypeDir {
		t.Errorf("/var/lib/proxy: %+v; want a directory owned by 1337", h)
	}
	if h := seen["/usr/local"]; h == nil || h.Typeflag != tar.TypeDir || h.Mode != 0o755 {
		t.Errorf("parent /usr/local: %+v; want a 0755 directory", h)
	}
	var out bytes.Buffer
	cmd := exec.Command("/usr/sbin/list", "/etc")
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: dir}
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil || strings.TrimSpace(out.String()) != "passwd" {
		t.Errorf("ls in the image's chroot: %v: %q; want it to list passwd", err, out.String())
	}
}

// TestRootfsBadInput: each mistake is refused with the path it concerns.
func TestRootfsBadInput(t *testing.T) {
	for _, tc := range []struct {
		files []File
		want  string
	}{
		{[]File{{Path: "etc/passwd"}}, "absolute path"},                                     // relative path
		{[]File{{Path: "/a", Data: []byte("x")}, {Path: "/a", Data: []byte("y")}}, "twice"}, // the same path twice
		{[]File{{Path: "/a", Source: "/nonexistent/file"}}, "/nonexistent/file"},            // missing source
		{[]File{{Path: "/a", Source: "/"}}, "not a regular file"},                           // a directory as source
	} {
		if _, err := BuildRootfs(Rootfs{Files: tc.files}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v; want an error with %q", tc.files, err, tc.want)
		}
	}
	if _, err := SharedLibraries("/nonexistent"); err == nil {
		t.Error("SharedLibraries of a missing file: no error")
	}
}
