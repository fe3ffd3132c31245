#!/usr/bin/env bash
# scripts/format-check.sh — the Swift sources are as `swift format` (the toolchain's swift-format,
# configured by .swift-format) leaves them. With --fix, rewrites them in place first.
# Exits non-zero, listing the first differences, when a file is not formatted.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
paths=(Package.swift Sources Tests examples/client-app/Package.swift examples/client-app/Sources)
if [ "${1:-}" = --fix ]; then
  swift format format --in-place --recursive --parallel "${paths[@]}"
fi
swift format lint --strict --recursive --parallel "${paths[@]}"
echo "format-check: every Swift file is formatted"
