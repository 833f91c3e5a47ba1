package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/meshbench/meshbench/internal/mesh/envoy"
	"github.com/meshbench/meshbench/internal/mesh/istio"
	"github.com/meshbench/meshbench/internal/mesh/ztunnel"
	"github.com/meshbench/meshbench/internal/sys/image"
)

type imageIstioFlags struct {
	build, hub, tag string
	envoyPath       string
	ztunnelPath     string
	output          string
	load            []string
	ctr             string
}

// newImageIstioCmd is `meshbench image istio`: Istio's images from the
// Istio built here, for `--istio-build`.
func newImageIstioCmd(env *Env) *cobra.Command {
	f := &imageIstioFlags{}
	cmd := &cobra.Command{
		Use:   "istio",
		Short: "Build Istio's images (pilot, proxyv2 with upstream Envoy, install-cni, ztunnel) from the Istio built here",
		Long: `Build the images istioctl installs, from the Istio that hack/istio/build.sh
(make istio-tools) built at meshbench's pinned version, without Docker
and without Istio's registries:

  pilot        pilot-discovery (istiod), user 1337
  proxyv2      pilot-agent, upstream Envoy 1.40 from PyPI (make envoy) with the
               glibc it links, Istio's bootstrap template without the
               metadata_discovery extension, Debian's iptables for istio-init
  install-cni  install-cni and the istio-cni plugin, with iptables
  ztunnel      Istio's ztunnel (make ztunnel), when found

named HUB/NAME:TAG (default ` + istio.DefaultHub + `/NAME:` + istio.Version + `), as
` + "`istioctl install --set hub=HUB --set tag=TAG`" + ` renders them. Then -o DIR writes
one archive per image (DIR/NAME.tar) and --load puts them into a cluster's
nodes. Install with ` + "`run/bench --platform kube --install-mesh --istio-build DIR`" + `,
which adds the upstream-Envoy overlay. The images' names and digests are
printed on stdout.`,
		Example: `  make istio-tools envoy ztunnel
  meshbench image istio --load kind:bench
  meshbench image istio --load containerd:/run/containerd/containerd.sock -o images/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.output == "" && len(f.load) == 0 {
				return usagef("nothing to do: give -o DIR or --load KIND:NAME")
			}
			var targets []image.Target
			for _, l := range f.load {
				t, err := image.ParseTarget(l)
				if err != nil {
					return usagef("%v", err)
				}
				targets = append(targets, t)
			}
			b, err := istio.Open(f.build)
			if err != nil {
				return usagef("--istio-build: %v", err)
			}
			exe, _ := os.Executable()
			wd, _ := os.Getwd()
			bin, err := envoy.FindContext(cmd.Context(), envoy.FindOptions{Flag: f.envoyPath, ProjectDir: wd, Executable: exe, Getenv: env.Getenv})
			if err != nil {
				return err
			}
			zt := f.ztunnelPath
			if zt == "" {
				if zt, err = ztunnel.Find("", wd); err != nil {
					fmt.Fprintf(env.Stderr, "meshbench: %v: no ztunnel image (ambient needs one)\n", err)
					zt = ""
				}
			}
			imgs, err := istio.Images(b, istio.ImageOptions{Hub: f.hub, Tag: f.tag, Envoy: bin.Path, Ztunnel: zt})
			if err != nil {
				return err
			}
			if f.output != "" {
				if err := os.MkdirAll(f.output, 0o755); err != nil {
					return err
				}
			}
			tmp, err := os.MkdirTemp("", "meshbench-istio-images-")
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
				// One archive per image, imported into every target.
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
	fl.StringVar(&f.build, "istio-build", istio.DefaultDir(), "the Istio build (hack/istio/build.sh's directory)")
	fl.StringVar(&f.hub, "hub", istio.DefaultHub, "the images' registry part (istioctl's hub)")
	fl.StringVar(&f.tag, "tag", istio.Version, "the images' tag (istioctl's tag; not latest)")
	fl.StringVar(&f.envoyPath, "envoy", "", "the Envoy binary of proxyv2 (default: $MESHBENCH_ENVOY, .tools/envoy, PATH)")
	fl.StringVar(&f.ztunnelPath, "ztunnel", "", "the ztunnel binary (default: $MESHBENCH_ZTUNNEL, .tools/ztunnel, ../shared/bin)")
	fl.StringVarP(&f.output, "output", "o", "", "write one archive per image into this directory (NAME.tar)")
	fl.StringArrayVar(&f.load, "load", nil, "load into kind:CLUSTER, k3d:CLUSTER or containerd:SOCKET (repeatable)")
	fl.StringVar(&f.ctr, "ctr", "", "the ctr binary for --load containerd: (default: ctr on PATH)")
	return cmd
}
