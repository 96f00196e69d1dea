#!/usr/bin/env bash
# GetMetrics throughput on loopback: Barometer as shipped (go build
# ./cmd/scaler, default host source) against bench/constscaler, an
# ExternalScaler that answers a constant, under ghz.
#
#   bench/grpc.sh                                # 3 pairs of 10 s runs, 64 callers
#   PAIRS=5 DURATION=20s CONCURRENCY=64 bench/grpc.sh
#   CONST_METRICS=1 bench/grpc.sh                # baseline with Barometer's gRPC metrics interceptor
#   METADATA='{}' bench/grpc.sh                  # the ScaledObject's trigger has no metadata
#   METADATA='{"scalerAddress":"barometer.keda.svc:6000"}' bench/grpc.sh   # only what KEDA adds
#
# Both servers run at once on 127.0.0.1 ports the kernel picks; the runs
# alternate (B C, C B, B C, ...) so that drift in the machine's load falls
# on both sides. Each run prints requests/s, p50, p99 and errors (calls
# that did not end OK); the summary is the median over pairs of the
# per-pair ratios Barometer/constant, with their range. Needs go and jq;
# ghz is installed from the Go module proxy when missing. Takes about
# 2 x PAIRS x DURATION plus the builds (about 1.5 minutes by default).
set -euo pipefail
cd "$(dirname "$0")/.."

GHZ_VERSION=v0.93.0
PAIRS=${PAIRS:-3}
DURATION=${DURATION:-10s}
CONCURRENCY=${CONCURRENCY:-64}
CONST_METRICS=${CONST_METRICS:-0}

# METADATA is the trigger's scalerMetadata, a JSON object of strings.
METADATA=${METADATA:-'{"source":"host"}'}

CALL=externalscaler.ExternalScaler/GetMetrics
REQUEST='{"scaledObjectRef":{"name":"orders","namespace":"shop","scalerMetadata":'$METADATA'},"metricName":"barometer-pressure"}'
SPEC_REQUEST='{"name":"orders","namespace":"shop","scalerMetadata":'$METADATA'}'

command -v jq >/dev/null || {
	echo "grpc.sh: jq not found (Debian: apt-get install -y jq)" >&2
	exit 127
}
ghz=$(command -v ghz || true)
if [ -z "$ghz" ]; then
	ghz="$(go env GOPATH)/bin/ghz"
	if [ ! -x "$ghz" ]; then
		echo "grpc.sh: installing ghz $GHZ_VERSION" >&2
		go install "github.com/bojand/ghz/cmd/ghz@$GHZ_VERSION"
	fi
fi

tmp=$(mktemp -d)
pids=()
# Stops what this script started, by pid, and nothing else.
cleanup() {
	local pid
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "building ./cmd/scaler and ./bench/constscaler" >&2
go build -o "$tmp/scaler" ./cmd/scaler
go build -o "$tmp/constscaler" ./bench/constscaler

# addr LOG PATTERN: waits up to 20 s for a server to log its bound address.
addr() {
	local log=$1 pattern=$2 a
	for _ in $(seq 200); do
		a=$(grep -oE "$pattern" "$log" | head -n1 | grep -oE '127\.0\.0\.1:[0-9]+' || true)
		if [ -n "$a" ]; then
			echo "$a"
			return
		fi
		sleep 0.1
	done
	echo "grpc.sh: no listening address in $log:" >&2
	cat "$log" >&2
	exit 1
}

# Port 0 everywhere: the machine may be shared, and a fixed port may be
# taken. Barometer reports the bound addresses in its "serving" log line.
BAROMETER_GRPC_ADDR=127.0.0.1:0 BAROMETER_HTTP_ADDR=127.0.0.1:0 \
	"$tmp/scaler" >"$tmp/barometer.log" 2>&1 &
pids+=($!)
const_flags=()
[ "$CONST_METRICS" = 1 ] && const_flags+=(-metrics)
"$tmp/constscaler" -addr 127.0.0.1:0 "${const_flags[@]}" >"$tmp/const.log" 2>&1 &
pids+=($!)

barometer=$(addr "$tmp/barometer.log" 'grpc=127\.0\.0\.1:[0-9]+')
constant=$(addr "$tmp/const.log" 'serving on 127\.0\.0\.1:[0-9]+')
echo "barometer $barometer, constant $constant (metrics interceptor: $CONST_METRICS), metadata $METADATA" >&2

# ghz ARGS...: one ghz run, its JSON report on stdout.
run_ghz() {
	"$ghz" --insecure --format json "$@"
}

# Warm-up: GetMetricSpec starts Barometer's target, whose first sample
# GetMetrics would otherwise wait for; then a short unmeasured run on each
# server, so that connections, reflection and the target are all warm.
run_ghz --call externalscaler.ExternalScaler/GetMetricSpec -d "$SPEC_REQUEST" -n 1 -c 1 "$barometer" >/dev/null
for a in "$barometer" "$constant"; do
	warm=$(run_ghz --call "$CALL" -d "$REQUEST" -n 2000 -c "$CONCURRENCY" "$a")
	if [ "$(jq '[.statusCodeDistribution // {} | to_entries[] | select(.key != "OK") | .value] | add // 0' <<<"$warm")" != 0 ]; then
		echo "grpc.sh: warm-up against $a failed:" >&2
		jq '.statusCodeDistribution, .errorDistribution' <<<"$warm" >&2
		exit 1
	fi
done

# measure NAME ADDR: one run; prints its row and leaves its requests/s and
# p99 (ms) in last_rps and last_p99.
measure() {
	local name=$1 a=$2 report rps p50 p99 errors
	# --duration-stop=wait lets the calls in flight when the time is up
	# finish and count: the default cancels them and reports up to one
	# error per caller that the server never made.
	report=$(run_ghz --call "$CALL" -d "$REQUEST" -c "$CONCURRENCY" -z "$DURATION" --duration-stop=wait "$a")
	IFS=$'\t' read -r rps p50 p99 errors < <(jq -r '
		def pct(p): ([.latencyDistribution[]? | select(.percentage == p) | .latency][0] // 0) / 1e6;
		[(.rps | floor), pct(50), pct(99),
		 ([.statusCodeDistribution // {} | to_entries[] | select(.key != "OK") | .value] | add // 0)]
		| @tsv' <<<"$report")
	printf '%-10s %8d req/s   p50 %7.3f ms   p99 %7.3f ms   errors %d\n' "$name" "$rps" "$p50" "$p99" "$errors"
	if [ "$errors" != 0 ]; then
		jq -c '.errorDistribution' <<<"$report" >&2
	fi
	last_rps=$rps
	last_p99=$p99
}

echo "GetMetrics, $CONCURRENCY concurrent callers, $DURATION per run, $PAIRS pairs"
ratios_rps=()
ratios_p99=()
for i in $(seq "$PAIRS"); do
	if [ $((i % 2)) = 1 ]; then order=(barometer constant); else order=(constant barometer); fi
	for name in "${order[@]}"; do
		if [ "$name" = barometer ]; then
			measure barometer "$barometer"
			rps_b=$last_rps p99_b=$last_p99
		else
			measure constant "$constant"
			rps_c=$last_rps p99_c=$last_p99
		fi
	done
	ratios_rps+=("$(awk -v b="$rps_b" -v c="$rps_c" 'BEGIN { printf "%.3f", b / c }')")
	ratios_p99+=("$(awk -v b="$p99_b" -v c="$p99_c" 'BEGIN { printf "%.3f", b / c }')")
	echo "pair $i: throughput ${ratios_rps[-1]}x, p99 ${ratios_p99[-1]}x"
done

# summary LABEL RATIO...: the median (the mean of the middle two for an even
# count) and the range.
summary() {
	local label=$1
	shift
	printf '%s\n' "$@" | sort -g | awk -v label="$label" '
		{ v[NR] = $1 }
		END {
			m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%s Barometer/constant: median %.2fx (%.2f to %.2f)\n", label, m, v[1], v[NR]
		}'
}
summary throughput "${ratios_rps[@]}"
summary p99 "${ratios_p99[@]}"
