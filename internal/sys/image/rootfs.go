package image

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// File is one entry of a Rootfs image: a regular file copied from the
// host (Source) or given (Data), or a symbolic link (Link).
type File struct {
	// Path is the absolute path in the image.
	Path string
	// Source is the host file to copy (its content; its mode unless Mode
	// is set). Symbolic links on the host are followed.
	Source string
	// Data is the content when Source is empty.
	Data []byte
	// Link makes the entry a symbolic link to Link.
	Link string
	// Mode is the permission bits (default: Source's, else 0644).
	Mode int64
	// UID and GID own the entry (default root).
	UID, GID int
	// Dir makes the entry an (empty) directory.
	Dir bool
}

// Rootfs is an image made of the given files (for images that are not a
// single static binary: a dynamically linked proxy with the libraries it
// loads, tools it runs, configuration templates).
type Rootfs struct {
	Files []File
	// User is the image's user ("uid[:gid]", numeric; empty: root).
	User       string
	Entrypoint []string
	Cmd        []string
	Env        []string
	WorkingDir string
	// Created is the image's (and every file's) timestamp; zero: the Unix
	// epoch, so the same files give the same digest.
	Created time.Time
	// Title, Source, Revision, Version become the OCI annotations.
	Title, Source, Revision, Version string
}

// BuildRootfs builds one layer from s.Files, with every parent directory
// (root-owned, 0755) added, in sorted order, numeric owners and fixed
// times: the same inputs give the same digest.
func BuildRootfs(s Rootfs) (v1.Image, error) {
	created := s.Created.UTC().Truncate(time.Second)
	if s.Created.IsZero() {
		created = time.Unix(0, 0).UTC()
	}
	data, err := rootfsTar(s.Files, created)
	if err != nil {
		return nil, err
	}
	anns := map[string]string{AnnotationCreated: created.Format(time.RFC3339)}
	for k, v := range map[string]string{AnnotationTitle: s.Title, AnnotationSource: s.Source, AnnotationRevision: s.Revision, AnnotationVersion: s.Version} {
		if v != "" {
			anns[k] = v
		}
	}
	env := s.Env
	if !slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "PATH=") }) {
		env = append([]string{"PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, env...)
	}
	return oneLayerImage(data, created, fmt.Sprintf("%d files", len(s.Files)), "amd64",
		v1.Config{User: s.User, Entrypoint: s.Entrypoint, Cmd: s.Cmd, Env: env, WorkingDir: s.WorkingDir}, anns)
}

func rootfsTar(files []File, mtime time.Time) ([]byte, error) {
	entries := map[string]File{}
	for _, f := range files {
		p := path.Clean("/" + f.Path)
		if p == "/" || f.Path == "" || !path.IsAbs(f.Path) {
			return nil, fmt.Errorf("image file %q: want an absolute path", f.Path)
		}
		if prev, ok := entries[p]; ok && !(prev.Dir && f.Dir) {
			return nil, fmt.Errorf("image file %s given twice", p)
		}
		f.Path = p
		entries[p] = f
		for d := path.Dir(p); d != "/"; d = path.Dir(d) {
			if _, ok := entries[d]; !ok {
				entries[d] = File{Path: d, Dir: true}
			}
		}
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	slices.Sort(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		f := entries[n]
		h := &tar.Header{Name: strings.TrimPrefix(n, "/"), ModTime: mtime, Uid: f.UID, Gid: f.GID, Format: tar.FormatPAX, Mode: f.Mode}
		var data []byte
		switch {
		case f.Dir:
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
			if h.Mode == 0 {
				h.Mode = 0o755
			}
		case f.Link != "":
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, f.Link, 0o777
		default:
			h.Typeflag = tar.TypeReg
			data = f.Data
			if f.Source != "" {
				st, err := os.Stat(f.Source)
				if err != nil {
					return nil, fmt.Errorf("image file %s: %w", n, err)
				}
				if !st.Mode().IsRegular() {
					return nil, fmt.Errorf("image file %s: %s is not a regular file", n, f.Source)
				}
				if data, err = os.ReadFile(f.Source); err != nil {
					return nil, fmt.Errorf("image file %s: %w", n, err)
				}
				if h.Mode == 0 {
					h.Mode = int64(st.Mode().Perm())
				}
			}
			if h.Mode == 0 {
				h.Mode = 0o644
			}
			h.Size = int64(len(data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// LibDirs are where SharedLibraries looks for a library a binary needs
// (Debian's multiarch directories first, as its dynamic loader does).
var LibDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"}

// SharedLibraries lists, for the ELF binaries given, the host files an
// image needs so they run there: their program interpreter and every
// library they need (DT_NEEDED), recursively, found in LibDirs. Each is
// returned as a File at the path the loader looks for (the host file
// behind any symbolic link is copied). A statically linked binary needs
// none. A library that cannot be found is an error naming it and the
// binary that needs it.
func SharedLibraries(binaries ...string) ([]File, error) {
	seen := map[string]bool{}
	var out []File
	var visit func(bin string) error
	visit = func(bin string) error {
		f, err := elf.Open(bin)
		if err != nil {
			return fmt.Errorf("%s: %w", bin, err)
		}
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type != elf.PT_INTERP {
				continue
			}
			b, err := io.ReadAll(p.Open())
			if err != nil {
				return fmt.Errorf("%s: reading its interpreter: %w", bin, err)
			}
			interp := strings.TrimRight(string(b), "\x00")
			if !seen[interp] {
				seen[interp] = true
				out = append(out, File{Path: interp, Source: interp, Mode: 0o755})
			}
		}
		libs, err := f.ImportedLibraries()
		if err != nil {
			return fmt.Errorf("%s: %w", bin, err)
		}
		for _, lib := range libs {
			var found string
			for _, d := range LibDirs {
				if st, err := os.Stat(filepath.Join(d, lib)); err == nil && st.Mode().IsRegular() {
					found = filepath.Join(d, lib)
					break
				}
			}
			if found == "" {
				return fmt.Errorf("%s needs %s, not found in %s", bin, lib, strings.Join(LibDirs, ", "))
			}
			if seen[found] {
				continue
			}
			seen[found] = true
			out = append(out, File{Path: found, Source: found, Mode: 0o755})
			if err := visit(found); err != nil {
				return err
			}
		}
		return nil
	}
	for _, b := range binaries {
		if err := visit(b); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}
