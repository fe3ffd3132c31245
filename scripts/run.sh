#!/usr/bin/env bash
# scripts/run.sh — one command for a local gateway: bring up the stack (PostgreSQL + SeaweedFS S3,
# see scripts/stack.sh), build the release binary, and run `transfer-gateway serve` with the
# stack's settings (.stack/env). GATEWAY_PORT defaults to 8080, GATEWAY_HOST to 127.0.0.1, and the
# dev-server origins may call it (CORS).
# Extra arguments go to `serve`.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash scripts/stack.sh up
swift build -c release --product transfer-gateway

# shellcheck disable=SC1091
. .stack/env
export GATEWAY_PORT="${GATEWAY_PORT:-8080}"
# The usual dev-server origins may call it from a browser out of the box (React/Next on 3000,
# Vite on 5173); set GATEWAY_CORS_ORIGINS to choose others.
export GATEWAY_CORS_ORIGINS="${GATEWAY_CORS_ORIGINS:-http://localhost:3000,http://localhost:5173,http://127.0.0.1:5173}"
# The bucket lets those pages use presigned URLs too (ETag exposed for multipart completion).
.build/release/transfer-gateway bucket-cors --apply >/dev/null ||
  echo "[run] the bucket did not take its CORS rule; presigned uploads from a page may be refused" >&2
exec .build/release/transfer-gateway serve "$@"
