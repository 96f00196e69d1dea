#!/usr/bin/env bash
# Builds the minimal OpenTelemetry Collector of tools/otelcol (its own Go
# module: the collector's dependencies stay out of the scaler's go.mod) to
# tools/otelcol/.bin/otelcol, where internal/otelcoltest finds it for the
# OTLP source's collector tests. Debian has no collector package; the
# collector's modules come from the Go module proxy like any other.
#
# Fresh means: the binary is there and was built from the module's current
# go.mod, go.sum and main.go (their digest is kept beside it); then nothing
# runs. Otherwise it builds, at a lower priority, since CI runs it in the
# background beside the checks (.ci/run). docs/otlp.md has the build times.
set -euo pipefail
cd "$(dirname "$0")/../tools/otelcol"

bin=.bin/otelcol
stamp=.bin/otelcol.sha256
digest=$(cat go.mod go.sum main.go | sha256sum | cut -d' ' -f1)
if [ -x "$bin" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$digest" ]; then
  echo "otelcol: fresh ($(pwd)/$bin)"
  exit 0
fi

start=$SECONDS
mkdir -p .bin
rm -f "$stamp"
# Without symbol tables and with trimmed paths: a third smaller, and
# faster to link. GOFLAGS may carry -buildvcs=false already; repeating it
# is harmless.
export GOFLAGS="${GOFLAGS:-} -buildvcs=false"
nice go build -trimpath -ldflags='-s -w' -o "$bin" .
echo "$digest" >"$stamp"
echo "otelcol: built $(pwd)/$bin in $((SECONDS - start))s"
