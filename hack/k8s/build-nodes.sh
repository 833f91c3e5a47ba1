#!/usr/bin/env bash
# Build what internal/testkit/kubetest's real nodes run, from the Go module proxy
# only (no prebuilt binaries are downloaded), and install Debian's pieces.
#
# usage: hack/k8s/build-nodes.sh [OUTDIR]
#   OUTDIR defaults to ${MESHBENCH_NODES_BIN:-$HOME/.cache/meshbench/k8s/nodes-<versions>}.
#
# Into OUTDIR: kubelet, kube-proxy (the hack/k8s/build-tools.sh recipe:
# a scratch module mirroring kubernetes' staging replaces), containerd, ctr,
# containerd-shim-runc-v2, coredns, and pause (hack/k8s/pause, the pods'
# sandbox process). A stamp file records the versions; when it matches,
# nothing is rebuilt (the script returns at once), so `make test` can call
# it every time. From Debian (installed when missing): runc,
# containernetworking-plugins (bridge, host-local, loopback), nftables,
# iptables (the CNI plugins depend on it).
set -euo pipefail

K8S_VERSION=v1.36.3
CONTAINERD_VERSION=v2.4.2
COREDNS_VERSION=v1.14.7
REPO=$(cd "$(dirname "$0")/../.." && pwd)
PAUSE_SUM=$(sha256sum "$REPO/hack/k8s/pause/main.go" | cut -c1-12)
DEFAULT_OUT="${MESHBENCH_NODES_BIN:-$HOME/.cache/meshbench/k8s/nodes-${K8S_VERSION}-containerd${CONTAINERD_VERSION#v}-coredns${COREDNS_VERSION#v}}"
OUT=$(realpath -m "${1:-$DEFAULT_OUT}")
STAMP="$OUT/.versions"
WANT="k8s=$K8S_VERSION containerd=$CONTAINERD_VERSION coredns=$COREDNS_VERSION pause=$PAUSE_SUM"

log() { echo "k8s-nodes: $*" >&2; }

DEBS="runc containernetworking-plugins nftables iptables"
ensure_debs() {
  local missing="" p
  for p in $DEBS; do
    dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed' || missing="$missing $p"
  done
  [ -z "$missing" ] && return 0
  if ! command -v apt-get >/dev/null; then
    log "missing Debian packages:$missing (and apt-get is not available to install them)"
    exit 1
  fi
  log "installing Debian$missing"
  local sudo=""
  if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
  $sudo apt-get update -qq
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null
}
ensure_debs

BINS="kubelet kube-proxy containerd ctr containerd-shim-runc-v2 coredns pause"
have_all() {
  local b
  for b in $BINS; do [ -x "$OUT/$b" ] || return 1; done
}
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && have_all; then
  log "up to date in $OUT ($WANT)"
  exit 0
fi

command -v go >/dev/null || { log "go is required"; exit 1; }
log "building $WANT into $OUT (3–4 min on 2 cores with empty Go caches)"
start=$(date +%s)
export GOFLAGS=-buildvcs=false CGO_ENABLED=0 GOWORK=off
W=$(mktemp -d "${TMPDIR:-/tmp}/meshbench-k8s-nodes.XXXXXX")
trap 'rm -rf "$W"' EXIT
NEW="$W/out"
mkdir -p "$NEW"

quiet_get() { # quiet_get LOG ARGS...: go get, its log shown only on failure
  local lf=$1
  shift
  if ! go get "$@" 2>"$lf"; then
    cat "$lf" >&2
    log "go get $* failed"
    exit 1
  fi
}

# pause: from this repository.
(cd "$REPO" && go build -trimpath -ldflags "-s -w" -o "$NEW/pause" ./hack/k8s/pause)

# containerd, ctr and the runc shim (containerd finds the shim on PATH).
mkdir -p "$W/containerd" && cd "$W/containerd"
printf 'module meshbench.local/containerd\n\ngo 1.24\n' >go.mod
C=github.com/containerd/containerd/v2/cmd
quiet_get "$W/containerd.log" "$C/containerd@$CONTAINERD_VERSION" "$C/ctr@$CONTAINERD_VERSION" "$C/containerd-shim-runc-v2@$CONTAINERD_VERSION"
TAGS="no_btrfs no_devmapper no_zfs urfave_cli_no_docs osusergo netgo static_build"
CLD="-s -w -X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION"
go build -trimpath -tags "$TAGS" -ldflags "$CLD" -o "$NEW/" "$C/containerd" "$C/ctr"
go build -trimpath -tags "$TAGS no_grpc" -ldflags "$CLD" -o "$NEW/" "$C/containerd-shim-runc-v2"
log "containerd built ($(($(date +%s) - start)) s)"

# CoreDNS (the cluster DNS, run as a host process).
mkdir -p "$W/coredns" && cd "$W/coredns"
printf 'module meshbench.local/coredns\n\ngo 1.24\n' >go.mod
quiet_get "$W/coredns.log" "github.com/coredns/coredns@$COREDNS_VERSION"
go build -trimpath -ldflags "-s -w" -o "$NEW/coredns" github.com/coredns/coredns
log "coredns built ($(($(date +%s) - start)) s)"

# kubelet and kube-proxy: build-tools.sh's scratch module.
mkdir -p "$W/k8s" && cd "$W/k8s"
go mod download -json "k8s.io/kubernetes@$K8S_VERSION" >/dev/null
MOD="$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/$K8S_VERSION.mod"
STAGING_VERSION="v0.${K8S_VERSION#v1.}"
MINOR=$(echo "$K8S_VERSION" | cut -d. -f2)
{
  echo "module meshbench.local/k8snodes"
  echo "go $(awk '/^go /{print $2; exit}' "$MOD")"
  grep -E '^godebug' "$MOD" || true
  echo "require k8s.io/kubernetes $K8S_VERSION"
  echo "replace ("
  grep -oE '^[[:space:]]*k8s\.io/[A-Za-z0-9._/-]+ => \./staging/' "$MOD" |
    awk -v sv="$STAGING_VERSION" '{print "\t" $1 " => " $1 " " sv}'
  echo ")"
} >go.mod
# kube-proxy needs its own go get (else "missing go.sum entry" for knftables).
quiet_get "$W/k8s.log" "k8s.io/kubernetes/cmd/kubelet@$K8S_VERSION" "k8s.io/kubernetes/cmd/kube-proxy@$K8S_VERSION"
LDFLAGS="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  LDFLAGS="$LDFLAGS -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$MINOR"
done
go build -trimpath -ldflags "$LDFLAGS" -o "$NEW/" k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy
log "kubelet and kube-proxy built ($(($(date +%s) - start)) s)"

# Move the results in with the stamp last, so an interrupted build never
# leaves an OUTDIR that looks complete.
mkdir -p "$OUT"
rm -f "$STAMP"
for b in $BINS; do mv -f "$NEW/$b" "$OUT/$b"; done
echo "$WANT" >"$STAMP"
log "built in $(($(date +%s) - start)) s: $(ls "$OUT" | tr '\n' ' ')"
