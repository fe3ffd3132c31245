#!/usr/bin/env bash
# bench/client.sh — `transfer-client upload` (the Swift client: a client upload, parts PUT
# straight to S3 on presigned URLs) beside `aws s3 cp` sending the same file straight to S3,
# alternating in one run: BENCH_ROUNDS (5) rounds of a BENCH_MIB (1024) MiB file, the order turned
# each round. Both with 5 MiB parts, 5 in flight (`--part-size 5242880 --concurrency 5`; the AWS
# CLI with the config bench/upload.sh writes). Records per process, by /usr/bin/time (utime+stime
# with children, max RSS): MB/s (bytes / wall / 10^6, wall from before the process starts to
# after it ends), CPU seconds per GiB and peak RSS; SeaweedFS's CPU per GiB beside each; then
# medians and client / AWS CLI ratios. Then the client alone on a BENCH_BIG_MIB (2048) MiB file,
# BENCH_BIG_RUNS (2) times, for its peak RSS beside the part size × concurrency bound, and a
# `transfer-client list` (no transfer) for the process's floor. Every object is read back and its
# SHA-256 compared with the file's, then deleted. Writes the section "## Client uploads vs aws s3
# cp" of bench/RESULTS.md.
#
# Builds the release client unless BENCH_SKIP_BUILD=1 or BENCH_CLIENT_BIN names one, holding
# SWIFT_BUILD_LOCK (/tmp/swift-build.lock) so it never runs beside another Swift build. The
# gateway is not built: BENCH_GATEWAY_BIN, else .build/release/transfer-gateway, else
# .build/debug/transfer-gateway (a client upload sends it only a create, one signing per 100
# parts and a complete; its CPU over the run is reported). Starts the stack when it is down and a
# gateway on 127.0.0.1:18097 with its own database (gateway_bench_client); stops what it started.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=bench/lib.sh disable=SC1091
. "$ROOT/bench/lib.sh"
ROUNDS="${BENCH_ROUNDS:-5}"
MIB="${BENCH_MIB:-1024}"
BIG_MIB="${BENCH_BIG_MIB:-2048}"
BIG_RUNS="${BENCH_BIG_RUNS:-2}"
PART_SIZE=5242880
CONCURRENCY=5
PORT=18097
CLIENT_BIN="${BENCH_CLIENT_BIN:-$ROOT/.build/release/transfer-client}"
RESULTS="$ROOT/bench/RESULTS.md"
VENV="$ROOT/.venv"
PREFIX="bench/client-sh"  # aws's keys; the client's are private/bench-client/$PREFIX/…
# shellcheck disable=SC2034 # lib.sh reads it
STACK_STARTED=""
TMP="$(mktemp -d /tmp/bench-client.XXXXXX)"
GW_PID=""
WEED_PID=""
OBJECTS=()  # keys written and not yet deleted, removed on exit

if [ -n "${BENCH_GATEWAY_BIN:-}" ]; then GW_BIN="$BENCH_GATEWAY_BIN"
elif [ -x "$ROOT/.build/release/transfer-gateway" ]; then GW_BIN="$ROOT/.build/release/transfer-gateway"
else GW_BIN="$ROOT/.build/debug/transfer-gateway"; fi
[ -x "$GW_BIN" ] || die "no gateway binary ($GW_BIN): swift build --product transfer-gateway, or set BENCH_GATEWAY_BIN"
command -v /usr/bin/time >/dev/null || die "/usr/bin/time is missing (apt-get install time)"

s3() { "$VENV/bin/aws" --endpoint-url "$GATEWAY_S3_ENDPOINT" "$@"; }
delete_objects() {
  local key
  for key in "${OBJECTS[@]}"; do s3 s3 rm --only-show-errors "s3://$GATEWAY_S3_BUCKET/$key" || true; done
  OBJECTS=()
}
cleanup() {
  [ "${#OBJECTS[@]}" -eq 0 ] || delete_objects
  cleanup_job_bench
}
trap cleanup EXIT

if [ -z "${BENCH_SKIP_BUILD:-}" ] && [ -z "${BENCH_CLIENT_BIN:-}" ]; then
  say "swift build -c release --product transfer-client (holding ${SWIFT_BUILD_LOCK:-/tmp/swift-build.lock})"
  flock "${SWIFT_BUILD_LOCK:-/tmp/swift-build.lock}" swift build -c release --product transfer-client >&2 ||
    die "cannot build transfer-client; run with BENCH_CLIENT_BIN=PATH"
fi
[ -x "$CLIENT_BIN" ] || die "$CLIENT_BIN does not exist"

start_stack
set -a
# shellcheck disable=SC1091
. "$ROOT/.stack/env"
set +a
GATEWAY_DATABASE_URL="$(bash "$ROOT/scripts/stack.sh" database gateway_bench_client)"
export GATEWAY_DATABASE_URL
"$GW_BIN" migrate >&2
GATEWAY_PORT="$PORT" GATEWAY_SPOOL_DIR="$TMP/spool" "$GW_BIN" serve 2>"$TMP/gateway.log" &
GW_PID=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null || die "the gateway did not start: $(tail -3 "$TMP/gateway.log")"
"$GW_BIN" token --sub bench-client --ttl 7200 >"$TMP/token"
WEED_PID="$(weed_pid)"
printf '[default]\ns3 =\n  multipart_threshold = 5MB\n  multipart_chunksize = 5MB\n  max_concurrent_requests = 5\n' >"$TMP/aws-config"

seconds() { date +%s.%N; }
per_gib() { awk -v s="$1" -v m="$2" 'BEGIN { printf "%.2f", s / (m / 1024) }'; }
CLIENT=("$CLIENT_BIN" --gateway "http://127.0.0.1:$PORT" --token-file "$TMP/token" --state "$TMP/state"
  --part-size "$PART_SIZE" --concurrency "$CONCURRENCY" --json)

# verify KEY SHA256: the object read back whole has the file's SHA-256.
verify() {
  local got
  got="$(s3 s3 cp --only-show-errors "s3://$GATEWAY_S3_BUCKET/$1" - | sha256sum | cut -d' ' -f1)"
  [ "$got" = "$2" ] || die "$1 read back with SHA-256 $got, the file has $2"
}

# timed WHO FILE MIB NAME: one upload of FILE; sets mbps, cpu (s/GiB), rss (MiB), weed (s/GiB), key.
timed() {
  local t0 t1 w0 w1 out="$TMP/$1.out"
  sync
  w0="$(proc_cpu "$WEED_PID")"
  t0="$(seconds)"
  if [ "$1" = aws ]; then
    key="$PREFIX/$4"
    AWS_CONFIG_FILE="$TMP/aws-config" /usr/bin/time -f '%U %S %M' -o "$TMP/time" \
      "$VENV/bin/aws" --endpoint-url "$GATEWAY_S3_ENDPOINT" s3 cp --only-show-errors "$2" "s3://$GATEWAY_S3_BUCKET/$key" >"$out"
  else
    /usr/bin/time -f '%U %S %M' -o "$TMP/time" "${CLIENT[@]}" upload "$2" "private/$PREFIX/$4" >"$out" ||
      die "transfer-client upload failed: $(tail -2 "$out")"
    key="$(python3 -c 'import json, sys; e = json.loads(sys.stdin.read().splitlines()[-1]); assert e["event"] == "completed", e; print(e["objectKey"])' <"$out")"
  fi
  t1="$(seconds)"
  w1="$(proc_cpu "$WEED_PID")"
  OBJECTS+=("$key")
  mbps="$(awk -v b="$(($3 << 20))" -v a="$t0" -v z="$t1" 'BEGIN { printf "%.1f", b / (z - a) / 1e6 }')"
  cpu="$(per_gib "$(awk '{ print $1 + $2 }' "$TMP/time")" "$3")"
  rss="$(awk '{ printf "%.1f", $3 / 1024 }' "$TMP/time")"
  if [ -n "$WEED_PID" ]; then weed="$(per_gib "$(awk -v a="$w0" -v z="$w1" 'BEGIN { print z - a }')" "$3")"; else weed="-"; fi
}

SRC="$TMP/source.bin"
say "writing a $MIB MiB file"
head -c "$((MIB << 20))" /dev/urandom >"$SRC"
SUM="$(sha256sum "$SRC" | cut -d' ' -f1)"
rows=""; aws_all=""; ours_all=""; aws_cpu_all=""; ours_cpu_all=""; aws_rss_all=""; ours_rss_all=""; aws_weed_all=""; ours_weed_all=""
gw_cpu=0
for round in $(seq "$ROUNDS"); do
  if [ $((round % 2)) = 1 ]; then order="aws client"; first="aws s3 cp"; else order="client aws"; first="transfer-client"; fi
  for who in $order; do
    g0="$(proc_cpu "$GW_PID")"
    timed "$who" "$SRC" "$MIB" "$who-$round.bin"
    g1="$(proc_cpu "$GW_PID")"
    if [ "$who" = aws ]; then
      a_mbps="$mbps"; a_cpu="$cpu"; a_rss="$rss"; a_weed="$weed"
    else
      o_mbps="$mbps"; o_cpu="$cpu"; o_rss="$rss"; o_weed="$weed"
      gw_cpu="$(awk -v t="$gw_cpu" -v a="$g0" -v z="$g1" 'BEGIN { print t + z - a }')"
    fi
    verify "$key" "$SUM"
    delete_objects
  done
  say "round $round: aws s3 cp $a_mbps MB/s ($a_cpu CPU s/GiB, $a_rss MiB), transfer-client $o_mbps MB/s ($o_cpu CPU s/GiB, $o_rss MiB)"
  rows+="| $round | $first | $a_mbps | $a_cpu | $a_rss | $a_weed | $o_mbps | $o_cpu | $o_rss | $o_weed |"$'\n'
  aws_all+="$a_mbps"$'\n'; aws_cpu_all+="$a_cpu"$'\n'; aws_rss_all+="$a_rss"$'\n'; aws_weed_all+="$a_weed"$'\n'
  ours_all+="$o_mbps"$'\n'; ours_cpu_all+="$o_cpu"$'\n'; ours_rss_all+="$o_rss"$'\n'; ours_weed_all+="$o_weed"$'\n'
done
med() { printf %s "$1" | { grep -v '^-$' || true; } | median; }
aws_m="$(med "$aws_all")"; aws_cpu_m="$(med "$aws_cpu_all")"; aws_rss_m="$(med "$aws_rss_all")"; aws_weed_m="$(med "$aws_weed_all")"
ours_m="$(med "$ours_all")"; ours_cpu_m="$(med "$ours_cpu_all")"; ours_rss_m="$(med "$ours_rss_all")"; ours_weed_m="$(med "$ours_weed_all")"
ratio="$(awk -v o="$ours_m" -v a="$aws_m" 'BEGIN { printf "%.2f", o / a }')"
cpu_ratio="$(awk -v o="$ours_cpu_m" -v a="$aws_cpu_m" 'BEGIN { printf "%.2f", o / a }')"
gw_per="$(awk -v t="$gw_cpu" -v n="$ROUNDS" 'BEGIN { printf "%.2f", t / n }')"
rm -f "$SRC"

say "writing a $BIG_MIB MiB file"
BIG="$TMP/big.bin"
head -c "$((BIG_MIB << 20))" /dev/urandom >"$BIG"
BIG_SUM="$(sha256sum "$BIG" | cut -d' ' -f1)"
big_rows=""; big_rss_all=""
for run in $(seq "$BIG_RUNS"); do
  timed client "$BIG" "$BIG_MIB" "big-$run.bin"
  verify "$key" "$BIG_SUM"
  delete_objects
  say "$BIG_MIB MiB run $run: transfer-client $mbps MB/s ($cpu CPU s/GiB), peak RSS $rss MiB"
  big_rows+="| $run | $mbps | $cpu | **$rss** |"$'\n'
  big_rss_all+="$rss"$'\n'
done
big_peak="$(printf %s "$big_rss_all" | sort -g | tail -n1)"
rm -f "$BIG"
/usr/bin/time -f '%M' -o "$TMP/time" "${CLIENT[@]}" list >/dev/null
floor="$(awk '{ printf "%.1f", $1 / 1024 }' "$TMP/time")"
bound=$((PART_SIZE * CONCURRENCY >> 20))

gw_kind="release"
case "$GW_BIN" in */debug/*) gw_kind="debug" ;; esac
cpu_model="$(lscpu 2>/dev/null | awk -F: '/^Model name/ { gsub(/^ +/, "", $2); print $2; exit }')"
aws_version="$("$VENV/bin/aws" --version 2>&1 | head -n1 | awk '{ print $1 }')"
weed_version="$("$VENV/bin/weed" version 2>/dev/null | awk '{ print $3; exit }' || true)"
section="$(cat <<MD
## Client uploads vs aws s3 cp

<!-- bench:client:begin -->
$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores${cpu_model:+ ($cpu_model)}, $(uname -r), shared machine; $aws_version; SeaweedFS ${weed_version:-?} (\`weed mini\` of scripts/stack.sh, loopback); transfer-client: release build of $(git rev-parse --short HEAD); gateway: the $gw_kind build \`${GW_BIN#"$ROOT"/}\` (a client upload asks it only to create, to sign part URLs 100 at a time and to complete: **$gw_per** CPU s per upload).
Command: \`bench/client.sh\` (BENCH_ROUNDS=$ROUNDS, BENCH_MIB=$MIB, BENCH_BIG_MIB=$BIG_MIB, BENCH_BIG_RUNS=$BIG_RUNS) — a $MIB MiB file of random bytes, $ROUNDS rounds, the order turned each round:
\`transfer-client --gateway http://127.0.0.1:$PORT --token-file TOKEN --state DIR --part-size $PART_SIZE --concurrency $CONCURRENCY --json upload FILE private/$PREFIX/client-N.bin\` (a client upload: parts read from the file and PUT straight to S3 on presigned URLs) against
\`aws --endpoint-url \$GATEWAY_S3_ENDPOINT s3 cp --only-show-errors FILE s3://\$GATEWAY_S3_BUCKET/$PREFIX/aws-N.bin\` with \`s3 = multipart_threshold = 5MB, multipart_chunksize = 5MB, max_concurrent_requests = 5\`.
Each process under \`/usr/bin/time -f '%U %S %M'\`: MB/s = bytes / wall / 10^6 (wall includes start-up: Python's imports for the AWS CLI); CPU = user + sys with children, per GiB; RSS = peak. SeaweedFS = utime + stime of the weed process during the upload, per GiB. \`sync\` before each upload; every object read back (\`aws s3 cp KEY -\`) with the file's SHA-256, then deleted. These are not targets: they say what an app gets from the client beside the AWS CLI.

| round | first | aws s3 cp MB/s | aws CPU s/GiB | aws peak RSS MiB | SeaweedFS CPU s/GiB (aws) | transfer-client MB/s | client CPU s/GiB | client peak RSS MiB | SeaweedFS CPU s/GiB (client) |
|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|
${rows}
- medians: aws s3 cp **$aws_m** MB/s at **$aws_cpu_m** CPU s/GiB (peak RSS $aws_rss_m MiB, SeaweedFS $aws_weed_m CPU s/GiB); transfer-client **$ours_m** MB/s at **$ours_cpu_m** CPU s/GiB (peak RSS $ours_rss_m MiB, SeaweedFS $ours_weed_m CPU s/GiB)
- transfer-client / aws s3 cp: **$ratio** in speed, **$cpu_ratio** in CPU per GiB
- all $((ROUNDS * 2)) objects read back SHA-256-identical

Peak memory, the client alone uploading a $BIG_MIB MiB file, $BIG_RUNS time(s), each object read back identical:

| run | MB/s | CPU s/GiB | peak RSS MiB |
|---:|---:|---:|---:|
${big_rows}
- transfer-client peak RSS **$big_peak** MiB for $BIG_MIB MiB ($ours_rss_m MiB median for $MIB MiB), beside the bound on part bodies held, part size × concurrency = $((PART_SIZE >> 20)) MiB × $CONCURRENCY = **$bound MiB**; the same process running \`list\` (no transfer) peaks at $floor MiB
<!-- bench:client:end -->
MD
)"
python3 - "$RESULTS" "$section" <<'PY'
import os, re, sys
path, section = sys.argv[1], sys.argv[2]
text = open(path).read() if os.path.exists(path) else "# Benchmark results\n"
pattern = re.compile(r"## Client uploads vs aws s3 cp\n\n<!-- bench:client:begin -->.*?<!-- bench:client:end -->", re.S)
text = pattern.sub(lambda _: section, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + section + "\n"
open(path, "w").write(text)
PY
say "results in bench/RESULTS.md"
