#!/usr/bin/env bash
# Istio's ztunnel for the netns lab substrate (internal/platform/netlab), into
# .tools/ztunnel/ztunnel, where internal/mesh/ztunnel finds it:
#   1. the production build kept beside the project (../shared/bin/ztunnel,
#      provenance in ../shared/bin/ztunnel.md) when its sha256 matches
#      (keep ZTUNNEL_SHA256 in step with ztunnel.SharedSHA256);
#   2. else the binary of Istio's official ztunnel image (`meshbench image
#      ztunnel`, its provenance in .tools/ztunnel/ztunnel.json).
# Or set MESHBENCH_ZTUNNEL to a ztunnel binary (e.g. one built from
# istio/ztunnel as ../shared/bin/ztunnel-build/build.sh does).
#
# usage: hack/ztunnel/install.sh      (from the repository's root; `make ztunnel`)
#
# Idempotent: nothing is copied or pulled when a ztunnel is in place.
set -euo pipefail

ZTUNNEL_SHA256=9d650eedebd9e4455cc66cf1364108d1e23b0ca198c51f758350e31bb7ed042e
SHARED=../shared/bin/ztunnel
BIN=.tools/ztunnel/ztunnel
MAKE=${MAKE:-make}   # make build, for bin/meshbench

matches() { [ -f "$1" ] && echo "$ZTUNNEL_SHA256  $1" | sha256sum -c --status; }

if [ -x "$BIN" ] && matches "$BIN"; then
  echo "ztunnel is in $BIN"
elif [ -x "$BIN" ] && [ -f "$BIN.json" ]; then
  echo "ztunnel is in $BIN, from the image named in $BIN.json"
elif matches "$SHARED"; then
  mkdir -p "$(dirname "$BIN")"
  install -m 0755 "$SHARED" "$BIN"
  echo "ztunnel installed in $BIN"
else
  echo "ztunnel: no $SHARED with sha256 $ZTUNNEL_SHA256: taking it from Istio's ztunnel image (or set MESHBENCH_ZTUNNEL to a ztunnel binary)" >&2
  "$MAKE" --no-print-directory build
  bin/meshbench image ztunnel --out "$BIN"
fi
