#!/usr/bin/env bash
# bench/download.sh — a download end to end (create the `download` job, then `curl` its data to a
# file) beside `aws s3 cp` downloading the same object straight from S3, alternating in one run:
# BENCH_ROUNDS (5) rounds of a BENCH_MIB (1024) MiB object, every copy cmp-checked. The AWS CLI
# runs with 5 MiB parts × 5 in flight, as in bench/upload.sh. Then `bandwidthLimit`: a copy job
# of BENCH_PACED_MIB (20) MiB at 1 MiB/s, timed from its creation to `completed` (the target is
# 20 s ± 10%). Each round also times one `curl` GET of a presigned URL straight from S3 to a file:
# no client can take the object from this store faster than that, so it is the ceiling any ratio
# to the AWS CLI is read against. Writes the section "## Download job vs aws s3 cp" of bench/RESULTS.md. Builds
# the release binary unless BENCH_SKIP_BUILD=1; starts the stack and a gateway on
# 127.0.0.1:18095 and stops what it started.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=bench/lib.sh disable=SC1091
. "$ROOT/bench/lib.sh"
ROUNDS="${BENCH_ROUNDS:-5}"
MIB="${BENCH_MIB:-1024}"
PACED_MIB="${BENCH_PACED_MIB:-20}"
PORT=18095
GW_BIN="${BENCH_GATEWAY_BIN:-$ROOT/.build/release/transfer-gateway}"
RESULTS="$ROOT/bench/RESULTS.md"
VENV="$ROOT/.venv"
STACK_STARTED=""
TMP="$(mktemp -d /tmp/bench-download.XXXXXX)"
GW_PID=""
trap cleanup_job_bench EXIT
start_job_gateway "$PORT"
API="http://127.0.0.1:$PORT"
json() { python3 -c "import json, sys; print(json.load(sys.stdin)$1)"; }
seconds() { date +%s.%N; }
printf '[default]\ns3 =\n  multipart_threshold = 5MB\n  multipart_chunksize = 5MB\n  max_concurrent_requests = 5\n' >"$TMP/aws-config"
aws_s3() { AWS_CONFIG_FILE="$TMP/aws-config" "$VENV/bin/aws" --endpoint-url "$GATEWAY_S3_ENDPOINT" s3 "$@"; }

SRC="$TMP/source.bin"
say "writing a $MIB MiB object"
head -c "$((MIB << 20))" /dev/urandom >"$SRC"
aws_s3 cp --only-show-errors "$SRC" "s3://$GATEWAY_S3_BUCKET/private/bench/download.bin"

# The ceiling: one GET of the whole object straight from S3, by a presigned URL.
DIRECT_URL="$(aws_s3 presign "s3://$GATEWAY_S3_BUCKET/private/bench/download.bin" --expires-in 3600)"
mbps() { awk -v b="$((MIB << 20))" -v a="$1" -v z="$2" 'BEGIN { printf "%.1f", b / (z - a) / 1e6 }'; }

rows=""; aws_all=""; ours_all=""; direct_all=""
for round in $(seq "$ROUNDS"); do
  # Each download starts with the page cache's dirty pages written out (untimed), so neither
  # pays for the other's writeback.
  rm -f "$TMP/aws.bin" "$TMP/ours.bin"; sync
  t0="$(seconds)"
  aws_s3 cp --only-show-errors "s3://$GATEWAY_S3_BUCKET/private/bench/download.bin" "$TMP/aws.bin"
  t1="$(seconds)"
  cmp -s "$SRC" "$TMP/aws.bin" || die "aws s3 cp brought other bytes"
  aws_mbps="$(mbps "$t0" "$t1")"

  rm -f "$TMP/aws.bin"; sync
  t0="$(seconds)"
  id="$(curl -sf -X POST "$API/v1/jobs" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
    -d '{"type":"download","source":{"accessLevel":"private","key":"download.bin"}}' | json '["id"]')"
  curl -sf -o "$TMP/ours.bin" "$API/v1/jobs/$id/data" -H "Authorization: Bearer $TOKEN"
  t1="$(seconds)"
  cmp -s "$SRC" "$TMP/ours.bin" || die "the download job served other bytes"
  ours_mbps="$(mbps "$t0" "$t1")"

  rm -f "$TMP/ours.bin"; sync
  t0="$(seconds)"
  curl -sf -o "$TMP/direct.bin" "$DIRECT_URL"
  t1="$(seconds)"
  cmp -s "$SRC" "$TMP/direct.bin" || die "the presigned GET brought other bytes"
  rm -f "$TMP/direct.bin"
  direct_mbps="$(mbps "$t0" "$t1")"
  say "round $round: aws s3 cp $aws_mbps MB/s, download job + curl $ours_mbps MB/s, curl straight from S3 $direct_mbps MB/s"
  rows+="| $round | $aws_mbps | $ours_mbps | $direct_mbps |"$'\n'
  aws_all+="$aws_mbps"$'\n'; ours_all+="$ours_mbps"$'\n'; direct_all+="$direct_mbps"$'\n'
done
peak_mib="$(peak_rss_mib "$GW_PID")"
aws_median="$(printf %s "$aws_all" | median)"; ours_median="$(printf %s "$ours_all" | median)"
ratio="$(awk -v o="$ours_median" -v a="$aws_median" 'BEGIN { printf "%.2f", o / a }')"
direct_median="$(printf %s "$direct_all" | median)"
ceiling="$(awk -v d="$direct_median" -v a="$aws_median" 'BEGIN { printf "%.2f", d / a }')"
of_ceiling="$(awk -v o="$ours_median" -v d="$direct_median" 'BEGIN { printf "%.2f", o / d }')"

say "bandwidthLimit: a $PACED_MIB MiB copy at 1 MiB/s"
head -c "$((PACED_MIB << 20))" /dev/urandom >"$TMP/paced.bin"
aws_s3 cp --only-show-errors "$TMP/paced.bin" "s3://$GATEWAY_S3_BUCKET/private/bench/paced.bin"
t0="$(seconds)"
id="$(curl -sf -X POST "$API/v1/jobs" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d '{"type":"copy","source":{"accessLevel":"private","key":"paced.bin"},"destination":{"accessLevel":"private","key":"paced-copy.bin"},"bandwidthLimit":1048576}' |
  json '["id"]')"
wait_completed "$id" "the paced copy"
t1="$(seconds)"
paced="$(awk -v a="$t0" -v z="$t1" 'BEGIN { printf "%.2f", z - a }')"
say "paced copy: $paced s (target $PACED_MIB s ± 10%)"

section="$(cat <<MD
## Download job vs aws s3 cp

<!-- bench:download:begin -->
$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores. Command: \`bench/download.sh\` — a $MIB MiB object, $ROUNDS rounds alternating; the AWS CLI with 5 MiB parts × 5 straight from SeaweedFS to a file; ours: create the \`download\` job, then \`curl -o\` its data (the gateway streams it from S3 with 8 MiB ranged reads, 4 ahead). The ceiling: one \`curl -o\` of a presigned URL straight from S3 (no gateway, one GET). All timed end to end and cmp-checked.

| round | aws s3 cp MB/s | download job + curl MB/s | curl straight from S3 MB/s |
|---:|---:|---:|---:|
${rows}
- medians: aws s3 cp **$aws_median** MB/s, download job **$ours_median** MB/s; download / aws s3 cp **$ratio**
- the ceiling, curl straight from S3: **$direct_median** MB/s, **$ceiling×** the AWS CLI; the download job reaches **$of_ceiling** of it
- gateway peak RSS over the run **$peak_mib** MiB
- \`bandwidthLimit\` 1 MiB/s on a $PACED_MIB MiB copy job: **$paced s** from creation to \`completed\` (target $PACED_MIB s ± 10%)
<!-- bench:download:end -->
MD
)"
python3 - "$RESULTS" "$section" <<'PY'
import os, re, sys
path, section = sys.argv[1], sys.argv[2]
text = open(path).read() if os.path.exists(path) else "# Benchmark results\n"
pattern = re.compile(r"## Download job vs aws s3 cp\n\n<!-- bench:download:begin -->.*?<!-- bench:download:end -->", re.S)
text = pattern.sub(lambda _: section, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + section + "\n"
open(path, "w").write(text)
PY
say "download job / aws s3 cp: $ratio (medians $ours_median vs $aws_median MB/s; curl straight from S3 $direct_median, $ceiling× the CLI); paced copy $paced s"
