package ztunnel

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/meshbench/meshbench/internal/sys/image"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestFromImage pulls ztunnel images from a registry served in-process
// (go-containerregistry's pkg/registry: no registry is reachable here)
// and installs the binary they hold, as `meshbench image ztunnel` does
// with Istio's official image. The images are assembled with the real
// ztunnel binary at Istio's path, /usr/local/bin/ztunnel.
func TestFromImage(t *testing.T) {
	testutil.RealPart(t, "ztunnel")
	bin, err := Find("", ".")
	if err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	want, err := FileSHA256(bin)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(registry.New())
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	push := func(t *testing.T, repo string, img v1.Image) (name.Reference, string) {
		t.Helper()
		ref, err := name.ParseReference(u.Host+"/"+repo, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
		d, _ := img.Digest()
		return ref, d.String()
	}
	build := func(t *testing.T, files ...image.File) v1.Image {
		t.Helper()
		img, err := image.BuildRootfs(image.Rootfs{Files: files, Entrypoint: []string{"/usr/local/bin/ztunnel"}})
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	real := image.File{Path: "/usr/local/bin/ztunnel", Source: bin, Mode: 0o755}
	// Istio's images are a base plus a layer with the binary: here the
	// base holds a stand-in at the same path, which the top layer
	// replaces; the extraction must give the top layer's file.
	base := build(t, image.File{Path: "/usr/local/bin/ztunnel", Data: []byte("#!/bin/sh\nexit 3\n"), Mode: 0o755},
		image.File{Path: "/etc/passwd", Data: []byte("root:x:0:0::/root:/sbin/nologin\n")})
	top, err := build(t, real).Layers()
	if err != nil {
		t.Fatal(err)
	}
	layered, err := mutate.AppendLayers(base, top...)
	if err != nil {
		t.Fatal(err)
	}
	stand, _ := build(t, image.File{Path: "/usr/local/bin/ztunnel", Data: []byte("#!/bin/sh\nexit 3\n"), Mode: 0o755}).Digest()

	tests := []struct {
		name       string
		img        v1.Image
		wantDigest func(digest string) string // the --digest given, from the image's own
		wantErr    string                     // "" installs
	}{
		// one layer, the real binary
		{"one layer", build(t, real), nil, ""},
		// a base with a stand-in, the real binary on top
		{"layered", layered, nil, ""},
		// the digest asked for is the image's
		{"digest matches", build(t, real), func(d string) string { return d }, ""},
		// another digest is refused before anything is written
		{"digest differs", build(t, real), func(string) string { return stand.String() }, "not the " + stand.String()},
		// no ztunnel at Istio's path
		{"not ztunnel", build(t, image.File{Path: "/bin/other", Source: bin, Mode: 0o755}), nil, "has no /usr/local/bin/ztunnel"},
		// a file there that does not run as ztunnel
		{"broken binary", build(t, image.File{Path: "/usr/local/bin/ztunnel", Data: []byte("#!/bin/sh\nexit 3\n"), Mode: 0o755}), nil, "does not run here"},
		// a symlink there instead of the binary
		{"symlink", build(t, image.File{Path: "/usr/local/bin/ztunnel", Link: "/bin/other"}), nil, "not a regular file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ref, digest := push(t, "istio/ztunnel:"+strings.ReplaceAll(tc.name, " ", "-"), tc.img)
			dst := filepath.Join(t.TempDir(), "tools", "ztunnel")
			var wantDigest string
			if tc.wantDigest != nil {
				wantDigest = tc.wantDigest(digest)
			}
			p, err := FromImage(context.Background(), ref, wantDigest, dst)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
				}
				if _, serr := os.Stat(dst); !os.IsNotExist(serr) {
					t.Errorf("a binary was installed although the fetch failed: %v", serr)
				}
				if ents, _ := os.ReadDir(filepath.Dir(dst)); len(ents) != 0 {
					t.Errorf("files left: %v", ents)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := FileSHA256(dst)
			if err != nil || got != want || p.SHA256 != want {
				t.Errorf("installed sha256 %s (recorded %s), want the real binary's %s (%v)", got, p.SHA256, want, err)
			}
			if p.Digest != digest || !strings.Contains(p.Version, "version.BuildInfo") {
				t.Errorf("provenance %+v, want digest %s and ztunnel's version", p, digest)
			}
			var rec Provenance
			b, err := os.ReadFile(dst + ".json")
			if err != nil || json.Unmarshal(b, &rec) != nil || rec.Digest != digest || rec.SHA256 != want {
				t.Errorf("provenance file %s: %v", b, err)
			}
			if got, err := Find(dst, "."); err != nil || got != dst {
				t.Errorf("Find(--ztunnel %s) = %s, %v", dst, got, err)
			}
		})
	}
}
