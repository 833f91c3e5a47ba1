#!/usr/bin/env bash
# Linkerd's proxy for the lab's Linkerd mesh (internal/mesh/linkerd), into
# .tools/linkerd2-proxy/linkerd2-proxy, where internal/mesh/linkerd/proxy
# finds it:
#   1. the build from source kept beside the project
#      (../shared/bin/linkerd2-proxy, provenance in
#      ../shared/bin/linkerd2-proxy.md) when its sha256 matches (keep
#      LINKERD_PROXY_SHA256 in step with proxy.SharedSHA256);
#   2. else the binary of Linkerd's official proxy image (`meshbench image
#      linkerd-proxy`, its provenance in .tools/linkerd2-proxy/linkerd2-proxy.json).
# Or set MESHBENCH_LINKERD_PROXY (or --linkerd-proxy) to a linkerd2-proxy
# binary.
#
# usage: hack/linkerd-proxy/install.sh      (from the repository's root; `make linkerd-proxy`)
#
# Idempotent: nothing is copied or pulled when a proxy is in place.
set -euo pipefail

LINKERD_PROXY_SHA256=e6ca3e4ab66d26cf9be57442af1178675fd76b49030e9be86300deeffc9a78a9
SHARED=../shared/bin/linkerd2-proxy
BIN=.tools/linkerd2-proxy/linkerd2-proxy
MAKE=${MAKE:-make}   # make build, for bin/meshbench

matches() { [ -f "$1" ] && echo "$LINKERD_PROXY_SHA256  $1" | sha256sum -c --status; }

if [ -x "$BIN" ] && matches "$BIN"; then
  echo "linkerd2-proxy is in $BIN"
elif matches "$SHARED"; then
  mkdir -p "$(dirname "$BIN")"
  install -m 0755 "$SHARED" "$BIN"
  echo "linkerd2-proxy installed in $BIN"
elif [ -x "$BIN" ] && [ -f "$BIN.json" ]; then
  echo "linkerd2-proxy is in $BIN, from the image named in $BIN.json"
else
  echo "linkerd-proxy: no $SHARED with sha256 $LINKERD_PROXY_SHA256: taking it from Linkerd's proxy image (or set MESHBENCH_LINKERD_PROXY to a linkerd2-proxy binary)" >&2
  "$MAKE" --no-print-directory build
  bin/meshbench image linkerd-proxy --out "$BIN"
fi
