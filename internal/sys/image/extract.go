package image

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/meshbench/meshbench/internal/sys/toolbin"
)

// Provenance says where a binary taken out of an image came from,
// written beside it as BINARY.json.
type Provenance struct {
	Image   string    `json:"image"`  // the reference asked for
	Digest  string    `json:"digest"` // the manifest digest pulled
	Path    string    `json:"path"`   // the file taken out of it
	SHA256  string    `json:"sha256"` // of the binary
	Version string    `json:"version"`
	Fetched time.Time `json:"fetched"`
}

// Binary is a program to take out of an official image.
type Binary struct {
	// Name names it in errors ("ztunnel").
	Name string
	// Path is where the image keeps it, without the leading slash.
	Path string
	// Version runs the binary at path and returns its version (first
	// line kept): an error means it does not run here.
	Version func(ctx context.Context, path string) (string, error)
}

// Extract pulls ref (for this machine's architecture) and writes the
// binary b it holds at b.Path to dst (mode 0755, replaced atomically),
// checks that it runs (b.Version) and records its provenance in
// dst.json. With wantDigest set, an image of another digest is refused
// before anything is written. opts reach the registry client
// (credentials, transport).
func Extract(ctx context.Context, ref name.Reference, wantDigest string, b Binary, dst string, opts ...remote.Option) (*Provenance, error) {
	opts = append(opts, remote.WithContext(ctx), remote.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}))
	img, err := remote.Image(ref, opts...)
	if err != nil {
		return nil, fmt.Errorf("pulling %s: %w", ref, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, fmt.Errorf("pulling %s: %w", ref, err)
	}
	if wantDigest != "" && digest.String() != wantDigest {
		return nil, fmt.Errorf("image %s is %s, not the %s asked for", ref, digest, wantDigest)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+b.Name+"-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	// The image's file system as the layers leave it (whiteouts applied).
	rc := mutate.Extract(img)
	found, err := copyFile(tar.NewReader(rc), b.Path, tmp)
	rc.Close()
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", ref, err)
	}
	if !found {
		return nil, fmt.Errorf("image %s has no /%s: not a %s image", ref, b.Path, b.Name)
	}
	if err := os.Chmod(tmp.Name(), 0o755); err != nil {
		return nil, err
	}
	version, err := b.Version(ctx, tmp.Name())
	if err != nil {
		return nil, fmt.Errorf("image %s: its %s does not run here: %w", ref, b.Name, err)
	}
	sum, err := toolbin.FileSHA256(tmp.Name())
	if err != nil {
		return nil, err
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return nil, err
	}
	line, _, _ := strings.Cut(version, "\n")
	p := &Provenance{Image: ref.String(), Digest: digest.String(), Path: "/" + b.Path, SHA256: sum, Version: line, Fetched: time.Now().UTC()}
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(dst+".json", append(data, '\n'), 0o644); err != nil {
		return nil, err
	}
	return p, nil
}

// copyFile copies the regular file at want (no leading slash) from tr to
// w, and reports whether it was there. Anything else at that path (a
// symlink, a directory) is an error: the official images hold a plain
// file.
func copyFile(tr *tar.Reader, want string, w io.Writer) (bool, error) {
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("reading its layers: %w", err)
		}
		if path.Clean(strings.TrimPrefix(strings.TrimPrefix(h.Name, "./"), "/")) != want {
			continue
		}
		if h.Typeflag != tar.TypeReg {
			return false, fmt.Errorf("/%s is not a regular file (tar type %q)", want, h.Typeflag)
		}
		if _, err := io.Copy(w, tr); err != nil {
			return false, fmt.Errorf("copying /%s: %w", want, err)
		}
		return true, nil
	}
}
