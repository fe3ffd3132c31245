#!/usr/bin/env bash
# scripts/container-check.sh — docker/Dockerfile checked without Docker (base images cannot be
# pulled here): scripts/container_check.py builds the release binary with the build stage's own
# `swift build` step, makes the runtime stage's root filesystem from Debian bookworm with
# mmdebstrap and the stage's own RUN/COPY/ENV/USER steps, runs the gateway in it as the image's
# user (chroot in fresh mount and PID namespaces) against the local stack, and checks the
# HEALTHCHECK, /healthz, /readyz, a presigned PUT, an upload job and a copy job. Runs in CI.
# Needs root; installs mmdebstrap when missing. CONTAINER_PORT (default 18098) is the port the
# gateway listens on. A failed run keeps its work directory (/tmp/tg-container-*, gateway.log).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
[ "$(id -u)" -eq 0 ] || { echo "[container] needs root (mmdebstrap, unshare, chroot)" >&2; exit 2; }
if ! command -v mmdebstrap >/dev/null; then
  echo "[container] apt-get install mmdebstrap" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends mmdebstrap </dev/null >/dev/null
fi
bash scripts/stack.sh up >&2
set -a
. .stack/env
set +a
GATEWAY_DATABASE_URL="$(bash scripts/stack.sh database gateway_container)"
export GATEWAY_DATABASE_URL
exec .venv/bin/python scripts/container_check.py
