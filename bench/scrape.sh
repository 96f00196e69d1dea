#!/usr/bin/env bash
# One scrape sample over 1,000 loopback replicas of ~320 series each
# (pkg/pressure/scrape BenchmarkSample1000Replicas), text and protobuf.
#
#   bench/scrape.sh             # scraper on CPU 1 (GOMAXPROCS=1), replicas on CPU 0, 20 samples each
#   COUNT=5 bench/scrape.sh
#   SCRAPER_CPU= REPLICA_CPU= bench/scrape.sh               # not pinned
#   ARGS='-replica-server net/http' bench/scrape.sh         # replicas in the scraper's process
#
# By default the replicas run in a process of their own (the test binary
# started again, serving with net/http), pinned with taskset to
# REPLICA_CPU (default 0), and the benchmark's process, the scraper, to
# SCRAPER_CPU (default 1) with GOMAXPROCS=1: in a cluster the replicas
# answer on their own cores, and "one core" is the scraper's. Without
# taskset nothing is pinned (and the script says so).
#
# Reports ns/op (one sample, wall clock), cpu-ms/op (the scraper's
# process's CPU time per sample, which other load on the machine disturbs
# less than ns/op), replica-cpu-ms/op (the replicas' process's), B/op and
# allocs/op, and live-MB-first / live-MB-last: the live heap after the
# first sample and after the last, which stay level when memory is flat
# across samples. Then BenchmarkFetch1000Replicas: the HTTP exchange alone
# over the same fleet, each body read and discarded. Needs about 4,000
# file descriptors in each process.
#
# ARGS='-replica-server net/http' or '-replica-server raw' serve the
# replicas in the benchmark's process instead, on the scraper's core and
# counted in its cpu-ms/op (raw: one pre-encoded response per request, the
# cheapest server there is); these were the figures before 2026-12-04.
set -euo pipefail
cd "$(dirname "$0")/.."
ulimit -n 8192 2>/dev/null || true
SCRAPER_CPU=${SCRAPER_CPU-1}
REPLICA_CPU=${REPLICA_CPU-0}
exec_flags=() replica_flags=()
if command -v taskset >/dev/null; then
	[[ -n $SCRAPER_CPU ]] && exec_flags=(-exec "taskset -c $SCRAPER_CPU")
	[[ -n $REPLICA_CPU ]] && replica_flags=(-replica-cpu "$REPLICA_CPU")
else
	echo "scrape.sh: no taskset: the scraper and the replicas are not pinned" >&2
fi
echo "scrape.sh: load average before: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)" >&2
go test "${exec_flags[@]}" -run '^$' -bench "${BENCH:-BenchmarkSample1000Replicas|BenchmarkFetch1000Replicas}" \
	-benchtime "${BENCHTIME:-20x}" -count "${COUNT:-1}" -cpu "${CPU:-1}" \
	./pkg/pressure/scrape/ -args "${replica_flags[@]}" ${ARGS:-}
echo "scrape.sh: load average after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)" >&2
