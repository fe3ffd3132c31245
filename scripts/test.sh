#!/usr/bin/env bash
# scripts/test.sh — one command for the tests: bring up the stack (PostgreSQL + SeaweedFS S3, see
# scripts/stack.sh), load its settings (.stack/env) with a database of the tests' own
# (gateway_test, so a gateway started by scripts/run.sh changes nothing), enable the live tests (GATEWAY_LIVE_TESTS=1)
# check openapi.yaml with openapi-spec-validator and run `swift test`. Extra arguments go to `swift test` (e.g. --filter SigV4Tests).
# A full run (no arguments) then runs the database-restart test on its own. The exit code is
# non-zero when any run failed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash scripts/stack.sh up

# shellcheck disable=SC1091
. .stack/env
export GATEWAY_LIVE_TESTS=1
# The tests have a database and a spool of their own: a gateway that scripts/run.sh started on
# the same stack claims jobs from its own database only, and never sees the tests' files.
GATEWAY_DATABASE_URL="$(bash scripts/stack.sh database gateway_test)"
export GATEWAY_DATABASE_URL
export GATEWAY_SPOOL_DIR="$ROOT/.build/test-spool"
mkdir -p "$GATEWAY_SPOOL_DIR"

# The API description must stay valid OpenAPI (it is also served at /openapi.yaml).
.venv/bin/openapi-spec-validator openapi.yaml

# The live tests also start the gateway as a separate process (crash and takeover), so the
# executable is built first; swift test reuses the build.
swift build
# The live suites share one database: bring its schema up to date once, before any of them.
.build/debug/transfer-gateway migrate
status=0
swift test "$@" || status=$?
# The database-restart test stops the shared PostgreSQL, so it runs alone, after the rest
# (only on a full run: a filtered run is someone looking at something else).
if [ "$#" -eq 0 ]; then
  GATEWAY_PG_RESTART_TEST=1 swift test --skip-build --filter PostgresRestartLiveTests || status=$?
fi
exit "$status"
