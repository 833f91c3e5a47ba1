package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/spf13/cobra"

	"github.com/meshbench/meshbench/internal/mesh/linkerd/release"
	"github.com/meshbench/meshbench/internal/sys/image"
)

type imageLinkerdFlags struct {
	build, hub, tag string
	output          string
	load            []string
	ctr             string
	fromImages      bool
	fromHub, cli    string
}

// newImageLinkerdCmd is `meshbench image linkerd`: Linkerd's two images
// from the Linkerd built here, for `--linkerd-build`; with --from-images,
// the build itself taken out of Linkerd's official images.
func newImageLinkerdCmd(env *Env) *cobra.Command {
	f := &imageLinkerdFlags{}
	cmd := &cobra.Command{
		Use:   "linkerd",
		Short: "Build Linkerd's images (controller, proxy) from the Linkerd built here",
		Long: `Build the two images ` + "`linkerd install`" + ` runs, from the Linkerd ` + release.Version + `
binaries make linkerd-tools installed (--linkerd-build), without Docker and
without Linkerd's registry, laid out as Linkerd's Dockerfiles lay them out:

  controller  /controller (destination, identity, proxy-injector,
              sp-validator), /linkerd-policy-controller, with the glibc
              the policy controller links
  proxy       /usr/lib/linkerd/linkerd2-proxy-identity (the entrypoint),
              linkerd2-proxy, linkerd2-proxy-init; Debian's iptables (nft
              and legacy) for the linkerd-init container; user 65534

named HUB/NAME:TAG (default ` + release.DefaultHub + `/NAME:` + release.Version + `), as
` + "`linkerd install --set controllerImage=HUB/controller --set proxy.image.name=HUB/proxy`" + `
names them. Then -o DIR writes one archive per image (DIR/NAME.tar) and
--load puts them into a cluster's nodes. Install with
` + "`run/bench --platform kube --mesh linkerd --install-mesh --linkerd-build DIR`" + `.
The images' names and digests are printed on stdout.

--from-images first fills --linkerd-build from Linkerd's official images
(` + release.OfficialHub + `/controller and /proxy:` + release.Version + `, pulled with your docker
credentials, anonymous when none match) instead of the project's build,
with the CLI given as --cli (no image holds it: Linkerd's release
download), each binary's image digest recorded in provenance.json.`,
		Example: `  make linkerd-tools
  meshbench image linkerd --load kind:bench
  meshbench image linkerd --load containerd:/run/containerd/containerd.sock -o images/
  meshbench image linkerd --from-images --cli ~/.linkerd2/bin/linkerd --load kind:bench`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.output == "" && len(f.load) == 0 && !f.fromImages {
				return usagef("nothing to do: give -o DIR, --load KIND:NAME or --from-images")
			}
			var targets []image.Target
			for _, l := range f.load {
				t, err := image.ParseTarget(l)
				if err != nil {
					return usagef("%v", err)
				}
				targets = append(targets, t)
			}
			if f.fromImages {
				b, err := release.FromImages(cmd.Context(), f.build, f.fromHub, f.cli, remote.WithAuthFromKeychain(authn.DefaultKeychain))
				if err != nil {
					return err
				}
				fmt.Fprintf(env.Stderr, "meshbench: %s\n", b.Describe())
				if f.output == "" && len(targets) == 0 {
					return nil
				}
			}
			b, err := release.Open(f.build)
			if err != nil {
				return usagef("--linkerd-build: %v", err)
			}
			imgs, err := release.Images(b, f.hub, f.tag)
			if err != nil {
				return err
			}
			if f.output != "" {
				if err := os.MkdirAll(f.output, 0o755); err != nil {
					return err
				}
			}
			tmp, err := os.MkdirTemp("", "meshbench-linkerd-images-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(tmp)
			var errs []error
			for _, img := range imgs {
				digest, err := img.Image.Digest()
				if err != nil {
					return err
				}
				fmt.Fprintf(env.Stdout, "%s@%s\n", img.Ref.Name(), digest)
				if f.output != "" {
					p := filepath.Join(f.output, img.Name+".tar")
					if err := image.WriteArchiveFile(p, img.Image, img.Ref); err != nil {
						return fmt.Errorf("writing %s: %w", p, err)
					}
					fmt.Fprintf(env.Stderr, "meshbench: wrote %s\n", p)
				}
				if len(targets) == 0 {
					continue
				}
				archive := filepath.Join(tmp, img.Name+".tar")
				if err := image.WriteArchiveFile(archive, img.Image, img.Ref); err != nil {
					return err
				}
				for _, t := range targets {
					if err := image.LoadArchive(cmd.Context(), archive, t, f.ctr); err != nil {
						errs = append(errs, err)
					} else {
						fmt.Fprintf(env.Stderr, "meshbench: loaded %s into %s\n", img.Ref.Name(), t)
					}
				}
				os.Remove(archive)
			}
			return errors.Join(errs...)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.build, "linkerd-build", release.DefaultDir(), "the Linkerd build (make linkerd-tools' directory; with --from-images, where to put it)")
	fl.StringVar(&f.hub, "hub", release.DefaultHub, "the images' registry part (linkerd install's controllerImage and proxy.image.name without /NAME)")
	fl.StringVar(&f.tag, "tag", release.Version, "the images' tag (not latest)")
	fl.StringVarP(&f.output, "output", "o", "", "write one archive per image into this directory (NAME.tar)")
	fl.StringArrayVar(&f.load, "load", nil, "load into kind:CLUSTER, k3d:CLUSTER or containerd:SOCKET (repeatable)")
	fl.StringVar(&f.ctr, "ctr", "", "the ctr binary for --load containerd: (default: ctr on PATH)")
	fl.BoolVar(&f.fromImages, "from-images", false, "first take the build out of Linkerd's official images (registry access needed) into --linkerd-build")
	fl.StringVar(&f.fromHub, "from-hub", release.OfficialHub, "with --from-images: the registry part of the images to take the binaries from")
	fl.StringVar(&f.cli, "cli", "", "with --from-images: the linkerd CLI of release "+release.Version+" (Linkerd's release download) to put in the build")
	return cmd
}
