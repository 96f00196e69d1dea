#!/usr/bin/env bash
# The scaler's and the demo workload's images without a base image, for
# machines that reach no container registry: each static binary (built as
# the Dockerfile builds it) on an empty root, with Debian's CA bundle and
# passwd/group files naming the non-root user 65532, assembled into one OCI
# image layout by umoci, then unpacked and run by crun (runc where crun
# cannot run) with a read-only root filesystem in a network namespace of
# its own (loopback only). The check: the scaler's /readyz and the demo
# workload's /state answer 200 from inside that namespace, each process runs
# as 65532:65532 with no capability and its root mounted read-only, and each
# image, written by skopeo as a docker-archive under the name the chart
# (image.repository, appVersion) or examples/kubernetes/demo-workload.yaml
# gives it, carries that name. The Dockerfile stays the path for a registry
# (distroless base); this is the same binary on the same kind of base.
#
#   bash .ci/image.sh                  # build, run, check; prints size, user, answers
#   IMAGE_OUT=dir bash .ci/image.sh    # also keep dir/barometer.tar and
#                                      # dir/barometer-demo-workload.tar (for
#                                      # `kind load image-archive`) and the
#                                      # OCI layout dir/oci
#
# umoci, crun, runc, skopeo and jq come from Debian's packages; when they
# cannot be installed the script says so and exits 0, so CI elsewhere is not
# failed by a missing tool.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# Idempotent, as .ci/install: apt-get only when a tool is missing.
missing=()
for tool in umoci crun runc skopeo jq nsenter; do
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
    echo "image: SKIPPED: could not install ${pkgs[*]} (Debian packages); the images were not built or run"
    exit 0
  fi
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "image: SKIPPED: crun needs root here to create namespaces; the images were not built or run"
  exit 0
fi

ca=/etc/ssl/certs/ca-certificates.crt # Debian's ca-certificates
if [ ! -s "$ca" ]; then
  echo "image: $ca missing: install Debian's ca-certificates package" >&2
  exit 1
fi

# The names the images are deployed under: the chart's default image
# (image.repository, tag appVersion) and the demo manifest's image.
scaler_ref="$(awk '/^image:/ {i = 1} i && /^  repository:/ {print $2; exit}' charts/barometer/values.yaml):$(awk -F'"' '/^appVersion:/ {print $2}' charts/barometer/Chart.yaml)"
demo_ref=$(awk '$1 == "image:" {print $2; exit}' examples/kubernetes/demo-workload.yaml)
for ref in "$scaler_ref" "$demo_ref"; do
  [[ $ref =~ ^[a-z0-9./-]+:[A-Za-z0-9._-]+$ ]] || { echo "image: could not read an image name (got '$ref')" >&2; exit 1; }
done

work=$(mktemp -d)
containers=()
runtime=""
cleanup() {
  for c in "${containers[@]}"; do
    $runtime kill "$c" KILL >/dev/null 2>&1 || true
    $runtime delete --force "$c" >/dev/null 2>&1 || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n=== image: %s (at %ds)\n' "$*" "$SECONDS"; }

step "static binaries (CGO_ENABLED=0, the Dockerfile's flags)"
version=$(git describe --always --dirty 2>/dev/null || echo dev)
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$version" -o "$work/bin/barometer" ./cmd/scaler
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/bin/demo-workload" ./examples/demo-workload

oci=$work/oci
umoci init --layout "$oci"
# image TAG BINARY [umoci config flags...]: one image of the layout, the
# binary on an empty root with the CA bundle and passwd/group files.
image() {
  local tag=$1 bin=$2; shift 2
  step "$tag: root filesystem and OCI image (umoci)"
  local rootfs=$work/rootfs-$tag
  mkdir -p "$rootfs/etc/ssl/certs"
  cp "$work/bin/$bin" "$rootfs/$bin"
  cp "$ca" "$rootfs/etc/ssl/certs/ca-certificates.crt"
  # The distroless convention: nonroot is 65532, as the chart's
  # podSecurityContext and the Dockerfile's USER nonroot:nonroot.
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$rootfs/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' >"$rootfs/etc/group"
  chmod 0555 "$rootfs/$bin"
  chmod 0444 "$rootfs/etc/passwd" "$rootfs/etc/group" "$rootfs/etc/ssl/certs/ca-certificates.crt"
  umoci new --image "$oci:$tag"
  umoci unpack --image "$oci:$tag" "$work/build-$tag" >/dev/null
  cp -a "$rootfs/." "$work/build-$tag/rootfs/"
  umoci repack --image "$oci:$tag" "$work/build-$tag"
  umoci config --image "$oci:$tag" \
    --os linux --architecture "$(go env GOARCH)" \
    --config.user 65532:65532 --config.workingdir / \
    --config.label org.opencontainers.image.source=https://github.com/barometer-scaler/barometer \
    --config.label "org.opencontainers.image.version=$version" \
    --history.created_by ".ci/image.sh" "$@"
  echo "image: $tag: files $(du -sb "$rootfs" | cut -f1) bytes"
}
image barometer barometer \
  --config.entrypoint /barometer --config.cmd serve \
  --config.exposedports 6000/tcp --config.exposedports 8080/tcp \
  --config.env BAROMETER_GRPC_ADDR=:6000 --config.env BAROMETER_HTTP_ADDR=:8080
# As the Dockerfile's demo-workload stage: ENTRYPOINT ["/demo-workload", "-listen", ":9100"].
image barometer-demo-workload demo-workload \
  --config.entrypoint /demo-workload --config.entrypoint=-listen --config.entrypoint=:9100 \
  --config.exposedports 9100/tcp
umoci gc --layout "$oci"
stored=$(du -sb "$oci/blobs" | cut -f1)

# run TAG PORT PATH [ENV...]: unpack the image and run it with crun (runc
# where crun cannot run); wait until GET PATH on PORT answers 200 inside its
# network namespace and check who it runs as. Sets pid and answer.
fail=0
run() {
  local tag=$1 port=$2 path=$3; shift 3
  step "$tag: run read-only in its own network namespace"
  local bundle=$work/run-$tag name=barometer-image-check-$tag-$$
  umoci unpack --image "$oci:$tag" "$bundle" >/dev/null
  # umoci writes a runtime config from the image's (user, entrypoint, env);
  # make it what the chart asks of a pod: read-only root, no capabilities,
  # no new privileges, and namespaces of its own, the network one holding
  # only a loopback interface.
  local env
  env=$(printf '%s\n' "$@" | jq -R . | jq -s .)
  jq --argjson env "$env" '.root.readonly = true
    | .process.terminal = false
    | .process.noNewPrivileges = true
    | .process.capabilities = {bounding: [], effective: [], inheritable: [], permitted: [], ambient: []}
    | .linux.namespaces = [{type: "pid"}, {type: "network"}, {type: "ipc"}, {type: "uts"}, {type: "mount"}]
    | del(.linux.cgroupsPath) | del(.linux.resources)
    | .process.env += ($env | map(select(. != "")))' \
    "$bundle/config.json" >"$bundle/config.json.new"
  mv "$bundle/config.json.new" "$bundle/config.json"
  # crun first; crun 1.8 refuses a machine whose cgroups are hybrid (v1
  # controllers beside a v2 tree with a controller of its own), as some
  # sandboxes are, and runc, the other OCI runtime Debian ships, runs the
  # same bundle there. No cgroup is needed by the check.
  if [ -z "$runtime" ] || [ "$runtime" = crun ]; then
    if crun --cgroup-manager=disabled run --bundle "$bundle" --detach "$name" >"$work/run.log" 2>&1; then
      runtime=crun
    elif grep -q 'hybrid mode not supported' "$work/run.log"; then
      echo "image: crun: $(cat "$work/run.log"); running the bundle with runc instead"
      runtime=runc
    else
      echo "image: $tag: the container did not start:" >&2
      cat "$work/run.log" >&2
      exit 1
    fi
  fi
  if [ "$runtime" = runc ] && ! runc run --bundle "$bundle" --detach "$name" >"$work/run.log" 2>&1; then
    echo "image: $tag: the container did not start:" >&2
    cat "$work/run.log" >&2
    exit 1
  fi
  containers+=("$name")
  pid=$($runtime state "$name" | jq -r .pid)
  # A new network namespace starts with lo down unless the runtime raised it.
  if ! in_netns ip -o link show lo | grep -q 'UP'; then
    in_netns ip link set lo up
  fi
  answer=""
  for _ in $(seq 1 100); do
    if answer=$(in_netns curl -fsS --max-time 2 "http://127.0.0.1:$port$path" 2>/dev/null); then
      break
    fi
    answer=""
    sleep 0.3
  done
  if [ -z "$answer" ]; then
    echo "image: $tag: GET $path never answered 200 (container $($runtime state "$name" | jq -r .status)); its answer now:" >&2
    in_netns curl -sS --max-time 2 "http://127.0.0.1:$port$path" >&2 || true
    exit 1
  fi
  local uids gids user root_opts caps
  uids=$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")
  gids=$(awk '/^Gid:/ {print $2}' "/proc/$pid/status")
  user=$(awk -F: -v u="$uids" '$3 == u {print $1}' "$bundle/rootfs/etc/passwd")
  root_opts=$(awk '$5 == "/" {print $6}' "/proc/$pid/mountinfo")
  caps=$(awk '/^CapEff:/ {print $2}' "/proc/$pid/status")
  [ "$uids" = 65532 ] || { echo "image: $tag runs as uid $uids, want 65532" >&2; fail=1; }
  [ "$gids" = 65532 ] || { echo "image: $tag runs as gid $gids, want 65532" >&2; fail=1; }
  [[ ,$root_opts, == *,ro,* ]] || { echo "image: $tag: root filesystem mounted $root_opts, want ro" >&2; fail=1; }
  [ "$caps" = 0000000000000000 ] || { echo "image: $tag: effective capabilities $caps, want none" >&2; fail=1; }
  echo "image: $tag: run by $runtime as uid=$uids($user) gid=$gids, root filesystem ${root_opts%%,*}, effective capabilities $caps"
  echo "image: $tag: GET $path -> 200 $(head -c 200 <<<"$answer")"
}
in_netns() { nsenter --net="/proc/$pid/ns/net" "$@"; }

run barometer 8080 /readyz BAROMETER_LOG_FORMAT=json BAROMETER_SAMPLE_INTERVAL=1s
# The metrics endpoint answers too, and the gRPC port listens.
# Read the whole body first: grep -q stops at its first match, and under
# pipefail curl's failed write would then fail the check.
metrics=$(in_netns curl -fsS --max-time 2 http://127.0.0.1:8080/metrics || true)
grep -q '^barometer_targets ' <<<"$metrics" ||
  { echo "image: /metrics has no barometer_targets" >&2; fail=1; }
in_netns bash -c 'exec 3<>/dev/tcp/127.0.0.1/6000' ||
  { echo "image: nothing listens on the gRPC port 6000" >&2; fail=1; }

run barometer-demo-workload 9100 /state
metrics=$(in_netns curl -fsS --max-time 2 http://127.0.0.1:9100/metrics || true)
grep -q '^barometer_activations ' <<<"$metrics" ||
  { echo "image: the demo workload's /metrics has no barometer_activations" >&2; fail=1; }

step "docker-archives under the deployed names (skopeo), for kind load image-archive"
# archive TAG REF: the image as `docker save` writes it, named REF.
archive() {
  skopeo copy --quiet "oci:$oci:$1" "docker-archive:$work/$1.tar:$2"
  local tags
  tags=$(tar -xOf "$work/$1.tar" manifest.json | jq -r '.[].RepoTags[]')
  [ "$tags" = "$2" ] || { echo "image: $1.tar is named '$tags', want $2" >&2; fail=1; }
  echo "image: $1.tar: $2, $(du -b "$work/$1.tar" | cut -f1) bytes"
}
archive barometer "$scaler_ref"
archive barometer-demo-workload "$demo_ref"

echo "image: layout $oci, stored ${stored} bytes (blobs, gzip)"
if [ -n "${IMAGE_OUT:-}" ]; then
  mkdir -p "$IMAGE_OUT"
  rm -rf "$IMAGE_OUT/oci"
  cp -a "$oci" "$IMAGE_OUT/oci"
  cp "$work/barometer.tar" "$work/barometer-demo-workload.tar" "$IMAGE_OUT/"
  echo "image: kept in $IMAGE_OUT: barometer.tar ($scaler_ref), barometer-demo-workload.tar ($demo_ref), oci/ (tags barometer, barometer-demo-workload)"
fi
exit "$fail"
