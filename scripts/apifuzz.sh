#!/usr/bin/env bash
# scripts/apifuzz.sh — API fuzzing with schemathesis against a live gateway and openapi.yaml:
# every check schemathesis has (no 5xx, status codes, content types, headers and
# bodies as documented, negative data refused, valid data accepted, authentication enforced),
# with two users' tokens (alice and bob) as peers, so its object-level-authorization check
# replays each user's reads of their own jobs and uploads as the other user.
#
#   scripts/apifuzz.sh [MAX_EXAMPLES]    default 25 examples per operation and phase
#   APIFUZZ_SEED=N scripts/apifuzz.sh   the run schemathesis made with seed N (printed as "Seed:"), again
#
# scripts/apifuzz.toml holds the settings (and why the tus operations expect 412 and 413);
# scripts/apifuzz_hooks.py adds a check of our own (each successful read of one user's job,
# upload or tus upload is sent again with the other user's token and must get 404 or 403) and
# sends SSE-S3 where SSE-KMS was generated (SeaweedFS has no KMS).
#
# Starts the local stack if needed and a gateway (GATEWAY_BIN, default the debug build) on
# 127.0.0.1:18096 with its log kept; afterwards the log must hold no 5xx and no handler failure.
# Prints the number of requests sent; exits non-zero on any failure.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
EXAMPLES="${1:-25}"
PORT=18096
BIN="${GATEWAY_BIN:-$ROOT/.build/debug/transfer-gateway}"
WORK="$(mktemp -d /tmp/apifuzz.XXXXXX)"
GW_PID=""
cleanup() { [ -n "$GW_PID" ] && kill "$GW_PID" 2>/dev/null; wait 2>/dev/null || true; }
trap cleanup EXIT

bash scripts/stack.sh up >&2
set -a
# shellcheck disable=SC1091
. .stack/env
set +a
# A database of its own: a gateway started by scripts/run.sh never sees the fuzzer's jobs.
GATEWAY_DATABASE_URL="$(bash scripts/stack.sh database gateway_apifuzz)"
export GATEWAY_DATABASE_URL
[ -x "$BIN" ] || swift build --product transfer-gateway >&2
"$BIN" migrate >&2
# Schema conformance is under test here, not the per-identity quotas: two users sending a few
# thousand requests would meet them, so they are raised for this gateway.
GATEWAY_USER_MAX_ACTIVE_JOBS=1000000 GATEWAY_USER_MAX_OPEN_UPLOADS=1000000 GATEWAY_USER_RATE=1000000 \
  GATEWAY_USER_MAX_WAITS=1000 GATEWAY_SPOOL_DIR="$WORK/spool" GATEWAY_PORT=$PORT "$BIN" serve 2>"$WORK/gateway.log" &
GW_PID=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done

ALICE="$("$BIN" token --sub alice --ttl 7200)"
BOB="$("$BIN" token --sub bob --ttl 7200)"
cat >"$WORK/users.json" <<JSON
{"auth": [
  {"name": "alice", "fixedHeaders": [{"name": "Authorization", "value": "Bearer $ALICE"}]},
  {"name": "bob", "fixedHeaders": [{"name": "Authorization", "value": "Bearer $BOB"}]}
]}
JSON

status=0
APIFUZZ_USERS="$WORK/users.json" APIFUZZ_ALICE="$ALICE" APIFUZZ_BOB="$BOB" SCHEMATHESIS_HOOKS=apifuzz_hooks PYTHONPATH="$ROOT/scripts" \
  .venv/bin/schemathesis --config-file scripts/apifuzz.toml run openapi.yaml \
  --url "http://127.0.0.1:$PORT" --checks all --max-examples "$EXAMPLES" --workers 1 \
  --request-timeout 70 --suppress-health-check all --report ndjson --report-dir "$WORK/report" \
  --no-color ${APIFUZZ_SEED:+--seed "$APIFUZZ_SEED"} 2>&1 | tee "$WORK/schemathesis.txt" || status=$?

requests="$(grep -c '"msg":"request"' "$WORK/gateway.log" || true)"
errors="$(grep -Ec '"status":5[0-9][0-9]|handler failed' "$WORK/gateway.log" || true)"
echo "apifuzz: schemathesis exit $status; the gateway answered $requests requests, $errors of them 5xx or handler failures; work dir $WORK" >&2
[ "$errors" -eq 0 ] || { grep -E '"status":5[0-9][0-9]|handler failed' "$WORK/gateway.log" | head -5 >&2; status=1; }
exit "$status"
