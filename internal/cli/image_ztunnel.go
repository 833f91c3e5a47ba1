package cli

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/spf13/cobra"

	"github.com/meshbench/meshbench/internal/mesh/linkerd/proxy"
	"github.com/meshbench/meshbench/internal/mesh/ztunnel"
	"github.com/meshbench/meshbench/internal/sys/image"
)

// newImageZtunnelCmd takes the ztunnel binary out of Istio's official
// ztunnel image: how a user with registry access but without the
// project's own build gets the lab's ztunnel (make ztunnel calls it).
func newImageZtunnelCmd(env *Env) *cobra.Command {
	var from, digest, out string
	cmd := &cobra.Command{
		Use:   "ztunnel",
		Short: "Install the lab's ztunnel from Istio's official ztunnel image (no Docker)",
		Long: `Pull Istio's ztunnel image for this machine's architecture with your
docker credentials (anonymous when none match), take /usr/local/bin/ztunnel
out of its layers, check that it runs (ztunnel version), and install it at
--out with its provenance (image, digest, sha256, version) in OUT.json.
The lab finds it there (.tools/ztunnel/ztunnel, as make ztunnel installs
it). --digest refuses an image of any other digest.`,
		Example: `  meshbench image ztunnel
  meshbench image ztunnel --from docker.io/istio/ztunnel:1.24.6 --digest sha256:…`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ref, err := image.ParseRef(from)
			if err != nil {
				return usagef("--from %q: %v", from, err)
			}
			if digest != "" && !strings.HasPrefix(digest, "sha256:") {
				return usagef("--digest %q: allowed: sha256:<64 hex digits>", digest)
			}
			p, err := ztunnel.FromImage(cmd.Context(), ref, digest, out, remote.WithAuthFromKeychain(authn.DefaultKeychain))
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "ztunnel installed in %s from %s@%s (sha256 %s)\n%s\n", out, p.Image, p.Digest, p.SHA256, p.Version)
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", ztunnel.OfficialImage, "the ztunnel image to take the binary from")
	cmd.Flags().StringVar(&digest, "digest", "", "the image's manifest digest to require (sha256:…)")
	cmd.Flags().StringVar(&out, "out", ".tools/ztunnel/ztunnel", "where to install the binary")
	return cmd
}

// newImageLinkerdProxyCmd takes linkerd2-proxy out of Linkerd's official
// proxy image, as newImageZtunnelCmd does ztunnel (make linkerd-proxy
// calls it when the build kept beside the project is not there).
func newImageLinkerdProxyCmd(env *Env) *cobra.Command {
	var from, digest, out string
	cmd := &cobra.Command{
		Use:   "linkerd-proxy",
		Short: "Install the lab's linkerd2-proxy from Linkerd's official proxy image (no Docker)",
		Long: `Pull Linkerd's proxy image for this machine's architecture with your
docker credentials (anonymous when none match), take
/usr/lib/linkerd/linkerd2-proxy out of its layers, check that it runs (its
release line), and install it at --out with its provenance (image, digest,
sha256, version) in OUT.json. The lab finds it there
(.tools/linkerd2-proxy/linkerd2-proxy, as make linkerd-proxy installs it).
--digest refuses an image of any other digest.`,
		Example: `  meshbench image linkerd-proxy
  meshbench image linkerd-proxy --from cr.l5d.io/linkerd/proxy:edge-26.8.3 --digest sha256:…`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ref, err := image.ParseRef(from)
			if err != nil {
				return usagef("--from %q: %v", from, err)
			}
			if digest != "" && !strings.HasPrefix(digest, "sha256:") {
				return usagef("--digest %q: allowed: sha256:<64 hex digits>", digest)
			}
			p, err := proxy.FromImage(cmd.Context(), ref, digest, out, remote.WithAuthFromKeychain(authn.DefaultKeychain))
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "linkerd2-proxy installed in %s from %s@%s (sha256 %s)\n%s\n", out, p.Image, p.Digest, p.SHA256, p.Version)
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", proxy.OfficialImage, "the proxy image to take the binary from")
	cmd.Flags().StringVar(&digest, "digest", "", "the image's manifest digest to require (sha256:…)")
	cmd.Flags().StringVar(&out, "out", ".tools/linkerd2-proxy/linkerd2-proxy", "where to install the binary")
	return cmd
}
