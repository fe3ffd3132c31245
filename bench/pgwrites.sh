#!/usr/bin/env bash
# bench/pgwrites.sh — PostgreSQL writes per part, for every job type that moves parts: an
# `upload` job (curl -T), an `import` job (a presigned GET of the local S3, allowed by
# GATEWAY_IMPORT_ALLOW_HOSTS), a `copy` job, and a `download` job (created and read to the end;
# it records no parts, so its writes are shown per 5 MiB of data). Each job moves BENCH_MIB (200)
# MiB in 5 MiB parts. Writes are read from pg_stat_database for the gateway's own database
# (gateway_bench_pgwrites: nothing else writes there) around each job: rows inserted, updated and
# deleted, and transactions committed, after the statistics are flushed. A second figure counts
# the rows a lease renewal changes. BENCH_ROUNDS (3) rounds of each job; the table shows each
# round and the median (the gateway's janitor writes now and then into whichever job it meets). Writes the section "## PostgreSQL writes per part" of
# bench/RESULTS.md. Builds the release binary unless BENCH_SKIP_BUILD=1; starts the stack and a
# gateway on 127.0.0.1:18091 and stops what it started.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=bench/lib.sh disable=SC1091
. "$ROOT/bench/lib.sh"
MIB="${BENCH_MIB:-200}"
ROUNDS="${BENCH_ROUNDS:-3}"
PORT=18091
GW_BIN="${BENCH_GATEWAY_BIN:-$ROOT/.build/release/transfer-gateway}"
RESULTS="$ROOT/bench/RESULTS.md"
VENV="$ROOT/.venv"
STACK_STARTED=""
TMP="$(mktemp -d /tmp/bench-pgwrites.XXXXXX)"
GW_PID=""
trap cleanup_job_bench EXIT
start_stack
DB_URL="$(bash "$ROOT/scripts/stack.sh" database gateway_bench_pgwrites)"
build_gateway 'run with BENCH_SKIP_BUILD=1 and an existing binary'
set -a
# shellcheck disable=SC1091
. "$ROOT/.stack/env"
set +a
S3_HOSTPORT="${GATEWAY_S3_ENDPOINT#http://}"
GATEWAY_DATABASE_URL="$DB_URL" GATEWAY_PORT="$PORT" GATEWAY_SPOOL_DIR="$TMP/spool" GATEWAY_IMPORT_ALLOW_HOSTS="$S3_HOSTPORT" \
  GATEWAY_USER_RATE=1000 "$GW_BIN" serve 2>"$TMP/gateway.log" &
GW_PID=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
TOKEN="$("$GW_BIN" token --sub bench --ttl 7200)"
# Jobs of earlier runs would be swept by the janitor into whichever job is being counted.
psql "$DB_URL" -qc "TRUNCATE jobs, job_parts, uploads, idempotency_keys, webhook_events" >/dev/null
API="http://127.0.0.1:$PORT"
json() { python3 -c "import json, sys; print(json.load(sys.stdin)$1)"; }
post() { curl -sf -X POST "$API$1" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d "$2"; }
wait_job() {
  local state=""
  for _ in $(seq 600); do
    state="$(curl -sf "$API/v1/jobs/$1?wait=10" -H "Authorization: Bearer $TOKEN" | json '["state"]')"
    case "$state" in completed|failed|canceled) break ;; esac
  done
  [ "$state" = completed ] || die "job $1 ended $state"
}
# Rows written and transactions committed in the gateway's database so far. A backend hands its
# statistics over at most once a second while busy and within 10 s once idle (PostgreSQL 15):
# wait until two reads 11 s apart agree.
counters() {
  # Rows of the gateway's own tables: the database's totals also count PostgreSQL's catalog
  # writes (autoanalyze rewriting pg_statistic after the parts' inserts).
  local sql="SELECT (SELECT sum(n_tup_ins + n_tup_upd + n_tup_del) FROM pg_stat_user_tables), xact_commit,
                    (SELECT n_tup_upd FROM pg_stat_user_tables WHERE relname = 'jobs'),
                    (SELECT n_tup_ins + n_tup_upd FROM pg_stat_user_tables WHERE relname = 'job_parts')
             FROM pg_stat_database WHERE datname = 'gateway_bench_pgwrites'"
  local a b
  a="$(psql "$DB_URL" -Atc "$sql")"; echo >>"$TMP/reads"
  while sleep 11; b="$(psql "$DB_URL" -Atc "$sql")"; echo >>"$TMP/reads"; [ "${a%%|*}" != "${b%%|*}" ]; do a="$b"; done
  echo "$b"
}
reads() { wc -l <"$TMP/reads" 2>/dev/null || echo 0; }

SRC="$TMP/source.bin"
head -c "$((MIB << 20))" /dev/urandom >"$SRC"
"$VENV/bin/aws" --endpoint-url "$GATEWAY_S3_ENDPOINT" s3 cp --only-show-errors "$SRC" "s3://$GATEWAY_S3_BUCKET/private/bench/pg-source.bin"
parts=$(( (MIB + 4) / 5 ))
rows=""; medians=""
measure() {  # NAME ROUND: runs the job given as the rest of the arguments, adds a table row
  local name="$1" round="$2"; shift 2
  local before after reads_before
  before="$(counters)"
  reads_before="$(reads)"
  "$@"
  after="$(counters)"
  local tuples=$(( ${after%%|*} - ${before%%|*} ))
  # psql's own transactions (one per read in counters) are not the gateway's.
  local a b; IFS='|' read -r -a a <<<"$after"; IFS='|' read -r -a b <<<"$before"
  local commits=$(( a[1] - b[1] - ($(reads) - reads_before) ))
  local job_updates=$(( a[2] - b[2] )) part_rows=$(( a[3] - b[3] ))
  echo "$tuples" >>"$TMP/rows-$name"
  rows+="| $name | $round | $parts | $part_rows | $job_updates | $tuples | $(awk -v t="$tuples" -v p="$parts" 'BEGIN { printf "%.2f", t / p }') | $commits | $(awk -v c="$commits" -v p="$parts" 'BEGIN { printf "%.2f", c / p }') |"$'\n'
  say "$name (round $round): $tuples rows written, $commits commits over $parts parts"
}
upload_job() {
  local id
  id="$(post /v1/jobs "{\"type\":\"upload\",\"accessLevel\":\"private\",\"key\":\"pg-upload.bin\",\"size\":$((MIB << 20))}" | json '["id"]')"
  curl -sf -X PUT -T "$SRC" "$API/v1/jobs/$id/data" -H "Authorization: Bearer $TOKEN" >/dev/null
  wait_job "$id"
}
copy_job() {
  wait_job "$(post /v1/jobs '{"type":"copy","source":{"accessLevel":"private","key":"pg-source.bin"},"destination":{"accessLevel":"private","key":"pg-copy.bin"}}' | json '["id"]')"
}
import_job() {
  local url
  url="$(post /v1/presign '{"operation":"get","accessLevel":"private","key":"pg-source.bin"}' | json '["url"]')"
  wait_job "$(post /v1/jobs "{\"type\":\"import\",\"sourceUrl\":\"$url\",\"accessLevel\":\"private\",\"key\":\"pg-import.bin\"}" | json '["id"]')"
}
download_job() {
  local id
  id="$(post /v1/jobs '{"type":"download","source":{"accessLevel":"private","key":"pg-source.bin"}}' | json '["id"]')"
  curl -sf -o "$TMP/downloaded.bin" "$API/v1/jobs/$id/data" -H "Authorization: Bearer $TOKEN"
  cmp -s "$TMP/downloaded.bin" "$SRC" || die "the download differs"
}
for round in $(seq "$ROUNDS"); do
  measure upload "$round" upload_job
  measure import "$round" import_job
  measure copy "$round" copy_job
  measure download "$round" download_job
done
for name in upload import copy download; do
  m="$(median <"$TMP/rows-$name")"
  medians+="- $name: median **$m** rows, **$(awk -v t="$m" -v p="$parts" 'BEGIN { printf "%.2f", t / p }')** rows per part"$'\n'
done

section="## PostgreSQL writes per part

\`bench/pgwrites.sh\` ($(date -u '+%Y-%m-%d %H:%M UTC'), release build): one job of each type moving $MIB MiB in 5 MiB parts, on a
database nothing else writes to; rows inserted + updated + deleted in the gateway's tables
(\`pg_stat_user_tables\`) and transactions committed (\`pg_stat_database\`) around each job (the counters' own reads are taken out of the commits;
the gateway's reads are in them: its long polls and janitor during the 11 s settling waits, so
rows are the figure to read). A download records no parts: its figures are per 5 MiB of data
read. An upload records each part as it is in S3 and every part before it is: two rows (its
\`job_parts\` row and the job's counters, in one transaction). An import or a copy records parts
that end close together in one transaction, at most one every 250 ms while others are in flight:
their rows and one update of the counters. The rest is the job's own (insert, claim, start,
finish) and lease renewals.

| job | round | parts | part rows | job row updates | rows written | rows per part | commits | commits per part |
|---|---:|---:|---:|---:|---:|---:|---:|---:|
${rows}
${medians}"
write_section "$RESULTS" "$section"
say "results in bench/RESULTS.md"
