#!/usr/bin/env bash
# Install Linkerd edge-26.8.3's binaries for clusters (the control plane,
# the proxy image's helpers, the CLI, and linkerd2-proxy) into ONE
# directory with their provenance, for `meshbench image linkerd` and
# `run/bench --platform kube --mesh linkerd --install-mesh --linkerd-build`.
#
# usage: hack/linkerd/install.sh [OUTDIR]
#   OUTDIR defaults to ${MESHBENCH_LINKERD_BIN:-$HOME/.cache/meshbench/linkerd/edge-26.8.3}.
#
# Where the binaries come from, first that applies:
#   1. OUTDIR already holds them (its stamp names the release): nothing to do.
#   2. The project's prebuilt binaries ($MESHBENCH_LINKERD_PREBUILT, default
#      ../shared/bin: linkerd/<binary> and linkerd2-proxy), each checked
#      against the sha256 pinned below; a mismatch is an error, never a
#      silent fallback. Nothing compiles: this is what CI does.
#   3. MESHBENCH_LINKERD_SRC=DIR: build them from sources you fetched
#      (hack/linkerd/build.sh DIR; Go ~10 min, the Rust policy controller
#      ~20-30 min on 2 cores, cargo and cmake needed), the proxy from
#      $MESHBENCH_LINKERD_PROXY or make linkerd-proxy's.
#   Otherwise it says what to do, including `meshbench image linkerd
#   --from-images`, which takes the binaries out of Linkerd's official
#   images for users with registry access.
set -euo pipefail

VERSION=edge-26.8.3
HERE=$(cd "$(dirname "$0")" && pwd)
DEFAULT_OUT="${MESHBENCH_LINKERD_BIN:-$HOME/.cache/meshbench/linkerd/$VERSION}"
OUT=$(realpath -m "${1:-$DEFAULT_OUT}")
STAMP="$OUT/.versions"
WANT="linkerd=$VERSION"
PREBUILT=${MESHBENCH_LINKERD_PREBUILT:-$(realpath -m "$HERE/../../../shared/bin")}

# The binaries' sha256, as built from the pinned sources
# (../shared/linkerd-cp-build/README.md; the proxy: ../shared/bin/linkerd2-proxy.md).
declare -A SHA=(
  [controller]=d701d6d3c55ec8bcab09793cf655584e18704e664ad7409d2d926b38f005e163
  [linkerd-policy-controller]=f386684fde11ae59df075aa16186fe4775bfca27258288fec950f27b753075ee
  [linkerd]=89f4a226abd121c13806d7c2e9d13a8c96328b4d9eeca24857b12e193f3bb385
  [linkerd2-proxy-identity]=a90a5fc8d556232ede246e03d383337863ec9a979147f5e0ef0929dfa883d2cc
  [linkerd2-proxy-init]=ff9f7b2bd92f47e10f113bb83d853b45880c58c2c4b33fc4af88b4ec2f0bb9cb
  [linkerd2-proxy]=e6ca3e4ab66d26cf9be57442af1178675fd76b49030e9be86300deeffc9a78a9
)
BINS="controller linkerd-policy-controller linkerd linkerd2-proxy-identity linkerd2-proxy-init linkerd2-proxy"

log() { echo "linkerd-tools: $*" >&2; }

have_all() {
  local f
  for f in $BINS; do [ -x "$OUT/$f" ] || return 1; done
  [ -s "$OUT/provenance.json" ]
}
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && have_all; then
  log "up to date in $OUT ($WANT, $(sed -n 's/.*"source": "\([a-z]*\)".*/\1/p' "$OUT/provenance.json") build)"
  exit 0
fi

start=$(date +%s)
W=$(mktemp -d "${TMPDIR:-/tmp}/meshbench-linkerd.XXXXXX")
trap 'rm -rf "$W"' EXIT
declare -A FROM=()

prebuilt_path() { # the prebuilt file of binary $1
  if [ "$1" = linkerd2-proxy ]; then echo "$PREBUILT/linkerd2-proxy"; else echo "$PREBUILT/linkerd/$1"; fi
}

if [ -z "${MESHBENCH_LINKERD_SRC:-}" ] && [ -f "$(prebuilt_path controller)" ]; then
  SOURCE=prebuilt
  for f in $BINS; do
    src=$(prebuilt_path "$f")
    [ -f "$src" ] || { log "$src is missing (the prebuilt set in $PREBUILT is incomplete)"; exit 1; }
    if ! echo "${SHA[$f]}  $src" | sha256sum -c --status; then
      log "$src has sha256 $(sha256sum "$src" | cut -d' ' -f1), want ${SHA[$f]}: not the pinned build; refusing it"
      exit 1
    fi
    install -m 0755 "$src" "$W/$f"
    FROM[$f]="$src"
  done
elif [ -n "${MESHBENCH_LINKERD_SRC:-}" ]; then
  SOURCE=source
  command -v go >/dev/null && command -v cargo >/dev/null || { log "building from $MESHBENCH_LINKERD_SRC needs go and cargo"; exit 1; }
  log "building $VERSION from the sources in $MESHBENCH_LINKERD_SRC (Go ~10 min, the Rust policy controller ~20-30 min on 2 cores)"
  "$HERE/build.sh" "$MESHBENCH_LINKERD_SRC" "$W/build"
  for f in $BINS; do
    [ "$f" = linkerd2-proxy ] && continue
    install -m 0755 "$W/build/$f" "$W/$f"
    FROM[$f]="built by hack/linkerd/build.sh from $MESHBENCH_LINKERD_SRC"
  done
  proxy=${MESHBENCH_LINKERD_PROXY:-}
  [ -n "$proxy" ] || proxy=$(realpath -m "$HERE/../../.tools/linkerd2-proxy/linkerd2-proxy")
  [ -x "$proxy" ] || { log "no linkerd2-proxy: set MESHBENCH_LINKERD_PROXY or run make linkerd-proxy"; exit 1; }
  install -m 0755 "$proxy" "$W/linkerd2-proxy"
  FROM[linkerd2-proxy]="$proxy"
else
  log "no Linkerd $VERSION binaries: none prebuilt in $PREBUILT (MESHBENCH_LINKERD_PREBUILT)."
  log "Either build them from source: MESHBENCH_LINKERD_SRC=DIR make linkerd-tools (hack/linkerd/build.sh lists the trees),"
  log "or take them out of Linkerd's official images: meshbench image linkerd --from-images (registry access needed)."
  exit 1
fi

[ "$("$W/linkerd" version --client --short)" = "$VERSION" ] || { log "the linkerd CLI does not report $VERSION"; exit 1; }

{
  echo "{"
  echo "  \"release\": \"$VERSION\","
  echo "  \"source\": \"$SOURCE\","
  echo "  \"binaries\": {"
  sep=""
  for f in $BINS; do
    printf '%s    "%s": {"sha256": "%s", "from": "%s"}' "$sep" "$f" "$(sha256sum "$W/$f" | cut -d' ' -f1)" "${FROM[$f]}"
    sep=$',\n'
  done
  echo
  echo "  },"
  echo "  \"made\": \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\""
  echo "}"
} >"$W/provenance.json"

# Move the results in with the stamp last, so an interrupted install never
# leaves an OUTDIR that looks complete.
mkdir -p "$OUT"
rm -f "$STAMP"
for f in $BINS provenance.json; do mv -f "$W/$f" "$OUT/$f"; done
echo "$WANT" >"$STAMP"
log "installed $VERSION ($SOURCE) in $OUT in $(($(date +%s) - start)) s: $BINS"
