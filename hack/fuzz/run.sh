#!/usr/bin/env bash
# Longer fuzzing of every parser (not part of `make test`, whose tests run
# each fuzz target's seed corpus once). The targets are found, not listed:
# every `func FuzzX(f *testing.F)` in a _test.go file under cmd/ and
# internal/, one `go test -fuzz` each, in the order of their paths.
#
# usage: hack/fuzz/run.sh [-l] [REGEXP]      (`make fuzz`; from the repository's root)
#   -l       list the targets (package directory and name) and exit
#   REGEXP   only the targets whose "dir Name" matches (grep -E)
#
# FUZZEXECS executions per target (Go's -fuzztime Nx, default 1000000), so
# every target gets real executions whatever the machine. FUZZMIN bounds
# the time spent shrinking each new interesting input (-fuzzminimizetime,
# default 1s; Go's default of 60 s once spent FuzzRead's whole minute on 4
# executions of a 2-KB seed). About 40 minutes in all on 2 shared cores;
# FuzzLoadFlags is the slowest (11 min, ~1,500/s): its test binary is the
# whole CLI, whose coverage counters the fuzzer compares after every
# execution.
set -euo pipefail

FUZZEXECS=${FUZZEXECS:-1000000}
FUZZMIN=${FUZZMIN:-1s}
GO=${GO:-go}

list=0
if [ "${1:-}" = -l ]; then list=1; shift; fi
filter=${1:-}

# targets prints "dir Name" for every fuzz target, sorted by path.
targets() {
  grep -rEo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\([A-Za-z_][A-Za-z0-9_]* \*testing\.F\)' cmd internal \
    | sed -E 's#^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\(.*#\1 \2#' | sort
}

found=$(targets | { [ -n "$filter" ] && grep -E -- "$filter" || cat; })
if [ -z "$found" ]; then
  echo "fuzz: no fuzz target${filter:+ matches $filter}" >&2
  exit 1
fi
if [ "$list" = 1 ]; then
  echo "$found"
  exit 0
fi
n=$(echo "$found" | wc -l)
i=0
while read -r dir name; do
  i=$((i + 1))
  echo "fuzz [$i/$n] ./$dir $name: $FUZZEXECS executions" >&2
  "$GO" test "./$dir" -run '^$' -fuzz "^$name\$" -fuzztime "${FUZZEXECS}x" -fuzzminimizetime "$FUZZMIN"
done <<<"$found"
