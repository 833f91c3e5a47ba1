#!/usr/bin/env bash
# Build Istio's binaries from the Go module proxy at ONE pinned version (no
# git, no image registry): pilot-discovery (istiod), pilot-agent (the
# sidecar/gateway/waypoint agent), istioctl (the installer), install-cni and
# the istio-cni plugin (the ambient node agent), plus the files the images
# need from the same module (the Envoy bootstrap template, the Gateway API
# CRDs for waypoints).
#
# usage: hack/istio/build.sh [OUTDIR]
#   OUTDIR defaults to ${MESHBENCH_ISTIO_BIN:-$HOME/.cache/meshbench/istio/<version>}.
#
# A stamp file records the version; when it matches, nothing is rebuilt (the
# script returns at once), so `make test` can call it every time.
#
# Istio's release tags are not semver, so the module proxy serves only
# pseudo-versions of its main branch: ISTIO_PSEUDO pins one of those (an
# Aug 2026 build of the 1.31 line) and ISTIO_VERSION is the version string
# stamped into the binaries (what `istioctl version` and istiod report).
# Istio's go.mod has no replace directives, so one scratch module requiring
# istio.io/istio builds all five in ONE `go build` (the k8s.io, envoy and
# gateway-api libraries compile once): ~9 min cold on 2 cores, seconds warm.
set -euo pipefail

ISTIO_PSEUDO=v0.0.0-20260827124520-eed52ebb66ad
ISTIO_COMMIT=${ISTIO_PSEUDO##*-}
ISTIO_VERSION=1.31-alpha.$ISTIO_COMMIT
DEFAULT_OUT="${MESHBENCH_ISTIO_BIN:-$HOME/.cache/meshbench/istio/$ISTIO_VERSION}"
OUT=$(realpath -m "${1:-$DEFAULT_OUT}")
STAMP="$OUT/.versions"
WANT="istio=$ISTIO_PSEUDO version=$ISTIO_VERSION"

log() { echo "istio-tools: $*" >&2; }

BINS="pilot-discovery pilot-agent istioctl install-cni istio-cni"
FILES="envoy_bootstrap.json gateway-api-crds.yaml"
have_all() {
  local f
  for f in $BINS; do [ -x "$OUT/$f" ] || return 1; done
  for f in $FILES; do [ -s "$OUT/$f" ] || return 1; done
}
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && have_all; then
  log "up to date in $OUT ($WANT)"
  exit 0
fi

command -v go >/dev/null || { log "go is required"; exit 1; }
log "building $WANT into $OUT (~9 min on 2 cores with empty Go caches)"
start=$(date +%s)
export GOFLAGS=-buildvcs=false CGO_ENABLED=0 GOWORK=off
W=$(mktemp -d "${TMPDIR:-/tmp}/meshbench-istio-build.XXXXXX")
trap 'rm -rf "$W"' EXIT
cd "$W"

go mod download -json "istio.io/istio@$ISTIO_PSEUDO" >/dev/null
MOD="$(go env GOMODCACHE)/cache/download/istio.io/istio/@v/$ISTIO_PSEUDO.mod"
{
  echo "module meshbench.local/istiotools"
  echo "go $(awk '/^go /{print $2; exit}' "$MOD")"
  grep -E '^godebug' "$MOD" || true
  echo "require istio.io/istio $ISTIO_PSEUDO"
} >go.mod

PKGS="istio.io/istio/pilot/cmd/pilot-discovery istio.io/istio/pilot/cmd/pilot-agent istio.io/istio/istioctl/cmd/istioctl istio.io/istio/cni/cmd/install-cni istio.io/istio/cni/cmd/istio-cni"
# go get lists a few hundred modules; keep them out of the CI log unless it
# fails.
# shellcheck disable=SC2046
if ! go get $(for p in $PKGS; do echo "$p@$ISTIO_PSEUDO"; done) 2>"$W/go-get.log"; then
  cat "$W/go-get.log" >&2
  log "go get failed"
  exit 1
fi
log "modules resolved in $(($(date +%s) - start)) s ($(grep -c '^go: downloading' "$W/go-get.log" || true) downloaded); compiling"

# Without the stamp the binaries report "unknown"; istiod parses the proxy's
# version (1.31-alpha.<commit> reads as 1.31), so version-gated config is
# generated for the right release line.
V=istio.io/istio/pkg/version
LDFLAGS="-s -w -X $V.buildVersion=$ISTIO_VERSION -X $V.buildGitRevision=$ISTIO_COMMIT -X $V.buildStatus=Clean -X $V.buildTag=$ISTIO_VERSION -X $V.buildHub=meshbench.local/istio"

# Build into the scratch dir, then move the results in with the stamp last,
# so an interrupted build never leaves an OUTDIR that looks complete.
NEW="$W/out"
mkdir -p "$NEW"
# shellcheck disable=SC2086
nice -n 5 go build -trimpath -ldflags "$LDFLAGS" -o "$NEW/" $PKGS

ID=$(go list -m -f '{{.Dir}}' istio.io/istio)
cp "$ID/tools/packaging/common/envoy_bootstrap.json" "$NEW/envoy_bootstrap.json"
GD=$(go list -m -f '{{.Dir}}' sigs.k8s.io/gateway-api)
for f in "$GD"/config/crd/standard/*.yaml; do
  cat "$f"
  echo '---'
done >"$NEW/gateway-api-crds.yaml"
echo "$(go list -m -f '{{.Version}}' sigs.k8s.io/gateway-api)" >"$NEW/gateway-api.version"
chmod u+w "$NEW"/*

mkdir -p "$OUT"
rm -f "$STAMP"
for f in $BINS $FILES gateway-api.version; do mv -f "$NEW/$f" "$OUT/$f"; done
echo "$WANT" >"$STAMP"
log "built in $(($(date +%s) - start)) s: $(ls "$OUT" | tr '\n' ' ')"
