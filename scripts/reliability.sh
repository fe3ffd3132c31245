#!/usr/bin/env bash
# scripts/reliability.sh — the long reliability scenarios of RELIABILITY.md, against the local
# stack (started if needed), printing each scenario's figures:
#   scripts/reliability.sh drain [N]   N (1000) queued jobs drained by two instances; each claimed once
#   scripts/reliability.sh kills [N]   N (50) random SIGKILLs of the instance holding a lease while jobs run
#   scripts/reliability.sh pg [S]      PostgreSQL down S (30) seconds while a copy job runs
#   scripts/reliability.sh credentials [M]  M (8) minutes of presigns, copy and upload jobs on S3
#                                      credentials that end every 2 minutes (stand-in ECS and STS)
#   scripts/reliability.sh client3g    the Swift client under netshape.py's 3G profile (1 Mbit/s up,
#                                      300 ms round trips, a reset every 20 MiB): a 30 MiB upload and
#                                      download, byte-identical (some 7 minutes)
#   scripts/reliability.sh clientpresign  a client upload throttled to ~90 s on part URLs that live 30 s
#   scripts/reliability.sh roll [N]    N (20) rolling restarts under load (scripts/scale-check.sh's
#                                      phase 3: every answer through nginx a success or a 503 with
#                                      Retry-After) with one core kept busy beside them, as a loaded
#                                      CI is (a busy event loop is where a pooled request meets a close)
#   scripts/reliability.sh all         all of them
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
  swift test --skip-build --filter "$1" 2>&1 | tee "/tmp/reliability-$2.log" | grep -E '^(drain|kills|credentials|client3g|client-net):|✘|passed after|failed after' || true
}
roll() {  # N: rolling restarts beside a spinning neighbour; prints how many passed
  local n="$1" passed=0 neighbour
  python3 -c 'while True: pass' &
  neighbour=$!
  for i in $(seq 1 "$n"); do
    if SCALE_PHASES=3 bash scripts/scale-check.sh >"/tmp/reliability-roll-$i.log" 2>&1; then
      passed=$((passed + 1))
    else
      echo "roll: run $i failed (/tmp/reliability-roll-$i.log)"
    fi
  done
  kill "$neighbour" 2>/dev/null || true
  echo "roll: $passed of $n rolling restarts passed"
  [ "$passed" -eq "$n" ]
}
case "${1:-all}" in
  drain) GATEWAY_DRAIN_JOBS="${2:-1000}" run twoInstancesDrainQueuedJobsEachClaimedOnce drain ;;
  kills) GATEWAY_KILL_CAMPAIGN="${2:-50}" run randomKillsLoseNothing kills ;;
  pg) GATEWAY_PG_RESTART_TEST=1 GATEWAY_PG_OUTAGE_SECONDS="${2:-30}" run PostgresRestartLiveTests pg ;;
  credentials)
    GATEWAY_CREDENTIALS_LIFETIME=120 GATEWAY_CREDENTIALS_SECONDS=$((${2:-8} * 60)) run CredentialRotationLiveTests credentials ;;
  client3g) TRANSFER_CLIENT_3G=1 run uploadAndDownloadUnderThe3GProfileAreByteIdentical client3g ;;
  clientpresign) TRANSFER_CLIENT_LONG_PRESIGN=1 run throttledUploadOutlivingItsPartURLsCompletesByResigning clientpresign ;;
  roll) swift build --product transfer-client >&2 && roll "${2:-20}" ;;
  all)
    GATEWAY_DRAIN_JOBS=1000 run twoInstancesDrainQueuedJobsEachClaimedOnce drain
    GATEWAY_KILL_CAMPAIGN=50 run randomKillsLoseNothing kills
    GATEWAY_PG_RESTART_TEST=1 GATEWAY_PG_OUTAGE_SECONDS=30 run PostgresRestartLiveTests pg
    GATEWAY_CREDENTIALS_LIFETIME=120 GATEWAY_CREDENTIALS_SECONDS=480 run CredentialRotationLiveTests credentials
    TRANSFER_CLIENT_3G=1 run uploadAndDownloadUnderThe3GProfileAreByteIdentical client3g
    TRANSFER_CLIENT_LONG_PRESIGN=1 run throttledUploadOutlivingItsPartURLsCompletesByResigning clientpresign
    swift build --product transfer-client >&2 && roll 20
    ;;
  *) echo "usage: $0 drain [N] | kills [N] | pg [S] | credentials [M] | client3g | clientpresign | roll [N] | all" >&2; exit 2 ;;
esac
