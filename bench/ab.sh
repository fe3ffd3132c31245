#!/usr/bin/env bash
# bench/ab.sh BIN_A BIN_B [PATH] — an A/B of two gateway binaries on one request path (default
# /healthz; /v1/presign posts presign.sh's put with a real token), both with the request log on, wrk -t2 -c64, BENCH_ROUNDS (6) rounds of
# BENCH_DURATION (10s) each, the order turned every round. Prints each round and the medians;
# writes nothing to RESULTS.md (quote its output where a change is justified by it). Uses the
# local stack's settings; A on 127.0.0.1:18087, B on 18088.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=bench/lib.sh disable=SC1091
. "$ROOT/bench/lib.sh"
[ $# -ge 2 ] || die "usage: bench/ab.sh BIN_A BIN_B [PATH]"
A="$1"; B="$2"; TARGET="${3:-/healthz}"
ROUNDS="${BENCH_ROUNDS:-6}"; DURATION="${BENCH_DURATION:-10s}"
STACK_STARTED=""
TMP="$(mktemp -d /tmp/bench-ab.XXXXXX)"
PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT
start_gateway_pair "$A" 18087 "$B" 18088
SCRIPT=()
if [ "$TARGET" = /v1/presign ]; then
  printf 'wrk.method = "POST"\nwrk.body = %s\nwrk.headers["Content-Type"] = "application/json"\nwrk.headers["Authorization"] = "Bearer %s"\n' \
    "'{\"operation\":\"put\",\"accessLevel\":\"private\",\"key\":\"photos/2026/holiday.jpg\",\"contentType\":\"image/jpeg\"}'" \
    "$("$A" token --sub alice --ttl 3600)" >"$TMP/presign.lua"
  SCRIPT=(-s "$TMP/presign.lua")
  for port in 18087 18088; do  # a refused request would be counted as a fast one
    curl -sf -o /dev/null -X POST "http://127.0.0.1:$port/v1/presign" -H "Authorization: Bearer $("$A" token --sub alice --ttl 60)" \
      -H 'Content-Type: application/json' -d '{"operation":"put","accessLevel":"private","key":"photos/2026/holiday.jpg"}' ||
      die "presign on $port did not answer 2xx"
  done
fi
rps() { wrk -t2 -c64 -d"$DURATION" "${SCRIPT[@]}" "http://127.0.0.1:$1$TARGET" | awk '/^Requests\/sec:/ { printf "%.0f", $2 }'; }
a_all=""; b_all=""; r_all=""
for round in $(seq "$ROUNDS"); do
  if [ $((round % 2)) -eq 1 ]; then a="$(rps 18087)"; b="$(rps 18088)"; else b="$(rps 18088)"; a="$(rps 18087)"; fi
  say "round $round: A $a req/s, B $b req/s, B/A $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", b / a }')"
  a_all+="$a"$'\n'; b_all+="$b"$'\n'
  r_all+="$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.4f", b / a }')"$'\n'
done
am="$(printf %s "$a_all" | median)"; bm="$(printf %s "$b_all" | median)"
echo "A $A: median $am req/s; B $B: median $bm req/s; B/A $(awk -v a="$am" -v b="$bm" 'BEGIN { printf "%.3f", b / a }'), median of the rounds' own B/A $(printf %s "$r_all" | median) ($ROUNDS rounds of $DURATION on $TARGET)"
