#!/usr/bin/env bash
# Installs the peer load generators that bench/loadgen/run.py compares
# meshbench's load engine against. Idempotent: a tool already at the pinned
# version is left alone.
#
#   vegeta v12.12.0  -> $TOOLS/bin/vegeta   (built from the Go module proxy)
#   oha    1.16.0    -> $TOOLS/bin/oha      (cargo install --locked; compiles for several minutes)
#   wrk, nginx       -> /usr/bin/wrk, /usr/sbin/nginx (Debian packages wrk, nginx-light)
#
# TOOLS is $MESHBENCH_TOOLS, or <repo>/.tools when unset.
# Usage: bench/loadgen/install.sh [vegeta|oha|apt ...]   (default: all three)
# The system nginx service is never started: the benchmark runs its own nginx
# with a generated config and stops it by PID.
set -euo pipefail

VEGETA_VERSION=v12.12.0
OHA_VERSION=1.16.0

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
TOOLS=${MESHBENCH_TOOLS:-$repo/.tools}
mkdir -p "$TOOLS/bin"

log() { printf 'install.sh: %s\n' "$*" >&2; }

install_vegeta() {
	local bin=$TOOLS/bin/vegeta
	if [[ -x $bin ]] && "$bin" -version 2>/dev/null | grep -q "Version: $VEGETA_VERSION\$"; then
		log "vegeta $VEGETA_VERSION already at $bin"
		return
	fi
	command -v go >/dev/null || { log "go not found"; return 1; }
	# The module proxy refuses vegeta@latest and `go install pkg@version`
	# (its deprecation look-up gets 403), so build the pinned version from
	# inside a throw-away module instead.
	local tmp
	tmp=$(mktemp -d)
	(
		cd "$tmp"
		go mod init meshbench-loadgen-tools >/dev/null 2>&1
		go get "github.com/tsenart/vegeta/v12@$VEGETA_VERSION"
		go build -trimpath -ldflags "-s -w -X main.Version=$VEGETA_VERSION" \
			-o "$bin" github.com/tsenart/vegeta/v12
	)
	rm -rf "$tmp"
	log "vegeta $VEGETA_VERSION installed at $bin"
}

install_oha() {
	local bin=$TOOLS/bin/oha
	if [[ -x $bin ]] && [[ $("$bin" --version 2>/dev/null) == "oha $OHA_VERSION" ]]; then
		log "oha $OHA_VERSION already at $bin"
		return
	fi
	command -v cargo >/dev/null || { log "cargo not found"; return 1; }
	log "compiling oha $OHA_VERSION (takes several minutes on 2 cores)"
	cargo install --locked --force oha --version "=$OHA_VERSION" --root "$TOOLS"
	log "oha $OHA_VERSION installed at $bin"
}

install_apt() {
	local missing=()
	command -v wrk >/dev/null || missing+=(wrk)
	command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]] || missing+=(nginx-light)
	if ((${#missing[@]} == 0)); then
		log "wrk and nginx already installed"
		return
	fi
	local sudo=()
	((EUID == 0)) || sudo=(sudo)
	# Keep the package's postinst from starting the system nginx service.
	local added_policy=0
	if [[ ! -e /usr/sbin/policy-rc.d ]]; then
		printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee /usr/sbin/policy-rc.d >/dev/null
		"${sudo[@]}" chmod +x /usr/sbin/policy-rc.d
		added_policy=1
	fi
	"${sudo[@]}" apt-get update -qq
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
	if ((added_policy)); then "${sudo[@]}" rm -f /usr/sbin/policy-rc.d; fi
	log "installed ${missing[*]}"
}

steps=("$@")
((${#steps[@]})) || steps=(apt vegeta oha)
for s in "${steps[@]}"; do
	case $s in
	vegeta) install_vegeta ;;
	oha) install_oha ;;
	apt) install_apt ;;
	*) log "unknown step $s (want vegeta, oha or apt)"; exit 2 ;;
	esac
done
log "tools in $TOOLS/bin: $(ls "$TOOLS/bin" | tr '\n' ' ')"
