#!/usr/bin/env bash
# bench/presign.sh — POST /v1/presign (a real HS256 token, a put of a private key) beside GET
# /healthz on the same gateway, alternating (in turn first and second), wrk 2 threads × 64
# keep-alive connections, BENCH_ROUNDS rounds (15) of BENCH_DURATION (5s) each: many short
# rounds, since this shared machine's speed drifts by tens of percent within seconds. Writes
# the section "## HTTP: /v1/presign vs /healthz" of bench/RESULTS.md. Builds the release binary
# unless BENCH_SKIP_BUILD=1, starts the local stack (scripts/stack.sh up) and the gateway on
# 127.0.0.1:18090 with its log on, and stops what it started.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
DURATION="${BENCH_DURATION:-5s}"
ROUNDS="${BENCH_ROUNDS:-15}"
PORT=18090
BIN="$ROOT/.build/release/transfer-gateway"
RESULTS="$ROOT/bench/RESULTS.md"
TMP="$(mktemp -d /tmp/bench-presign.XXXXXX)"
GW_PID=""
cleanup() { [ -n "$GW_PID" ] && kill "$GW_PID" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT

command -v wrk >/dev/null || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q wrk >/dev/null; }
[ -n "${BENCH_SKIP_BUILD:-}" ] || swift build -c release --product transfer-gateway >&2
bash scripts/stack.sh up >&2
set -a
# shellcheck disable=SC1091
. .stack/env
set +a
export GATEWAY_PORT=$PORT
"$BIN" serve 2>"$TMP/gateway.log" &
GW_PID=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
TOKEN="$("$BIN" token --sub alice --ttl 3600)"
cat >"$TMP/presign.lua" <<LUA
wrk.method = "POST"
wrk.body = '{"operation":"put","accessLevel":"private","key":"photos/2026/holiday.jpg","contentType":"image/jpeg"}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $TOKEN"
LUA
curl -sf -X POST "http://127.0.0.1:$PORT/v1/presign" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d '{"operation":"put","accessLevel":"private","key":"photos/2026/holiday.jpg","contentType":"image/jpeg"}' >/dev/null

measure() {  # URL [script] -> "rps p99ms non2xx"
  local out
  out="$(wrk -t2 -c64 -d"$DURATION" --latency ${2:+-s "$2"} "$1")"
  awk '
    function ms(v) { if (v ~ /us$/) { sub(/us$/, "", v); return v / 1000 } if (v ~ /ms$/) { sub(/ms$/, "", v); return v + 0 }
                     if (v ~ /s$/) { sub(/s$/, "", v); return v * 1000 } return v + 0 }
    $1 == "99%" { p99 = ms($2) } /^Requests\/sec:/ { rps = $2 } /Non-2xx/ { bad = $NF }
    END { printf "%.0f %.2f %d\n", rps, p99, bad + 0 }' <<<"$out"
}

rows=""; h_all=""; p_all=""; r_all=""; hp_all=""; pp_all=""
for round in $(seq "$ROUNDS"); do
  # Each round measures both, in turn, first one then the other, so a machine whose speed
  # drifts does not always favour the same side.
  if (( round % 2 )); then
    read -r hr hp _ < <(measure "http://127.0.0.1:$PORT/healthz")
    read -r pr pp pe < <(measure "http://127.0.0.1:$PORT/v1/presign" "$TMP/presign.lua")
  else
    read -r pr pp pe < <(measure "http://127.0.0.1:$PORT/v1/presign" "$TMP/presign.lua")
    read -r hr hp _ < <(measure "http://127.0.0.1:$PORT/healthz")
  fi
  echo "round $round: healthz $hr req/s (p99 $hp ms), presign $pr req/s (p99 $pp ms, non-2xx $pe)" >&2
  rows+="| $round | $hr | $hp | $pr | $pp | $pe |"$'\n'
  h_all+="$hr "; p_all+="$pr "; hp_all+="$hp "; pp_all+="$pp "
  # Each round's own ratio: its two runs are seconds apart, so a machine whose speed drifts
  # (it is shared) moves both alike.
  r_all+="$(awk -v p="$pr" -v h="$hr" 'BEGIN { printf "%.3f", p / h }') "
done
median() { tr ' ' '\n' <<<"$1" | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
hm="$(median "$h_all")"; pm="$(median "$p_all")"
hpm="$(median "$hp_all")"; ppm="$(median "$pp_all")"
p99_ratio="$(awk -v p="$ppm" -v h="$hpm" 'BEGIN { printf "%.2f", p / h }')"
ratio="$(awk -v p="$pm" -v h="$hm" 'BEGIN { printf "%.2f", p / h }')"
rm_ratio="$(median "$r_all")"
section="$(cat <<MD
<!-- bench:presign:begin -->
$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores. Command: \`bench/presign.sh\` — \`wrk -t2 -c64 -d$DURATION --latency\`, same gateway (log on), alternating (each round's pair in the other order from the last); presign is a put of a private key with a real HS256 token.

| round | /healthz req/s | p99 ms | /v1/presign req/s | p99 ms | non-2xx |
|---:|---:|---:|---:|---:|---:|
${rows}
- medians: /healthz **$hm** req/s, /v1/presign **$pm** req/s; ratio of the medians **$ratio**
- median of the rounds' own ratios (presign/healthz, each round's pair measured back to back): **$(printf '%.2f' "$rm_ratio")** (rounds: ${r_all% })
- p99 medians: /healthz **$hpm** ms, /v1/presign **$ppm** ms; presign/healthz **$p99_ratio**
<!-- bench:presign:end -->
MD
)"
python3 - "$RESULTS" "$section" <<'PY'
import re, sys
path, section = sys.argv[1], sys.argv[2]
text = open(path).read() if __import__("os").path.exists(path) else "# Benchmark results\n"
# Only what lies between the markers is replaced: prose above them stays.
pattern = re.compile(r"<!-- bench:presign:begin -->.*?<!-- bench:presign:end -->", re.S)
if pattern.search(text):
    text = pattern.sub(lambda _: section, text)
else:
    text = text.rstrip() + "\n\n## HTTP: /v1/presign vs /healthz\n\n" + section + "\n"
open(path, "w").write(text)
PY
echo "presign/healthz: ratio of medians $ratio ($pm / $hm), median of round ratios $rm_ratio ($r_all); written to bench/RESULTS.md" >&2
