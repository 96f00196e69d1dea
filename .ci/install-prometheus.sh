#!/usr/bin/env bash
# Installs Debian's prometheus package, which the tests run as a child
# process (internal/promtest). Idempotent: it does nothing when the binary is
# there, and runs apt-get update only when the package is not known yet.
#
# The package would start its own service on :9090. The tests never use it
# (each starts its own server on a free loopback port), so the install is run
# with service starts denied, and a service that is running anyway is
# stopped and disabled, to leave nothing listening behind.
set -euo pipefail

if command -v prometheus >/dev/null 2>&1 || [ -x /usr/bin/prometheus ]; then
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive

# Read the policy whole first: grep -q closing the pipe early would fail
# the pipeline under pipefail and update for nothing.
candidate=$(apt-cache policy prometheus 2>/dev/null || true)
if ! grep -q 'Candidate: [0-9]' <<<"$candidate"; then
  $sudo apt-get update -qq
fi

# policy-rc.d exit code 101 tells invoke-rc.d and deb-systemd-invoke not to
# start services. Only install ours when the machine has none (containers
# often ship one already), and remove it again.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  trap '$sudo rm -f "$policy"' EXIT
  printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
  $sudo chmod 755 "$policy"
fi

# No recommends: they pull node-exporter and other services the tests do
# not need.
$sudo apt-get install -y -qq --no-install-recommends prometheus

if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet prometheus 2>/dev/null; then
  $sudo systemctl disable --now prometheus
fi

prometheus --version | head -1
