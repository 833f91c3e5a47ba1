#!/usr/bin/env bash
# staticcheck for `make check`, pinned, from the Go module proxy, into
# $MESHBENCH_STATICCHECK_BIN or ~/.cache/meshbench/staticcheck/<version>
# (shared by every checkout). Prints the binary's path on stdout, the rest
# on stderr, so `$(hack/staticcheck/install.sh) ./...` runs it.
#
# usage: hack/staticcheck/install.sh
#
# The binary's module version is read back from its build info (go
# version -m); when it matches, nothing is built. About 40 s cold on 2
# cores with a warm module cache, instant once built.
set -euo pipefail

STATICCHECK_VERSION=v0.8.2   # staticcheck 2026.2.2
OUT="${MESHBENCH_STATICCHECK_BIN:-$HOME/.cache/meshbench/staticcheck/${STATICCHECK_VERSION#v}}"
MOD=honnef.co/go/tools
GO=${GO:-go}

log() { echo "staticcheck: $*" >&2; }

built() {
  [ -x "$OUT/staticcheck" ] || return 1
  "$GO" version -m "$OUT/staticcheck" 2>/dev/null | awk -v m="$MOD" -v v="$STATICCHECK_VERSION" '$1=="mod" && $2==m && $3==v {ok=1} END {exit !ok}'
}

if ! built; then
  command -v "$GO" >/dev/null || { log "go is required to build staticcheck"; exit 1; }
  log "building staticcheck $STATICCHECK_VERSION into $OUT"
  mkdir -p "$OUT"
  GOBIN="$OUT" GOFLAGS= "$GO" install "$MOD/cmd/staticcheck@$STATICCHECK_VERSION"
  built || { log "$OUT/staticcheck does not report $MOD $STATICCHECK_VERSION after the build"; exit 1; }
fi
echo "$OUT/staticcheck"
