package ztunnel

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
)

// OfficialImage is Istio's ztunnel image the binary is taken from when
// none is installed (meshbench image ztunnel): the release line whose
// published costs the lab's figures are set beside (Istio 1.24). It is
// pinned by tag only, as no registry is reachable where this was written;
// the digest actually pulled is recorded beside the binary (ImagePath in
// the provenance file) and checked again on a later fetch with --digest.
const OfficialImage = "docker.io/istio/ztunnel:1.24.6"

// ImagePath is where Istio's ztunnel images keep the binary (their
// Dockerfile: COPY … /usr/local/bin/ztunnel, the entrypoint).
const ImagePath = "usr/local/bin/ztunnel"

// Provenance says where an installed ztunnel came from, written beside it
// as BINARY.json.
type Provenance struct {
	Image   string    `json:"image"`  // the reference asked for
	Digest  string    `json:"digest"` // the manifest digest pulled
	Path    string    `json:"path"`   // the file taken out of it
	SHA256  string    `json:"sha256"` // of the binary
	Version string    `json:"version"`
	Fetched time.Time `json:"fetched"`
}

// FromImage pulls ref (for this machine's architecture) and writes the
// ztunnel binary it holds at ImagePath to dst (mode 0755, replaced
// atomically), checks that it runs (`ztunnel version`) and records its
// provenance in dst.json. With wantDigest set, an image of another digest
// is refused before anything is written. opts reach the registry client
// (credentials, transport).
func FromImage(ctx context.Context, ref name.Reference, wantDigest, dst string, opts ...remote.Option) (*Provenance, error) {
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
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".ztunnel-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	// The image's file system as the layers leave it (whiteouts applied).
	rc := mutate.Extract(img)
	found, err := copyFile(tar.NewReader(rc), ImagePath, tmp)
	rc.Close()
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", ref, err)
	}
	if !found {
		return nil, fmt.Errorf("image %s has no /%s: not a ztunnel image", ref, ImagePath)
	}
	if err := os.Chmod(tmp.Name(), 0o755); err != nil {
		return nil, err
	}
	version, err := Version(ctx, tmp.Name())
	if err != nil {
		return nil, fmt.Errorf("image %s: its ztunnel does not run here: %w", ref, err)
	}
	sum, err := FileSHA256(tmp.Name())
	if err != nil {
		return nil, err
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return nil, err
	}
	p := &Provenance{Image: ref.String(), Digest: digest.String(), Path: "/" + ImagePath, SHA256: sum,
		Version: firstLine(version), Fetched: time.Now().UTC()}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(dst+".json", append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	return p, nil
}

// copyFile copies the regular file at want (no leading slash) from tr to
// w, and reports whether it was there. Anything else at that path (a
// symlink, a directory) is an error: Istio's image holds a plain file.
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

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
