#!/usr/bin/env bash
# bench/import.sh — an `import` job (the gateway fetches a URL and writes the object to S3 in
# parts) beside the AWS CLI doing the same by a pipe, `curl URL | aws s3 cp - s3://…`, alternating
# in one run: BENCH_ROUNDS (5) rounds of a BENCH_MIB (512) MiB file served by nginx on loopback,
# every object cmp-checked. Two sources: one that serves ranges (the gateway fetches 5 MiB ranges,
# 5 at a time) and one that does not (`max_ranges 0`: the body is read once, in order, and cut
# into parts as it streams). Reports wall MB/s and the gateway's CPU per GiB (utime + stime from
# /proc) against the pipe's (curl + the AWS CLI, from /usr/bin/time). Writes the section
# "## Import job vs curl | aws s3 cp" of bench/RESULTS.md. BENCH_SKIP_BUILD / BENCH_GATEWAY_BIN
# as in the other scripts; gateway on 127.0.0.1:18096, nginx on 127.0.0.1:18082 and :18083.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=bench/lib.sh disable=SC1091
. "$ROOT/bench/lib.sh"
ROUNDS="${BENCH_ROUNDS:-5}"
MIB="${BENCH_MIB:-512}"
PORT=18096
RANGED_PORT=18082
STREAM_PORT=18083
GW_BIN="${BENCH_GATEWAY_BIN:-$ROOT/.build/release/transfer-gateway}"
RESULTS="$ROOT/bench/RESULTS.md"
VENV="$ROOT/.venv"
STACK_STARTED=""
TMP="$(mktemp -d /tmp/bench-import.XXXXXX)"
GW_PID=""
NGINX_PID=""
trap '[ -n "$NGINX_PID" ] && kill "$NGINX_PID" 2>/dev/null; cleanup_job_bench' EXIT
export GATEWAY_IMPORT_ALLOW_HOSTS="127.0.0.1:$RANGED_PORT,127.0.0.1:$STREAM_PORT"
start_job_gateway "$PORT"
API="http://127.0.0.1:$PORT"
json() { python3 -c "import json, sys; print(json.load(sys.stdin)$1)"; }
seconds() { date +%s.%N; }
printf '[default]\ns3 =\n  multipart_threshold = 5MB\n  multipart_chunksize = 5MB\n  max_concurrent_requests = 5\n' >"$TMP/aws-config"
aws_s3() { AWS_CONFIG_FILE="$TMP/aws-config" "$VENV/bin/aws" --endpoint-url "$GATEWAY_S3_ENDPOINT" s3 "$@"; }

mkdir -p "$TMP/www"
say "writing a $MIB MiB file"
head -c "$((MIB << 20))" /dev/urandom >"$TMP/www/source.bin"
start_file_server "$TMP/www" "$RANGED_PORT" "$STREAM_PORT"
[ "$(curl -s -o /dev/null -w '%{http_code}' -r 0-0 "http://127.0.0.1:$RANGED_PORT/source.bin")" = 206 ] || die "nginx does not serve ranges"
[ "$(curl -s -o /dev/null -w '%{http_code}' -r 0-0 "http://127.0.0.1:$STREAM_PORT/source.bin")" = 200 ] || die "nginx serves ranges with max_ranges 0"

# import_job SOURCE_PORT KEY: one import job, timed from its creation to `completed`; prints
# "seconds cpu" (the gateway's CPU over that time).
import_job() {
  local t0 t1 c0 c1 id
  c0="$(proc_cpu "$GW_PID")"; t0="$(seconds)"
  id="$(curl -sf -X POST "$API/v1/jobs" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
    -d "{\"type\":\"import\",\"sourceUrl\":\"http://127.0.0.1:$1/source.bin\",\"accessLevel\":\"private\",\"key\":\"$2\"}" |
    json '["id"]')"
  wait_completed "$id" "the import job" >&2
  t1="$(seconds)"; c1="$(proc_cpu "$GW_PID")"
  echo "$(awk -v a="$t0" -v z="$t1" 'BEGIN { printf "%.3f", z - a }') $(awk -v a="$c0" -v z="$c1" 'BEGIN { printf "%.2f", z - a }')"
}
# check KEY: the object is the file, byte for byte (untimed).
check() {
  aws_s3 cp --only-show-errors "s3://$GATEWAY_S3_BUCKET/private/bench/$1" "$TMP/back.bin"
  cmp -s "$TMP/www/source.bin" "$TMP/back.bin" || die "$1 holds other bytes"
  rm -f "$TMP/back.bin"
  drop_objects "private/bench/$1"
}
mbps() { awk -v b="$((MIB << 20))" -v s="$1" 'BEGIN { printf "%.1f", b / s / 1e6 }'; }
per_gib() { awk -v c="$1" -v m="$MIB" 'BEGIN { printf "%.2f", c * 1024 / m }'; }

rows=""; cli_mb=""; cli_cpu=""; ranged_mb=""; ranged_cpu=""; stream_mb=""; stream_cpu=""
for round in $(seq "$ROUNDS"); do
  sync
  /usr/bin/time -f '%e %U %S' -o "$TMP/time" bash -c \
    "curl -sf 'http://127.0.0.1:$STREAM_PORT/source.bin' | AWS_CONFIG_FILE='$TMP/aws-config' '$VENV/bin/aws' --endpoint-url '$GATEWAY_S3_ENDPOINT' s3 cp --only-show-errors - 's3://$GATEWAY_S3_BUCKET/private/bench/cli.bin'"
  read -r wall user sys <"$TMP/time"
  check cli.bin
  c_mb="$(mbps "$wall")"; c_cpu="$(per_gib "$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')")"
  sync
  read -r wall cpu < <(import_job "$RANGED_PORT" ranged.bin)
  check ranged.bin
  r_mb="$(mbps "$wall")"; r_cpu="$(per_gib "$cpu")"
  sync
  read -r wall cpu < <(import_job "$STREAM_PORT" stream.bin)
  check stream.bin
  s_mb="$(mbps "$wall")"; s_cpu="$(per_gib "$cpu")"
  say "round $round: curl | aws s3 cp $c_mb MB/s $c_cpu CPU s/GiB; import (ranges) $r_mb MB/s $r_cpu; import (stream) $s_mb MB/s $s_cpu"
  rows+="| $round | $c_mb | $c_cpu | $r_mb | $r_cpu | $s_mb | $s_cpu |"$'\n'
  cli_mb+="$c_mb"$'\n'; cli_cpu+="$c_cpu"$'\n'; ranged_mb+="$r_mb"$'\n'; ranged_cpu+="$r_cpu"$'\n'
  stream_mb+="$s_mb"$'\n'; stream_cpu+="$s_cpu"$'\n'
done
peak_mib="$(peak_rss_mib "$GW_PID")"
m() { printf %s "$1" | median; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

section="$(cat <<MD
## Import job vs curl | aws s3 cp

$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores. Command: \`bench/import.sh\` — a $MIB MiB file served by nginx on loopback, $ROUNDS rounds alternating: \`curl URL | aws s3 cp - s3://…\` (5 MiB parts × 5), then an \`import\` job of the same URL from a server that serves ranges, then from one that does not (\`max_ranges 0\`: the body streams into parts). Jobs timed from creation to \`completed\`; the gateway's CPU from /proc over that time, the pipe's (curl and the AWS CLI) from \`/usr/bin/time\`. Every object cmp-checked.

| round | pipe MB/s | pipe CPU s/GiB | import (ranges) MB/s | CPU s/GiB | import (stream) MB/s | CPU s/GiB |
|---:|---:|---:|---:|---:|---:|---:|
${rows}
- medians: pipe **$(m "$cli_mb")** MB/s at **$(m "$cli_cpu")** CPU s/GiB; import from ranges **$(m "$ranged_mb")** MB/s at **$(m "$ranged_cpu")**; import of a stream **$(m "$stream_mb")** MB/s at **$(m "$stream_cpu")**
- import / pipe, speed: ranges **$(ratio "$(m "$ranged_mb")" "$(m "$cli_mb")")×**, stream **$(ratio "$(m "$stream_mb")" "$(m "$cli_mb")")×**; CPU: ranges **$(ratio "$(m "$ranged_cpu")" "$(m "$cli_cpu")")**, stream **$(ratio "$(m "$stream_cpu")" "$(m "$cli_cpu")")** of the pipe's
- gateway peak RSS over the run **$peak_mib** MiB
MD
)"
write_section "$RESULTS" "$section"
say "import (ranges) $(m "$ranged_mb") MB/s at $(m "$ranged_cpu") CPU s/GiB; import (stream) $(m "$stream_mb") MB/s at $(m "$stream_cpu"); pipe $(m "$cli_mb") MB/s at $(m "$cli_cpu")"
