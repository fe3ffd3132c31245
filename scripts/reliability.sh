#!/usr/bin/env bash
# scripts/reliability.sh — the long reliability scenarios of RELIABILITY.md, against the local
# stack (started if needed), printing each scenario's figures:
#   scripts/reliability.sh drain [N]   N (1000) queued jobs drained by two instances; each claimed once
#   scripts/reliability.sh kills [N]   N (50) random SIGKILLs of the instance holding a lease while jobs run
#   scripts/reliability.sh pg [S]      PostgreSQL down S (30) seconds while a copy job runs
#   scripts/reliability.sh credentials [M]  M (8) minutes of presigns, copy and upload jobs on S3
#                                      credentials that end every 2 minutes (stand-in ECS and STS)
#   scripts/reliability.sh all         all four
# The quick scenarios (S3 faults, database restart, SIGSTOP, SIGTERM) run in scripts/test.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/stack.sh up >&2
set -a
# shellcheck disable=SC1091
. .stack/env
set +a
export GATEWAY_LIVE_TESTS=1
swift build --build-tests >&2
.build/debug/transfer-gateway migrate >&2
run() {  # FILTER: run one test, print its figure lines
  swift test --skip-build --filter "$1" 2>&1 | tee "/tmp/reliability-$2.log" | grep -E '^(drain|kills|credentials):|✘|passed after|failed after' || true
}
case "${1:-all}" in
  drain) GATEWAY_DRAIN_JOBS="${2:-1000}" run twoInstancesDrainQueuedJobsEachClaimedOnce drain ;;
  kills) GATEWAY_KILL_CAMPAIGN="${2:-50}" run randomKillsLoseNothing kills ;;
  pg) GATEWAY_PG_RESTART_TEST=1 GATEWAY_PG_OUTAGE_SECONDS="${2:-30}" run PostgresRestartLiveTests pg ;;
  credentials)
    GATEWAY_CREDENTIALS_LIFETIME=120 GATEWAY_CREDENTIALS_SECONDS=$((${2:-8} * 60)) run CredentialRotationLiveTests credentials ;;
  all)
    GATEWAY_DRAIN_JOBS=1000 run twoInstancesDrainQueuedJobsEachClaimedOnce drain
    GATEWAY_KILL_CAMPAIGN=50 run randomKillsLoseNothing kills
    GATEWAY_PG_RESTART_TEST=1 GATEWAY_PG_OUTAGE_SECONDS=30 run PostgresRestartLiveTests pg
    GATEWAY_CREDENTIALS_LIFETIME=120 GATEWAY_CREDENTIALS_SECONDS=480 run CredentialRotationLiveTests credentials
    ;;
  *) echo "usage: $0 drain [N] | kills [N] | pg [S] | credentials [M] | all" >&2; exit 2 ;;
esac
