#!/usr/bin/env bash
# scripts/run.sh — one command for a local gateway: bring up the stack (PostgreSQL + SeaweedFS S3,
# see scripts/stack.sh), build the release binary, and run `transfer-gateway serve` with the
# stack's settings (.stack/env) and a link secret kept in .stack/link-secret. GATEWAY_PORT
# defaults to 8080, GATEWAY_HOST to 127.0.0.1, the dev-server origins may call it (CORS) and URL
# imports may read from the local S3. The web example (examples/web) is served on
# http://localhost:5173 (GATEWAY_EXAMPLE_PORT; 0 turns it off), and once the gateway logs its
# "listening" line a link to the example with a development token (a day long, identity
# dev-user) is printed. Settings are GATEWAY_* variables; the script takes no arguments.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
[ "$#" -eq 0 ] || { echo "[run] takes no arguments; settings are GATEWAY_* variables (see docs/configuration.md)" >&2; exit 64; }

# Copies the gateway's log lines (stdin) to stderr and prints LINE after the first "listening"
# line, the one `serve` writes once it accepts connections. Ctrl-C is the gateway's to handle:
# the copy goes on until the gateway's last line.
announce_when_listening() {
  local line pending="$1"
  trap '' INT
  while IFS= read -r line; do
    printf '%s\n' "$line" >&2
    if [ -n "$pending" ] && [[ "$line" == *'"msg":"listening"'* ]]; then
      printf '%s\n' "$pending" >&2
      pending=""
    fi
  done
}

# The key of gateway-signed links (dataUrl, eventsUrl): made once and kept in FILE (mode 600),
# like the stack's JWT secret, so links survive a restart; printed.
link_secret() {
  local file="$1"
  if [ ! -s "$file" ]; then
    (umask 077 && od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$file.tmp" && mv "$file.tmp" "$file")
  fi
  cat "$file"
}

bash scripts/stack.sh up
swift build -c release --product transfer-gateway

# shellcheck disable=SC1091
. .stack/env
export GATEWAY_PORT="${GATEWAY_PORT:-8080}"
# One instance, one link key that outlives it (a deployment sets GATEWAY_LINK_SECRET itself, or
# is told at start that it has none).
GATEWAY_LINK_SECRET="${GATEWAY_LINK_SECRET:-$(link_secret .stack/link-secret)}"
export GATEWAY_LINK_SECRET
# The usual dev-server origins may call it from a browser out of the box (React/Next on 3000,
# Vite on 5173); set GATEWAY_CORS_ORIGINS to choose others.
export GATEWAY_CORS_ORIGINS="${GATEWAY_CORS_ORIGINS:-http://localhost:3000,http://localhost:5173,http://127.0.0.1:5173}"
# URL imports may read from the local S3 (on loopback, which imports may not reach otherwise), so
# the import of a presigned URL in docs/api-guide.md works as it is; set GATEWAY_IMPORT_ALLOW_HOSTS to choose.
S3_AUTHORITY="${GATEWAY_S3_ENDPOINT#*://}"
export GATEWAY_IMPORT_ALLOW_HOSTS="${GATEWAY_IMPORT_ALLOW_HOSTS:-${S3_AUTHORITY%%/*}}"
# The bucket lets those pages use presigned URLs too (ETag exposed for multipart completion).
.build/release/transfer-gateway bucket-cors --apply >/dev/null ||
  echo "[run] the bucket did not take its CORS rule; presigned uploads from a page may be refused" >&2
GATEWAY_EXAMPLE_PORT="${GATEWAY_EXAMPLE_PORT:-5173}"
announcement="[run] gateway: http://127.0.0.1:$GATEWAY_PORT"
if [ "$GATEWAY_EXAMPLE_PORT" != 0 ]; then
  python3 -m http.server --bind 127.0.0.1 --directory examples/web "$GATEWAY_EXAMPLE_PORT" >/dev/null 2>&1 &
  example=$!
  trap 'kill "$example" 2>/dev/null || true' EXIT
  token="$(.build/release/transfer-gateway token --sub dev-user --ttl 86400)"
  announcement="[run] web example: http://localhost:$GATEWAY_EXAMPLE_PORT/#gateway=http://127.0.0.1:$GATEWAY_PORT&token=$token"
fi
# The gateway runs in the foreground; Ctrl-C (or a TERM to this script) stops it gracefully. Its
# log goes to stderr as it comes, the example's link after the line saying it listens.
.build/release/transfer-gateway serve 2> >(announce_when_listening "$announcement") &
gateway=$!
trap 'kill -TERM "$gateway" 2>/dev/null || true' INT TERM
status=0
wait "$gateway" || status=$?
# A signal interrupts the first wait; the second waits for the graceful stop to finish.
wait "$gateway" 2>/dev/null || true
exit "$status"
