package release

import (
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/meshbench/meshbench/internal/sys/image"
)

// DefaultHub is the registry part of the images' names. Nothing is pushed
// there: the images are imported into the nodes' container runtime and
// the pods never pull them (imagePullPolicy Never).
const DefaultHub = "meshbench.local/linkerd"

// The images a Linkerd install runs, as its chart names them
// (HUB/NAME:TAG): the control plane's and the proxy's (also the
// linkerd-init container's).
const (
	ImageController = "controller"
	ImageProxy      = "proxy"
)

// ImageNames are the images Images builds.
var ImageNames = []string{ImageController, ImageProxy}

// The users the chart runs the containers as (values controllerUID and
// proxy.uid); the images need no /etc/passwd for them.
const (
	ControllerUID = 2103
	ProxyUID      = 2102
)

// Image is one built image and the reference the chart's manifests use.
type Image struct {
	Name  string // controller, proxy
	Ref   name.Reference
	Image v1.Image
}

// caCertificates are the host's CA bundle: the controller image carries
// it for the heartbeat (off in meshbench's installs), as upstream's does.
const caCertificates = "/etc/ssl/certs/ca-certificates.crt"

// Images builds the two images `linkerd install` with InstallArgs names,
// as Linkerd's Dockerfile.controller and Dockerfile.proxy lay them out,
// from the build's binaries and, for the glibc-linked ones (the policy
// controller and the proxy, built here without musl) and iptables, the
// host's files (upstream's base images come from registries the test
// machines cannot reach). hub and tag "" mean DefaultHub and Version.
//
//	controller  /controller (ENTRYPOINT), /linkerd-policy-controller
//	proxy       /usr/lib/linkerd/{linkerd2-proxy-identity (ENTRYPOINT),
//	            linkerd2-proxy, linkerd2-proxy-init}, Debian's iptables
//	            (nft and legacy), user 65534
//
// Both set LINKERD_CONTAINER_VERSION_OVERRIDE to the tag, as upstream's
// do: the controllers and the CLI's checks read the version there.
func Images(b Build, hub, tag string) ([]Image, error) {
	if hub == "" {
		hub = DefaultHub
	}
	if tag == "" {
		tag = Version
	}
	ann := func(r image.Rootfs, title string) image.Rootfs {
		r.Title, r.Version, r.Revision = title, Version, Commit
		r.Source = "https://github.com/linkerd/linkerd2"
		r.Env = append(r.Env, "LINKERD_CONTAINER_VERSION_OVERRIDE="+tag)
		return r
	}
	var out []Image
	add := func(n string, fs image.Rootfs) error {
		ref, err := image.ParseRef(hub + "/" + n + ":" + tag)
		if err != nil {
			return err
		}
		img, err := image.BuildRootfs(fs)
		if err != nil {
			return fmt.Errorf("image %s: %w", n, err)
		}
		out = append(out, Image{Name: n, Ref: ref, Image: img})
		return nil
	}

	files := []image.File{
		{Path: "/controller", Source: b.Path(Controller), Mode: 0o755},
		{Path: "/linkerd-policy-controller", Source: b.Path(PolicyController), Mode: 0o755},
	}
	if _, err := os.Stat(caCertificates); err == nil {
		files = append(files, image.File{Path: caCertificates, Source: caCertificates, Mode: 0o644})
	}
	files, err := image.WithLibraries(files, b.Path(Controller), b.Path(PolicyController))
	if err != nil {
		return nil, err
	}
	if err := add(ImageController, ann(image.Rootfs{Files: files, Entrypoint: []string{"/controller"}}, "controller")); err != nil {
		return nil, err
	}

	ipt, iptELF, err := image.Iptables()
	if err != nil {
		return nil, err
	}
	const lib = "/usr/lib/linkerd/"
	files = append([]image.File{
		{Path: lib + Proxy, Source: b.Path(Proxy), Mode: 0o755},
		{Path: lib + ProxyIdentity, Source: b.Path(ProxyIdentity), Mode: 0o755},
		{Path: lib + ProxyInit, Source: b.Path(ProxyInit), Mode: 0o755},
		{Path: "/tmp", Dir: true, Mode: 0o1777},
	}, ipt...)
	if files, err = image.WithLibraries(files, append([]string{b.Path(Proxy), b.Path(ProxyIdentity), b.Path(ProxyInit)}, iptELF...)...); err != nil {
		return nil, err
	}
	if err := add(ImageProxy, ann(image.Rootfs{Files: files, User: "65534",
		Entrypoint: []string{lib + ProxyIdentity},
		Env:        []string{"LINKERD2_PROXY_LOG=warn,linkerd=info", "LINKERD2_PROXY_LOG_FORMAT=plain"}}, "proxy")); err != nil {
		return nil, err
	}
	return out, nil
}
