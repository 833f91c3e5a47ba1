package install

import (
	"fmt"
	"os"

	"github.com/meshbench/meshbench/internal/mesh/linkerd/release"
)

// LinkerdBuilt is how meshbench installs Linkerd built here: the build's
// linkerd CLI, the images release.Images made (hub and tag "" for the
// defaults), and the mesh's identity: the trust anchor and issuer in
// certsDir (release.ReadCerts: a user's, kept as they are), or, with
// certsDir "", a pair meshbench makes (release.MakeCerts) in a temporary
// directory that Close removes once the plan ran (Linkerd keeps the issuer
// in its Secret; the files are read only by `linkerd install`).
func LinkerdBuilt(b release.Build, hub, tag, certsDir string) (*MeshInstall, error) {
	var certs release.Certs
	var closeFn func() error
	if certsDir != "" {
		c, err := release.ReadCerts(certsDir)
		if err != nil {
			return nil, err
		}
		certs = c
	} else {
		dir, err := os.MkdirTemp("", "meshbench-linkerd-identity-")
		if err != nil {
			return nil, err
		}
		if certs, err = release.MakeCerts(dir); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		closeFn = func() error { return os.RemoveAll(dir) }
	}
	identity := "the trust anchor and issuer meshbench made (EC P-256, issuer path length 0, valid 1 year)"
	if !certs.Made {
		identity = "the trust anchor and issuer in " + certs.Dir
	}
	return &MeshInstall{
		For:      "linkerd",
		CLI:      b.Path(release.CLI),
		Args:     release.InstallArgs(hub, tag, certs),
		Describe: fmt.Sprintf("%s, images %s/{controller,proxy}:%s, identity from %s", b.Describe(), cmpOr(hub, release.DefaultHub), cmpOr(tag, release.Version), identity),
		Proxy:    fmt.Sprintf("linkerd2-proxy (sha256 %s) in meshbench's proxy image (Linkerd %s)", b.Provenance.Binaries[release.Proxy].SHA256, release.Version),
		Close:    closeFn,
	}, nil
}
