#!/usr/bin/env bash
# Runs BenchmarkLabSidecar90 (internal/platform/local/lab_bench_test.go) once
# and prints its figures as a Markdown table: time until a sidecar lab of 90
# replicas is ready (and its phases), teardown time, memory per sidecar, and
# the /proc sampler's own CPU per round. See README.md beside this file.
#
# Usage: bench/lab/run.sh [extra go test flags, e.g. -v]
#   MESHBENCH_BENCH_REPLICAS=90   server replicas (90 apps + 91 Envoys)
#   MESHBENCH_BENCH_ROUNDS=5      idle sampling rounds (1 s each) averaged
#   MESHBENCH_ENVOY=PATH          Envoy 1.40 binary (default: .tools/envoy, then PATH)
#
# Run it on a quiet machine: the full lab is ~180 processes on loopback
# 127.50.0.0/16; every one of them is stopped by PID when it ends.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"

replicas=${MESHBENCH_BENCH_REPLICAS:-90}
log=$(mktemp -t meshbench-lab-bench.XXXXXX)
trap 'rm -f "$log"' EXIT

printf 'lab benchmark: sidecar, %s replicas; %s CPUs, load average %s\n' \
	"$replicas" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" >&2

# go test builds the test binary, and the benchmark builds cmd/meshbench.
status=0
go test -run '^$' -bench '^BenchmarkLabSidecar90$' -benchtime 1x -count 1 -timeout 30m -v \
	"$@" ./internal/platform/local/ 2>&1 | tee "$log" >&2 || status=$?

if grep -q -- '--- SKIP: BenchmarkLabSidecar90' "$log"; then
	echo "run.sh: the benchmark was skipped (reason above)" >&2
	exit 2
fi
line=$(grep -E '^BenchmarkLabSidecar90(-[0-9]+)?[[:space:]]' "$log" | tail -n 1 || true)
if [[ -z $line ]]; then
	echo "run.sh: no benchmark result (go test exit status $status)" >&2
	exit "$((status == 0 ? 1 : status))"
fi

echo "$line" | awk '
{
	for (i = 3; i < NF; i += 2) v[$(i + 1)] = $i
}
function row(label, unit, fmt, note) {
	if (!(unit in v)) return
	printf "| %s | " fmt " | %s |\n", label, v[unit], note
}
END {
	printf "\n## Lab benchmark: sidecar, %d replicas, %d processes sampled\n\n", v["replicas"], v["procs"]
	print "| figure | value | note |"
	print "|---|---:|---|"
	row("time to ready (plan → every Envoy /ready)", "ready_s", "%.2f s", (v["replicas"] == 90 ? "target ≤ 20 s" : "target (≤ 20 s) is for 90 replicas"))
	row("&nbsp;&nbsp;config: plan, certs, render, validate", "config_s", "%.2f s", sprintf("of which `envoy --mode validate` %.2f s", v["validate_s"]))
	row("&nbsp;&nbsp;app replicas start (READY)", "apps_s", "%.2f s", "8 at a time")
	row("&nbsp;&nbsp;Envoys start → /ready", "envoys_s", "%.2f s", "8 at a time")
	row("ready → idle", "idle_s", "%.1f s", "lab idle rule, 1 s rounds")
	row("teardown", "teardown_s", "%.2f s", "SIGTERM, wait, all reaped")
	row("PSS per sidecar, idle", "pss_MiB/sidecar", "%.1f MiB", "shared pages split among Envoys: falls as replicas grow")
	row("RSS per sidecar, idle", "rss_MiB/sidecar", "%.1f MiB", "shared pages counted in full")
	row("PSS per app replica, idle", "pss_MiB/app", "%.1f MiB", "")
	row("RSS per app replica, idle", "rss_MiB/app", "%.1f MiB", "")
	row("sampler CPU per round, lab processes", "sampler_ms/round", "%.2f ms", sprintf("%.1f µs per process", v["sampler_us/proc"]))
	row("&nbsp;&nbsp;as millicores at the 1 s interval", "sampler_millicores", "%.1f m", "")
	row("&nbsp;&nbsp;same, rounds back to back", "sampler_b2b_ms/round", "%.2f ms", "taken between the per-file passes below")
	share = ""
	if (v["pss_read_ms/round"] + v["nopss_read_ms/round"] > 0)
		share = sprintf("%.0f %% of the /proc reading", 100 * v["pss_read_ms/round"] / (v["pss_read_ms/round"] + v["nopss_read_ms/round"]))
	row("&nbsp;&nbsp;reading smaps_rollup (PSS) alone", "pss_read_ms/round", "%.2f ms", share)
	row("&nbsp;&nbsp;&nbsp;&nbsp;per sidecar (Envoy)", "pss_read_us/sidecar", "%.0f µs", "")
	row("&nbsp;&nbsp;&nbsp;&nbsp;per app replica", "pss_read_us/app", "%.0f µs", "")
	row("&nbsp;&nbsp;reading stat + status alone", "nopss_read_ms/round", "%.2f ms", "")
	row("&nbsp;&nbsp;round without PSS (estimate)", "sampler_nopss_ms/round", "%.2f ms", "back-to-back round − smaps_rollup reads")
	row("sampler CPU per round, default lab schedule (PSS every 5th round)", "sampler_default_ms/round", "%.2f ms", "measured: 10 rounds back to back")
	row("sampler CPU per round, 200 lab-like processes", "sampler200est_ms/round", "%.2f ms", "µs per lab process (same mix) × 200")
	row("sampler CPU per round, 200 idle sleeps", "sampler200sleep_ms/round", "%.2f ms", "measured")
}'
exit "$status"
