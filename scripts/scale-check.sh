#!/usr/bin/env bash
# scripts/scale-check.sh — docker/compose.scale.yaml's shape run on loopback, under load: one
# `transfer-gateway migrate` (it generates the link secret into PostgreSQL; GATEWAY_LINK_SECRET is
# not set), three `transfer-gateway serve` on 127.0.0.1:18101-18103 with identical settings (the
# stack's, GATEWAY_TRUSTED_PROXIES=127.0.0.1/32, GATEWAY_SHUTDOWN_GRACE=5, GATEWAY_LEASE_SECONDS=10,
# GATEWAY_UPLOAD_TTL=90 so the janitor sweeps every 22 s, a spool each) and Debian's nginx on 127.0.0.1:18100 with docker/nginx-scale.conf (only its
# addresses, log and temp paths changed). Every client request goes through nginx. A mixed workload
# (tus uploads, upload jobs PUT then PATCH, transfer-client client uploads, presigned PUT/GET on S3,
# ranged downloads on a download job's dataUrl, event streams and long polls that see a change made
# by other requests), each item checked byte-identical (SHA-256), in three phases:
#   1. all three instances up: no error (a 503 with Retry-After from a slow shared S3 aside);
#   2. two instances SIGKILLed mid-run and started again: everything still identical (clients retry
#      as real ones do), and no S3 multipart upload left open under the run's prefix;
#   3. a rolling restart (SIGTERM, exit, start, /readyz, next) under a steady workload: every answer
#      (nginx's access log included) is a success or a 503 with Retry-After.
# A short summary per phase (items, bytes, seconds, answers and errors by kind). The whole run takes
# about three minutes; SCALE_LONG=N multiplies the workload by N. Runs in CI (.ci/run).
#
# Settings: GATEWAY_BIN (.build/debug/transfer-gateway), CLIENT_BIN (.build/debug/transfer-client),
# both copied aside first so a rebuild never swaps them mid-run; SCALE_DATABASE (gateway_scale);
# SCALE_PHASES (1,2,3); SCALE_LOG_LEVEL (the gateways' GATEWAY_LOG_LEVEL, info); SCALE_KEEP=1 keeps
# the temp dir (gateway and nginx logs). Installs Debian's nginx when missing. Uses the local stack
# (scripts/stack.sh up, idempotent), the database gateway_scale and keys under private/scale-*/ in
# the stack's bucket (deleted at the end). Everything it starts is stopped on exit. Exit status 1 on
# any failure.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
log() { printf '[scale] %s\n' "$*" >&2; }

BIN="${GATEWAY_BIN:-$ROOT/.build/debug/transfer-gateway}"
CLIENT="${CLIENT_BIN:-$ROOT/.build/debug/transfer-client}"
[ -x "$BIN" ] || swift build --product transfer-gateway >&2
[ -x "$CLIENT" ] || swift build --product transfer-client >&2

TMP="$(mktemp -d /tmp/scale-check.XXXXXX)"
PY_PID=""
cleanup() {
  local rc=$?
  if [ -n "$PY_PID" ] && kill -0 "$PY_PID" 2>/dev/null; then
    kill -TERM "$PY_PID" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$PY_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$PY_PID" 2>/dev/null || true
  fi
  # Processes scale_check.py started (it writes each pid to $TMP/pids) and did not stop: only those
  # still running our copy of the gateway, or an nginx whose command line names our temp dir.
  if [ -f "$TMP/pids" ]; then
    while read -r pid; do
      [ -n "$pid" ] || continue
      if [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$TMP/transfer-gateway" ] ||
         { [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "$TMP/nginx"; }; then
        kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
      fi
    done <"$TMP/pids"
  fi
  if [ -n "${SCALE_KEEP:-}" ]; then log "kept $TMP (gateway and nginx logs)"; else rm -rf "$TMP"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if ! command -v nginx >/dev/null; then
  [ "$(id -u)" -eq 0 ] || { log "nginx is missing (apt-get install nginx as root)"; exit 2; }
  log "apt-get install nginx"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends nginx </dev/null >/dev/null
fi

bash scripts/stack.sh up >&2
set -a
# shellcheck disable=SC1091
. .stack/env
set +a
unset GATEWAY_LINK_SECRET
DATABASE_URL="$(bash scripts/stack.sh database "${SCALE_DATABASE:-gateway_scale}")"

cp "$BIN" "$TMP/transfer-gateway"
cp "$CLIENT" "$TMP/transfer-client"
log "binaries $BIN ($(date -u -r "$BIN" '+%H:%M UTC')), $CLIENT ($(date -u -r "$CLIENT" '+%H:%M UTC'))"

ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
.venv/bin/python scripts/scale_check.py --tmp "$TMP" --bin "$TMP/transfer-gateway" \
  --client-bin "$TMP/transfer-client" --database-url "$DATABASE_URL" --long "${SCALE_LONG:-1}" \
  --phases "${SCALE_PHASES:-1,2,3}" </dev/null &
PY_PID=$!
rc=0
wait "$PY_PID" || rc=$?
PY_PID=""
exit "$rc"
