# meshbench — the two commands a new user types are `make demo` and `make test`.
GO      ?= go
BIN     := bin/meshbench
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/meshbench/meshbench/internal/cli.Version=$(VERSION)

.PHONY: all build demo test vet fmt-check unit fuzz bench-loadgen clean

all: build

build: $(BIN)

$(BIN): $(shell find cmd internal -name '*.go' -not -name '*_test.go') go.mod go.sum
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/meshbench

# The main job: a short open-loop run against meshbench's built-in static
# server (a separate process on loopback), with the report printed.
demo: build
	./scripts/demo.sh $(BIN)

# The test command (.ci/run calls exactly this).
test: fmt-check vet unit

fmt-check:
	@out=$$(gofmt -l cmd internal); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

unit:
	$(GO) test -count=1 -timeout 15m ./...

# Longer fuzzing of every parser (not part of `make test`).
FUZZTIME ?= 30s
fuzz:
	$(GO) test ./internal/loadgen -run XXX -fuzz FuzzParseRate -fuzztime $(FUZZTIME)
	$(GO) test ./internal/loadgen -run XXX -fuzz FuzzReadHTTP1Response -fuzztime $(FUZZTIME)
	$(GO) test ./internal/results -run XXX -fuzz FuzzRead -fuzztime $(FUZZTIME)
	$(GO) test ./internal/cli -run XXX -fuzz FuzzLoadFlags -fuzztime $(FUZZTIME)
	$(GO) test ./internal/app -run XXX -fuzz FuzzParseDistribution -fuzztime $(FUZZTIME)

# meshbench's load engine beside vegeta, oha and wrk (see bench/loadgen/README.md).
bench-loadgen: build
	./bench/loadgen/install.sh
	python3 bench/loadgen/run.py --meshbench $(BIN)

clean:
	rm -rf bin
