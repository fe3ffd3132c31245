#!/usr/bin/env bash
# bench/soak.sh — slow-client soak: BENCH_SOAK_JOBS (2000) upload jobs from as many identities,
# created over BENCH_SOAK_RAMP (15) seconds, each sending its bytes at 16 KiB a second for
# BENCH_SOAK_SECONDS (60) seconds (`size` 16 KiB × seconds = 983040) on a kept-alive connection of
# its own, all from this machine and one Python asyncio process (bench/soak_driver.py run), plus
# one fast upload job of BENCH_SOAK_FAST_MIB (256) MiB by `curl -T` BENCH_SOAK_FAST_AT (30) s in,
# its wall time reported. A PUT's first answer is what counts: none is sent again. Beside it
# (bench/soak_driver.py probe, a process of its own): GET /healthz 10 times a second on one
# connection; the gateway's VmRSS, open files and CPU, the machine's CPU and that of SeaweedFS and
# PostgreSQL once a second; the gateway's budget gauges and PostgreSQL's commits every 2 s. After
# it, every job's state (GET /v1/jobs/{id}) and every object read back from S3 with boto3 (SHA-256
# and MD5 of what was sent; ETag = MD5), then the objects are deleted. Writes the section
# "## Slow-client soak (bench/soak.sh)" of bench/RESULTS.md (its block between the markers; other
# sections and the prose above the block are kept).
#
# The gateway: the release binary on 127.0.0.1:18100, its own database (gateway_soak, emptied
# first) and spool directory, GATEWAY_MAX_CONNECTIONS and GATEWAY_MAX_CONNECTIONS_PER_CLIENT 8192
# (every client is 127.0.0.1), GATEWAY_LOG_LEVEL=warn, the default budgets (memory 256 MiB,
# spool 10 GiB). BENCH_SOAK_MEMORY_BUDGET=BYTES runs it with another memory budget and writes a
# block of its own ("Diagnostic"). Builds the binary unless BENCH_SKIP_BUILD=1; starts the stack
# and stops what it started. Exits 1 (after writing the results) when a job did not complete, an
# object differs or /healthz failed, and without writing them when something else restarted
# PostgreSQL or SeaweedFS during the run (the stack is shared); the work directory with the
# gateway's log and the JSON of every job, probe and check is kept then (and with BENCH_SOAK_KEEP=1).
#
#   BENCH_SKIP_BUILD=1 bench/soak.sh                  the soak as recorded in bench/RESULTS.md
#   BENCH_SOAK_JOBS=40 BENCH_SOAK_SECONDS=8 BENCH_SOAK_RAMP=3 BENCH_SOAK_FAST_MIB=32 \
#     BENCH_SOAK_FAST_AT=3 BENCH_SKIP_BUILD=1 bench/soak.sh   a quick check of the scripts (overwrites the block)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=bench/lib.sh disable=SC1091
. "$ROOT/bench/lib.sh"
JOBS="${BENCH_SOAK_JOBS:-2000}"
DURATION="${BENCH_SOAK_SECONDS:-60}"
RAMP="${BENCH_SOAK_RAMP:-15}"
FAST_MIB="${BENCH_SOAK_FAST_MIB:-256}"
FAST_AT="${BENCH_SOAK_FAST_AT:-30}"
MEMORY_BUDGET="${BENCH_SOAK_MEMORY_BUDGET:-268435456}"
CHUNK=16384
SIZE=$((CHUNK * DURATION))
PORT=18100
DB=gateway_soak
GW_BIN="${BENCH_GATEWAY_BIN:-$ROOT/.build/release/transfer-gateway}"
RESULTS="$ROOT/bench/RESULTS.md"
PY="$ROOT/.venv/bin/python"
DRIVER="$ROOT/bench/soak_driver.py"
STACK_STARTED=""
TMP="$(mktemp -d /tmp/bench-soak.XXXXXX)"
GW_PID=""
PROBE_PID=""
KEEP="${BENCH_SOAK_KEEP:-}"
cleanup() {
  [ -n "$PROBE_PID" ] && kill "$PROBE_PID" 2>/dev/null
  [ -n "$GW_PID" ] && kill "$GW_PID" 2>/dev/null
  wait 2>/dev/null || true
  rm -rf "$TMP/spool" "$TMP/fast.bin"
  if [ -n "$KEEP" ]; then say "kept $TMP (gateway.log, run.json, probe.json, verify.json)"; else rm -rf "$TMP"; fi
  if [ -n "$STACK_STARTED" ]; then bash "$ROOT/scripts/stack.sh" down >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[ -x "$PY" ] || die "no $PY: run scripts/stack.sh up (it makes the venv with boto3 and pyjwt)"
(exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && die "port $PORT is taken"
build_gateway 'run with BENCH_SKIP_BUILD=1 and an existing binary'
start_stack
set -a
# shellcheck disable=SC1091
. .stack/env
set +a
# A database of its own, emptied: jobs left waiting by an earlier run count against the quotas.
DB_URL="$(bash scripts/stack.sh database "$DB")"
psql "${DB_URL%/*}/postgres" -qAtc "DROP DATABASE IF EXISTS $DB" >/dev/null
DB_URL="$(bash scripts/stack.sh database "$DB")"

hard="$(ulimit -Hn)"
[ "$hard" = unlimited ] && hard=1048576
ulimit -n "$hard"
[ "$(ulimit -n)" -ge $((JOBS + 256)) ] || die "ulimit -n is $(ulimit -n); $JOBS connections need more"

say "writing a $FAST_MIB MiB file"
head -c "$((FAST_MIB << 20))" /dev/urandom >"$TMP/fast.bin"

# Which binary: the build may change under a long session, so the run names it.
binary="$(sha256sum "$GW_BIN" | cut -c1-12), built $(date -u -r "$GW_BIN" '+%Y-%m-%d %H:%M UTC')"
GATEWAY_PORT=$PORT GATEWAY_DATABASE_URL="$DB_URL" GATEWAY_SPOOL_DIR="$TMP/spool" GATEWAY_LOG_LEVEL=warn \
  GATEWAY_MAX_CONNECTIONS=8192 GATEWAY_MAX_CONNECTIONS_PER_CLIENT=8192 \
  GATEWAY_MEMORY_BUDGET="$MEMORY_BUDGET" GATEWAY_SPOOL_BUDGET=10737418240 \
  "$GW_BIN" serve 2>"$TMP/gateway.log" &
GW_PID=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.1; done
curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null || { tail -n 20 "$TMP/gateway.log" >&2; die "the gateway is not ready"; }

# Beside the gateway's: the CPU of SeaweedFS and PostgreSQL, and PostgreSQL's commits, to tell
# which of them a slow phase waits for.
WEED_PID="$(cat .stack/weed.pid 2>/dev/null || true)"
PG_PID="$(head -n 1 .stack/pg/data/postmaster.pid 2>/dev/null || true)"
"$PY" "$DRIVER" probe --port "$PORT" --pid "$GW_PID" --hz 10 ${WEED_PID:+--weed-pid "$WEED_PID"} \
  ${PG_PID:+--pg-pid "$PG_PID"} --pg-url "$DB_URL" --out "$TMP/probe.json" &
PROBE_PID=$!
sleep 2
say "$JOBS uploads of $SIZE bytes at $CHUNK B/s, created over $RAMP s; $FAST_MIB MiB by curl -T at $FAST_AT s"
"$PY" "$DRIVER" run --port "$PORT" --jobs "$JOBS" --size "$SIZE" --chunk "$CHUNK" --interval 1 --ramp "$RAMP" \
  --fast-file "$TMP/fast.bin" --fast-at "$FAST_AT" --workdir "$TMP" --out "$TMP/run.json"
sleep 2
kill -TERM "$PROBE_PID"
wait "$PROBE_PID" || die "the probe failed"
PROBE_PID=""
# Row updates of the jobs table in this run's database (it was created for the run).
pg_note="$(psql "$DB_URL" -qAtF ' ' -c "select n_tup_upd, n_tup_hot_upd, xact_commit from pg_stat_user_tables, pg_stat_database
  where relname = 'jobs' and datname = current_database()" |
  awk '{ if ($1 > 0) printf "%d transactions committed; jobs rows updated %d times, %.0f %% of them HOT", $3, $1, 100 * $2 / $1 }')"
kill -0 "$GW_PID" 2>/dev/null || { tail -n 40 "$TMP/gateway.log" >&2; die "the gateway exited during the run"; }
# The stack is shared: a run during which something else restarted PostgreSQL or SeaweedFS
# measured that, not the gateway; it says so.
disturbed=""
[ "$(head -n 1 .stack/pg/data/postmaster.pid 2>/dev/null || true)" = "$PG_PID" ] ||
  disturbed="PostgreSQL was restarted during the run by something else (postmaster $PG_PID → $(head -n 1 .stack/pg/data/postmaster.pid 2>/dev/null || echo none))"
[ "$(cat .stack/weed.pid 2>/dev/null || true)" = "$WEED_PID" ] ||
  disturbed="${disturbed:+$disturbed; }SeaweedFS was restarted during the run by something else"

say "verifying every job and object"
"$PY" "$DRIVER" verify --port "$PORT" --run "$TMP/run.json" --fast-file "$TMP/fast.bin" --delete --out "$TMP/verify.json"

# The gateway's stderr at level warn, summed by level, message and code.
log_summary="$("$PY" - "$TMP/gateway.log" <<'PY'
import collections, json, sys
counts, other = collections.Counter(), 0
for line in open(sys.argv[1], errors="replace"):
    try:
        doc = json.loads(line)
    except ValueError:
        other += 1
        continue
    counts[" ".join(str(doc.get(k)) for k in ("level", "msg", "code", "status", "route") if doc.get(k) is not None)] += 1
parts = [f"{n} × `{k}`" for k, n in counts.most_common(8)]
if other:
    parts.append(f"{other} other lines")
print(", ".join(parts) if parts else "no lines")
PY
)"
report="$("$PY" "$DRIVER" report --run "$TMP/run.json" --probe "$TMP/probe.json" --verify "$TMP/verify.json" \
  --gateway-log-summary "$log_summary" --pg-note "$pg_note")"
if [ -n "$disturbed" ]; then
  # Not written into RESULTS.md: it would replace a clean run's figures with these.
  printf '%s\n' "$report" >&2
  KEEP=1
  die "$disturbed; bench/RESULTS.md is left as it was: run again (see $TMP)"
fi
# The default budgets write the section's main block; another memory budget (a diagnostic run)
# writes a block of its own under it.
MARK=slow-soak
subheading=""
budget_note=""
if [ "$MEMORY_BUDGET" != 268435456 ]; then
  MARK=slow-soak-memory
  subheading="### Diagnostic: GATEWAY_MEMORY_BUDGET=$((MEMORY_BUDGET >> 20)) MiB"$'\n\n'
  budget_note=" Diagnostic run: GATEWAY_MEMORY_BUDGET=$MEMORY_BUDGET, not the default."
fi
budgets="memory $((MEMORY_BUDGET >> 20)) MiB, spool 10 GiB"
command="bench/soak.sh"
for var in BENCH_SOAK_MEMORY_BUDGET BENCH_SOAK_FAST_AT BENCH_SOAK_FAST_MIB BENCH_SOAK_RAMP BENCH_SOAK_SECONDS BENCH_SOAK_JOBS BENCH_SKIP_BUILD; do
  [ -n "${!var:-}" ] && command="$var=${!var} $command"
done
[ "$MEMORY_BUDGET" = 268435456 ] && budgets="default budgets (memory 256 MiB, spool 10 GiB)"
block="$(cat <<MD
<!-- bench:$MARK:begin -->
$subheading$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, shared machine (PostgreSQL, SeaweedFS, the driver and the gateway on the same 2 cores; other work may run beside). Command: \`$command\` — $JOBS upload jobs of $SIZE bytes, $((CHUNK / 1024)) KiB/s each for $DURATION s, created over $RAMP s from one Python asyncio process (bench/soak_driver.py, raw asyncio streams), plus one $FAST_MIB MiB upload by \`curl -T\` $FAST_AT s in; gateway \`serve\` (release binary $binary) with GATEWAY_MAX_CONNECTIONS=8192, GATEWAY_MAX_CONNECTIONS_PER_CLIENT=8192, GATEWAY_LOG_LEVEL=warn, $budgets.$budget_note

$report
<!-- bench:$MARK:end -->
MD
)"
"$PY" - "$RESULTS" "$MARK" "$block" <<'PY'
import os, re, sys
path, mark, block = sys.argv[1:4]
heading = "## Slow-client soak (bench/soak.sh)"
text = open(path).read() if os.path.exists(path) else "# Benchmark results\n"
pattern = re.compile(f"<!-- bench:{re.escape(mark)}:begin -->.*?<!-- bench:{re.escape(mark)}:end -->", re.S)
if pattern.search(text):
    text = pattern.sub(lambda _: block, text)
elif heading in text:
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    end = len(text) if end < 0 else end + 1
    before = text[:end].rstrip("\n")
    # the default run's block comes first, a diagnostic after it
    if mark == "slow-soak" and "<!-- bench:slow-soak-memory:begin -->" in before:
        i = before.index("<!-- bench:slow-soak-memory:begin -->")
        text = before[:i] + block + "\n\n" + before[i:] + "\n\n" + text[end:].lstrip("\n")
    else:
        text = before + "\n\n" + block + "\n\n" + text[end:].lstrip("\n")
    text = text.rstrip("\n") + "\n"
else:
    text = text.rstrip("\n") + "\n\n" + heading + "\n\n" + block + "\n"
open(path, "w").write(text)
PY
printf '%s\n' "$report" >&2
problems="$("$PY" -c 'import json, sys
v = json.load(open(sys.argv[1])); p = json.load(open(sys.argv[2]))
bad = [x for x in p["probes"] if x.get("status") != 200]
print(len(v["problems"]) + (v["fast"].get("state") != "completed") + (v["fast"].get("object") != "identical") + len(bad))' \
  "$TMP/verify.json" "$TMP/probe.json")"
if [ "$problems" != 0 ]; then
  KEEP=1
  die "$problems problems (jobs not completed, objects not identical, /healthz not 200); see $TMP"
fi
say "all $JOBS jobs completed and verified"
