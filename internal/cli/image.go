package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/meshbench/meshbench/internal/load/extgen"
	"github.com/meshbench/meshbench/internal/platform/kube"
	"github.com/meshbench/meshbench/internal/sys/image"
)

type imageFlags struct {
	tag    string
	binary string
	extra  []string
	// generators: put the install step's vegeta and fortio in the image
	// (extgen.ImageBinaries).
	generators bool
	output     string
	push       string
	load       []string
	ctr        string
	version    string
	revision   string
	source     string
}

func newImageCmd(env *Env) *cobra.Command {
	f := &imageFlags{}
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Build the image the kube platform runs, without Docker: to a tarball, a registry or a cluster's nodes",
		Long: `Build meshbench's image in-process (no Docker engine): one layer with a
static meshbench binary (CGO_ENABLED=0; by default this very executable),
vegeta and fortio as the install step built them (make generators;
--generators=false leaves them out) and any --extra binaries beside it in
/usr/local/bin, user 65532:65532,
entrypoint meshbench, OCI annotations (source, revision, version, created)
from the binary's build information. The same inputs give the same digest.

Then one or more of:
  -o FILE              an image archive: OCI layout and docker archive in one
                       (docker load, ctr images import, kind/k3d import)
  --push REF           push to a registry with your docker credentials
  --load kind:CLUSTER  into a kind cluster's nodes (runs kind load image-archive)
  --load k3d:CLUSTER   into a k3d cluster's nodes (runs k3d image import)
  --load containerd:SOCKET  into a containerd (runs ctr images import, k8s.io namespace)

The image is named --tag (default the kube platform's default image), so
pods find it on nodes it was loaded into without pulling. The digest is
printed on stdout.`,
		Example: `  CGO_ENABLED=0 make build && bin/meshbench image --load k3d:bench
  meshbench image -o meshbench.tar
  meshbench image --push registry.example.com/meshbench:v1 --tag registry.example.com/meshbench:v1
  meshbench image --extra /usr/local/bin/oha --load kind:kind`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.output == "" && f.push == "" && len(f.load) == 0 {
				return usagef("nothing to do: give -o FILE, --push REF or --load KIND:NAME")
			}
			ref, err := image.ParseRef(f.tag)
			if err != nil {
				return usagef("--tag: %v", err)
			}
			var pushRef = ref
			if f.push != "" {
				if pushRef, err = image.ParseRef(f.push); err != nil {
					return usagef("--push: %v", err)
				}
			}
			var targets []image.Target
			for _, l := range f.load {
				t, err := image.ParseTarget(l)
				if err != nil {
					return usagef("%v", err)
				}
				targets = append(targets, t)
			}
			bin := f.binary
			if bin == "" {
				if bin, err = os.Executable(); err != nil {
					return fmt.Errorf("finding meshbench's own executable: %w (give --binary)", err)
				}
			}
			extra := f.extra
			if f.generators {
				paths, missing := extgen.ImageBinaries()
				for _, p := range paths {
					if !slices.ContainsFunc(extra, func(e string) bool { return filepath.Base(e) == filepath.Base(p) }) {
						extra = append(extra, p)
					}
				}
				if len(missing) > 0 {
					fmt.Fprintf(env.Stderr, "meshbench: no %s in %s (make generators builds them): the image runs --generator %s only where --extra adds it\n",
						strings.Join(missing, " or "), extgen.InstallDir(), strings.Join(missing, ", "))
				}
			}
			for _, b := range append([]string{bin}, extra...) {
				if fi, err := os.Stat(b); err != nil || fi.IsDir() {
					return usagef("binary %s: not a file", b)
				}
			}
			if err := image.CheckStatic(bin); err != nil {
				return usagef("--binary: %v (e.g. CGO_ENABLED=0 make build, then bin/meshbench image)", err)
			}
			version := f.version
			if version == "" {
				version = binaryVersion(cmd.Context(), bin)
			}
			img, err := image.Build(image.Spec{Binary: bin, Name: "meshbench", Extra: extra, Version: version, Revision: f.revision, Source: f.source})
			if err != nil {
				return err
			}
			digest, err := img.Digest()
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "%s@%s\n", ref.Name(), digest)
			if f.output != "" {
				if err := image.WriteArchiveFile(f.output, img, ref); err != nil {
					return fmt.Errorf("writing %s: %w", f.output, err)
				}
				fmt.Fprintf(env.Stderr, "meshbench: wrote %s\n", f.output)
			}
			var errs []error
			if f.push != "" {
				if err := image.Push(cmd.Context(), img, pushRef); err != nil {
					errs = append(errs, err)
				} else {
					fmt.Fprintf(env.Stderr, "meshbench: pushed %s@%s\n", pushRef.Name(), digest)
				}
			}
			for _, t := range targets {
				if err := image.Load(cmd.Context(), img, ref, t, f.ctr); err != nil {
					errs = append(errs, err)
				} else {
					fmt.Fprintf(env.Stderr, "meshbench: loaded %s into %s\n", ref.Name(), t)
				}
			}
			return errors.Join(errs...)
		},
	}
	cmd.AddCommand(newImageIstioCmd(env))
	cmd.AddCommand(newImageZtunnelCmd(env))
	cmd.AddCommand(newImageLinkerdProxyCmd(env))
	fl := cmd.Flags()
	fl.StringVar(&f.tag, "tag", kube.DefaultImage, "the image's name (what --image of run and bench names)")
	fl.StringVar(&f.binary, "binary", "", "the static meshbench binary to pack (default: this executable)")
	fl.StringSliceVar(&f.extra, "extra", nil, "more binaries for /usr/local/bin, e.g. static oha and wrk2 builds (repeatable)")
	fl.BoolVar(&f.generators, "generators", true, "put vegeta and fortio built by make generators (MESHBENCH_GENERATORS_BIN) in /usr/local/bin, for --generator vegeta|fortio on a cluster; false: leave them out")
	fl.StringVarP(&f.output, "output", "o", "", "write the image archive to this file")
	fl.StringVar(&f.push, "push", "", "push to this registry reference")
	fl.StringArrayVar(&f.load, "load", nil, "load into kind:CLUSTER, k3d:CLUSTER or containerd:SOCKET (repeatable)")
	fl.StringVar(&f.ctr, "ctr", "", "the ctr binary for --load containerd: (default: ctr on PATH)")
	fl.StringVar(&f.version, "image-version", "", "org.opencontainers.image.version (default: the binary's stamped version)")
	fl.StringVar(&f.revision, "revision", "", "org.opencontainers.image.revision (default: the binary's VCS revision)")
	fl.StringVar(&f.source, "source", "", "org.opencontainers.image.source (default: https:// + the binary's module path)")
	return cmd
}

// binaryVersion is what `BINARY --version` says ("meshbench version X"):
// the version stamped with -ldflags, which -trimpath builds do not record
// in their build information. "" when it says nothing of the kind.
func binaryVersion(ctx context.Context, bin string) string {
	if self, err := os.Executable(); err == nil && self == bin {
		return Version
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return ""
	}
	v, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "meshbench version ")
	if !ok || strings.ContainsAny(v, " \n") {
		return ""
	}
	return v
}
