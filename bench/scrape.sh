#!/usr/bin/env bash
# One scrape sample over 1,000 loopback replicas of ~320 series each
# (pkg/pressure/scrape BenchmarkSample1000Replicas), text and protobuf.
#
#   bench/scrape.sh             # one core (GOMAXPROCS=1), 20 samples each
#   CPU=1,2 COUNT=3 bench/scrape.sh
#
# Reports ns/op (one sample, the replicas' in-process HTTP server included),
# cpu-ms/op (the process's CPU time per sample, which other load on the
# machine disturbs less than ns/op), B/op and allocs/op, and live-MB-first /
# live-MB-last: the live heap after the first sample and after the last,
# which stay level when memory is flat across samples. Then
# BenchmarkFetch1000Replicas: the HTTP exchange alone over the same fleet,
# each body read and discarded. Needs about 4,000 file descriptors.
#
# The replicas answer with one pre-encoded response per request, written
# at once: their side of a scrape runs on their own cores in a cluster,
# and here shares the scraper's. ARGS='-replica-server net/http' serves
# them with net/http instead (the figures before 2026-12-04).
set -euo pipefail
cd "$(dirname "$0")/.."
ulimit -n 8192 2>/dev/null || true
go test -run '^$' -bench 'BenchmarkSample1000Replicas|BenchmarkFetch1000Replicas' \
	-benchtime "${BENCHTIME:-20x}" -count "${COUNT:-1}" -cpu "${CPU:-1}" \
	./pkg/pressure/scrape/ ${ARGS:+-args $ARGS}
