#!/usr/bin/env bash
# Build the Kubernetes pieces that internal/testkit/kubetest runs, from the Go module
# proxy only (no prebuilt binaries are downloaded), plus Debian's etcd.
#
# usage: hack/k8s/build-tools.sh [OUTDIR]
#   OUTDIR defaults to ${MESHBENCH_K8S_BIN:-$HOME/.cache/meshbench/k8s/<versions>}.
#
# Into OUTDIR: kube-apiserver, kube-controller-manager, kube-scheduler,
# kubectl, kwok, metrics-server and kwok-manifests/ (CRDs, the fast stages,
# metrics-resource.yaml, usage-from-annotation.yaml). A stamp file records
# the versions; when it matches, nothing is rebuilt (the script returns at
# once), so `make test` can call it every time.
#
# All six binaries are built in ONE scratch module so every k8s.io library is
# compiled once (5–11 min cold on 2 cores, ~40 s with warm Go caches).
# `go install k8s.io/kubernetes/cmd/...@v` is refused because kubernetes'
# go.mod replaces its staging modules with ./staging/...; the scratch module
# mirrors those replaces with the published v0.<minor>.<patch> tags.
set -euo pipefail

K8S_VERSION=v1.36.3
KWOK_VERSION=v0.8.0
MS_VERSION=v0.9.0
DEFAULT_OUT="${MESHBENCH_K8S_BIN:-$HOME/.cache/meshbench/k8s/${K8S_VERSION}-kwok${KWOK_VERSION#v}-ms${MS_VERSION#v}}"
OUT=$(realpath -m "${1:-$DEFAULT_OUT}")
STAMP="$OUT/.versions"
WANT="k8s=$K8S_VERSION kwok=$KWOK_VERSION metrics-server=$MS_VERSION"

log() { echo "k8s-tools: $*" >&2; }

# etcd comes from Debian (3.4.x; every k8s version tried accepts it).
ensure_etcd() {
  if command -v etcd >/dev/null; then return; fi
  if ! command -v apt-get >/dev/null; then
    log "etcd is not on PATH and apt-get is not available: install etcd (Debian package etcd-server)"
    exit 1
  fi
  log "installing Debian etcd-server"
  local sudo=""
  if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq etcd-server >/dev/null
  command -v etcd >/dev/null || { log "etcd-server installed but etcd is not on PATH"; exit 1; }
}

ensure_etcd

BINS="kube-apiserver kube-controller-manager kube-scheduler kubectl kwok metrics-server"
have_all() {
  local b
  for b in $BINS; do [ -x "$OUT/$b" ] || return 1; done
  [ -f "$OUT/kwok-manifests/stages.yaml" ]
}
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && have_all; then
  log "up to date in $OUT ($WANT)"
  exit 0
fi

command -v go >/dev/null || { log "go is required"; exit 1; }
log "building $WANT into $OUT (5–11 min on 2 cores with empty Go caches)"
start=$(date +%s)
export GOFLAGS=-buildvcs=false CGO_ENABLED=0 GOWORK=off
W=$(mktemp -d "${TMPDIR:-/tmp}/meshbench-k8s-build.XXXXXX")
trap 'rm -rf "$W"' EXIT
cd "$W"

go mod download -json "k8s.io/kubernetes@$K8S_VERSION" >/dev/null
MOD="$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/$K8S_VERSION.mod"
STAGING_VERSION="v0.${K8S_VERSION#v1.}" # k8s.io/api etc. are tagged v0.<minor>.<patch>
MINOR=$(echo "$K8S_VERSION" | cut -d. -f2)
{
  echo "module meshbench.local/k8stools"
  echo "go $(awk '/^go /{print $2; exit}' "$MOD")"
  grep -E '^godebug' "$MOD" || true
  echo "require k8s.io/kubernetes $K8S_VERSION"
  echo "replace ("
  grep -oE '^[[:space:]]*k8s\.io/[A-Za-z0-9._/-]+ => \./staging/' "$MOD" |
    awk -v sv="$STAGING_VERSION" '{print "\t" $1 " => " $1 " " sv}'
  echo ")"
} >go.mod

PKGS="k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl sigs.k8s.io/kwok/cmd/kwok sigs.k8s.io/metrics-server/cmd/metrics-server"
# go get lists a few hundred modules; keep them out of the CI log unless it
# fails.
if ! go get \
  "k8s.io/kubernetes/cmd/kube-apiserver@$K8S_VERSION" \
  "k8s.io/kubernetes/cmd/kube-controller-manager@$K8S_VERSION" \
  "k8s.io/kubernetes/cmd/kube-scheduler@$K8S_VERSION" \
  "k8s.io/kubernetes/cmd/kubectl@$K8S_VERSION" \
  "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" \
  "sigs.k8s.io/metrics-server/cmd/metrics-server@$MS_VERSION" 2>"$W/go-get.log"; then
  cat "$W/go-get.log" >&2
  log "go get failed"
  exit 1
fi
log "modules resolved ($(grep -c '^go: downloading' "$W/go-get.log" || true) downloaded); compiling"

# Without the version stamp the servers report v0.0.0-master, which confuses
# clients and kubectl's version-skew check. (It stamps metrics-server with
# the k8s version too; that is cosmetic.)
LDFLAGS="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  LDFLAGS="$LDFLAGS -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$MINOR"
done

# Build into the scratch dir, then move the results in with the stamp last,
# so an interrupted build never leaves an OUTDIR that looks complete. Only
# the files named here are replaced; anything else in OUTDIR is left alone.
NEW="$W/out"
mkdir -p "$NEW"
# shellcheck disable=SC2086
go build -trimpath -ldflags "$LDFLAGS" -o "$NEW/" $PKGS

# kwok's manifests ship inside its module zip.
KD=$(go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
M="$NEW/kwok-manifests"
mkdir -p "$M"
cp -r "$KD/kustomize/crd/bases" "$M/crds"
# The "fast" stages kwokctl uses: nodes become Ready at once, pods go Ready,
# pods owned by Jobs complete, deleted pods go away.
for f in node/fast/node-initialize.yaml node/heartbeat/node-heartbeat.yaml \
  pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
  cat "$KD/kustomize/stage/$f"
  echo '---'
done >"$M/stages.yaml"
cp "$KD/kustomize/metrics/resource/metrics-resource.yaml" \
  "$KD/kustomize/metrics/usage/usage-from-annotation.yaml" "$M/"
chmod -R u+w "$M"

mkdir -p "$OUT"
rm -f "$STAMP"
for b in $BINS; do mv -f "$NEW/$b" "$OUT/$b"; done
rm -rf "$OUT/kwok-manifests"
mv "$M" "$OUT/kwok-manifests"
echo "$WANT" >"$STAMP"
log "built in $(($(date +%s) - start)) s: $(ls "$OUT" | tr '\n' ' ')"
