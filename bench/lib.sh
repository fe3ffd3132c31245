# shellcheck shell=bash disable=SC2034
# bench/lib.sh — helpers the benchmark scripts share (sourced, not run). Callers set ROOT,
# GW_BIN and STACK_STARTED before using them.

say() { printf '[bench] %s\n' "$*" >&2; }
die() { printf '[bench] error: %s\n' "$*" >&2; exit 1; }

# median: the median of the numbers on stdin ("-" for none).
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# proc_cpu PID: the process's user + system CPU so far, in seconds (its utime and stime, the
# 12th and 13th fields after the ")" that closes its name); 0 when PID is empty.
proc_cpu() {
  if [ -n "$1" ]; then sed 's/^.*) //' "/proc/$1/stat" | awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($12 + $13) / hz }'; else echo 0; fi
}

# peak_rss_mib PID: the process's peak resident memory so far (VmHWM), in MiB.
peak_rss_mib() { awk '/^VmHWM:/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }

# weed_pid: the pid of the stack's SeaweedFS (S3, filer, volume and master in one process), or
# nothing when it is not running from scripts/stack.sh.
weed_pid() {
  local pid
  pid="$(cat "$ROOT/.stack/weed.pid" 2>/dev/null || true)"
  if [ -n "$pid" ] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q weed; then echo "$pid"; fi
}

# install_packages PKG...: installs the Debian packages named (none: nothing to do). A
# policy-rc.d keeps the package scripts from starting a system service (nginx's), and nginx's
# service is left disabled at boot: a benchmark runs its own.
install_packages() {
  [ $# -eq 0 ] && return 0
  say "installing: $*"
  local policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    policy=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod +x "$policy"
  fi
  local rc=0
  { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" </dev/null >/dev/null; } || rc=$?
  [ -z "$policy" ] || rm -f "$policy"
  [ $rc -eq 0 ] || die "apt-get install $* failed"
  case " $* " in
    *" nginx "*)
      update-rc.d nginx disable >/dev/null 2>&1 || true
      systemctl disable nginx >/dev/null 2>&1 || true
      ;;
  esac
}

# build_gateway HINT: the release binary, unless BENCH_SKIP_BUILD or BENCH_GATEWAY_BIN says to use
# one already there. HINT tells how to run without it when the build fails.
build_gateway() {
  if [ -n "${BENCH_SKIP_BUILD:-}" ] || [ -n "${BENCH_GATEWAY_BIN:-}" ]; then
    [ -x "$GW_BIN" ] || die "BENCH_SKIP_BUILD is set but $GW_BIN does not exist"
    return 0
  fi
  say "swift build -c release --product transfer-gateway"
  swift build -c release --product transfer-gateway >&2 ||
    die "cannot build the gateway (swift build -c release failed); $1"
  [ -x "$GW_BIN" ] || die "swift build succeeded but $GW_BIN is missing"
}

# start_stack: PostgreSQL and SeaweedFS up; STACK_STARTED=1 when this run started them.
start_stack() {
  bash "$ROOT/scripts/stack.sh" status >/dev/null 2>&1 || STACK_STARTED=1
  bash "$ROOT/scripts/stack.sh" up
}

# A gateway on 127.0.0.1:$1 for a job benchmark, with the stack's settings (.stack/env, exported),
# its log in $TMP/gateway.log and its spool in $TMP/spool; GW_PID is its pid and TOKEN a
# two-hour token for `bench`. Callers set TMP and clean up with cleanup_job_bench.
start_job_gateway() {
  build_gateway 'run with BENCH_SKIP_BUILD=1 and an existing binary'
  start_stack
  set -a
  # shellcheck disable=SC1091
  . "$ROOT/.stack/env"
  set +a
  GATEWAY_PORT="$1" GATEWAY_SPOOL_DIR="$TMP/spool" "$GW_BIN" serve 2>"$TMP/gateway.log" &
  GW_PID=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$1/healthz" >/dev/null && break; sleep 0.1; done
  TOKEN="$("$GW_BIN" token --sub bench --ttl 7200)"
}

# start_gateway_pair BIN_A PORT_A BIN_B PORT_B: the stack up and two gateways serving with its
# settings (the request log on), side A's spool and log in $TMP/spool-A and $TMP/A.log, B's
# likewise; their pids go into PIDS (for the caller's cleanup) and PID_A, PID_B.
start_gateway_pair() {
  local side bin port
  start_stack >/dev/null
  set -a
  # shellcheck disable=SC1091
  . "$ROOT/.stack/env"
  set +a
  for side in A B; do
    if [ "$side" = A ]; then bin="$1"; port="$2"; else bin="$3"; port="$4"; fi
    GATEWAY_PORT=$port GATEWAY_SPOOL_DIR="$TMP/spool-$side" "$bin" serve 2>"$TMP/$side.log" &
    PIDS+=($!)
    printf -v "PID_$side" '%s' "$!"
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
  done
}

# drop_objects KEY...: deletes the benchmark's objects from the bucket and has SeaweedFS's master
# (STACK_SEAWEED_MASTER in .stack/env) compact the volumes they were in, so the disk gets the
# space back. Untimed: between rounds.
drop_objects() {
  local key
  for key in "$@"; do
    AWS_CONFIG_FILE=/dev/null "$VENV/bin/aws" --endpoint-url "$GATEWAY_S3_ENDPOINT" s3 rm --only-show-errors \
      "s3://$GATEWAY_S3_BUCKET/$key" || true
  done
  curl -s -m 300 "${STACK_SEAWEED_MASTER:-http://127.0.0.1:19333}/vol/vacuum?garbageThreshold=0.05" >/dev/null || true
}

# start_file_server DIR RANGED_PORT STREAM_PORT: nginx on loopback serving DIR's files twice, on
# RANGED_PORT with byte ranges and on STREAM_PORT without (`max_ranges 0`: a source an import
# reads once, in order); its pid is NGINX_PID (the caller kills it). Installs nginx if missing.
start_file_server() {
  command -v nginx >/dev/null || install_packages nginx
  mkdir -p "$TMP/nginx"
  chmod a+rx "$TMP" "$1" # nginx's workers read the files as nobody
  cat >"$TMP/nginx/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/error.log warn;
events { worker_connections 256; }
http {
  access_log off;
  sendfile on;
  server { listen 127.0.0.1:$2; root $1; }
  server { listen 127.0.0.1:$3; root $1; max_ranges 0; }
}
CONF
  nginx -c "$TMP/nginx/nginx.conf" -p "$TMP/nginx" &
  NGINX_PID=$!
  for _ in $(seq 50); do [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$3/")" != 000 ] && break; sleep 0.1; done
}

# wait_completed ID WHAT: long-polls job ID on $API (with $TOKEN) until it is `completed`;
# dies naming WHAT if it fails or is canceled.
wait_completed() {
  local state=""
  while [ "$state" != completed ]; do
    state="$(curl -sf "$API/v1/jobs/$1?wait=30" -H "Authorization: Bearer $TOKEN" |
      python3 -c 'import json, sys; print(json.load(sys.stdin)["state"])')"
    case "$state" in failed | canceled) die "$2 ended $state" ;; esac
  done
}

# Stops what start_job_gateway started (the gateway, and the stack when this run started it).
cleanup_job_bench() {
  [ -n "${GW_PID:-}" ] && kill "$GW_PID" 2>/dev/null
  wait 2>/dev/null || true
  rm -rf "$TMP"
  if [ -n "$STACK_STARTED" ]; then bash "$ROOT/scripts/stack.sh" down >/dev/null 2>&1 || true; fi
}

# write_section FILE TEXT: TEXT is a whole "## Title" section; it replaces the section of that
# title in FILE (up to the next "## "), or is appended when FILE has none.
write_section() {
  python3 - "$1" "$2" <<'PY'
import re, sys
path, section = sys.argv[1], sys.argv[2].rstrip() + "\n"
title = section.split("\n", 1)[0]
text = open(path).read()
pattern = re.compile("^" + re.escape(title) + r"\n.*?(?=^## |\Z)", re.S | re.M)
text = pattern.sub(lambda _: section + "\n", text) if pattern.search(text) else text.rstrip() + "\n\n" + section
open(path, "w").write(text)
PY
}
