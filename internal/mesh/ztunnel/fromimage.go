package ztunnel

import (
	"context"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/meshbench/meshbench/internal/sys/image"
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
type Provenance = image.Provenance

// FromImage pulls ref (for this machine's architecture) and writes the
// ztunnel binary it holds at ImagePath to dst (mode 0755, replaced
// atomically), checks that it runs (`ztunnel version`) and records its
// provenance in dst.json. With wantDigest set, an image of another digest
// is refused before anything is written. opts reach the registry client
// (credentials, transport).
func FromImage(ctx context.Context, ref name.Reference, wantDigest, dst string, opts ...remote.Option) (*Provenance, error) {
	return image.Extract(ctx, ref, wantDigest, image.Binary{Name: "ztunnel", Path: ImagePath, Version: Version}, dst, opts...)
}
