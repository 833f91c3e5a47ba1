#!/usr/bin/env bash
# The README's main job until the local lab lands: start meshbench's built-in
# static server (615-byte page, its own process on loopback), send a short
# open-loop load at it, print the report, stop the server. Every process
# started here is stopped by PID, also on Ctrl-C or failure.
set -euo pipefail
BIN=${1:-bin/meshbench}
RATE=${RATE:-1000}
DURATION=${DURATION:-5s}
work=$(mktemp -d)
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

"$BIN" serve static --listen 127.0.0.1:0 --ready-file "$work/addr" >"$work/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 100); do
  [[ -s "$work/addr" ]] && break
  if ! kill -0 "$server_pid" 2>/dev/null; then cat "$work/serve.log" >&2; exit 1; fi
  sleep 0.05
done
[[ -s "$work/addr" ]] || { echo "demo: the static server did not become ready" >&2; exit 1; }
addr=$(cat "$work/addr")
echo "meshbench demo: built-in static server (pid $server_pid) on $addr; $RATE requests/s for $DURATION"
echo
mkdir -p results
"$BIN" load --rate "$RATE" --duration "$DURATION" --warmup 1s --connections 8 -o results/demo.json "http://$addr/"
echo
echo "Full result with histograms: results/demo.json (schema: schema/load-result.v1.schema.json)"
