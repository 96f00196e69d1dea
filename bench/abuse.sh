#!/usr/bin/env bash
# Runs the abuse suite (bench/abuse) from the repository root, whatever the
# working directory; arguments go to it (see bench/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./bench/abuse "$@"
