#!/usr/bin/env bash
# Runs every fuzz target in the repository for a short, bounded time, one
# at a time (go test takes one -fuzz target per package and invocation),
# and fails on the first crash. A crash leaves its input under the
# package's testdata/fuzz/<FuzzName>/, which is then a regression seed to
# commit with the fix.
#
#   .ci/fuzz.sh                    every target, FUZZTIME each (default 20s)
#   FUZZTIME=10m .ci/fuzz.sh       longer
#   .ci/fuzz.sh FuzzQueueFold      only the targets named
#
# FUZZ_PARALLEL sets the fuzzing workers (default: go's, one per core).
# FUZZMINIMIZETIME bounds the minimizing of each new input (default 5s, go's
# is 60s): while a worker minimizes it runs nothing else, which would eat
# most of a short run.
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime=${FUZZTIME:-20s}
minimize=${FUZZMINIMIZETIME:-5s}
parallel=()
if [ -n "${FUZZ_PARALLEL:-}" ]; then
  parallel=(-parallel "$FUZZ_PARALLEL")
fi

# Every "func FuzzX(" in a test file, as "package-dir FuzzX", so a new
# target runs without editing this script.
targets=$(git grep -E -o '^func Fuzz[A-Za-z0-9_]+\(' -- '*_test.go' |
  sed -E 's#^(.*)/[^/]+_test\.go:func (Fuzz[A-Za-z0-9_]+)\($#./\1 \2#' | sort)
if [ -z "$targets" ]; then
  echo "no fuzz targets found"; exit 1
fi

ran=0
flaked=0
while read -r pkg name; do
  if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then
    continue
  fi
  printf '\n--- %s %s (%s)\n' "$pkg" "$name" "$fuzztime"
  corpus="$pkg/testdata/fuzz/$name"
  before=$(ls "$corpus" 2>/dev/null | sort || true)
  out=$(mktemp)
  if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" "${parallel[@]}" "$pkg" 2>&1 | tee "$out"; then
    after=$(ls "$corpus" 2>/dev/null | sort || true)
    # Go 1.26's fuzzing coordinator can report its own -fuzztime deadline
    # as a failure ("context deadline exceeded") when a worker is still
    # mid-call as time runs out on a loaded machine; it then writes no
    # input. A finding always leaves its input in the corpus directory,
    # so that message with no new file there is not a finding; anything
    # else (a new input, a build error) fails the run.
    if [ "$before" = "$after" ] && tail -n 5 "$out" | grep -q '^    context deadline exceeded$'; then
      echo "fuzz: $name stopped with an error but wrote no failing input (the coordinator's deadline race); not a finding"
      flaked=$((flaked + 1))
    else
      echo "fuzz: $name failed; a new input, if any, is in $corpus/"
      exit 1
    fi
  fi
  rm -f "$out"
  ran=$((ran + 1))
done <<<"$targets"

if [ "$ran" -eq 0 ]; then
  echo "no fuzz target matches: $*"; exit 1
fi
echo "fuzz: $ran targets ran, $fuzztime each; $flaked stopped by the deadline race, no finding"
