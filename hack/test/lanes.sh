#!/usr/bin/env bash
# The test lanes (docs/testing.md). `go test ./...` runs two packages at
# once on 2 cores, so a timing-sensitive test (a known capacity,
# coordinated omission, a closed loop's rate, hop timing, CPU readings)
# would share them with the heavy ones (real nodes, kubelets, istiod).
#
# usage: hack/test/lanes.sh LANE...      (from the repository's root)
#   short   every test that needs no real part: go test -short ./...,
#           four packages at once, cached results reused (`make check`)
#   main    every package but internal/e2e, side by side, without the
#           timing-sensitive tests
#   e2e     internal/e2e alone: the real-node end-to-end runs, each of
#           which must meet its rate to be valid (beside another package's
#           nodes or lab loads on 2 cores one stalled for 1.4 s and missed)
#   timing  only the timing-sensitive tests (the tests that call
#           testutil.Timing, found by hack/lanes), one package at a time,
#           with nothing else of the suite running
# `make test` runs `main e2e timing`, in that order, with -count=1. Every lane
# named runs even when one before it failed; the exit status is 1 if any
# failed. GOTESTFLAGS adds flags to every go test (e.g. -v).
set -uo pipefail

GO=${GO:-go}
read -r -a extra <<<"${GOTESTFLAGS:-}"
failed=()

lane_short() {
  # -p 4: most of these tests wait on short loads at low rates rather
  # than compute, so four packages at once on 2 cores shorten the lane;
  # the timing-sensitive tests are not in it.
  "$GO" test -short -p 4 -timeout 10m "${extra[@]}" ./...
}

lane_main() {
  local pkgs
  pkgs=$("$GO" list ./... | grep -v '/internal/e2e$') || return 1
  # shellcheck disable=SC2086 # one package per word
  MESHBENCH_TEST_LANE=main "$GO" test -count=1 -timeout 30m "${extra[@]}" $pkgs
}

lane_e2e() {
  MESHBENCH_TEST_LANE=e2e "$GO" test -count=1 -timeout 40m "${extra[@]}" ./internal/e2e
}

lane_timing() {
  local found rc=0
  found=$("$GO" run ./hack/lanes) || return 1
  while read -r dir pattern; do
    MESHBENCH_TEST_LANE=timing "$GO" test -count=1 -timeout 15m -run "$pattern" "${extra[@]}" "$dir" </dev/null || rc=1
  done <<<"$found"
  return $rc
}

[ $# -gt 0 ] || { echo "usage: $0 short|main|e2e|timing..." >&2; exit 2; }
for lane in "$@"; do
  case $lane in
    short | main | e2e | timing) ;;
    *) echo "lanes: unknown lane $lane (allowed: short, main, e2e, timing)" >&2; exit 2 ;;
  esac
done
for lane in "$@"; do
  start=$(date +%s)
  echo "== lane $lane" >&2
  "lane_$lane" || failed+=("$lane")
  echo "== lane $lane: $(($(date +%s) - start)) s" >&2
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "lanes: failed: ${failed[*]}" >&2
  exit 1
fi
