# meshbench's own image: the one static binary, run as `meshbench serve …`
# by the app pods and `meshbench load …` by the load Job's workers on the
# Kubernetes platform (internal/platform/kube).
#
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) -t ghcr.io/meshbench/meshbench:dev .
#
# Pin the base images by digest for a published image (golang:1.26@sha256:…,
# distroless/static-debian12:nonroot@sha256:…): a tag can move.

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

# Run: no shell, no package manager, CA certificates and tzdata only;
# the distroless non-root user (65532), numeric so that Kubernetes'
# runAsNonRoot can check it.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/meshbench /usr/local/bin/meshbench
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/meshbench"]
CMD ["--help"]
