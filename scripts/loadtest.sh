#!/usr/bin/env bash
# scripts/loadtest.sh — slow and heavy clients against one release gateway (log on), each while a
# normal client keeps asking /healthz every 100 ms (its worst latency is reported):
#   slowloris   slowhttptest -H: 500 connections sending their heads a header every 10 s
#   slow body   slowhttptest -B: 500 POSTs to /v1/presign sending their bodies a field every 10 s
#   slow read   slowhttptest -X: 500 connections reading /openapi.yaml 32 bytes every 3 s
#   load        wrk -t2 -c500 -d60s mixing POST /v1/presign, GET /v1/jobs/{id}?wait=1 (a paused job,
#               so each poll is held a second) and GET /healthz; RSS sampled every 10 s
# Prints a Markdown summary (the "Slow and heavy clients" section of RELIABILITY.md) on stdout.
# LOAD_SLOW_SECONDS (30) and LOAD_SECONDS (60) set the durations. Builds the release binary unless
# BENCH_SKIP_BUILD=1; starts the stack if needed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PORT=18095
SLOW="${LOAD_SLOW_SECONDS:-30}"
LOAD="${LOAD_SECONDS:-60}"
BIN="$ROOT/.build/release/transfer-gateway"
TMP="$(mktemp -d /tmp/loadtest.XXXXXX)"
GW_PID=""
cleanup() { [ -n "$GW_PID" ] && kill "$GW_PID" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT
for tool in slowhttptest wrk; do
  command -v "$tool" >/dev/null || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$tool" >/dev/null; }
done
[ -n "${BENCH_SKIP_BUILD:-}" ] || swift build -c release --product transfer-gateway >&2
bash scripts/stack.sh up >&2
set -a
# shellcheck disable=SC1091
. .stack/env
set +a
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
GATEWAY_PORT=$PORT GATEWAY_MAX_CONNECTIONS=4096 "$BIN" serve 2>"$TMP/gateway.log" &
GW_PID=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
TOKEN="$("$BIN" token --sub load --ttl 7200)"
BASE="http://127.0.0.1:$PORT"

# A normal client: /healthz every 100 ms until told to stop; prints the worst time in ms and failures.
probe() {
  local worst=0 fails=0 t
  while [ ! -f "$TMP/stop" ]; do
    if t="$(curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 2 "$BASE/healthz")" && [ "${t%% *}" = 200 ]; then
      worst="$(awk -v a="$worst" -v b="${t##* }" 'BEGIN { print (b * 1000 > a) ? b * 1000 : a }')"
    else
      fails=$((fails + 1))
    fi
    sleep 0.1
  done
  printf '%.1f %d\n' "$worst" "$fails"
}

rss() { awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$GW_PID/status"; }

attack() {  # NAME ARGS...: run slowhttptest with a probe beside it; prints a table row
  local name="$1"; shift
  rm -f "$TMP/stop"
  probe >"$TMP/probe" &
  local probe_pid=$!
  slowhttptest "$@" -c 500 -r 200 -l "$SLOW" -p 3 >"$TMP/$name.out" 2>&1 || true
  touch "$TMP/stop"
  wait "$probe_pid"
  read -r worst fails <"$TMP/probe"
  local closed
  closed="$(grep -E 'closed:' "$TMP/$name.out" | tail -n1 | awk '{ print $NF }')"
  echo "| $name | \`slowhttptest $*\` | ${closed:-?} | $worst | $fails | $(rss) |"
}

echo "| attack | command (with -c 500 -r 200 -l $SLOW) | connections closed by the server | worst /healthz ms | /healthz failures | RSS after, MiB |"
echo "|---|---|---:|---:|---:|---:|"
attack slowloris -H -i 10 -x 24 -u "$BASE/healthz"
attack "slow body" -B -i 10 -s 8192 -x 24 -t POST -f application/json -u "$BASE/v1/presign"
attack "slow read" -X -w 1 -y 1 -n 3 -z 32 -k 3 -u "$BASE/openapi.yaml"

# The mixed load: a paused job to long-poll, presign bodies, health checks.
JOB="$(curl -sf -X POST "$BASE/v1/jobs" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d '{"type":"upload","accessLevel":"private","key":"load/poll.bin","size":10}' | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')"
curl -sf -X POST "$BASE/v1/jobs/$JOB/pause" -H "Authorization: Bearer $TOKEN" >/dev/null
cat >"$TMP/mix.lua" <<LUA
local n = 0
request = function()
  n = n + 1
  local k = n % 3
  if k == 0 then
    return wrk.format("POST", "/v1/presign", {["Authorization"] = "Bearer $TOKEN", ["Content-Type"] = "application/json"},
      '{"operation":"get","accessLevel":"private","key":"load/a.bin"}')
  elseif k == 1 then
    return wrk.format("GET", "/v1/jobs/$JOB?wait=1", {["Authorization"] = "Bearer $TOKEN"})
  end
  return wrk.format("GET", "/healthz")
end
LUA
samples=""
( for _ in $(seq $((LOAD / 10))); do sleep 10; rss; echo; done ) >"$TMP/rss" &
sampler=$!
wrk -t2 -c500 -d"${LOAD}s" --timeout 10s --latency -s "$TMP/mix.lua" "$BASE" >"$TMP/wrk.out" 2>&1 || true
wait "$sampler" || true
samples="$(tr '\n' ' ' <"$TMP/rss")"
requests="$(awk '/requests in/ { print $1 }' "$TMP/wrk.out")"
errors="$(awk '/Socket errors/ { print }' "$TMP/wrk.out")"
non2xx="$(awk '/Non-2xx/ { print $NF }' "$TMP/wrk.out")"
p50="$(awk '$1 == "50%" { print $2 }' "$TMP/wrk.out")"
p99="$(awk '$1 == "99%" { print $2 }' "$TMP/wrk.out")"
echo
echo "Mixed load, \`wrk -t2 -c500 -d${LOAD}s\` (a third each: POST /v1/presign, GET /v1/jobs/{id}?wait=1 on a paused job, GET /healthz):"
echo "${requests:-?} requests, p50 ${p50:-?}, p99 ${p99:-?}, non-2xx ${non2xx:-0}, ${errors:-no socket errors}; RSS every 10 s (MiB): ${samples}"
