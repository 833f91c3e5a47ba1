# meshbench's own image: the one static binary, run as `meshbench serve …`
# by the app pods and `meshbench load …` by the load Job's workers on the
# Kubernetes platform (internal/platform/kube), with the external load
# generators `meshbench load --generator oha|wrk2` runs beside it: oha
# (pinned release, from crates.io) and wrk2 (pinned giltene/wrk2 commit).
#
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) -t ghcr.io/meshbench/meshbench:dev .
#
# Pin the base images by digest for a published image (golang:1.26@sha256:…,
# rust:1.95-bookworm@sha256:…, debian:bookworm@sha256:…,
# distroless/cc-debian12:nonroot@sha256:…): a tag can move.

# Build: a static binary (no cgo), reproducible paths, the version stamped
# as `make build` does.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd ./cmd
COPY internal ./internal
ARG VERSION=dev
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath \
      -ldflags "-s -w -X github.com/meshbench/meshbench/internal/cli.Version=${VERSION}" \
      -o /out/meshbench ./cmd/meshbench

# oha, the release internal/extgen is written and tested against
# (extgen.OhaVersion), with the dependency versions of its lock file.
# oha 1.16 needs Rust 1.88 or later.
FROM rust:1.95-bookworm AS oha
ARG OHA_VERSION=1.16.0
RUN cargo install oha --version "=${OHA_VERSION}" --locked --root /out \
 && /out/bin/oha --version

# wrk2 at a pinned commit (extgen.Wrk2Commit: 44a94c1 of 2019, "Add
# support for higher concurrency", the one projects commonly pin), built
# with its bundled LuaJIT against Debian's OpenSSL. Its binary is called
# wrk; installed as wrk2. The check refuses a build without -R/--rate.
FROM debian:bookworm AS wrk2
ARG WRK2_COMMIT=44a94c17d8e6a0bac8559b53da76848e430cb7a7
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential git ca-certificates libssl-dev zlib1g-dev \
 && rm -rf /var/lib/apt/lists/*
RUN git clone https://github.com/giltene/wrk2.git /src/wrk2 \
 && cd /src/wrk2 \
 && git checkout "${WRK2_COMMIT}" \
 && sed -i '1i #include <sys/time.h>' src/script.c \
 && make -j"$(nproc)" \
 && install -D -m 0755 wrk /out/wrk2 \
 && (/out/wrk2 -v || true) | grep -q -- '--rate'

# Run: no shell, no package manager; glibc, libgcc and OpenSSL (which oha
# and wrk2 link against; meshbench itself is static), CA certificates and
# tzdata; the distroless non-root user (65532), numeric so that
# Kubernetes' runAsNonRoot can check it.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/meshbench /usr/local/bin/meshbench
COPY --from=oha /out/bin/oha /usr/local/bin/oha
COPY --from=wrk2 /out/wrk2 /usr/local/bin/wrk2
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/meshbench"]
CMD ["--help"]
