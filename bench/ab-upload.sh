#!/usr/bin/env bash
# bench/ab-upload.sh BIN_A BIN_B — an A/B of two gateway binaries on upload jobs: both serve at
# once (A on 127.0.0.1:18097, B on 18098, the request log on), and each round sends one
# BENCH_MIB (512) MiB file by `curl -T` to an upload job of each, the order turned every round,
# BENCH_ROUNDS (8) rounds. Records each gateway's CPU seconds per GiB (utime + stime of its
# process over the upload) and MB/s; prints each round and the medians, writes nothing to
# RESULTS.md (quote its output where a change is justified by it). Uses the local stack.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=bench/lib.sh disable=SC1091
. "$ROOT/bench/lib.sh"
[ $# -ge 2 ] || die "usage: bench/ab-upload.sh BIN_A BIN_B"
A="$1"; B="$2"
ROUNDS="${BENCH_ROUNDS:-8}"; MIB="${BENCH_MIB:-512}"
# shellcheck disable=SC2034 # read by bench/lib.sh
VENV="$ROOT/.venv"
# shellcheck disable=SC2034
STACK_STARTED=""
TMP="$(mktemp -d /tmp/bench-ab-upload.XXXXXX)"
PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT
start_gateway_pair "$A" 18097 "$B" 18098
declare -A PID_OF=([A]="$PID_A" [B]="$PID_B") PORT_OF=([A]=18097 [B]=18098)
TOKEN="$("$A" token --sub bench --ttl 7200)"
SRC="$TMP/source.bin"
head -c "$((MIB << 20))" /dev/urandom >"$SRC"

# upload SIDE ROUND: one upload job on SIDE's gateway; prints "MB/s CPU-s/GiB".
upload() {
  local port="${PORT_OF[$1]}" pid="${PID_OF[$1]}" id before after start end state
  id="$(curl -sf -X POST "http://127.0.0.1:$port/v1/jobs" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
    -d "{\"type\":\"upload\",\"accessLevel\":\"private\",\"key\":\"bench/ab-$1-$2.bin\",\"size\":$((MIB << 20))}" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')"
  before="$(proc_cpu "$pid")"; start="$(date +%s.%N)"
  state="$(curl -sf -X PUT -T "$SRC" "http://127.0.0.1:$port/v1/jobs/$id/data" -H "Authorization: Bearer $TOKEN" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["state"])')"
  end="$(date +%s.%N)"; after="$(proc_cpu "$pid")"
  [ "$state" = completed ] || die "$1's upload job ended $state"
  drop_objects "private/bench/bench/ab-$1-$2.bin" >/dev/null 2>&1
  awk -v mib="$MIB" -v s="$start" -v e="$end" -v b="$before" -v a="$after" \
    'BEGIN { printf "%.1f %.2f", mib * 1.048576 / (e - s), (a - b) / (mib / 1024) }'
}

a_speed=""; a_cpu=""; b_speed=""; b_cpu=""
for round in $(seq "$ROUNDS"); do
  if [ $((round % 2)) -eq 1 ]; then ra="$(upload A "$round")"; rb="$(upload B "$round")"
  else rb="$(upload B "$round")"; ra="$(upload A "$round")"; fi
  say "round $round: A ${ra% *} MB/s ${ra#* } CPU s/GiB; B ${rb% *} MB/s ${rb#* } CPU s/GiB"
  a_speed+="${ra% *}"$'\n'; a_cpu+="${ra#* }"$'\n'; b_speed+="${rb% *}"$'\n'; b_cpu+="${rb#* }"$'\n'
done
as="$(printf %s "$a_speed" | median)"; ac="$(printf %s "$a_cpu" | median)"
bs="$(printf %s "$b_speed" | median)"; bc="$(printf %s "$b_cpu" | median)"
echo "A $A: median $as MB/s, $ac CPU s/GiB; B $B: median $bs MB/s, $bc CPU s/GiB;" \
  "B/A $(awk -v a="$ac" -v b="$bc" 'BEGIN { printf "%.3f", b / a }') in CPU, $(awk -v a="$as" -v b="$bs" 'BEGIN { printf "%.3f", b / a }') in speed ($ROUNDS rounds of $MIB MiB)"
