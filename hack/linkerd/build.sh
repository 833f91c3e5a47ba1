#!/bin/bash
# (The team's verified recipe, ../shared/linkerd-cp-build/build.sh, kept here so that a checkout
# without ../shared can build; hack/linkerd/install.sh runs it when MESHBENCH_LINKERD_SRC is set.)
# Rebuild Linkerd's control plane (edge-26.8.3, the release that pins proxy v2.366.0) from its
# public source: Go modules from the Go module proxy, crates from crates.io, nothing else.
# Usage: build.sh SRC OUT [all|go|rust]
#   SRC: a folder holding the source trees below (a missing one is exported at its pinned commit
#        from a bare git mirror $MIRROR/OWNER+REPO/repo of the public repository, if MIRROR is set);
#   OUT: where the static Go binaries and stripped Rust binaries go.
#   SRC/linkerd2            linkerd/linkerd2             edge-26.8.3      19a0d90d5a4a65e0b976f079ba8a5f1dab12c005
#   SRC/linkerd-kubert      linkerd/linkerd-kubert       kubert/v0.27.0   04f6ac3543e84e814e50724dec11a5309fd9b8df
#   SRC/linkerd2-proxy-init linkerd/linkerd2-proxy-init  proxy-init/v2.4.9 = cni-plugin/v1.6.8  c05c9c9296d05bc84bcbecd29034886d1f380c3e
#   SRC/linkerd-await       linkerd/linkerd-await        release/v0.3.3   5e0d767a105e7862ff412febc51cf58d9d5d0916
# Needs: Go >= 1.26.4 (go.mod), Rust stable >= 1.90 (the trees pin 1.90.0/1.88.0, which cannot be
# downloaded here; 1.95.0 used), gcc, cmake (aws-lc-sys), make (jemalloc), binutils (strip).
# The machine is shared with timing measurements: everything runs under nice -n 19, 2 jobs.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(mkdir -p "${1:?usage: build.sh SRC OUT [all|go|rust]}" && cd "$1" && pwd)
OUT=$(mkdir -p "${2:?usage: build.sh SRC OUT [all|go|rust]}" && cd "$2" && pwd)
WHAT=${3:-all}; MIRROR=${MIRROR:-}
VERSION=edge-26.8.3
export GOMAXPROCS=2 CGO_ENABLED=0 GOFLAGS=-buildvcs=false CARGO_BUILD_JOBS=2 RUSTUP_TOOLCHAIN=stable
N="nice -n 19"
T() { /usr/bin/time -f "TIME $1 wall=%e s maxrss=%M KB" "${@:2}"; }   # wall time and peak RSS

src() { # src DIR OWNER+REPO COMMIT: export a pinned tree from the fetch mirror if DIR is missing
  [ -d "$SRC/$1" ] && return 0
  [ -n "$MIRROR" ] || { echo "build.sh: $SRC/$1 is missing and MIRROR is not set" >&2; return 1; }
  mkdir -p "$SRC/$1"
  git --git-dir="$MIRROR/$2/repo" archive "$3" | tar -x -C "$SRC/$1" || { rm -rf "${SRC:?}/$1"; return 1; }
}
src linkerd2            linkerd+linkerd2            19a0d90d5a4a65e0b976f079ba8a5f1dab12c005
src linkerd-kubert      linkerd+linkerd-kubert      04f6ac3543e84e814e50724dec11a5309fd9b8df
src linkerd2-proxy-init linkerd+linkerd2-proxy-init c05c9c9296d05bc84bcbecd29034886d1f380c3e
src linkerd-await       linkerd+linkerd-await       5e0d767a105e7862ff412febc51cf58d9d5d0916 || true
grep -qx v2.366.0 "$SRC/linkerd2/.proxy-version"

GOFL=(-trimpath -mod=readonly -p 2)
if [ "$WHAT" = all ] || [ "$WHAT" = go ]; then
  # --- Go, linkerd/linkerd2 (as Dockerfile.controller, cli/Dockerfile, Dockerfile.proxy: -tags prod)
  LD="-s -w -X github.com/linkerd/linkerd2/pkg/version.Version=$VERSION"
  cd "$SRC/linkerd2"
  $N go mod download
  T controller              $N go build "${GOFL[@]}" -tags prod -ldflags "$LD" -o "$OUT/controller" ./controller/cmd
  T linkerd                 $N go build "${GOFL[@]}" -tags prod -ldflags "$LD" -o "$OUT/linkerd" ./cli
  T linkerd2-proxy-identity $N go build "${GOFL[@]}" -tags prod -ldflags "$LD" -o "$OUT/linkerd2-proxy-identity" ./proxy-identity
  # --- Go, linkerd/linkerd2-proxy-init (as its Dockerfile and Dockerfile-cni-plugin)
  cd "$SRC/linkerd2-proxy-init"
  $N go mod download
  T linkerd2-proxy-init $N go build "${GOFL[@]}" -ldflags "-s -w" -o "$OUT/linkerd2-proxy-init" ./proxy-init
  T linkerd-cni         $N go build "${GOFL[@]}" -ldflags "-s -w" -o "$OUT/linkerd-cni" ./cni-plugin
fi

if [ "$WHAT" = all ] || [ "$WHAT" = rust ]; then
  export RUSTFLAGS="--cfg tokio_unstable"   # as upstream's Dockerfiles set it (tokio runtime metrics)
  # --- Rust policy controller. Its one git dependency (kubert 0.27.0 + kubert-prometheus-process
  # 0.2.4 + kubert-prometheus-tokio 0.2.1, linkerd/linkerd-kubert tag kubert/v0.27.0) is not on
  # crates.io (newest there: kubert 0.25.0, on kube 1.1/k8s-openapi 0.25, while the tree needs
  # kube 3.1/k8s-openapi 0.27), so the same commit's source is used as a path dependency.
  # Cargo.lock then only loses those three crates' `source` lines; every other crate is the lock
  # file's, from crates.io.
  cd "$SRC/linkerd2"
  grep -q 'path = "../linkerd-kubert/kubert"' Cargo.toml || patch -p1 < "$HERE/linkerd2-Cargo.toml.patch"
  $N cargo fetch
  T linkerd-policy-controller $N cargo build --release -j 2 -p linkerd-policy-controller
  strip -o "$OUT/linkerd-policy-controller" target/release/linkerd-policy-controller
  # --- Rust extras for the proxy image and CNI mode (no git dependencies; lock files as they are)
  cd "$SRC/linkerd2-proxy-init"
  $N cargo fetch --locked
  T validator+repair $N cargo build --locked --release -j 2 -p linkerd-network-validator -p linkerd-cni-repair-controller
  strip -o "$OUT/linkerd2-network-validator" target/release/linkerd-network-validator
  strip -o "$OUT/linkerd-cni-repair-controller" target/release/linkerd-cni-repair-controller
  if [ -d "$SRC/linkerd-await" ]; then
    cd "$SRC/linkerd-await"
    $N cargo fetch --locked
    T linkerd-await $N cargo build --locked --release -j 2
    strip -o "$OUT/linkerd-await" target/release/linkerd-await
  fi
fi
cd "$OUT"; ls -l; sha256sum *
