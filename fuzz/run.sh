#!/usr/bin/env bash
# fuzz/run.sh [SECONDS] — libFuzzer (with AddressSanitizer) on the HTTP head parser and chunked
# decoder: builds fuzz/HTTPParserFuzz.swift with Sources/HTTPServer into .build/fuzz/http-parser
# and runs it SECONDS (60) on a copy of the seed corpus fuzz/corpus (new finds go to
# .build/fuzz/corpus). A crash, hang (over 10 s) or leak stops it with a non-zero exit and leaves
# the input in .build/fuzz/ (crash-*, timeout-*, leak-*): turn each into a test case.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
SECONDS_TO_RUN="${1:-60}"
OUT="$ROOT/.build/fuzz"
mkdir -p "$OUT/corpus"
cp -n fuzz/corpus/* "$OUT/corpus/" 2>/dev/null || true
swiftc -sanitize=fuzzer,address -parse-as-library -O -g -module-name HTTPServer \
  -I Sources/CSystem $(find Sources/HTTPServer -name "*.swift") fuzz/HTTPParserFuzz.swift -o "$OUT/http-parser"
cd "$OUT"
SWIFT_BACKTRACE=enable=no ./http-parser -max_total_time="$SECONDS_TO_RUN" -timeout=10 -rss_limit_mb=2048 \
  -max_len=8192 -print_final_stats=1 corpus
