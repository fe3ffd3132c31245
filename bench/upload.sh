#!/usr/bin/env bash
# bench/upload.sh — an `upload` job (curl → gateway → S3) beside `aws s3 cp` sending the same
# file straight to S3, alternating in one run: BENCH_ROUNDS (3) rounds of a BENCH_MIB (1024) MiB
# file. The AWS CLI runs with the gateway's part settings (5 MiB parts, 5 in flight); the
# gateway with its defaults. Records MB/s, CPU seconds per GiB of the gateway (utime+stime of
# its process), of the AWS CLI (its process and children, by /usr/bin/time), of curl and of
# SeaweedFS (the stack's weed process) over each transfer, and the gateway's peak RSS (VmHWM).
# On a machine whose cores the store shares, the speeds follow the CPU all the processes
# spend per GiB; the section says what the gateway's share would have to be for 1.15×. Then
# the same rounds again with a CPU-heavy neighbour running beside both (one process spinning
# on a core: `python3 -c 'while True: pass'`), unless BENCH_NEIGHBOUR=0. Writes the section
# "## Upload job vs aws s3 cp" of bench/RESULTS.md. Builds the release binary unless
# BENCH_SKIP_BUILD=1; starts the stack and a gateway on 127.0.0.1:18094 and stops what it
# started.
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
WEED_PID="$(weed_pid)"
[ -n "$WEED_PID" ] || die "SeaweedFS's process is not the stack's (.stack/weed.pid): its CPU cannot be read"
seconds() { date +%s.%N; }
per_gib() { awk -v a="$1" -v z="$2" -v m="$MIB" 'BEGIN { printf "%.2f", (z - a) / (m / 1024) }'; }

command -v /usr/bin/time >/dev/null || die "/usr/bin/time is missing (apt-get install time)"
run_rounds() {  # LABEL: BENCH_ROUNDS rounds; appends to rows, sets the medians
rows=""; aws_all=""; ours_all=""; cpu_all=""; aws_cpu_all=""; aws_weed_all=""; ours_weed_all=""; curl_all=""
for round in $(seq "$ROUNDS"); do
  sync  # not timed: the previous transfer's writes (SeaweedFS's volumes) reach the disk first
  w0="$(proc_cpu "$WEED_PID")"
  t0="$(seconds)"
  AWS_CONFIG_FILE="$TMP/aws-config" /usr/bin/time -f '%U %S' -o "$TMP/aws-time" "$VENV/bin/aws" --endpoint-url "$GATEWAY_S3_ENDPOINT" \
    s3 cp --only-show-errors "$SRC" "s3://$GATEWAY_S3_BUCKET/bench/aws-$round.bin"
  t1="$(seconds)"
  w1="$(proc_cpu "$WEED_PID")"
  aws_weed="$(per_gib "$w0" "$w1")"
  aws_mbps="$(awk -v b="$((MIB << 20))" -v a="$t0" -v z="$t1" 'BEGIN { printf "%.1f", b / (z - a) / 1e6 }')"
  aws_cpu="$(awk -v m="$MIB" 'END { printf "%.2f", ($1 + $2) / (m / 1024) }' "$TMP/aws-time")"

  id="$(curl -sf -X POST "http://127.0.0.1:$PORT/v1/jobs" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
    -d "{\"type\":\"upload\",\"accessLevel\":\"private\",\"key\":\"bench/ours-$round.bin\",\"size\":$((MIB << 20))}" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')"
  sync
  c0="$(proc_cpu "$GW_PID")"
  w0="$(proc_cpu "$WEED_PID")"
  t0="$(seconds)"
  state="$(/usr/bin/time -f '%U %S' -o "$TMP/curl-time" curl -sf -X PUT -T "$SRC" "http://127.0.0.1:$PORT/v1/jobs/$id/data" -H "Authorization: Bearer $TOKEN" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["state"])')"
  t1="$(seconds)"
  c1="$(proc_cpu "$GW_PID")"
  w1="$(proc_cpu "$WEED_PID")"
  [ "$state" = completed ] || die "upload job ended $state"
  ours_mbps="$(awk -v b="$((MIB << 20))" -v a="$t0" -v z="$t1" 'BEGIN { printf "%.1f", b / (z - a) / 1e6 }')"
  cpu_gib="$(per_gib "$c0" "$c1")"
  ours_weed="$(per_gib "$w0" "$w1")"
  curl_cpu="$(awk -v m="$MIB" 'END { printf "%.2f", ($1 + $2) / (m / 1024) }' "$TMP/curl-time")"
  say "$1 round $round: aws s3 cp $aws_mbps MB/s ($aws_cpu CPU s/GiB, SeaweedFS $aws_weed), upload job $ours_mbps MB/s" \
    "($cpu_gib CPU s/GiB, curl $curl_cpu, SeaweedFS $ours_weed)"
  # Both objects go again (untimed) and SeaweedFS compacts its volumes: 2 GiB a round would
  # otherwise stay on the disk after every run.
  drop_objects "bench/aws-$round.bin" "private/bench/bench/ours-$round.bin"
  rows+="| $round | $aws_mbps | $aws_cpu | $aws_weed | $ours_mbps | $cpu_gib | $curl_cpu | $ours_weed |"$'\n'
  aws_all+="$aws_mbps"$'\n'; ours_all+="$ours_mbps"$'\n'; cpu_all+="$cpu_gib"$'\n'; aws_cpu_all+="$aws_cpu"$'\n'
  aws_weed_all+="$aws_weed"$'\n'; ours_weed_all+="$ours_weed"$'\n'; curl_all+="$curl_cpu"$'\n'
done
aws_median="$(printf %s "$aws_all" | median)"; ours_median="$(printf %s "$ours_all" | median)"
cpu_median="$(printf %s "$cpu_all" | median)"; aws_cpu_median="$(printf %s "$aws_cpu_all" | median)"
ratio="$(awk -v o="$ours_median" -v a="$aws_median" 'BEGIN { printf "%.2f", o / a }')"
cpu_ratio="$(awk -v o="$cpu_median" -v a="$aws_cpu_median" 'BEGIN { printf "%.2f", o / a }')"
aws_weed_median="$(printf %s "$aws_weed_all" | median)"; ours_weed_median="$(printf %s "$ours_weed_all" | median)"
curl_median="$(printf %s "$curl_all" | median)"
weed_median="$(printf %s "$aws_weed_all$ours_weed_all" | median | awk '{ printf "%.2f", $1 }')"
# Both paths keep the two cores busy, so their speeds go as the inverse of the CPU all their
# processes spend per GiB. SeaweedFS spends the same per GiB whoever sends the parts (the AWS
# CLI, boto3, the gateway's S3 client or an upload job, measured apart), but drifts with the
# machine by more than the difference between two transfers: the model takes its median over
# every transfer of the run, for both paths. From it, what the gateway could spend for 1.15×.
aws_sum="$(awk -v a="$aws_cpu_median" -v w="$weed_median" 'BEGIN { printf "%.2f", a + w }')"
ours_sum="$(awk -v c="$curl_median" -v g="$cpu_median" -v w="$weed_median" 'BEGIN { printf "%.2f", c + g + w }')"
sum_ratio="$(awk -v a="$aws_sum" -v o="$ours_sum" 'BEGIN { printf "%.2f", a / o }')"
needed="$(awk -v a="$aws_sum" -v c="$curl_median" -v w="$weed_median" 'BEGIN { printf "%.2f", a / 1.15 - c - w }')"
table="| round | aws s3 cp MB/s | aws CPU s/GiB | SeaweedFS CPU s/GiB | upload job MB/s | gateway CPU s/GiB | curl CPU s/GiB | SeaweedFS CPU s/GiB |
|---:|---:|---:|---:|---:|---:|---:|---:|
${rows}
- medians: aws s3 cp **$aws_median** MB/s at **$aws_cpu_median** CPU s/GiB, upload job **$ours_median** MB/s at **$cpu_median** CPU s/GiB; upload job / aws s3 cp **$ratio** in speed, **$cpu_ratio** in CPU per GiB
- SeaweedFS: **$aws_weed_median** CPU s/GiB beside the AWS CLI, **$ours_weed_median** beside the upload job (medians), **$weed_median** over every transfer
- the CPU every process spends per GiB, with SeaweedFS at $weed_median: straight to S3 **$aws_sum** (the AWS CLI $aws_cpu_median), through the gateway **$ours_sum** (curl $curl_median, the gateway $cpu_median); inverse ratio **$sum_ratio** against **$ratio** measured. With both cores busy the speeds follow it: 1.15× needs the gateway at **$needed** CPU s/GiB or less"
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
peak_mib="$(peak_rss_mib "$GW_PID")"
section="$(cat <<MD
## Upload job vs aws s3 cp

<!-- bench:upload:begin -->
$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores. Command: \`bench/upload.sh\` — a $MIB MiB file, $ROUNDS rounds alternating; the AWS CLI with 5 MiB parts × 5 straight to SeaweedFS, the gateway's \`upload\` job by \`curl -T\` (5 MiB parts × 5 through the spool, log on). CPU per GiB: the gateway's process, the AWS CLI's with its children, curl's, and SeaweedFS's (its one weed process) over each transfer.

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
