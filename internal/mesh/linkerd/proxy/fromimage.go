package proxy

import (
	"context"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/meshbench/meshbench/internal/sys/image"
)

// OfficialImage is Linkerd's proxy image the binary is taken from when
// the build kept beside the project is not there (meshbench image
// linkerd-proxy; make linkerd-proxy falls back to it): edge-26.8.3, the
// release that pins proxy v2.366.0, whose source the build beside the
// project was made from (29637b6). Pinned by tag only:
// no registry is reachable where this was written, so neither its digest
// nor a run of its proxy against the lab's control plane has been checked;
// the digest pulled is recorded beside the binary and can be required on
// a later fetch with --digest.
const OfficialImage = "cr.l5d.io/linkerd/proxy:edge-26.8.3"

// ImagePath is where Linkerd's proxy images keep the binary (their
// Dockerfile: COPY … /usr/lib/linkerd/linkerd2-proxy).
const ImagePath = "usr/lib/linkerd/linkerd2-proxy"

// FromImage pulls ref (for this machine's architecture) and writes the
// linkerd2-proxy it holds at ImagePath to dst (mode 0755, replaced
// atomically), checks that it runs (its release line, GetVersion) and
// records its provenance in dst.json. With wantDigest set, an image of
// another digest is refused before anything is written.
func FromImage(ctx context.Context, ref name.Reference, wantDigest, dst string, opts ...remote.Option) (*image.Provenance, error) {
	version := func(ctx context.Context, path string) (string, error) {
		v, err := GetVersion(ctx, path)
		if err != nil {
			return "", err
		}
		return v.String(), nil
	}
	return image.Extract(ctx, ref, wantDigest, image.Binary{Name: "linkerd2-proxy", Path: ImagePath, Version: version}, dst, opts...)
}
