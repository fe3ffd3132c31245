#!/usr/bin/env bash
# scripts/client-example-check.sh — builds examples/client-app (a package of its own that depends
# on this one by path, as an app would by version) and runs it against a gateway of its own on
# the local stack: a 20 MiB file (parts straight to S3) and a 1 MiB one (an upload job) are
# uploaded and downloaded back with the TransferGatewayClient library; the SHA-256 the example
# prints of the file sent and of the file received must match each other and sha256sum's.
# GATEWAY_BIN: the gateway build to run (default the debug build). Uses the local stack
# (scripts/stack.sh up), or the one whose env file STACK_ENV names (another checkout's .stack/env).
# Exits non-zero on any failure.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BIN="${GATEWAY_BIN:-$ROOT/.build/debug/transfer-gateway}"
BIN="$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")"
log() { printf '[client-example] %s\n' "$*" >&2; }
WORK="$(mktemp -d /tmp/client-example-check.XXXXXX)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

start=$(date +%s)
swift build --package-path examples/client-app >"$WORK/build.log" 2>&1 || { tail -n 40 "$WORK/build.log" >&2; exit 1; }
APP="$(swift build --package-path examples/client-app --show-bin-path)/client-app"
log "examples/client-app built in $(($(date +%s) - start)) s"

STACK_SH=scripts/stack.sh
if [ -n "${STACK_ENV:-}" ]; then
  # The stack of another checkout: its stack.sh holds the database's secrets.
  STACK_SH="$(dirname "$STACK_ENV")/../scripts/stack.sh"
  set -a
  # shellcheck disable=SC1090
  . "$STACK_ENV"
  set +a
else
  bash scripts/stack.sh up >&2
  set -a
  # shellcheck disable=SC1091
  . .stack/env
  set +a
fi
[ -x "$BIN" ] || swift build --product transfer-gateway >&2
GATEWAY_DATABASE_URL="$(bash "$STACK_SH" database gateway_client_example)"
export GATEWAY_DATABASE_URL
"$BIN" migrate >&2
PORT="${CLIENT_EXAMPLE_PORT:-18099}"
GATEWAY_SPOOL_DIR="$WORK/spool" GATEWAY_PORT=$PORT "$BIN" serve </dev/null >/dev/null 2>"$WORK/gateway.log" &
pids+=($!)
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break
  sleep 0.1
done
"$BIN" token --sub "client-example-$(date +%s)-$$" --ttl 3600 >"$WORK/token"

status=0
for size in 20971520 1048576; do
  head -c "$size" /dev/urandom >"$WORK/file-$size.bin"
  expected="$(sha256sum "$WORK/file-$size.bin" | cut -d' ' -f1)"
  if ! "$APP" "http://127.0.0.1:$PORT" "$WORK/token" "$WORK/file-$size.bin" "client-example/$$-$size.bin" >"$WORK/out-$size.log" 2>&1; then
    log "$size bytes: the example failed:"; cat "$WORK/out-$size.log" >&2; status=1; continue
  fi
  sent="$(awk '/^sha256 sent/ { print $3 }' "$WORK/out-$size.log")"
  received="$(awk '/^sha256 received/ { print $3 }' "$WORK/out-$size.log")"
  if [ "$sent" = "$expected" ] && [ "$received" = "$expected" ]; then
    log "$size bytes: up and back, sha256 $expected"
  else
    log "$size bytes: sha256 sent $sent, received $received, sha256sum $expected"; cat "$WORK/out-$size.log" >&2; status=1
  fi
done
if grep -Eq '"status":5[0-9][0-9]|handler failed' "$WORK/gateway.log"; then
  grep -E '"status":5[0-9][0-9]|handler failed' "$WORK/gateway.log" | head -5 >&2
  status=1
fi
exit "$status"
