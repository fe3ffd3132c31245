#!/usr/bin/env bash
# bench/webhooks.sh — BENCH_ROUNDS (3) rounds of BENCH_JOBS (1000) copy jobs completing with a
# webhook receiver on loopback
# (bench/webhook_bench.py: signature checked on every delivery, deduped by event id): events
# delivered, deliveries (duplicates show as more deliveries than events), and the latency from
# each change (the event's createdAt, stamped in the change's transaction) to its receipt,
# p50/p99. The gateway runs with its own database (gateway_bench_webhooks), so no other
# instance's pending events reach this receiver. Writes the section "## Webhooks" of
# bench/RESULTS.md. Builds the release binary unless BENCH_SKIP_BUILD=1; starts the stack and a
# gateway on 127.0.0.1:18092 (receiver on 18093) and stops what it started.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=bench/lib.sh disable=SC1091
. "$ROOT/bench/lib.sh"
JOBS="${BENCH_JOBS:-1000}"
PORT=18092
RECEIVER_PORT=18093
GW_BIN="${BENCH_GATEWAY_BIN:-$ROOT/.build/release/transfer-gateway}"
RESULTS="$ROOT/bench/RESULTS.md"
VENV="$ROOT/.venv"
STACK_STARTED=""
TMP="$(mktemp -d /tmp/bench-webhooks.XXXXXX)"
GW_PID=""
trap cleanup_job_bench EXIT
start_stack
GATEWAY_DATABASE_URL="$(bash "$ROOT/scripts/stack.sh" database gateway_bench_webhooks)"
SECRET="bench-webhook-secret-$(date +%s)"
export GATEWAY_WEBHOOK_URL="http://127.0.0.1:$RECEIVER_PORT/hooks" GATEWAY_WEBHOOK_SECRET="$SECRET" \
  GATEWAY_USER_MAX_ACTIVE_JOBS=100000 GATEWAY_USER_RATE=100000
# start_job_gateway reads .stack/env, whose database URL is the default one: ours wins after it.
start_job_gateway_with_database() {
  build_gateway 'run with BENCH_SKIP_BUILD=1 and an existing binary'
  set -a
  # shellcheck disable=SC1091
  . "$ROOT/.stack/env"
  set +a
  GATEWAY_DATABASE_URL="$1" GATEWAY_PORT="$PORT" GATEWAY_SPOOL_DIR="$TMP/spool" "$GW_BIN" serve 2>"$TMP/gateway.log" &
  GW_PID=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
  TOKEN="$("$GW_BIN" token --sub bench --ttl 7200)"
}
start_job_gateway_with_database "$GATEWAY_DATABASE_URL"
head -c 1024 /dev/urandom >"$TMP/source.bin"
"$VENV/bin/aws" --endpoint-url "$GATEWAY_S3_ENDPOINT" s3 cp --only-show-errors "$TMP/source.bin" \
  "s3://$GATEWAY_S3_BUCKET/private/bench/webhook-bench/source.bin"

ROUNDS="${BENCH_ROUNDS:-3}"
lines=""
for round in $(seq "$ROUNDS"); do
  say "round $round: $JOBS copy jobs, webhooks to 127.0.0.1:$RECEIVER_PORT"
  line="$(python3 "$ROOT/bench/webhook_bench.py" --gateway "http://127.0.0.1:$PORT" --token "$TOKEN" \
    --port "$RECEIVER_PORT" --secret "$SECRET" --jobs "$JOBS")" || { echo "$line"; die "not every event arrived"; }
  echo "$line"
  lines="$lines$line"$'\n'
done
table="$(python3 - "$lines" <<'PY'
import json, statistics, sys
rounds = [json.loads(line) for line in sys.argv[1].splitlines() if line.strip()]
rows = []
for index, r in enumerate(rounds, 1):
    rows.append(f"| {index} | {r['jobs']} | {r['events']} | {r['deliveries']} | {r['bad_signatures']} | {r['p50_ms']} ms | {r['p99_ms']} ms | {r['max_ms']} ms | {r['all_delivered_seconds']} s |")
med = lambda key: statistics.median(r[key] for r in rounds)
rows.append(f"| **median** | | | | | **{med('p50_ms')} ms** | **{med('p99_ms')} ms** | {med('max_ms')} ms | {med('all_delivered_seconds')} s |")
print("\n".join(rows))
PY
)"

section="## Webhooks

\`BENCH_ROUNDS=$ROUNDS bench/webhooks.sh\` ($(date -u +%Y-%m-%d), this 2-core machine; release build): per round, $JOBS
copy jobs of a 1 KiB object created 16 at a time through one gateway (8 workers), each
completion POSTed to a Python receiver on loopback that checks the signature and dedupes by event
id. Latency runs from the change (the event's \`createdAt\`, stamped in the transaction that
completed the job) to the receipt; \"all delivered after\" is from the first creation to the last
event, so it is mostly the jobs' own running time.

| round | jobs | events received | deliveries | bad signatures | latency p50 | p99 | max | all delivered after |
|---|---|---|---|---|---|---|---|---|
$table

Every event arrived once (deliveries = events). There is no outside peer for this: what a
backend does without webhooks is poll each job."
write_section "$RESULTS" "$section"
say "results in bench/RESULTS.md"
