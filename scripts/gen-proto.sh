#!/usr/bin/env bash
# Regenerates the committed Go code for every .proto under proto/.
#
#   scripts/gen-proto.sh          rewrite proto/**/*.pb.go
#   scripts/gen-proto.sh --check  regenerate into a temp dir; exit 1 with a
#                                 diff when the committed code is stale
#
# Needs protoc on PATH (Debian: apt-get install -y protobuf-compiler) and Go.
# The plugins are built here, pinned, so every machine generates the same
# bytes: protoc-gen-go at the google.golang.org/protobuf version in go.mod
# (generated code and runtime always match), protoc-gen-go-grpc at the
# version below (its own module, versioned apart from grpc; v1.6.2 is the one
# KEDA v2.21 uses).
set -euo pipefail

PROTOC_GEN_GO_GRPC_VERSION=v1.6.2

check=false
case "${1:-}" in
"") ;;
--check) check=true ;;
*)
	echo "usage: $0 [--check]" >&2
	exit 2
	;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

if ! command -v protoc >/dev/null 2>&1; then
	echo "gen-proto: protoc not found on PATH; install it with: apt-get install -y protobuf-compiler" >&2
	exit 127
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Built inside this module, so go.mod/go.sum pick and verify the version.
go build -o "$tmp/bin/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go
GOBIN="$tmp/bin" go install \
	"google.golang.org/grpc/cmd/protoc-gen-go-grpc@${PROTOC_GEN_GO_GRPC_VERSION}"

out=proto
if $check; then
	out="$tmp/gen"
	mkdir -p "$out"
fi

mapfile -t protos < <(cd proto && find . -name '*.proto' | sed 's|^\./||' | sort)
if [ ${#protos[@]} -eq 0 ]; then
	echo "gen-proto: no .proto files under proto/" >&2
	exit 1
fi

protoc -I proto \
	--plugin=protoc-gen-go="$tmp/bin/protoc-gen-go" \
	--plugin=protoc-gen-go-grpc="$tmp/bin/protoc-gen-go-grpc" \
	--go_out="$out" --go_opt=paths=source_relative \
	--go-grpc_out="$out" --go-grpc_opt=paths=source_relative \
	"${protos[@]}"

$check || exit 0

# Copy committed and fresh code side by side without the lines that name the
# protoc version ("// \tprotoc  v3.21.12", "// - protoc  v3.21.12"): CI's
# Debian may ship another patch release, and that alone is not staleness.
strip() {
	local from=$1 to=$2 f
	(cd "$from" && find . -name '*.pb.go' | sort) | while read -r f; do
		mkdir -p "$to/$(dirname "$f")"
		grep -Ev '^//[[:space:]-]*protoc[[:space:]]' "$from/$f" >"$to/$f" || true
	done
}
strip proto "$tmp/committed"
strip "$out" "$tmp/fresh"
mkdir -p "$tmp/committed" "$tmp/fresh"

if ! (cd "$tmp" && diff -ru committed fresh); then
	echo "gen-proto: generated code under proto/ is stale; run scripts/gen-proto.sh and commit the result" >&2
	exit 1
fi
echo "gen-proto: generated code is up to date"
