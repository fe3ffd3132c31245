#!/usr/bin/env bash
# bench/http.sh — HTTP benchmark: the gateway's GET /healthz against nginx answering `return 200`,
# both on loopback, with wrk (2 threads, 64 connections, --latency). Installs wrk and nginx from
# Debian when missing (the system nginx service is never started: nginx runs from its own config
# in a temp dir), builds the release gateway, starts the local stack (scripts/stack.sh up) and the
# gateway on 127.0.0.1:18090 (its log on, to a file: that is what production pays), nginx on
# 127.0.0.1:18081. Samples the gateway's RSS (VmRSS) once a second while wrk runs against it.
# Prints a markdown table and writes it into bench/RESULTS.md, section "## HTTP: /healthz vs nginx"
# (other sections are kept). Stops everything it started on exit.
#
#   bench/http.sh                    BENCH_ROUNDS rounds (5), each wrk against the gateway, the
#                                    gateway with its request log off (GATEWAY_LOG_LEVEL=warn, on
#                                    18089: what logging costs) and nginx, the order rotated each round
#   BENCH_DURATION=30s bench/http.sh wrk duration per run (15s)
#   BENCH_SOAK=60 bench/http.sh      memory run: one 60 s wrk against the gateway, RSS every 5 s
#   BENCH_TARGETS=nginx bench/http.sh  only the nginx half (no Swift build needed)
#   BENCH_SKIP_BUILD=1               use the existing .build/release/transfer-gateway
#   BENCH_GATEWAY_BIN=/path/to/bin   benchmark that binary instead (no build)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

DURATION="${BENCH_DURATION:-15s}"
ROUNDS="${BENCH_ROUNDS:-5}"
SOAK="${BENCH_SOAK:-}"
TARGETS="${BENCH_TARGETS:-gateway quiet nginx}"
GW_PORT=18090
QUIET_PORT=18089
NGINX_PORT=18081
THREADS=2
CONNECTIONS=64
RESULTS="$ROOT/bench/RESULTS.md"
SECTION="## HTTP: /healthz vs nginx"
GW_BIN="${BENCH_GATEWAY_BIN:-$ROOT/.build/release/transfer-gateway}"

[ -n "$SOAK" ] && TARGETS=gateway
want() { case " $TARGETS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

TMP="$(mktemp -d /tmp/bench-http.XXXXXX)"
PIDS=()
STACK_STARTED=""
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ -n "$STACK_STARTED" ]; then bash "$ROOT/scripts/stack.sh" down >/dev/null 2>&1 || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

http_code() { curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$1" || true; }

# wait_http URL PID LOG: poll until URL answers 200, bounded; fail if PID exits.
wait_http() {
  local deadline=$((SECONDS + 60))
  until [ "$(http_code "$1")" = 200 ]; do
    kill -0 "$2" 2>/dev/null || { tail -n 20 "$3" >&2 || true; die "$1: server exited, see above"; }
    [ $SECONDS -lt $deadline ] || die "$1 did not answer 200 within 60 s"
    sleep 0.2
  done
}

# ---------------------------------------------------------------------------------------------
# Tools

install_tools() {
  local missing=()
  command -v wrk >/dev/null || missing+=(wrk)
  if want nginx; then command -v nginx >/dev/null || missing+=(nginx); fi
  install_packages "${missing[@]}"
}

# ---------------------------------------------------------------------------------------------
# Servers

start_nginx() {
  port_free "$NGINX_PORT" || die "port $NGINX_PORT is in use"
  mkdir -p "$TMP/nginx"
  cat >"$TMP/nginx/nginx.conf" <<CONF
daemon off;
worker_processes auto;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  client_body_temp_path $TMP/nginx/body;
  proxy_temp_path $TMP/nginx/proxy;
  fastcgi_temp_path $TMP/nginx/fastcgi;
  uwsgi_temp_path $TMP/nginx/uwsgi;
  scgi_temp_path $TMP/nginx/scgi;
  server {
    listen 127.0.0.1:$NGINX_PORT;
    location / {
      default_type application/json;
      return 200 '{"status":"ok"}';
    }
  }
}
CONF
  nginx -t -q -e "$TMP/nginx/error.log" -c "$TMP/nginx/nginx.conf" -p "$TMP/nginx" 2>"$TMP/nginx/test.log" ||
    { cat "$TMP/nginx/test.log" >&2; die "nginx config test failed"; }
  nginx -e "$TMP/nginx/error.log" -c "$TMP/nginx/nginx.conf" -p "$TMP/nginx" </dev/null >"$TMP/nginx/stdout.log" 2>&1 &
  NGINX_PID=$!
  PIDS+=("$NGINX_PID")
  wait_http "http://127.0.0.1:$NGINX_PORT/healthz" "$NGINX_PID" "$TMP/nginx/error.log"
  say "nginx $(nginx -v 2>&1 | sed 's/.*nginx\///') on 127.0.0.1:$NGINX_PORT (pid $NGINX_PID)"
}



# start_gateway PORT LOG_LEVEL NAME: sets GW_PID (or QUIET_PID for the quiet one).
start_gateway() {
  port_free "$1" || die "port $1 is in use"
  (
    # shellcheck disable=SC1091
    . "$ROOT/.stack/env"
    export GATEWAY_HOST=127.0.0.1 GATEWAY_PORT="$1" GATEWAY_SPOOL_DIR="$TMP/spool-$3" GATEWAY_LOG_LEVEL="$2"
    exec "$GW_BIN" serve
  ) </dev/null >"$TMP/$3.log" 2>&1 &
  local pid=$!
  PIDS+=("$pid")
  if [ "$3" = gateway ]; then GW_PID=$pid; else QUIET_PID=$pid; fi
  wait_http "http://127.0.0.1:$1/healthz" "$pid" "$TMP/$3.log"
  say "$3 on 127.0.0.1:$1 (pid $pid, log level $2, log $TMP/$3.log)"
}

rss_mb() {  # VmRSS of PID in MiB, one decimal
  awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status" 2>/dev/null || echo "?"
}

# sample_rss PID INTERVAL FILE: append "seconds-since-start rss-MiB" lines until killed.
sample_rss() {
  local start=$SECONDS
  while kill -0 "$1" 2>/dev/null; do
    echo "$((SECONDS - start)) $(rss_mb "$1")" >>"$3"
    sleep "$2"
  done
}

# ---------------------------------------------------------------------------------------------
# wrk

WRK_CMD_TEMPLATE="wrk -t$THREADS -c$CONNECTIONS -d$DURATION --latency http://127.0.0.1:PORT/healthz"

# run_wrk PORT DURATION OUTFILE
run_wrk() {
  wrk -t"$THREADS" -c"$CONNECTIONS" -d"$2" --latency "http://127.0.0.1:$1/healthz" >"$3" 2>&1 ||
    { cat "$3" >&2; die "wrk failed"; }
}

# parse_wrk FILE -> "req_per_s p99_ms errors"
parse_wrk() {
  awk '
    function ms(v) {
      if (v ~ /us$/) { sub(/us$/, "", v); return v / 1000 }
      if (v ~ /ms$/) { sub(/ms$/, "", v); return v + 0 }
      if (v ~ /m$/)  { sub(/m$/, "", v);  return v * 60000 }
      if (v ~ /s$/)  { sub(/s$/, "", v);  return v * 1000 }
      return v + 0
    }
    $1 == "99%"           { p99 = ms($2) }
    /^Requests\/sec:/     { rps = $2 }
    /Non-2xx or 3xx/      { errors += $NF }
    /Socket errors:/      { gsub(/,/, ""); errors += $4 + $6 + $8 + $10 }
    END { printf "%.0f %.3f %d\n", rps, p99, errors }
  ' "$1"
}


# ---------------------------------------------------------------------------------------------
# RESULTS.md: replace the part between this mode's markers inside the section, keep the rest.

write_results() {  # MODE(rounds|soak) FILE-WITH-MARKDOWN
  python3 - "$RESULTS" "$SECTION" "$1" "$2" <<'PY'
import os, re, sys
path, section, mode, body_file = sys.argv[1:5]
body = open(body_file).read().rstrip("\n")
begin, end = f"<!-- bench:{mode}:begin -->", f"<!-- bench:{mode}:end -->"
block = f"{begin}\n{body}\n{end}"
text = open(path).read() if os.path.exists(path) else "# Benchmark results\n"
lines = text.split("\n")
try:
    start = next(i for i, l in enumerate(lines) if l.strip() == section)
    stop = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    sec = "\n".join(lines[start:stop]).rstrip("\n")
except StopIteration:
    start = stop = len(lines)
    sec = section
if begin in sec and end in sec:
    sec = re.sub(re.escape(begin) + r".*?" + re.escape(end), lambda m: block, sec, flags=re.S)
elif mode == "rounds" and "<!-- bench:soak:begin -->" in sec:
    sec = sec.replace("<!-- bench:soak:begin -->", block + "\n\n<!-- bench:soak:begin -->", 1)
else:
    sec = sec + "\n\n" + block
before = "\n".join(lines[:start]).rstrip("\n")
after = "\n".join(lines[stop:]).strip("\n")
out = (before + "\n\n" if before else "") + sec + "\n" + ("\n" + after + "\n" if after else "")
open(path, "w").write(out)
PY
}

machine_line() {
  printf '%s, %s cores, %s; wrk %s' "$(date -u '+%Y-%m-%d %H:%M UTC')" "$(nproc)" "$(uname -r)" \
    "$(wrk -v 2>&1 | awk 'NR==1 { print $2 }' || true)"
}

# ---------------------------------------------------------------------------------------------

run_rounds() {
  local r target port out rps p99 errs rss
  : >"$TMP/rows"
  : >"$TMP/rss-samples"
  if want gateway; then
    RSS_START="$(rss_mb "$GW_PID")"
    say "gateway RSS at start: $RSS_START MiB"
  fi
  local -a order
  read -r -a order <<<"$TARGETS"
  for r in $(seq 1 "$ROUNDS"); do
    # The order turns each round, so no target always runs first (or right after another).
    local shift=$(( (r - 1) % ${#order[@]} ))
    for target in "${order[@]:$shift}" "${order[@]:0:$shift}"; do
      want "$target" || continue
      case "$target" in
        gateway) port=$GW_PORT ;;
        quiet) port=$QUIET_PORT ;;
        *) port=$NGINX_PORT ;;
      esac
      out="$TMP/wrk-$target-$r.txt"
      say "round $r/$ROUNDS: $target ($DURATION)"
      local sampler=""
      if [ "$target" = gateway ]; then
        sample_rss "$GW_PID" 1 "$TMP/rss-samples" &
        sampler=$!
        PIDS+=("$sampler")
      fi
      run_wrk "$port" "$DURATION" "$out"
      rss="-"
      if [ -n "$sampler" ]; then
        kill "$sampler" 2>/dev/null || true
        kill -0 "$GW_PID" 2>/dev/null || { tail -n 20 "$TMP/gateway.log" >&2; die "the gateway died during round $r"; }
        rss="$(rss_mb "$GW_PID")"
        echo "x $rss" >>"$TMP/rss-samples"
      fi
      read -r rps p99 errs < <(parse_wrk "$out")
      echo "$r $target $rps $p99 $errs $rss" >>"$TMP/rows"
      say "  $rps req/s, p99 $p99 ms, errors $errs, RSS ${rss} MiB"
    done
  done

  local md="$TMP/rounds.md"
  {
    echo "### Throughput: $ROUNDS rounds"
    echo
    echo "$(machine_line). Command: \`$WRK_CMD_TEMPLATE\`, $ROUNDS rounds of $(echo "$TARGETS" | xargs | sed 's/ /, /g'), the order turned each round. Script: \`bench/http.sh\`."
    if want nginx; then
      echo "nginx $(nginx -v 2>&1 | sed 's/.*nginx\///') \`return 200\` (worker_processes auto, access_log off, keepalive_requests 1000000) on port $NGINX_PORT."
    fi
    if want gateway; then
      echo "gateway: \`transfer-gateway serve\` (default log level: a JSON line per request, to a file) on port $GW_PORT."
      if want quiet; then echo "quiet: the same binary with \`GATEWAY_LOG_LEVEL=warn\` (no request lines) on port $QUIET_PORT."; fi
    else
      echo "Gateway not run (BENCH_TARGETS=$TARGETS)."
    fi
    echo
    echo "| round | target | req/s | p99 (ms) | errors | gateway RSS after (MiB) |"
    echo "|---|---|---:|---:|---:|---:|"
    while read -r r target rps p99 errs rss; do
      echo "| $r | $target | $rps | $p99 | $errs | $rss |"
    done <"$TMP/rows"
    echo
    local gw_rps="" gw_p99="" ng_rps="" ng_p99=""
    if want gateway; then
      gw_rps="$(awk '$2=="gateway"{print $3}' "$TMP/rows" | median)"
      gw_p99="$(awk '$2=="gateway"{print $4}' "$TMP/rows" | median)"
      echo "- gateway median: **$gw_rps req/s**, p99 **$gw_p99 ms**"
    fi
    if want nginx; then
      ng_rps="$(awk '$2=="nginx"{print $3}' "$TMP/rows" | median)"
      ng_p99="$(awk '$2=="nginx"{print $4}' "$TMP/rows" | median)"
      echo "- nginx median: **$ng_rps req/s**, p99 **$ng_p99 ms**"
    fi
    if want gateway && want nginx; then
      echo "- gateway/nginx: throughput **$(awk -v a="$gw_rps" -v b="$ng_rps" 'BEGIN { printf "%.2f", a / b }')**," \
        "p99 **$(awk -v a="$gw_p99" -v b="$ng_p99" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')**"
    fi
    if want quiet; then
      local q_rps q_p99
      q_rps="$(awk '$2=="quiet"{print $3}' "$TMP/rows" | median)"
      q_p99="$(awk '$2=="quiet"{print $4}' "$TMP/rows" | median)"
      echo "- quiet (request log off) median: **$q_rps req/s**, p99 **$q_p99 ms**"
      if want nginx; then echo "- quiet/nginx: throughput **$(awk -v a="$q_rps" -v b="$ng_rps" 'BEGIN { printf "%.2f", a / b }')**"; fi
      if want gateway; then echo "- the request log costs **$(awk -v a="$gw_rps" -v b="$q_rps" 'BEGIN { printf "%.1f", (1 - a / b) * 100 }')%** of throughput (gateway/quiet $(awk -v a="$gw_rps" -v b="$q_rps" 'BEGIN { printf "%.2f", a / b }'))"; fi
    fi
    if want gateway; then
      local peak
      peak="$(awk '{ print $2 }' "$TMP/rss-samples" | sort -g | tail -n1)"
      echo "- gateway RSS: $RSS_START MiB at start, after each round $(awk '$2=="gateway"{printf "%s%s", sep, $6; sep=", "}' "$TMP/rows") MiB, peak $peak MiB (sampled every second under load)"
    fi
  } >"$md"
  echo
  cat "$md"
  write_results rounds "$md"
}

run_soak() {
  local secs="${SOAK%s}" out="$TMP/wrk-soak.txt" rps p99 errs
  : >"$TMP/soak-rss"
  local rss0
  rss0="$(rss_mb "$GW_PID")"
  say "soak: wrk against the gateway for ${secs}s, RSS every 5 s (start: $rss0 MiB)"
  sample_rss "$GW_PID" 5 "$TMP/soak-rss" &
  local sampler=$!
  PIDS+=("$sampler")
  run_wrk "$GW_PORT" "${secs}s" "$out"
  kill "$sampler" 2>/dev/null || true
  kill -0 "$GW_PID" 2>/dev/null || { tail -n 20 "$TMP/gateway.log" >&2; die "the gateway died during the soak"; }
  local rss_end
  rss_end="$(rss_mb "$GW_PID")"
  read -r rps p99 errs < <(parse_wrk "$out")
  local md="$TMP/soak.md"
  {
    echo "### Memory soak"
    echo
    echo "$(machine_line). Command: \`BENCH_SOAK=$secs bench/http.sh\` =" \
      "\`wrk -t$THREADS -c$CONNECTIONS -d${secs}s --latency http://127.0.0.1:$GW_PORT/healthz\`:" \
      "$rps req/s, p99 $p99 ms, errors $errs."
    echo
    echo "| t (s) | gateway RSS (MiB) |"
    echo "|---:|---:|"
    echo "| before | $rss0 |"
    while read -r t rss; do echo "| $t | $rss |"; done <"$TMP/soak-rss"
    echo "| after | $rss_end |"
  } >"$md"
  echo
  cat "$md"
  write_results soak "$md"
}

# ---------------------------------------------------------------------------------------------

install_tools
if want gateway || want quiet; then
  build_gateway 'BENCH_TARGETS=nginx runs the nginx half alone'
  start_stack
fi
if want gateway; then start_gateway "$GW_PORT" info gateway; fi
if want quiet; then start_gateway "$QUIET_PORT" warn quiet; fi
if want nginx; then start_nginx; fi

if [ -n "$SOAK" ]; then run_soak; else run_rounds; fi
say "results written to bench/RESULTS.md"
