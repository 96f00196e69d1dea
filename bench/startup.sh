#!/usr/bin/env bash
# Starts the scaler binary $1 on loopback and returns once /readyz answers
# 200, killing it: the start-up time, measured from outside by timing the
# whole script, e.g. two builds against each other, alternating:
#   for i in $(seq 15); do for b in /tmp/before /tmp/after; do
#     /usr/bin/time -f "$b %e s" bench/startup.sh $b; done; done
set -euo pipefail
bin=$1
port=$((20000 + RANDOM % 20000))
BAROMETER_HTTP_ADDR=127.0.0.1:$port BAROMETER_GRPC_ADDR=127.0.0.1:$((port + 1)) BAROMETER_LOG_LEVEL=warn \
  "$bin" serve >/dev/null 2>&1 &
pid=$!
trap 'kill -9 $pid 2>/dev/null || true; wait $pid 2>/dev/null || true' EXIT
until curl -sf -o /dev/null "http://127.0.0.1:$port/readyz"; do
  kill -0 $pid 2>/dev/null || { echo "scaler exited before it was ready" >&2; exit 1; }
  sleep 0.002
done
