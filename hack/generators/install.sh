#!/usr/bin/env bash
# Build the seeds' load generators from the Go module proxy, pinned:
# vegeta (the UDS seed reports' tool) and fortio (Istio's benchmark tool),
# for `meshbench load/run/bench --generator vegeta|fortio`.
#
# usage: hack/generators/install.sh [OUTDIR]
#   OUTDIR defaults to ${MESHBENCH_GENERATORS_BIN:-$HOME/.cache/meshbench/generators/vegeta-<v>-fortio-<v>},
#   where internal/load/extgen looks for them (extgen.InstallDir).
#
# Each binary's module version is read back from its build info (go
# version -m); when both match, nothing is built and the script returns at
# once, so `make test` and `make demo` call it every time. About 15 s cold
# with a warm module cache on 2 cores (fortio ~12 s, vegeta ~3 s).
set -euo pipefail

VEGETA_VERSION=v12.12.0   # keep in step with extgen.VegetaVersion
FORTIO_VERSION=v1.68.2    # keep in step with extgen.FortioVersion
DEFAULT_OUT="${MESHBENCH_GENERATORS_BIN:-$HOME/.cache/meshbench/generators/vegeta-${VEGETA_VERSION#v}-fortio-${FORTIO_VERSION#v}}"
OUT=$(realpath -m "${1:-$DEFAULT_OUT}")
GO=${GO:-go}

log() { echo "generators: $*" >&2; }

# built NAME MODULE VERSION: the binary in OUT was built from MODULE at VERSION.
built() {
  [ -x "$OUT/$1" ] || return 1
  "$GO" version -m "$OUT/$1" 2>/dev/null | awk -v m="$2" -v v="$3" '$1=="mod" && $2==m && $3==v {ok=1} END {exit !ok}'
}

install_one() {
  local name=$1 pkg=$2 mod=$3 version=$4
  if built "$name" "$mod" "$version"; then
    log "$name $version is in $OUT"
    return
  fi
  command -v "$GO" >/dev/null || { log "go is required to build $name"; exit 1; }
  log "building $name $version into $OUT"
  mkdir -p "$OUT"
  GOBIN="$OUT" GOFLAGS= CGO_ENABLED=0 "$GO" install "$pkg@$version"
  built "$name" "$mod" "$version" || { log "$OUT/$name does not report $mod $version after the build"; exit 1; }
}

install_one vegeta github.com/tsenart/vegeta/v12 github.com/tsenart/vegeta/v12 "$VEGETA_VERSION"
install_one fortio fortio.org/fortio fortio.org/fortio "$FORTIO_VERSION"
