#!/usr/bin/env bash
# scripts/browser-check.sh — the web example (examples/web) driven through its own UI in headless
# Chromium (scripts/browser_check.py): upload jobs with progress, pause, resume and cancel, a
# multipart upload resumed after a page reload, and download links, every file checked
# byte-identical. Runs in CI (.ci/run).
#
# Installs Debian's chromium and chromium-driver when missing (selenium comes with the stack's
# venv, scripts/requirements.txt), brings up the local stack, runs a gateway on its own database
# with the page's origin allowed (and the bucket's CORS rule allowing it too, beside the dev
# origins scripts/run.sh uses), and serves the page the way scripts/run.sh does.
# Settings: GATEWAY_BIN (default .build/debug/transfer-gateway, built when missing),
# BROWSER_SCREENSHOTS (default /tmp/transfer-gateway-browser): where the screenshots go.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
GW_PORT=18097
PAGE_PORT=15173
PAGE="http://localhost:$PAGE_PORT"
BIN="${GATEWAY_BIN:-$ROOT/.build/debug/transfer-gateway}"
SHOTS="${BROWSER_SCREENSHOTS:-/tmp/transfer-gateway-browser}"
WORK="$(mktemp -d /tmp/browser-check.XXXXXX)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT
log() { printf '[browser] %s\n' "$*" >&2; }

if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  log "apt-get install chromium chromium-driver"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends chromium chromium-driver </dev/null >/dev/null
fi

bash scripts/stack.sh up >&2
set -a
. .stack/env
set +a
GATEWAY_DATABASE_URL="$(bash scripts/stack.sh database gateway_browser)"
export GATEWAY_DATABASE_URL
[ -x "$BIN" ] || swift build --product transfer-gateway >&2
export GATEWAY_CORS_ORIGINS="$PAGE,http://localhost:3000,http://localhost:5173,http://127.0.0.1:5173"
"$BIN" bucket-cors --apply >/dev/null
"$BIN" migrate >&2
GATEWAY_SPOOL_DIR="$WORK/spool" GATEWAY_PORT=$GW_PORT "$BIN" serve </dev/null >/dev/null 2>"$WORK/gateway.log" &
pids+=($!)
python3 -m http.server --bind 127.0.0.1 --directory examples/web "$PAGE_PORT" </dev/null >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$GW_PORT/healthz" >/dev/null && curl -sf "$PAGE/" >/dev/null && break
  sleep 0.1
done

# A fresh identity per run: its private/ space starts empty.
TOKEN="$("$BIN" token --sub "browser-$(date +%s)-$$" --ttl 3600)"
status=0
.venv/bin/python scripts/browser_check.py --gateway "http://127.0.0.1:$GW_PORT" --page "$PAGE" \
  --token "$TOKEN" --screenshots "$SHOTS" </dev/null || status=$?
errors="$(grep -Ec '"status":5[0-9][0-9]|handler failed' "$WORK/gateway.log" || true)"
if [ "$errors" -ne 0 ]; then
  grep -E '"status":5[0-9][0-9]|handler failed' "$WORK/gateway.log" | head -5 >&2
  status=1
fi
# The page follows its upload jobs with EventSource on their eventsUrl (no header).
streams="$(grep -c '"route":"/v1/jobs/{id}/events".*"status":200' "$WORK/gateway.log" || true)"
if [ "$status" -eq 0 ] && [ "$streams" -eq 0 ]; then
  log "the page opened no event stream"
  status=1
fi
if [ "$status" -eq 0 ]; then
  log "passed ($streams event streams opened by the page); screenshots in $SHOTS"
  rm -rf "$WORK"
else
  log "failed; the gateway's log is $WORK/gateway.log"
fi
exit "$status"
