#!/usr/bin/env bash
# bench/s3.sh — S3 multipart benchmark against the local SeaweedFS (scripts/stack.sh up): one file
# of BENCH_SIZE_MIB random bytes (made once in a temp dir) uploaded and downloaded by four clients,
# every one with 5 MiB parts and 5 parts in flight:
#   ceiling  the S3 server's own limit: one presigned UploadPart URL per part (boto3), the file
#            pre-split into part files (not timed), then `xargs -P 5` running
#            `curl -s -f -X PUT -T PART URL` (timed); the upload is completed from ListParts (not
#            timed). Down: one presigned GET URL, `xargs -P 5` running `curl -s -f -r START-END -o
#            PART URL` per 5 MiB range (timed), then the parts are concatenated into cmp (not timed).
#            Wall time only: the curl processes' CPU and memory are not the point.
#   aws      `aws s3 cp` (.venv awscli) with a temporary AWS_CONFIG_FILE: multipart_threshold and
#            multipart_chunksize 5MB, max_concurrent_requests 5.
#   boto3    bench/s3_boto3.py: upload_file / download_file with TransferConfig(5 MiB, 5 MiB, 5 threads).
#   ours     `transfer-gateway bench-s3 upload|download --part-size 5242880 --concurrency 5`.
# aws, boto3 and ours run under GNU time (/usr/bin/time) for wall, user+sys CPU and peak RSS; every
# run also reads SeaweedFS's CPU (utime+stime of the weed process) before and after. Each round runs
# every client's upload then its download (a fresh key per run); every download is checked with cmp
# against the source (a mismatch fails the script) and removed; the round's objects are deleted.
# Prints markdown tables and writes them into bench/RESULTS.md, section
# "## S3: 1 GiB multipart, 5 MiB x 5" between <!-- bench:s3:begin/end --> (other sections kept) —
# only for a full default run (1024 MiB, all clients) unless BENCH_WRITE=1; BENCH_WRITE=0 never writes.
# Builds the release gateway (swift build -c release --product transfer-gateway) and starts the
# stack when it is not running (and stops it again on exit). Cleans up what it made on exit.
#
#   bench/s3.sh                          BENCH_ROUNDS rounds (3) of BENCH_SIZE_MIB (1024) MiB
#   BENCH_SIZE_MIB=64 BENCH_ROUNDS=1 BENCH_SKIP_BUILD=1 bench/s3.sh   quick check (prints, no write)
#   BENCH_CLIENTS="ceiling ours"         only these clients (any of: ceiling aws boto3 ours)
#   BENCH_SKIP_BUILD=1                   use the existing .build/release/transfer-gateway
#   BENCH_GATEWAY_BIN=/path/to/bin       benchmark that binary instead (no build)
#   BENCH_WRITE=1|0                      write bench/RESULTS.md whatever the size / never
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

DEFAULT_SIZE_MIB=1024
SIZE_MIB="${BENCH_SIZE_MIB:-$DEFAULT_SIZE_MIB}"
ROUNDS="${BENCH_ROUNDS:-3}"
ALL_CLIENTS="ceiling aws boto3 ours"
CLIENTS="${BENCH_CLIENTS:-$ALL_CLIENTS}"
PART_SIZE=5242880
CONCURRENCY=5
RESULTS="$ROOT/bench/RESULTS.md"
GW_BIN="${BENCH_GATEWAY_BIN:-$ROOT/.build/release/transfer-gateway}"
VENV="$ROOT/.venv"
GNU_TIME=/usr/bin/time

# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

want() { case " $CLIENTS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

[[ "$SIZE_MIB" =~ ^[1-9][0-9]*$ ]] || die "BENCH_SIZE_MIB must be a positive integer (MiB), not '$SIZE_MIB'"
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || die "BENCH_ROUNDS must be a positive integer, not '$ROUNDS'"
for c in $CLIENTS; do case " $ALL_CLIENTS " in *" $c "*) ;; *) die "unknown client '$c' in BENCH_CLIENTS (use: $ALL_CLIENTS)" ;; esac; done
[ -n "$(echo "$CLIENTS" | xargs)" ] || die "BENCH_CLIENTS is empty"

SIZE_BYTES=$((SIZE_MIB * 1024 * 1024))
PARTS=$(((SIZE_BYTES + PART_SIZE - 1) / PART_SIZE))
if [ $((SIZE_MIB % 1024)) -eq 0 ]; then SIZE_LABEL="$((SIZE_MIB / 1024)) GiB"; else SIZE_LABEL="$SIZE_MIB MiB"; fi
SECTION="## S3: $SIZE_LABEL multipart, 5 MiB x $CONCURRENCY"

case "${BENCH_WRITE:-}" in
  1) WRITE=1 ;;
  0) WRITE="" ;;
  "") if [ "$SIZE_MIB" = "$DEFAULT_SIZE_MIB" ] && [ "$(echo "$CLIENTS" | xargs)" = "$ALL_CLIENTS" ]; then WRITE=1; else WRITE=""; fi ;;
  *) die "BENCH_WRITE must be 1 or 0" ;;
esac

# The command line as run, for RESULTS.md.
COMMAND="bench/s3.sh"
for v in BENCH_WRITE BENCH_GATEWAY_BIN BENCH_SKIP_BUILD BENCH_CLIENTS BENCH_ROUNDS BENCH_SIZE_MIB; do
  if [ -n "${!v:-}" ]; then
    val="${!v}"
    case "$val" in *[!A-Za-z0-9_./-]*) val="\"$val\"" ;; esac
    COMMAND="$v=$val $COMMAND"
  fi
done

TMP="$(mktemp -d /tmp/bench-s3.XXXXXX)"
RUN_ID="$(date -u +%Y%m%dT%H%M%SZ)-$$"
PREFIX="bench/s3/$RUN_ID/"
STACK_STARTED=""
ENV_LOADED=""
cleanup() {
  if [ -n "$ENV_LOADED" ]; then
    # Whatever a failed run left behind under this run's prefix: objects and open multipart uploads.
    "$VENV/bin/python" "$TMP/s3_helper.py" clean "$PREFIX" >/dev/null 2>&1 ||
      say "could not clean s3://${GATEWAY_S3_BUCKET:-?}/$PREFIX"
  fi
  if [ -n "$STACK_STARTED" ]; then bash "$ROOT/scripts/stack.sh" down >/dev/null 2>&1 || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------------------------------------
# Setup


load_stack() {
  start_stack
  [ -f "$ROOT/.stack/env" ] || die "scripts/stack.sh up did not write .stack/env"
  # shellcheck disable=SC1091
  . "$ROOT/.stack/env"
  : "${GATEWAY_S3_ENDPOINT:?not in .stack/env}" "${GATEWAY_S3_BUCKET:?not in .stack/env}"
  ENV_LOADED=1
  { [ -x "$VENV/bin/aws" ] && [ -x "$VENV/bin/python" ]; } || die "$VENV has no aws/python (scripts/stack.sh up makes it)"
  command -v curl >/dev/null || die "curl is missing"
  [ -x "$GNU_TIME" ] || die "GNU time ($GNU_TIME) is missing: apt-get install time"
}

# The weed process (SeaweedFS: S3, filer, volume and master in one), for its CPU; empty if unknown.
WEED_PID=""
find_weed() {
  WEED_PID="$(weed_pid)"
  [ -n "$WEED_PID" ] || say "SeaweedFS pid unknown: its CPU is not reported"
}
weed_cpu() {  # utime+stime of the weed process in seconds, or "-"
  if [ -n "$WEED_PID" ]; then proc_cpu "$WEED_PID" 2>/dev/null || echo -; else echo -; fi
}

# Boto3 helpers for the ceiling runs and for cleaning up (not timed).
write_helper() {
  cat >"$TMP/s3_helper.py" <<'PY'
import os, sys
import boto3
from botocore.config import Config

env = os.environ
s3 = boto3.client(
    "s3", endpoint_url=env["GATEWAY_S3_ENDPOINT"], region_name=env.get("GATEWAY_S3_REGION", "us-east-1"),
    aws_access_key_id=env.get("GATEWAY_S3_ACCESS_KEY_ID"), aws_secret_access_key=env.get("GATEWAY_S3_SECRET_ACCESS_KEY"),
    config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))
bucket = env["GATEWAY_S3_BUCKET"]
cmd, args = sys.argv[1], sys.argv[2:]

if cmd == "presign-parts":  # KEY PARTDIR LIST: create the upload, write "part\nurl\n" per part, print the id
    key, partdir, listfile = args
    names = sorted(os.listdir(partdir))
    upload_id = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    with open(listfile, "w") as out:
        for number, name in enumerate(names, 1):
            url = s3.generate_presigned_url("upload_part", ExpiresIn=3600, Params={
                "Bucket": bucket, "Key": key, "UploadId": upload_id, "PartNumber": number})
            out.write(f"{os.path.join(partdir, name)}\n{url}\n")
    print(upload_id)
elif cmd == "complete":  # KEY UPLOAD_ID PARTS: complete from ListParts
    key, upload_id, expected = args
    parts, marker = [], 0
    while True:
        page = s3.list_parts(Bucket=bucket, Key=key, UploadId=upload_id, PartNumberMarker=marker)
        parts += [{"PartNumber": p["PartNumber"], "ETag": p["ETag"]} for p in page.get("Parts", [])]
        if not page.get("IsTruncated"):
            break
        marker = page["NextPartNumberMarker"]
    if len(parts) != int(expected):
        s3.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id)
        sys.exit(f"ListParts has {len(parts)} parts, expected {expected}: upload aborted")
    s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id, MultipartUpload={"Parts": parts})
elif cmd == "abort":  # KEY UPLOAD_ID
    s3.abort_multipart_upload(Bucket=bucket, Key=args[0], UploadId=args[1])
elif cmd == "presign-get":  # KEY: print a GET URL
    print(s3.generate_presigned_url("get_object", ExpiresIn=3600, Params={"Bucket": bucket, "Key": args[0]}))
elif cmd == "delete":  # KEY...
    for key in args:
        s3.delete_object(Bucket=bucket, Key=key)
elif cmd == "clean":  # PREFIX: abort open uploads and delete objects under it
    prefix = args[0]
    for page in s3.get_paginator("list_multipart_uploads").paginate(Bucket=bucket, Prefix=prefix):
        for upload in page.get("Uploads", []):
            s3.abort_multipart_upload(Bucket=bucket, Key=upload["Key"], UploadId=upload["UploadId"])
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            s3.delete_object(Bucket=bucket, Key=obj["Key"])
else:
    sys.exit(f"s3_helper.py: unknown command {cmd}")
PY
}
helper() { "$VENV/bin/python" "$TMP/s3_helper.py" "$@"; }

write_aws_config() {
  cat >"$TMP/aws-config" <<CONF
[default]
region = ${GATEWAY_S3_REGION:-us-east-1}
s3 =
    multipart_threshold = 5MB
    multipart_chunksize = 5MB
    max_concurrent_requests = $CONCURRENCY
CONF
}

make_source() {
  SRC="$TMP/source.bin"
  say "making $SIZE_MIB MiB of random bytes in $SRC"
  head -c "$SIZE_BYTES" /dev/urandom >"$SRC"
  [ "$(stat -c %s "$SRC")" = "$SIZE_BYTES" ] || die "short source file"
  if want ceiling; then
    mkdir -p "$TMP/up-parts"
    split -b "$PART_SIZE" -a 5 -d "$SRC" "$TMP/up-parts/p."
    [ "$(find "$TMP/up-parts" -type f | wc -l)" = "$PARTS" ] || die "split made the wrong number of parts"
  fi
}

# ---------------------------------------------------------------------------------------------
# Runs. Each run sets WALL (s), CPU (user+sys s or -), RSS_KB (or -); timed() does the timing.

# timed CMD...: run CMD under GNU time; its stdout/stderr go to $TMP/run.out / run.err.
timed() {
  local t0 t1 user sys
  t0="$(date +%s%N)"
  if ! "$GNU_TIME" -f '%e %U %S %M' -o "$TMP/run.time" "$@" >"$TMP/run.out" 2>"$TMP/run.err"; then
    tail -n 20 "$TMP/run.err" >&2 || true
    die "failed: $*"
  fi
  t1="$(date +%s%N)"
  read -r _ user sys RSS_KB < <(tail -n 1 "$TMP/run.time")
  # Wall from the nanosecond clock around it (GNU time's %e has two decimals).
  WALL="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')"
  CPU="$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')"
}

# check_download FILE: cmp against the source (a mismatch fails the script), then remove it.
check_download() {
  cmp "$SRC" "$1" >&2 || die "download differs from the source: $1"
  rm -f "$1"
}

ceiling_upload() {  # KEY
  local upload_id
  upload_id="$(helper presign-parts "$1" "$TMP/up-parts" "$TMP/up.list")"
  # Each part is two lines: PART URL, so `-n 2` makes `curl ... -T PART URL`.
  timed xargs -d '\n' -n 2 -P "$CONCURRENCY" curl -s -f -o /dev/null -X PUT -T <"$TMP/up.list"
  CPU=- RSS_KB=-
  helper complete "$1" "$upload_id" "$PARTS" || die "completing the ceiling upload of $1 failed"
}

ceiling_download() {  # KEY
  local url
  url="$(helper presign-get "$1")"
  rm -rf "$TMP/down-parts"
  mkdir -p "$TMP/down-parts"
  # Each range is four lines: START-END -o PART URL, so `-n 4` makes `curl ... -r START-END -o PART URL`.
  awk -v n="$PARTS" -v ps="$PART_SIZE" -v size="$SIZE_BYTES" -v dir="$TMP/down-parts" -v url="$url" 'BEGIN {
    for (i = 0; i < n; i++) {
      start = i * ps; end = start + ps; if (end > size) end = size
      printf "%d-%d\n-o\n%s/p.%05d\n%s\n", start, end - 1, dir, i, url
    }
  }' >"$TMP/down.list"
  timed xargs -d '\n' -n 4 -P "$CONCURRENCY" curl -s -f -r <"$TMP/down.list"
  CPU=- RSS_KB=-
  # The parts in order, concatenated, against the source.
  find "$TMP/down-parts" -type f -name 'p.*' | sort | xargs cat | cmp "$SRC" - >&2 ||
    die "ceiling download differs from the source"
  rm -rf "$TMP/down-parts"
}

aws_cp() {  # SRC DST
  AWS_CONFIG_FILE="$TMP/aws-config" timed "$VENV/bin/aws" --endpoint-url "$GATEWAY_S3_ENDPOINT" \
    s3 cp --only-show-errors "$1" "$2"
}
aws_upload() { aws_cp "$SRC" "s3://$GATEWAY_S3_BUCKET/$1"; }
aws_download() { aws_cp "s3://$GATEWAY_S3_BUCKET/$1" "$TMP/download.bin"; check_download "$TMP/download.bin"; }

boto3_upload() { timed "$VENV/bin/python" "$ROOT/bench/s3_boto3.py" upload "$SRC" "$1"; }
boto3_download() {
  timed "$VENV/bin/python" "$ROOT/bench/s3_boto3.py" download "$TMP/download.bin" "$1"
  check_download "$TMP/download.bin"
}

ours_upload() {
  timed "$GW_BIN" bench-s3 upload --file "$SRC" --key "$1" --part-size "$PART_SIZE" --concurrency "$CONCURRENCY"
}
ours_download() {
  timed "$GW_BIN" bench-s3 download --file "$TMP/download.bin" --key "$1" --part-size "$PART_SIZE" --concurrency "$CONCURRENCY"
  check_download "$TMP/download.bin"
}

# ---------------------------------------------------------------------------------------------
# Reporting


# stat_of CLIENT DIRECTION FIELD: the median of a derived column over the rounds.
#   mbps (MB/s, 10^6), cpu_gib (CPU s per GiB), rss_mib, weed_gib (SeaweedFS CPU s per GiB)
stat_of() {
  awk -v c="$1" -v d="$2" -v f="$3" -v bytes="$SIZE_BYTES" '
    $2 == c && $3 == d {
      gib = bytes / 1073741824
      if (f == "mbps")         print bytes / $4 / 1e6
      else if (f == "cpu_gib") { if ($5 != "-") print $5 / gib }
      else if (f == "rss_mib") { if ($6 != "-") print $6 / 1024 }
      else if (f == "weed_gib") { if ($7 != "-") print $7 / gib }
    }' "$TMP/rows" | median
}
fmt() { awk -v v="$1" -v p="${2:-1}" 'BEGIN { if (v == "-" || v == "") print "-"; else printf "%.*f", p, v }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f", a / b }'; }

client_name() {
  case "$1" in
    ceiling) echo "ceiling (curl, presigned)" ;;
    aws) echo "AWS CLI" ;;
    boto3) echo "boto3" ;;
    ours) echo "ours" ;;
  esac
}

versions_line() {
  local v=()
  v+=("$("$VENV/bin/aws" --version 2>&1 | head -n1)")
  v+=("boto3 $("$VENV/bin/python" -c 'import boto3, botocore; print(boto3.__version__, "/ botocore", botocore.__version__)')")
  v+=("$(curl --version | head -n1 | awk '{ print $1, $2 }')")
  v+=("SeaweedFS $("$VENV/bin/weed" version 2>/dev/null | awk '{ print $3; exit }' || echo '?')")
  local out
  out="$(printf '%s; ' "${v[@]}")"
  echo "${out%; }"
}

report() {
  local md="$TMP/s3.md" c d
  local order
  order="$(echo "$CLIENTS" | xargs | sed 's/ / then /g')"
  {
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(uname -r); $(versions_line)."
    echo "Command: \`$COMMAND\` — $SIZE_MIB MiB of random bytes, $PART_SIZE-byte parts ($PARTS), $CONCURRENCY in flight," \
      "SeaweedFS \`weed mini\` from scripts/stack.sh on loopback; $ROUNDS round(s), each $order, upload then download (cmp-checked)."
    echo
    echo "- ceiling: presigned UploadPart URLs (boto3), \`xargs -P $CONCURRENCY\` of \`curl -s -f -X PUT -T PART URL\` per part; down: presigned GET," \
      "\`xargs -P $CONCURRENCY\` of \`curl -s -f -r START-END -o PART URL\` per part (one curl process and connection per part). Split, ListParts/Complete, concatenation untimed; wall time only (the curls' CPU is not the point)."
    echo "- AWS CLI: \`aws --endpoint-url \$GATEWAY_S3_ENDPOINT s3 cp --only-show-errors\` with \`s3 = multipart_threshold = 5MB, multipart_chunksize = 5MB, max_concurrent_requests = $CONCURRENCY\`."
    echo "- boto3: \`python bench/s3_boto3.py upload|download FILE KEY\` (upload_file / download_file, TransferConfig 5 MiB / 5 MiB / max_concurrency $CONCURRENCY / threads)."
    echo "- ours: \`transfer-gateway bench-s3 upload|download --file PATH --key KEY --part-size $PART_SIZE --concurrency $CONCURRENCY\`."
    echo "- AWS CLI, boto3, ours: whole process under \`/usr/bin/time -f '%e %U %S %M'\` (wall includes start-up: Python imports for AWS CLI and boto3)." \
      "MB/s = bytes / wall / 10^6; CPU = user + sys; RSS = peak. SeaweedFS CPU = utime + stime of the weed process across the run." \
      "botocore defaults on this plain-http endpoint: every part is SigV4-signed with its SHA-256 and carries a CRC32 checksum; ours and the presigned curls send UNSIGNED-PAYLOAD."
    echo
    echo "| client | direction | MB/s (median) | CPU s/GiB (median) | peak RSS MiB (median) | SeaweedFS CPU s/GiB (median) |"
    echo "|---|---|---:|---:|---:|---:|"
    for c in $CLIENTS; do
      for d in upload download; do
        echo "| $(client_name "$c") | $d | $(fmt "$(stat_of "$c" "$d" mbps)" 1) | $(fmt "$(stat_of "$c" "$d" cpu_gib)" 2) |" \
          "$(fmt "$(stat_of "$c" "$d" rss_mib)" 1) | $(fmt "$(stat_of "$c" "$d" weed_gib)" 2) |"
      done
    done
    echo
    if want ours; then
      for d in upload download; do
        local parts=() ours_mbps ours_cpu
        ours_mbps="$(stat_of ours "$d" mbps)"
        ours_cpu="$(stat_of ours "$d" cpu_gib)"
        if want ceiling; then parts+=("ours/ceiling MB/s **$(ratio "$ours_mbps" "$(stat_of ceiling "$d" mbps)")**"); fi
        if want aws; then
          parts+=("ours/AWS CLI MB/s **$(ratio "$ours_mbps" "$(stat_of aws "$d" mbps)")**")
          parts+=("ours/AWS CLI CPU per GiB **$(ratio "$ours_cpu" "$(stat_of aws "$d" cpu_gib)")**")
        fi
        if want boto3; then parts+=("ours/boto3 MB/s **$(ratio "$ours_mbps" "$(stat_of boto3 "$d" mbps)")**"); fi
        [ ${#parts[@]} -eq 0 ] || echo "- $d: $(printf '%s, ' "${parts[@]}" | sed 's/, $//')"
      done
      echo
    fi
    echo "<details><summary>Every run</summary>"
    echo
    echo "| round | client | direction | wall s | MB/s | CPU s | peak RSS MiB | SeaweedFS CPU s |"
    echo "|---:|---|---|---:|---:|---:|---:|---:|"
    while read -r r c d wall cpu rss weed; do
      echo "| $r | $(client_name "$c") | $d | $wall | $(fmt "$(awk -v b="$SIZE_BYTES" -v w="$wall" 'BEGIN { print b / w / 1e6 }')" 1) |" \
        "$cpu | $(fmt "$(awk -v k="$rss" 'BEGIN { if (k == "-") print "-"; else print k / 1024 }')" 1) | $weed |"
    done <"$TMP/rows"
    echo
    echo "</details>"
  } >"$md"
  echo
  echo "$SECTION"
  echo
  cat "$md"
  if [ -n "$WRITE" ]; then
    write_results "$md"
    say "results written to bench/RESULTS.md ($SECTION)"
  else
    say "bench/RESULTS.md not written (BENCH_SIZE_MIB=$SIZE_MIB, clients: $(echo "$CLIENTS" | xargs); a full default run writes it, BENCH_WRITE=1 forces)"
  fi
}

# RESULTS.md: replace this section's block between its markers, keep everything else.
write_results() {  # FILE-WITH-MARKDOWN
  python3 - "$RESULTS" "$SECTION" "$1" <<'PY'
import os, re, sys
path, section, body_file = sys.argv[1:4]
body = open(body_file).read().rstrip("\n")
begin, end = "<!-- bench:s3:begin -->", "<!-- bench:s3:end -->"
block = f"{begin}\n{body}\n{end}"
text = open(path).read() if os.path.exists(path) else "# Benchmark results\n"
lines = text.split("\n")
try:
    start = next(i for i, l in enumerate(lines) if l.strip() == section)
    stop = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    sec = "\n".join(lines[start:stop]).rstrip("\n")
except StopIteration:
    start = stop = len(lines)
    sec = section
if begin in sec and end in sec:
    sec = re.sub(re.escape(begin) + r".*?" + re.escape(end), lambda m: block, sec, flags=re.S)
else:
    sec = sec + "\n\n" + block
before = "\n".join(lines[:start]).rstrip("\n")
after = "\n".join(lines[stop:]).strip("\n")
out = (before + "\n\n" if before else "") + sec + "\n" + ("\n" + after + "\n" if after else "")
open(path, "w").write(out)
PY
}

# ---------------------------------------------------------------------------------------------

if want ours; then build_gateway 'BENCH_CLIENTS="ceiling aws boto3" runs without it'; fi
load_stack
find_weed
write_helper
write_aws_config
make_source
say "run prefix s3://$GATEWAY_S3_BUCKET/$PREFIX; clients: $(echo "$CLIENTS" | xargs); $ROUNDS round(s)"

: >"$TMP/rows"
STARTED=$SECONDS
for r in $(seq 1 "$ROUNDS"); do
  keys=()
  for c in $CLIENTS; do
    key="${PREFIX}r$r-$c.bin"
    keys+=("$key")
    for d in upload download; do
      sync  # not timed: the previous run's writes (SeaweedFS volumes, downloads) reach the disk first
      w0="$(weed_cpu)"
      "${c}_$d" "$key"
      w1="$(weed_cpu)"
      weed="$(awk -v a="$w0" -v b="$w1" 'BEGIN { if (a == "-" || b == "-") print "-"; else printf "%.2f", b - a }')"
      echo "$r $c $d $WALL $CPU $RSS_KB $weed" >>"$TMP/rows"
      say "round $r/$ROUNDS: $c $d: $(fmt "$(awk -v b="$SIZE_BYTES" -v w="$WALL" 'BEGIN { print b / w / 1e6 }')" 1) MB/s" \
        "(wall $WALL s, CPU $CPU s, peak RSS $(fmt "$(awk -v k="$RSS_KB" 'BEGIN { if (k == "-") print "-"; else print k / 1024 }')" 1) MiB, SeaweedFS CPU $weed s)"
    done
  done
  helper delete "${keys[@]}" || die "deleting round $r's objects failed"
done
say "all runs took $((SECONDS - STARTED)) s"

report
