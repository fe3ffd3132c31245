#!/usr/bin/env bash
# scripts/ssrf-battery.sh — the SSRF battery for `import` jobs as root.
#
# A release gateway runs inside a network namespace made for the run, with decoy listeners on
# the addresses an attacker aims for: 169.254.169.254, 10.x, 172.16.x, 192.168.x, 127.x, 100.64.x,
# ::1, fd00::, fe80::, fec0::, IPv4-compatible, NAT64 and 6to4 forms of them, each on ports 80,
# 443 and 8080, plus a sniffer that sees every TCP SYN in the namespace. One import job per
# attempt, one after the other: literal addresses, IPv4-mapped IPv6, decimal, octal and hex
# spellings, names in the namespace's hosts file and in its own DNS server (a rebinding one too),
# URL-parser tricks, and 301/302/303/307/308 redirects from an allowed host to each forbidden one.
# Every attack must end `failed` with the refusal code (`forbidden_address`; `invalid_url` for user
# info and non-http redirects) and no decoy may see a connection; three positive controls (an
# allow-listed host, a public address, a redirect between them) must complete byte-identical.
# Prints a Markdown table; exits non-zero on any failure.
#
# The allowed host is `allowed.test:8080` (192.0.2.80, listed in GATEWAY_IMPORT_ALLOW_HOSTS, as
# the live tests do); `public.test` (11.0.0.80) is a public-looking address on no list. The
# namespace has no route out, so nothing leaves the machine. PostgreSQL and S3 are reached through
# relays (127.0.0.1:PORT in the namespace to the same port in the root namespace), and the gateway
# uses a database of its own (gateway_ssrf) so no other instance on the shared stack takes its jobs.
#
# Settings: SSRF_EXTRA_ALLOW_HOSTS widens the gateway's allow-list, to check the battery itself:
# with e.g. `10.0.0.5,169.254.169.254` it must fail and name the decoys contacted. GATEWAY_BIN (default .build/release/transfer-gateway, built only when missing; a copy
# is run, so a rebuild during the run does not matter), SSRF_NETNS (tg-ssrf). Logs of a failed
# run are kept in /tmp/transfer-gateway-ssrf. Everything else (namespace, /etc/netns/NAME,
# processes, database) is removed on exit, and leftovers of an interrupted run at the next start.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NS="${SSRF_NETNS:-tg-ssrf}"
RUN="/tmp/transfer-gateway-ssrf"
LOCK="/tmp/transfer-gateway-ssrf.lock"
DB="gateway_ssrf"
GW_PORT=18080
SOURCE_BIN="${GATEWAY_BIN:-$ROOT/.build/release/transfer-gateway}"
HELPER="$ROOT/scripts/ssrf_battery.py"
PG_BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"

log() { printf '[ssrf] %s\n' "$*" >&2; }
die() { printf '[ssrf] error: %s\n' "$*" >&2; exit 2; }

[ "$(id -u)" -eq 0 ] || die "run as root (it creates a network namespace)"
if ! command -v ip >/dev/null; then
  log "installing iproute2"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends iproute2 </dev/null >/dev/null ||
    { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends iproute2 </dev/null >/dev/null; } ||
    die "ip (iproute2) is missing"
fi

# One run at a time: the namespace and database names are fixed so that leftovers can be found.
# (Children get fd 8 closed, so an orphan of a killed run cannot hold the lock.)
exec 8>"$LOCK"
flock -w 180 8 || die "another battery holds $LOCK"

# The PostgreSQL superuser over the stack's unix socket (the same path scripts/stack.sh uses).
PG_SOCK="$ROOT/.stack/pg/run"
if [ $((${#PG_SOCK} + 20)) -gt 107 ]; then
  PG_SOCK="/tmp/transfer-gateway-pg-$(printf '%s' "$ROOT" | md5sum | cut -c1-10)"
fi
pg_admin() {
  (cd "$ROOT/.stack" && runuser -u postgres -- "$PG_BIN/psql" -h "$PG_SOCK" -p "$PG_PORT" -U postgres -d postgres \
    -v ON_ERROR_STOP=1 -qAt -c "$1") >/dev/null
}

# Signal a process from a pidfile only if it is still the one we started.
stop_ours() {  # PIDFILE PATTERN
  local pid
  pid="$(cat "$1" 2>/dev/null || true)"
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 0
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$2" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}

cleanup() {
  local rc=$?
  set +e
  stop_ours "$RUN/drive.pid" "ssrf_battery.py drive"
  stop_ours "$RUN/gateway.pid" "$RUN/transfer-gateway"
  stop_ours "$RUN/net.pid" "ssrf_battery.py net"
  if [ -e "/run/netns/$NS" ]; then
    # Only this battery starts processes in its namespace.
    for pid in $(ip netns pids "$NS" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
    ip netns delete "$NS"
  fi
  rm -rf "/etc/netns/$NS"
  [ -n "${PG_PORT:-}" ] && pg_admin "DROP DATABASE IF EXISTS $DB WITH (FORCE)"
  rm -f "$RUN"/*.pid "$RUN/token"
  if [ "$rc" -eq 0 ]; then rm -rf "$RUN"; elif [ -d "$RUN" ]; then log "logs kept in $RUN"; fi
  exit "$rc"
}

# ---------------------------------------------------------------------------------------------
# The stack, the binary, a database of our own

bash "$ROOT/scripts/stack.sh" up >&2
set -a
# shellcheck disable=SC1091
. "$ROOT/.stack/env"
set +a
S3_HOSTPORT="${GATEWAY_S3_ENDPOINT#http://}"; S3_HOSTPORT="${S3_HOSTPORT%%/*}"
PG_HOSTPORT="${GATEWAY_DATABASE_URL##*@}"; PG_HOSTPORT="${PG_HOSTPORT%%/*}"
PG_PORT="${PG_HOSTPORT##*:}"

trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
( trap - EXIT; cleanup ) >/dev/null 2>&1 || true   # an interrupted earlier run
rm -rf "$RUN"
mkdir -p "$RUN/spool"
chmod 700 "$RUN"

if [ ! -x "$SOURCE_BIN" ]; then
  log "no $SOURCE_BIN: swift build -c release --product transfer-gateway"
  (cd "$ROOT" && swift build -c release --product transfer-gateway >&2)
fi
cp "$SOURCE_BIN" "$RUN/transfer-gateway"
BIN="$RUN/transfer-gateway"

pg_admin "CREATE DATABASE $DB OWNER gateway"

# ---------------------------------------------------------------------------------------------
# The namespace: decoy addresses on lo, hosts file, resolver

ip netns add "$NS"
ip -n "$NS" link set lo up
for a in 169.254.169.254 10.0.0.5 172.16.0.5 192.168.1.5 100.64.0.5 192.0.2.80 11.0.0.80; do
  ip -n "$NS" addr add "$a/32" dev lo
done
for a in fd00::5 fe80::5 fec0::5 ::a00:5 64:ff9b::a9fe:a9fe 2002:a9fe:a9fe::1; do
  ip -n "$NS" -6 addr add "$a/128" dev lo nodad
done

# `ip netns exec` mounts these over /etc/hosts and /etc/resolv.conf.
mkdir -p "/etc/netns/$NS"
cat >"/etc/netns/$NS/hosts" <<'EOF'
127.0.0.1       localhost
::1             localhost ip6-localhost ip6-loopback
192.0.2.80      allowed.test
11.0.0.80       public.test
169.254.169.254 metadata.test
10.0.0.5        internal.test
::1             v6loop.test
11.0.0.80       mixed.test
10.0.0.5        mixed.test
EOF
printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n' >"/etc/netns/$NS/resolv.conf"

# ---------------------------------------------------------------------------------------------
# Decoys, allowed servers, DNS, sniffer and relays (one process), then the gateway

python3 "$HELPER" net --netns "$NS" --dir "$RUN" --relay "$S3_HOSTPORT" --relay "$PG_HOSTPORT" \
  --infra "127.0.0.1:$GW_PORT" </dev/null >"$RUN/net.log" 2>&1 8>&- &
echo $! >"$RUN/net.pid"
for _ in $(seq 100); do [ -e "$RUN/net.ready" ] && break; kill -0 "$(cat "$RUN/net.pid")" 2>/dev/null || break; sleep 0.1; done
[ -e "$RUN/net.ready" ] || { cat "$RUN/net.log" >&2; die "the decoys did not start"; }
log "namespace $NS: $(cat "$RUN/net.ready")"

ALLOW="allowed.test:8080${SSRF_EXTRA_ALLOW_HOSTS:+,$SSRF_EXTRA_ALLOW_HOSTS}"
(umask 077 && "$BIN" token --sub alice --ttl 3600 >"$RUN/token")

ip netns exec "$NS" env -i PATH=/usr/bin:/bin \
  GATEWAY_HOST=127.0.0.1 GATEWAY_PORT="$GW_PORT" \
  GATEWAY_DATABASE_URL="${GATEWAY_DATABASE_URL%/*}/$DB" \
  GATEWAY_S3_ENDPOINT="$GATEWAY_S3_ENDPOINT" GATEWAY_S3_REGION="$GATEWAY_S3_REGION" \
  GATEWAY_S3_BUCKET="$GATEWAY_S3_BUCKET" GATEWAY_S3_ACCESS_KEY_ID="$GATEWAY_S3_ACCESS_KEY_ID" \
  GATEWAY_S3_SECRET_ACCESS_KEY="$GATEWAY_S3_SECRET_ACCESS_KEY" GATEWAY_JWT_SECRET="$GATEWAY_JWT_SECRET" \
  GATEWAY_IMPORT_ALLOW_HOSTS="$ALLOW" GATEWAY_SPOOL_DIR="$RUN/spool" GATEWAY_LOG_LEVEL=info \
  "$BIN" serve </dev/null >"$RUN/gateway.log" 2>&1 8>&- &
echo $! >"$RUN/gateway.pid"
ready=""
for _ in $(seq 300); do
  if ip netns exec "$NS" curl -sf --max-time 2 -o /dev/null "http://127.0.0.1:$GW_PORT/readyz"; then ready=1; break; fi
  kill -0 "$(cat "$RUN/gateway.pid")" 2>/dev/null || break
  sleep 0.1
done
[ -n "$ready" ] || { tail -n 20 "$RUN/gateway.log" >&2; die "the gateway in $NS did not get ready (PostgreSQL and S3 through the relays)"; }
log "gateway ready in $NS on 127.0.0.1:$GW_PORT (import allow-list: $ALLOW)"

# ---------------------------------------------------------------------------------------------
# The attempts

# In the background and waited for, so that a signal reaches the trap at once.
status=0
ip netns exec "$NS" python3 "$HELPER" drive --dir "$RUN" --gateway "http://127.0.0.1:$GW_PORT" \
  --token-file "$RUN/token" --run-id "$(date +%s)-$$" </dev/null >"$RUN/table.md" 8>&- &
echo $! >"$RUN/drive.pid"
wait "$(cat "$RUN/drive.pid")" || status=$?
cat "$RUN/table.md"
kill -0 "$(cat "$RUN/gateway.pid")" 2>/dev/null || { log "the gateway exited during the run"; status=1; }
if [ "$status" -eq 0 ]; then log "PASS: every attempt refused, no decoy contacted, controls completed"; else log "FAIL"; fi
exit "$status"
