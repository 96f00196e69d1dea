#!/usr/bin/env bash
# The parse alone of one replica's body (bench/parsecompare/testdata: one
# replica of bench/scrape.sh's fleet, 321 series, text and delimited
# protobuf), by the scrape source and by Prometheus' own parser
# (model/textparse, in the module bench/parsecompare), on the same bytes.
#
#   bench/parse.sh              # one core, 5 alternating rounds
#   ROUNDS=9 bench/parse.sh
#
# Barometer's figure is the filter and the read into series
# (BenchmarkParse/*/series); Prometheus' is a walk of every entry reading
# each sample's series bytes and value (BenchmarkPrometheusParse/*/series,
# a scrape whose series cache knows them all) and the same building each
# label set (*/labels). The rounds alternate the two so that a change in the
# machine's load weighs on both; the summary is the median ns/op of each and
# the ratio Prometheus / Barometer.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp)
trap 'rm -f "$out"' EXIT
go test -c -o "$out.barometer" ./pkg/pressure/scrape/body
(cd bench/parsecompare && go test -c -o "$out.prometheus" .)
trap 'rm -f "$out" "$out.barometer" "$out.prometheus"' EXIT
for _ in $(seq "${ROUNDS:-5}"); do
	(cd pkg/pressure/scrape/body && "$out.barometer" -test.run '^$' -test.bench 'BenchmarkParse/.*/series' \
		-test.benchtime "${BENCHTIME:-2000x}" -test.cpu 1 -test.benchmem) | grep '^Benchmark' | tee -a "$out"
	(cd bench/parsecompare && "$out.prometheus" -test.run '^$' -test.bench 'BenchmarkPrometheusParse' \
		-test.benchtime "${BENCHTIME:-2000x}" -test.cpu 1 -test.benchmem) | grep '^Benchmark' | tee -a "$out"
done
echo
awk '
	{ ns[$1] = ns[$1] " " $3 }
	END {
		for (name in ns) {
			n = split(substr(ns[name], 2), v, " ")
			for (i = 2; i <= n; i++) # insertion sort: mawk has no asort
				for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
			med[name] = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
		}
		split("text protobuf", formats, " ")
		for (i = 1; i <= 2; i++) {
			f = formats[i]
			ours = med["BenchmarkParse/" f "/series"]
			printf "%-9s barometer %8.0f ns/op\n", f, ours
			for (j = 1; j <= 2; j++) {
				k = (j == 1) ? "series" : "labels"
				theirs = med["BenchmarkPrometheusParse/" f "/" k]
				printf "%-9s prometheus/%-6s %8.0f ns/op   %.2fx barometer\n", f, k, theirs, theirs / ours
			}
		}
	}' "$out"
