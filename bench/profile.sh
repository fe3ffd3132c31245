#!/usr/bin/env bash
# bench/profile.sh — where the gateway's CPU goes under one benchmark's load: `perf record -g` on
# the release build while the load runs, then a summary (kernel / gateway code / libraries, the
# heaviest functions by their own samples, and the heaviest of the gateway's functions counting
# what they call). What each section of bench/RESULTS.md says is left comes from these.
#
#   bench/profile.sh healthz     wrk -t2 -c64 10 s of GET /healthz (log on)
#   bench/profile.sh presign     wrk -t2 -c64 10 s of POST /v1/presign (a put of a private key)
#   bench/profile.sh upload      an upload job of BENCH_MIB (512) MiB by curl -T
#   bench/profile.sh download    a download job of BENCH_MIB (512) MiB, its data by curl
#   bench/profile.sh import      an import job of BENCH_MIB (512) MiB from nginx without ranges
#   bench/profile.sh import-ranges  the same from nginx serving ranges
#
# BENCH_SKIP_BUILD=1 / BENCH_GATEWAY_BIN as in the other scripts; BENCH_TOP (25) lines per table.
# The raw profile stays in /tmp/bench-profile-TARGET.data (`perf report -i` it for more).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=bench/lib.sh disable=SC1091
. "$ROOT/bench/lib.sh"
TARGET="${1:-}"
case "$TARGET" in healthz | presign | upload | download | import | import-ranges) ;;
  *) die "usage: bench/profile.sh healthz|presign|upload|download|import|import-ranges" ;;
esac
MIB="${BENCH_MIB:-512}"
TOP="${BENCH_TOP:-25}"
PORT=18093
GW_BIN="${BENCH_GATEWAY_BIN:-$ROOT/.build/release/transfer-gateway}"
DATA="/tmp/bench-profile-$TARGET.data"
STACK_STARTED=""
TMP="$(mktemp -d /tmp/bench-profile.XXXXXX)"
GW_PID=""
PERF_PID=""
NGINX_PID=""
trap '[ -n "$PERF_PID" ] && kill -INT "$PERF_PID" 2>/dev/null; [ -n "$NGINX_PID" ] && kill "$NGINX_PID" 2>/dev/null; cleanup_job_bench' EXIT
command -v perf >/dev/null || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q linux-perf >/dev/null; }
command -v wrk >/dev/null || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q wrk >/dev/null; }
RANGED_PORT=18084
STREAM_PORT=18085
export GATEWAY_IMPORT_ALLOW_HOSTS="127.0.0.1:$RANGED_PORT,127.0.0.1:$STREAM_PORT"
start_job_gateway "$PORT"
API="http://127.0.0.1:$PORT"
json() { python3 -c "import json, sys; print(json.load(sys.stdin)$1)"; }
BODY='{"operation":"put","accessLevel":"private","key":"photos/2026/holiday.jpg","contentType":"image/jpeg"}'

# The load's preparation (files, objects, jobs) happens before the recording starts.
case "$TARGET" in
  presign)
    printf 'wrk.method = "POST"\nwrk.body = %s\nwrk.headers["Content-Type"] = "application/json"\nwrk.headers["Authorization"] = "Bearer %s"\n' \
      "'$BODY'" "$TOKEN" >"$TMP/presign.lua"
    curl -sf -X POST "$API/v1/presign" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d "$BODY" >/dev/null ;;
  upload)
    head -c "$((MIB << 20))" /dev/urandom >"$TMP/source.bin"
    id="$(curl -sf -X POST "$API/v1/jobs" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
      -d "{\"type\":\"upload\",\"accessLevel\":\"private\",\"key\":\"bench/profile.bin\",\"size\":$((MIB << 20))}" | json '["id"]')" ;;
  download)
    head -c "$((MIB << 20))" /dev/urandom >"$TMP/source.bin"
    AWS_CONFIG_FILE=/dev/null "$ROOT/.venv/bin/aws" --endpoint-url "$GATEWAY_S3_ENDPOINT" s3 cp --only-show-errors "$TMP/source.bin" \
      "s3://$GATEWAY_S3_BUCKET/private/bench/profile-download.bin"
    id="$(curl -sf -X POST "$API/v1/jobs" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
      -d '{"type":"download","source":{"accessLevel":"private","key":"profile-download.bin"}}' | json '["id"]')" ;;
  import | import-ranges)
    mkdir -p "$TMP/www"
    head -c "$((MIB << 20))" /dev/urandom >"$TMP/www/source.bin"
    start_file_server "$TMP/www" "$RANGED_PORT" "$STREAM_PORT"
    SOURCE_PORT="$([ "$TARGET" = import ] && echo "$STREAM_PORT" || echo "$RANGED_PORT")" ;;
esac

perf record -g -o "$DATA" -p "$GW_PID" 2>"$TMP/perf.log" &
PERF_PID=$!
sleep 0.3
case "$TARGET" in
  healthz) wrk -t2 -c64 -d10s "$API/healthz" | grep -E 'Requests/sec' >&2 ;;
  presign) wrk -t2 -c64 -d10s -s "$TMP/presign.lua" "$API/v1/presign" | grep -E 'Requests/sec|Non-2xx' >&2 ;;
  upload) curl -sf -X PUT -T "$TMP/source.bin" "$API/v1/jobs/$id/data" -H "Authorization: Bearer $TOKEN" -o /dev/null ;;
  download) curl -sf -o /dev/null "$API/v1/jobs/$id/data" -H "Authorization: Bearer $TOKEN" ;;
  import | import-ranges)
    id="$(curl -sf -X POST "$API/v1/jobs" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
      -d "{\"type\":\"import\",\"sourceUrl\":\"http://127.0.0.1:$SOURCE_PORT/source.bin\",\"accessLevel\":\"private\",\"key\":\"profile-import.bin\"}" |
      json '["id"]')"
    wait_completed "$id" "the import job" ;;
esac
kill -INT "$PERF_PID"
wait "$PERF_PID" 2>/dev/null || true
PERF_PID=""

perf script -i "$DATA" 2>/dev/null >"$TMP/script.txt"
python3 - "$TMP/script.txt" "$TOP" "$TARGET" <<'PY'
import collections, re, subprocess, sys
path, top, target = sys.argv[1], int(sys.argv[2]), sys.argv[3]
frame = re.compile(r'^\s*[0-9a-f]+ (.*?)(\+0x[0-9a-f]+)? \((.*)\)$')
own = collections.Counter(); inclusive = collections.Counter(); where = collections.Counter(); n = 0
for sample in open(path).read().split('\n\n'):
    frames = [m.groups() for m in (frame.match(l) for l in sample.strip().split('\n')[1:]) if m]
    if not frames:
        continue
    n += 1
    symbol, _, dso = frames[0]
    own[symbol] += 1
    where['kernel' if 'kernel' in dso else 'gateway code' if 'transfer-gateway' in dso else dso.rsplit('/', 1)[-1]] += 1
    for name in {s for s, _, d in frames if 'transfer-gateway' in d}:
        inclusive[name] += 1
names = sorted(set(k for k, _ in own.most_common(top)) | set(k for k, _ in inclusive.most_common(top)))
demangled = dict(zip(names, subprocess.run(['swift', 'demangle', '--simplified'], input='\n'.join(names),
                                            capture_output=True, text=True).stdout.split('\n')))
short = lambda s: demangled.get(s, s)[:110]
print(f"{target}: {n} samples")
print("\n| where | share |\n|---|---:|")
for k, v in where.most_common(8): print(f"| {k} | {v / n * 100:.1f}% |")
print("\n| own samples | function |\n|---:|---|")
for k, v in own.most_common(top): print(f"| {v / n * 100:.1f}% | `{short(k)}` |")
print("\n| with callees | gateway function |\n|---:|---|")
for k, v in inclusive.most_common(top): print(f"| {v / n * 100:.1f}% | `{short(k)}` |")
PY
