#!/usr/bin/env bash
# bench/crc32c.sh — CRC-32C throughput in memory: the gateway's tg_crc32c (three lanes of the
# crc32 instruction side by side) beside the instruction one lane at a time, BENCH_ROUNDS (5)
# rounds of 1 GiB each, medians in GB/s. Prints; writes nothing to RESULTS.md.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=bench/lib.sh disable=SC1091
. "$ROOT/bench/lib.sh"
ROUNDS="${BENCH_ROUNDS:-5}"
BIN="$(mktemp /tmp/bench-crc32c.XXXXXX)"
trap 'rm -f "$BIN"' EXIT
cc -O2 -o "$BIN" "$ROOT/bench/crc32c.c" || die "cannot compile bench/crc32c.c (needs a C compiler and libssl-dev)"
one=""; three=""
for round in $(seq "$ROUNDS"); do
  read -r a b < <("$BIN")
  say "round $round: one lane $a GB/s, tg_crc32c $b GB/s"
  one+="$a"$'\n'; three+="$b"$'\n'
done
o="$(printf %s "$one" | median)"; t="$(printf %s "$three" | median)"
echo "one lane median $o GB/s; tg_crc32c median $t GB/s; $(awk -v o="$o" -v t="$t" 'BEGIN { printf "%.2f", t / o }')× ($ROUNDS rounds of 1 GiB)"
