#!/usr/bin/env bash
# bench/upload.sh — an `upload` job (curl → gateway → S3) beside `aws s3 cp` sending the same
# file straight to S3, alternating in one run: BENCH_ROUNDS (3) rounds of a BENCH_MIB (1024) MiB
# file. The AWS CLI runs with the gateway's part settings (5 MiB parts, 5 in flight); the
# gateway with its defaults. Records MB/s, the gateway's CPU seconds per GiB (utime+stime of
# its process) and its peak RSS (VmHWM), and writes the section "## Upload job vs aws s3 cp" of
# bench/RESULTS.md. Builds the release binary unless BENCH_SKIP_BUILD=1; starts the stack and
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
trap cleanup_job_bench EXIT
start_job_gateway "$PORT"
SRC="$TMP/source.bin"
say "writing a $MIB MiB file"
head -c "$((MIB << 20))" /dev/urandom >"$SRC"
printf '[default]\ns3 =\n  multipart_threshold = 5MB\n  multipart_chunksize = 5MB\n  max_concurrent_requests = 5\n' >"$TMP/aws-config"
CLK_TCK="$(getconf CLK_TCK)"
gateway_cpu() { sed 's/^.*) //' "/proc/$GW_PID/stat" | awk -v hz="$CLK_TCK" '{ printf "%.3f", ($12 + $13) / hz }'; }
seconds() { date +%s.%N; }

rows=""; aws_all=""; ours_all=""; cpu_all=""
for round in $(seq "$ROUNDS"); do
  t0="$(seconds)"
  AWS_CONFIG_FILE="$TMP/aws-config" "$VENV/bin/aws" --endpoint-url "$GATEWAY_S3_ENDPOINT" \
    s3 cp --only-show-errors "$SRC" "s3://$GATEWAY_S3_BUCKET/bench/aws-$round.bin"
  t1="$(seconds)"
  aws_mbps="$(awk -v b="$((MIB << 20))" -v a="$t0" -v z="$t1" 'BEGIN { printf "%.1f", b / (z - a) / 1e6 }')"

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
  say "round $round: aws s3 cp $aws_mbps MB/s, upload job $ours_mbps MB/s ($cpu_gib CPU s/GiB)"
  rows+="| $round | $aws_mbps | $ours_mbps | $cpu_gib |"$'\n'
  aws_all+="$aws_mbps"$'\n'; ours_all+="$ours_mbps"$'\n'; cpu_all+="$cpu_gib"$'\n'
done
peak_mib="$(awk '/^VmHWM:/ { printf "%.1f", $2 / 1024 }' "/proc/$GW_PID/status")"
aws_median="$(printf %s "$aws_all" | median)"; ours_median="$(printf %s "$ours_all" | median)"
cpu_median="$(printf %s "$cpu_all" | median)"
ratio="$(awk -v o="$ours_median" -v a="$aws_median" 'BEGIN { printf "%.2f", o / a }')"
section="$(cat <<MD
## Upload job vs aws s3 cp

<!-- bench:upload:begin -->
$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores. Command: \`bench/upload.sh\` — a $MIB MiB file, $ROUNDS rounds alternating; the AWS CLI with 5 MiB parts × 5 straight to SeaweedFS, the gateway's \`upload\` job by \`curl -T\` (5 MiB parts × 5, log on).

| round | aws s3 cp MB/s | upload job MB/s | gateway CPU s/GiB |
|---:|---:|---:|---:|
${rows}
- medians: aws s3 cp **$aws_median** MB/s, upload job **$ours_median** MB/s; upload job / aws s3 cp **$ratio**
- gateway CPU per GiB (median) **$cpu_median** s; gateway peak RSS over the run **$peak_mib** MiB
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
say "upload job / aws s3 cp: $ratio (medians $ours_median vs $aws_median MB/s)"
