#!/usr/bin/env bash
# scripts/abuse.sh — abuse by one ordinary signed-in account, replayed against gateways started for
# the purpose with small budgets (64 MiB memory, 1 GiB spool, 2 s lease). Each scenario prints one
# result line (peak RSS, its own figures), then a summary says PASS/FAIL/SKIP per scenario: peak RSS
# must stay below the memory budget + 64 MiB, the gateway must be alive at the end, and the
# scenario's own expectation must hold. Exit status 1 if any scenario fails.
#
#   scripts/abuse.sh [--quick] [--markdown FILE] [scenario...]
#
# Scenarios (all by default, in this order): crash longpolls memory metrics imports tails tus spool
# bodies expiry quotas readyz smaller keys rotation queries streams completion fairness. What each
# replays and what must hold is the header comment of its function in scripts/abuse.py (keys,
# rotation and queries take seconds). The second bounds pass: streams (stalled readers of one dataUrl
# against the memory budget and GATEWAY_USER_MAX_STREAMS), spool (c) (stalled uploads with 5 GiB
# parts, the per-identity spool share), completion (cancel racing an upload job's last PUT, abort
# racing complete on /v1/uploads), fairness (GATEWAY_WORKERS=4 held by one account's slow one-part
# imports). --quick shrinks sizes and durations (the whole run in about four minutes, half of which
# are the janitor waits of expiry and smaller); the full run takes 5-10 minutes (more when the
# shared stack is restarted under it: a disturbed scenario is run again). .ci/run runs
#   --quick keys rotation queries streams spool completion fairness   (about a minute)
#
# Uses the local stack (scripts/stack.sh up, run here; idempotent), a database of its own
# (gateway_abuse), the bucket transfer-gateway-abuse (created when missing), gateways on
# 127.0.0.1:18090-18091, and the release binary (.build/release/transfer-gateway, else the debug one;
# ABUSE_BIN overrides), copied aside first so a rebuild never swaps it mid-run. Everything it starts
# is stopped on exit, its temp dir removed (ABUSE_KEEP=1 keeps it: the gateways' logs; ABUSE_LOG_LEVEL
# sets their GATEWAY_LOG_LEVEL, warn by default), and the run's objects deleted from the bucket.
# ABUSE_STACK_ROOT=DIR uses the stack another checkout runs instead (a git worktree beside the one
# that ran `scripts/stack.sh up`): its .stack/env, .venv and `stack.sh database`; nothing is started.
# ABUSE_DATABASE names the database (gateway_abuse), so two checkouts' runs keep apart.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

TMP="$(mktemp -d /tmp/abuse.XXXXXX)"
PY_PID=""
cleanup() {
  local rc=$?
  if [ -n "$PY_PID" ] && kill -0 "$PY_PID" 2>/dev/null; then
    kill -TERM "$PY_PID" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$PY_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$PY_PID" 2>/dev/null || true
  fi
  # Gateways abuse.py started and could not stop (it writes each one's pid to $TMP/pids): only
  # processes still running our copy of the binary.
  if [ -f "$TMP/pids" ]; then
    while read -r pid; do
      if [ -n "$pid" ] && [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$TMP/transfer-gateway" ]; then
        kill -KILL "$pid" 2>/dev/null || true
      fi
    done <"$TMP/pids"
  fi
  if [ -n "${ABUSE_KEEP:-}" ]; then echo "abuse.sh: kept $TMP (gateway logs, spools)" >&2; else rm -rf "$TMP"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

STACK_ROOT="${ABUSE_STACK_ROOT:-$ROOT}"
if [ "$STACK_ROOT" = "$ROOT" ]; then bash scripts/stack.sh up >&2; fi
[ -f "$STACK_ROOT/.stack/env" ] || { echo "abuse.sh: no stack at $STACK_ROOT (run scripts/stack.sh up there)" >&2; exit 2; }
set -a
# shellcheck disable=SC1091
. "$STACK_ROOT/.stack/env"
set +a
export ABUSE_STACK_ROOT="$STACK_ROOT"
DATABASE_URL="$(bash "$STACK_ROOT/scripts/stack.sh" database "${ABUSE_DATABASE:-gateway_abuse}")"

BIN="${ABUSE_BIN:-}"
if [ -z "$BIN" ]; then
  if [ -x .build/release/transfer-gateway ]; then BIN=.build/release/transfer-gateway; else BIN=.build/debug/transfer-gateway; fi
fi
[ -x "$BIN" ] || { echo "abuse.sh: no gateway binary at $BIN (build it first)" >&2; exit 2; }
cp "$BIN" "$TMP/transfer-gateway"
echo "abuse.sh: binary $BIN ($(date -u -r "$BIN" '+%Y-%m-%d %H:%M UTC'))" >&2

ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
"$STACK_ROOT/.venv/bin/python" "$ROOT/scripts/abuse.py" --tmp "$TMP" --bin "$TMP/transfer-gateway" \
  --database-url "$DATABASE_URL" "$@" &
PY_PID=$!
rc=0
wait "$PY_PID" || rc=$?
PY_PID=""
exit "$rc"
