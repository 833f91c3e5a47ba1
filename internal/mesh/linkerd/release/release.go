// Package release is meshbench's knowledge of Linkerd's real control
// plane on clusters, built here: the pinned release (edge-26.8.3, whose
// proxy line is that of the lab's linkerd2-proxy), the directory
// hack/linkerd/install.sh (make linkerd-tools) fills with its binaries and
// their provenance, the two images assembled from them (controller and
// proxy, as Linkerd's Dockerfiles make them), the `linkerd install`
// settings that point the chart at those images, and the trust anchor and
// identity issuer meshbench makes for an install. The install itself is
// platform/kube/install's (install.LinkerdBuilt).
//
// The lab's Linkerd (package linkerd) runs the same proxy under a control
// plane of meshbench's own; this one is Linkerd's.
package release

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The pinned release: linkerd/linkerd2 edge-26.8.3 (2026-08-21), whose
// .proxy-version is v2.366.0; the proxy meshbench runs is that line's
// (linkerd2-proxy 29637b64f6ce, the v2.366.0 tag and 7 commits, the same
// proxy API 0.20.0). hack/linkerd/install.sh pins the same.
const (
	Version      = "edge-26.8.3"
	Commit       = "19a0d90d5a4a65e0b976f079ba8a5f1dab12c005"
	ProxyVersion = "v2.366.0"
)

// EnvBuild names a directory holding a build (instead of DefaultDir).
const EnvBuild = "MESHBENCH_LINKERD_BIN"

// The build's files.
const (
	// Controller holds destination, identity, proxy-injector, sp-validator
	// and heartbeat (one Go binary, subcommand first).
	Controller = "controller"
	// PolicyController is the Rust policy controller (in the controller
	// image, as upstream ships it).
	PolicyController = "linkerd-policy-controller"
	// CLI is the linkerd command: install --crds, install, check, uninstall.
	CLI = "linkerd"
	// ProxyIdentity writes the proxy's key and CSR, then execs the proxy
	// (the proxy image's entrypoint).
	ProxyIdentity = "linkerd2-proxy-identity"
	// ProxyInit writes the capture rules (the linkerd-init container).
	ProxyInit = "linkerd2-proxy-init"
	// Proxy is linkerd2-proxy itself.
	Proxy = "linkerd2-proxy"
	// ProvenanceFile records where every binary came from.
	ProvenanceFile = "provenance.json"
	// stampFile holds "linkerd=<Version>" once a build is complete.
	stampFile = ".versions"
)

// Binaries are the files a build holds: what the two images and the
// install need. (Linkerd's CNI plugin, its repair controller, the network
// validator and linkerd-await are for CNI mode and non-native sidecars,
// which meshbench does not install.)
var Binaries = []string{Controller, PolicyController, CLI, ProxyIdentity, ProxyInit, Proxy}

// DefaultDir is where make linkerd-tools puts the build: $MESHBENCH_LINKERD_BIN,
// else ~/.cache/meshbench/linkerd/<Version>.
func DefaultDir() string {
	if d := os.Getenv(EnvBuild); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "meshbench", "linkerd", Version)
}

// Provenance says where a build's binaries came from (ProvenanceFile).
type Provenance struct {
	// Release is the Linkerd release (Version).
	Release string `json:"release"`
	// Source is how the build was made: "prebuilt" (the project's
	// binaries, sha256 checked), "source" (built with
	// hack/linkerd/build.sh from fetched sources) or "images" (taken out of
	// Linkerd's official images by meshbench image linkerd --from-images).
	Source string `json:"source"`
	// Binaries are the files, by name.
	Binaries map[string]BinaryProvenance `json:"binaries"`
	// Made is when the build was installed.
	Made time.Time `json:"made"`
}

// BinaryProvenance is one binary's origin.
type BinaryProvenance struct {
	SHA256 string `json:"sha256"`
	// From is the file, image (with its digest) or source it came from.
	From string `json:"from"`
}

// Build is a complete build of the pinned release in a directory.
type Build struct {
	Dir        string
	Provenance Provenance
}

// Open checks that dir holds a complete build of the pinned release; the
// error names what is missing and the command that makes it.
func Open(dir string) (Build, error) {
	fix := "install it with make linkerd-tools (hack/linkerd/install.sh), or meshbench image linkerd --from-images"
	stamp, err := os.ReadFile(filepath.Join(dir, stampFile))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Build{}, fmt.Errorf("no Linkerd build in %s: %s", dir, fix)
		}
		return Build{}, fmt.Errorf("linkerd build %s: %w", dir, err)
	}
	if got, want := strings.TrimSpace(string(stamp)), "linkerd="+Version; got != want {
		return Build{}, fmt.Errorf("linkerd build %s is %q, want %q: %s", dir, got, want, fix)
	}
	b := Build{Dir: dir}
	for _, f := range Binaries {
		if st, err := os.Stat(b.Path(f)); err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
			return Build{}, fmt.Errorf("linkerd build %s lacks the executable %s: %s", dir, f, fix)
		}
	}
	data, err := os.ReadFile(b.Path(ProvenanceFile))
	if err != nil {
		return Build{}, fmt.Errorf("linkerd build %s: %w: %s", dir, err, fix)
	}
	if err := json.Unmarshal(data, &b.Provenance); err != nil {
		return Build{}, fmt.Errorf("linkerd build %s: %s: %w", dir, ProvenanceFile, err)
	}
	return b, nil
}

// Path is the path of one of the build's files.
func (b Build) Path(name string) string { return filepath.Join(b.Dir, name) }

// Describe is the build in a line: the release and where it came from.
func (b Build) Describe() string {
	return fmt.Sprintf("Linkerd %s (%s build in %s)", Version, b.Provenance.Source, b.Dir)
}
