package release

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/meshbench/meshbench/internal/sys/image"
	"github.com/meshbench/meshbench/internal/sys/toolbin"
)

// OfficialHub is where Linkerd publishes its images: HUB/controller and
// HUB/proxy, tagged with the release.
const OfficialHub = "cr.l5d.io/linkerd"

// inImage is where each binary lives in Linkerd's official images
// (Dockerfile.controller, Dockerfile.proxy).
var inImage = map[string]struct{ image, path string }{
	Controller:       {ImageController, "controller"},
	PolicyController: {ImageController, "linkerd-policy-controller"},
	Proxy:            {ImageProxy, "usr/lib/linkerd/linkerd2-proxy"},
	ProxyIdentity:    {ImageProxy, "usr/lib/linkerd/linkerd2-proxy-identity"},
	ProxyInit:        {ImageProxy, "usr/lib/linkerd/linkerd2-proxy-init"},
}

// FromImages fills dir with a build taken out of Linkerd's official images
// (HUB/controller:Version and HUB/proxy:Version for this machine's
// architecture; hub "" is OfficialHub): the controller, the policy
// controller, the proxy and its two helpers, as upstream built them (static
// musl binaries); and the CLI, which no image holds, copied from cli (a
// `linkerd` that must report Version: Linkerd's release download). The
// provenance records each image's digest. opts reach the registry client
// (credentials, transport).
func FromImages(ctx context.Context, dir, hub, cli string, opts ...remote.Option) (Build, error) {
	if hub == "" {
		hub = OfficialHub
	}
	if cli == "" {
		return Build{}, errors.New("the Linkerd CLI: no image holds it; give Linkerd's " + Version + " release of linkerd (its GitHub release) as --cli")
	}
	out, err := exec.CommandContext(ctx, cli, "version", "--client", "--short").Output()
	if err != nil {
		return Build{}, fmt.Errorf("%s version --client: %w", cli, err)
	}
	if v := strings.TrimSpace(string(out)); v != Version {
		return Build{}, fmt.Errorf("%s is Linkerd %s, want %s", cli, v, Version)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Build{}, err
	}
	tmp, err := os.MkdirTemp(dir, ".from-images-")
	if err != nil {
		return Build{}, err
	}
	defer os.RemoveAll(tmp)
	p := Provenance{Release: Version, Source: "images", Binaries: map[string]BinaryProvenance{}}
	for _, im := range ImageNames {
		ref, err := name.ParseReference(hub + "/" + im + ":" + Version)
		if err != nil {
			return Build{}, err
		}
		files := map[string]string{} // path in the image -> file in the build
		for bin, w := range inImage {
			if w.image == im {
				files[w.path] = filepath.Join(tmp, bin)
			}
		}
		digest, err := image.ExtractFiles(ctx, ref, files, opts...)
		if err != nil {
			return Build{}, fmt.Errorf("%w: not Linkerd's %s image?", err, im)
		}
		for bin, w := range inImage {
			if w.image == im {
				p.Binaries[bin] = BinaryProvenance{From: fmt.Sprintf("%s@%s:/%s", ref, digest, w.path)}
			}
		}
	}
	if err := copyExecutable(cli, filepath.Join(tmp, CLI)); err != nil {
		return Build{}, err
	}
	p.Binaries[CLI] = BinaryProvenance{From: cli}
	for bin, bp := range p.Binaries {
		if bp.SHA256, err = toolbin.FileSHA256(filepath.Join(tmp, bin)); err != nil {
			return Build{}, err
		}
		p.Binaries[bin] = bp
	}
	p.Made = time.Now().UTC()
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return Build{}, err
	}
	if err := os.WriteFile(filepath.Join(tmp, ProvenanceFile), append(data, '\n'), 0o644); err != nil {
		return Build{}, err
	}
	// The stamp last, so that an interrupted fetch never looks complete.
	_ = os.Remove(filepath.Join(dir, stampFile))
	for _, f := range append(append([]string{}, Binaries...), ProvenanceFile) {
		if err := os.Rename(filepath.Join(tmp, f), filepath.Join(dir, f)); err != nil {
			return Build{}, err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, stampFile), []byte("linkerd="+Version+"\n"), 0o644); err != nil {
		return Build{}, err
	}
	return Open(dir)
}

func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}
