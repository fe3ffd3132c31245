#!/usr/bin/env bash
# scripts/bucket-cors-check.sh — runs the bucket CORS blocks of docs/browsers-and-cors.md (the AWS,
# R2 and MinIO ones, each marked `<!-- bucket-cors: NAME -->`) as written, against the
# local SeaweedFS standing in for each provider: `transfer-gateway` is the build under test
# (GATEWAY_BIN, default the debug build), `aws` the stack's AWS CLI (.venv), $R2_ENDPOINT and
# $MINIO_ENDPOINT (and AWS_ENDPOINT_URL for the AWS block) the local S3. Each block works on a
# scratch bucket of its own run, in a scratch directory; afterwards the bucket must hold the
# rule the block's last command put (its origins, ETag exposed). Exits non-zero on any failure.
#
# Uses the local stack (scripts/stack.sh up), or the one whose env file STACK_ENV names.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BIN="${GATEWAY_BIN:-$ROOT/.build/debug/transfer-gateway}"
BIN="$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")"
if [ -n "${STACK_ENV:-}" ]; then
  # shellcheck disable=SC1090
  . "$STACK_ENV"
  AWS="${AWS:-$(dirname "$STACK_ENV")/../.venv/bin/aws}"
else
  bash scripts/stack.sh up >&2
  # shellcheck disable=SC1091
  . .stack/env
  AWS="${AWS:-$ROOT/.venv/bin/aws}"
fi
[ -x "$BIN" ] || { echo "[bucket-cors] no gateway binary at $BIN" >&2; exit 1; }
[ -x "$AWS" ] || { echo "[bucket-cors] no AWS CLI at $AWS" >&2; exit 1; }

WORK="$(mktemp -d /tmp/bucket-cors-check.XXXXXX)"
BUCKET="cors-check-$$"
mkdir -p "$WORK/bin"
ln -s "$BIN" "$WORK/bin/transfer-gateway"
ln -s "$AWS" "$WORK/bin/aws"
s3() { "$AWS" --endpoint-url "$GATEWAY_S3_ENDPOINT" s3api "$@"; }
cleanup() {
  s3 delete-bucket --bucket "$BUCKET" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
s3 create-bucket --bucket "$BUCKET" >/dev/null

# The fenced block after the marker, as the document has it.
DOC=docs/browsers-and-cors.md
block() { awk -v mark="<!-- bucket-cors: $1 -->" '
  $0 == mark { found = 1; next }
  found && /^```/ { if (inside) exit; inside = 1; next }
  inside { print }' "$DOC"; }

status=0
check() {  # NAME EXPECTED_ORIGIN
  local name="$1" origin="$2" script rule
  script="$(block "$name")"
  [ -n "$script" ] || { echo "[bucket-cors] $DOC has no block $name" >&2; status=1; return; }
  s3 delete-bucket-cors --bucket "$BUCKET" >/dev/null 2>&1 || true
  rm -f "$WORK"/*.json
  if ! (cd "$WORK" && env PATH="$WORK/bin:$PATH" GATEWAY_S3_BUCKET="$BUCKET" \
        GATEWAY_CORS_ORIGINS="http://localhost:5173,http://127.0.0.1:5173" \
        R2_ENDPOINT="$GATEWAY_S3_ENDPOINT" MINIO_ENDPOINT="$GATEWAY_S3_ENDPOINT" AWS_ENDPOINT_URL="$GATEWAY_S3_ENDPOINT" \
        bash -euo pipefail -c "$script" >"$WORK/out.log" 2>&1); then
    echo "[bucket-cors] the $name block failed:" >&2; cat "$WORK/out.log" >&2; status=1; return
  fi
  rule="$(s3 get-bucket-cors --bucket "$BUCKET" --output json)"
  if printf '%s' "$rule" | python3 -c '
import json, sys
rules = json.load(sys.stdin)["CORSRules"]
assert len(rules) == 1 and sys.argv[1] in rules[0]["AllowedOrigins"] and "ETag" in rules[0]["ExposeHeaders"], rules
assert set(rules[0]["AllowedMethods"]) == {"GET", "HEAD", "PUT", "POST", "DELETE"}, rules' "$origin"; then
    echo "[bucket-cors] $name: ok"
  else
    echo "[bucket-cors] $name: the bucket holds another rule: $rule" >&2; status=1
  fi
}
check aws https://app.example.com
check r2 http://localhost:5173
check minio http://127.0.0.1:5173
exit "$status"
