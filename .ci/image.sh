#!/usr/bin/env bash
# The scaler's image without a base image, for machines that reach no
# container registry: the static binary (built as the Dockerfile builds it)
# on an empty root, with Debian's CA bundle and passwd/group files naming
# the non-root user 65532, assembled into an OCI image layout by umoci, then
# unpacked and run by crun (runc where crun cannot run) with a read-only root filesystem in a network
# namespace of its own (loopback only). The check: /readyz answers 200 from
# inside that namespace, and the process runs as 65532:65532 with its root
# mounted read-only. The Dockerfile stays the path for a registry
# (distroless base); this is the same binary on the same kind of base.
#
#   bash .ci/image.sh            # build, run, check; prints size, user, /readyz
#   IMAGE_OUT=dir bash .ci/image.sh   # also keep the OCI layout in dir
#
# umoci, crun, runc and jq come from Debian's packages; when they cannot be
# installed the script says so and exits 0, so CI elsewhere is not failed
# by a missing tool.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# Idempotent, as .ci/install: apt-get only when a tool is missing.
missing=()
for tool in umoci crun runc jq nsenter; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
  pkgs=()
  for tool in "${missing[@]}"; do
    case $tool in nsenter) pkgs+=(util-linux) ;; *) pkgs+=("$tool") ;; esac
  done
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  if ! { $sudo apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null 2>&1 ||
    { $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends "${pkgs[@]}"; }; }; then
    echo "image: SKIPPED: could not install ${pkgs[*]} (Debian packages); the image was not built or run"
    exit 0
  fi
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "image: SKIPPED: crun needs root here to create namespaces; the image was not built or run"
  exit 0
fi

ca=/etc/ssl/certs/ca-certificates.crt # Debian's ca-certificates
if [ ! -s "$ca" ]; then
  echo "image: $ca missing: install Debian's ca-certificates package" >&2
  exit 1
fi

work=$(mktemp -d)
name=barometer-image-check-$$
runtime=""
cleanup() {
  if [ -n "$runtime" ]; then
    $runtime kill "$name" KILL >/dev/null 2>&1 || true
    $runtime delete --force "$name" >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n=== image: %s (at %ds)\n' "$*" "$SECONDS"; }

step "static binary (CGO_ENABLED=0, the Dockerfile's flags)"
version=$(git describe --always --dirty 2>/dev/null || echo dev)
mkdir -p "$work/rootfs/etc/ssl/certs"
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$version" -o "$work/rootfs/barometer" ./cmd/scaler

step "root filesystem: binary, CA bundle, passwd and group"
cp "$ca" "$work/rootfs/etc/ssl/certs/ca-certificates.crt"
# The distroless convention: nonroot is 65532, as the chart's
# podSecurityContext and the Dockerfile's USER nonroot:nonroot.
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$work/rootfs/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$work/rootfs/etc/group"
chmod 0555 "$work/rootfs/barometer"
chmod 0444 "$work/rootfs/etc/passwd" "$work/rootfs/etc/group" "$work/rootfs/etc/ssl/certs/ca-certificates.crt"

step "OCI image layout (umoci)"
oci=$work/oci
image=$oci:barometer
umoci init --layout "$oci"
umoci new --image "$image"
umoci unpack --image "$image" "$work/build" >/dev/null
cp -a "$work/rootfs/." "$work/build/rootfs/"
umoci repack --image "$image" "$work/build"
umoci config --image "$image" \
  --os linux --architecture "$(go env GOARCH)" \
  --config.user 65532:65532 \
  --config.entrypoint /barometer --config.cmd serve \
  --config.exposedports 6000/tcp --config.exposedports 8080/tcp \
  --config.workingdir / \
  --config.env BAROMETER_GRPC_ADDR=:6000 --config.env BAROMETER_HTTP_ADDR=:8080 \
  --config.label org.opencontainers.image.source=https://github.com/barometer-scaler/barometer \
  --config.label "org.opencontainers.image.version=$version" \
  --history.created_by ".ci/image.sh"
umoci gc --layout "$oci"
# The layer as stored (gzip) and the files it holds.
layers=$(umoci stat --image "$image" --json | jq '[.history[] | select(.empty_layer | not)] | length')
stored=$(du -sb "$oci/blobs" | cut -f1)
files=$(du -sb "$work/rootfs" | cut -f1)

step "run with crun: read-only root, own network namespace"
bundle=$work/run
umoci unpack --image "$image" "$bundle" >/dev/null
# umoci writes a runtime config from the image's (user, entrypoint, env);
# make it what the chart asks of a pod: read-only root, no capabilities,
# no new privileges, and namespaces of its own, the network one holding
# only a loopback interface.
jq '.root.readonly = true
  | .process.terminal = false
  | .process.noNewPrivileges = true
  | .process.capabilities = {bounding: [], effective: [], inheritable: [], permitted: [], ambient: []}
  | .linux.namespaces = [{type: "pid"}, {type: "network"}, {type: "ipc"}, {type: "uts"}, {type: "mount"}]
  | del(.linux.cgroupsPath) | del(.linux.resources)
  | .process.env += ["BAROMETER_LOG_FORMAT=json", "BAROMETER_SAMPLE_INTERVAL=1s"]' \
  "$bundle/config.json" >"$bundle/config.json.new"
mv "$bundle/config.json.new" "$bundle/config.json"
# crun first; crun 1.8 refuses a machine whose cgroups are hybrid (v1
# controllers beside a v2 tree with a controller of its own), as some
# sandboxes are, and runc, the other OCI runtime Debian ships, runs the same
# bundle there. No cgroup is needed by the check.
runtime=crun
if ! crun --cgroup-manager=disabled run --bundle "$bundle" --detach "$name" >"$work/run.log" 2>&1; then
  if grep -q 'hybrid mode not supported' "$work/run.log"; then
    echo "image: crun: $(cat "$work/run.log"); running the bundle with runc instead"
    runtime=runc
    runc run --bundle "$bundle" --detach "$name" >"$work/run.log" 2>&1 || runtime=""
  else
    runtime=""
  fi
fi
if [ -z "$runtime" ]; then
  echo "image: the container did not start:" >&2
  cat "$work/run.log" >&2
  exit 1
fi
pid=$($runtime state "$name" | jq -r .pid)
in_netns() { nsenter --net="/proc/$pid/ns/net" "$@"; }
# A new network namespace starts with lo down unless the runtime raised it.
if ! in_netns ip -o link show lo | grep -q 'UP'; then
  in_netns ip link set lo up
fi

readyz=""
for _ in $(seq 1 100); do
  if readyz=$(in_netns curl -fsS --max-time 2 http://127.0.0.1:8080/readyz 2>/dev/null); then
    break
  fi
  readyz=""
  sleep 0.3
done
status=$($runtime state "$name" | jq -r .status)
if [ -z "$readyz" ]; then
  echo "image: /readyz never answered 200 (container $status); its answer now:" >&2
  in_netns curl -sS --max-time 2 http://127.0.0.1:8080/readyz >&2 || true
  exit 1
fi
uids=$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")
gids=$(awk '/^Gid:/ {print $2}' "/proc/$pid/status")
user=$(awk -F: -v u="$uids" '$3 == u {print $1}' "$bundle/rootfs/etc/passwd")
root_opts=$(awk '$5 == "/" {print $6}' "/proc/$pid/mountinfo")
caps=$(awk '/^CapEff:/ {print $2}' "/proc/$pid/status")
fail=0
[ "$uids" = 65532 ] || { echo "image: runs as uid $uids, want 65532" >&2; fail=1; }
[ "$gids" = 65532 ] || { echo "image: runs as gid $gids, want 65532" >&2; fail=1; }
[[ ,$root_opts, == *,ro,* ]] || { echo "image: root filesystem mounted $root_opts, want ro" >&2; fail=1; }
[ "$caps" = 0000000000000000 ] || { echo "image: effective capabilities $caps, want none" >&2; fail=1; }
# The metrics endpoint answers too, and the gRPC port listens.
# Read the whole body first: grep -q stops at its first match, and under
# pipefail curl's failed write would then fail the check.
metrics=$(in_netns curl -fsS --max-time 2 http://127.0.0.1:8080/metrics || true)
grep -q '^barometer_targets ' <<<"$metrics" ||
  { echo "image: /metrics has no barometer_targets" >&2; fail=1; }
in_netns bash -c 'exec 3<>/dev/tcp/127.0.0.1/6000' ||
  { echo "image: nothing listens on the gRPC port 6000" >&2; fail=1; }

echo "image: layout $oci ($layers layer), stored ${stored} bytes (blobs, gzip), files ${files} bytes"
echo "image: run by $runtime as uid=$uids($user) gid=$gids, root filesystem ${root_opts%%,*}, effective capabilities $caps"
echo "image: GET /readyz -> 200 $readyz"
if [ -n "${IMAGE_OUT:-}" ]; then
  rm -rf "$IMAGE_OUT"
  cp -a "$oci" "$IMAGE_OUT"
  echo "image: OCI layout kept in $IMAGE_OUT (tag barometer)"
fi
exit "$fail"
