#!/usr/bin/env bash
# bench/upload.sh — an `upload` job (curl → gateway → S3) beside `aws s3 cp` sending the same
# file straight to S3, alternating in one run: BENCH_ROUNDS (3) rounds of a BENCH_MIB (1024) MiB
# file. The AWS CLI runs with the gateway's part settings (5 MiB parts, 5 in flight); the
# gateway with its defaults. Records MB/s, CPU seconds per GiB of the gateway (utime+stime of
# its process) and of the AWS CLI (its process and children, by /usr/bin/time), and the
# gateway's peak RSS (VmHWM). Then the same rounds again with a CPU-heavy neighbour running
# beside both (one process spinning on a core: `python3 -c 'while True: pass'`), unless
# BENCH_NEIGHBOUR=0. Writes the section "## Upload job vs aws s3 cp" of bench/RESULTS.md. Builds the release binary unless BENCH_SKIP_BUILD=1; starts the stack and
# a gateway on 127.0.0.1:18094 and stops what it started.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=bench/lib.sh disable=SC1091
. "$ROOT/bench/lib.sh"
ROUNDS="${BENCH_ROUNDS:-3}"
MIB="${BENCH_MIB:-1024}"
PORT=18094
GW_BIN="${BENCH_GATEWAY_BIN:-$ROOT/.build/release/transfer-gateway}"
RESULTS="$ROOT/bench/RESULTS.md"
VENV="$ROOT/.venv"
STACK_STARTED=""
TMP="$(mktemp -d /tmp/bench-upload.XXXXXX)"
GW_PID=""
NEIGHBOUR_PID=""
neighbour() {  # on|off: a process spinning on one core, beside both uploads
  if [ "$1" = on ]; then python3 -c 'while True: pass' & NEIGHBOUR_PID=$!
  elif [ -n "$NEIGHBOUR_PID" ]; then kill "$NEIGHBOUR_PID" 2>/dev/null; wait "$NEIGHBOUR_PID" 2>/dev/null || true; NEIGHBOUR_PID=""; fi
}
trap 'neighbour off; cleanup_job_bench' EXIT
start_job_gateway "$PORT"
SRC="$TMP/source.bin"
say "writing a $MIB MiB file"
head -c "$((MIB << 20))" /dev/urandom >"$SRC"
printf '[default]\ns3 =\n  multipart_threshold = 5MB\n  multipart_chunksize = 5MB\n  max_concurrent_requests = 5\n' >"$TMP/aws-config"
CLK_TCK="$(getconf CLK_TCK)"
gateway_cpu() { sed 's/^.*) //' "/proc/$GW_PID/stat" | awk -v hz="$CLK_TCK" '{ printf "%.3f", ($12 + $13) / hz }'; }
seconds() { date +%s.%N; }

command -v /usr/bin/time >/dev/null || die "/usr/bin/time is missing (apt-get install time)"
run_rounds() {  # LABEL: BENCH_ROUNDS rounds; appends to rows, sets the medians
rows=""; aws_all=""; ours_all=""; cpu_all=""; aws_cpu_all=""
for round in $(seq "$ROUNDS"); do
  t0="$(seconds)"
  AWS_CONFIG_FILE="$TMP/aws-config" /usr/bin/time -f '%U %S' -o "$TMP/aws-time" "$VENV/bin/aws" --endpoint-url "$GATEWAY_S3_ENDPOINT" \
    s3 cp --only-show-errors "$SRC" "s3://$GATEWAY_S3_BUCKET/bench/aws-$round.bin"
  t1="$(seconds)"
  aws_mbps="$(awk -v b="$((MIB << 20))" -v a="$t0" -v z="$t1" 'BEGIN { printf "%.1f", b / (z - a) / 1e6 }')"
  aws_cpu="$(awk -v m="$MIB" 'END { printf "%.2f", ($1 + $2) / (m / 1024) }' "$TMP/aws-time")"

  id="$(curl -sf -X POST "http://127.0.0.1:$PORT/v1/jobs" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
    -d "{\"type\":\"upload\",\"accessLevel\":\"private\",\"key\":\"bench/ours-$round.bin\",\"size\":$((MIB << 20))}" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')"
  c0="$(gateway_cpu)"
  t0="$(seconds)"
  state="$(curl -sf -X PUT -T "$SRC" "http://127.0.0.1:$PORT/v1/jobs/$id/data" -H "Authorization: Bearer $TOKEN" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["state"])')"
  t1="$(seconds)"
  c1="$(gateway_cpu)"
  [ "$state" = completed ] || die "upload job ended $state"
  ours_mbps="$(awk -v b="$((MIB << 20))" -v a="$t0" -v z="$t1" 'BEGIN { printf "%.1f", b / (z - a) / 1e6 }')"
  cpu_gib="$(awk -v a="$c0" -v z="$c1" -v m="$MIB" 'BEGIN { printf "%.2f", (z - a) / (m / 1024) }')"
  say "$1 round $round: aws s3 cp $aws_mbps MB/s ($aws_cpu CPU s/GiB), upload job $ours_mbps MB/s ($cpu_gib CPU s/GiB)"
  # Both objects go again (untimed) and SeaweedFS compacts its volumes: 2 GiB a round would
  # otherwise stay on the disk after every run.
  drop_objects "bench/aws-$round.bin" "private/bench/bench/ours-$round.bin"
  rows+="| $round | $aws_mbps | $aws_cpu | $ours_mbps | $cpu_gib |"$'\n'
  aws_all+="$aws_mbps"$'\n'; ours_all+="$ours_mbps"$'\n'; cpu_all+="$cpu_gib"$'\n'; aws_cpu_all+="$aws_cpu"$'\n'
done
aws_median="$(printf %s "$aws_all" | median)"; ours_median="$(printf %s "$ours_all" | median)"
cpu_median="$(printf %s "$cpu_all" | median)"; aws_cpu_median="$(printf %s "$aws_cpu_all" | median)"
ratio="$(awk -v o="$ours_median" -v a="$aws_median" 'BEGIN { printf "%.2f", o / a }')"
cpu_ratio="$(awk -v o="$cpu_median" -v a="$aws_cpu_median" 'BEGIN { printf "%.2f", o / a }')"
table="| round | aws s3 cp MB/s | aws CPU s/GiB | upload job MB/s | gateway CPU s/GiB |
|---:|---:|---:|---:|---:|
${rows}
- medians: aws s3 cp **$aws_median** MB/s at **$aws_cpu_median** CPU s/GiB, upload job **$ours_median** MB/s at **$cpu_median** CPU s/GiB; upload job / aws s3 cp **$ratio** in speed, **$cpu_ratio** in CPU per GiB"
}
run_rounds quiet
quiet_table="$table"
neighbour_part=""
if [ "${BENCH_NEIGHBOUR:-1}" != 0 ]; then
  neighbour on
  run_rounds neighbour
  neighbour off
  neighbour_part="
With a CPU-heavy neighbour (\`python3 -c 'while True: pass'\`, one core busy) beside both, the same rounds:

$table"
fi
peak_mib="$(awk '/^VmHWM:/ { printf "%.1f", $2 / 1024 }' "/proc/$GW_PID/status")"
section="$(cat <<MD
## Upload job vs aws s3 cp

<!-- bench:upload:begin -->
$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores. Command: \`bench/upload.sh\` — a $MIB MiB file, $ROUNDS rounds alternating; the AWS CLI with 5 MiB parts × 5 straight to SeaweedFS, the gateway's \`upload\` job by \`curl -T\` (5 MiB parts × 5 through the spool, log on). CPU per GiB: the gateway's process, and the AWS CLI's process with its children.

$quiet_table
$neighbour_part

- gateway peak RSS over the run **$peak_mib** MiB (memory budget 256 MiB)
<!-- bench:upload:end -->
MD
)"
python3 - "$RESULTS" "$section" <<'PY'
import os, re, sys
path, section = sys.argv[1], sys.argv[2]
text = open(path).read() if os.path.exists(path) else "# Benchmark results\n"
pattern = re.compile(r"## Upload job vs aws s3 cp\n\n<!-- bench:upload:begin -->.*?<!-- bench:upload:end -->", re.S)
text = pattern.sub(lambda _: section, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + section + "\n"
open(path, "w").write(text)
PY
say "results in bench/RESULTS.md"
