#!/usr/bin/env bash
# scripts/k8s-check.sh — the files for running several instances hold together, in seconds, with
# no cluster and no Docker: every manifest under docker/k8s/ (extras/ included) validated strictly
# (unknown fields refused) against the schemas of Kubernetes K8S_VERSION (default 1.37.0) by
# kubernetes-validate, then scripts/k8s_check.py: kustomization.yaml lists every manifest; the
# Deployment's probes, security context, spool emptyDir and memory limit fit the settings its
# ConfigMap gives; its preStop + GATEWAY_SHUTDOWN_GRACE + a margin fit
# terminationGracePeriodSeconds; docker/compose.scale.yaml has three gateway services, an nginx
# and a one-shot migrate, and docker/nginx-scale.conf balances over those gateways round robin
# without buffering. When nginx is installed, `nginx -t` on that config too (gateway names
# replaced by 127.0.0.1 in a copy). Runs in CI (.ci/run).
#
# kubernetes-validate is pinned in scripts/requirements.txt; when <repo>/.venv lacks that version
# it is installed there alone (scripts/stack.sh installs the rest of the file), under the stack's
# lock so it never runs beside stack.sh's pip. Exits non-zero on any failure.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="$ROOT/.venv"
K8S_VERSION="${K8S_VERSION:-1.37.0}"
log() { printf '[k8s] %s\n' "$*" >&2; }

install_validator() {
  local pin want have
  pin="$(grep -E '^kubernetes-validate==' scripts/requirements.txt)"
  want="${pin#*==}"
  have="$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("kubernetes-validate"))' 2>/dev/null || true)"
  [ "$have" = "$want" ] && return 0
  # A venv needs python3 with venv/ensurepip, as scripts/stack.sh installs it.
  if ! command -v python3 >/dev/null || ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
    [ "$(id -u)" -eq 0 ] || { log "missing packages: python3 python3-venv (install them as root)"; exit 1; }
    log "apt-get install python3 python3-venv"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null
    apt-get install -y -q --no-install-recommends python3 python3-venv </dev/null >/dev/null
  fi
  mkdir -p "$ROOT/.stack"
  (
    flock 9
    if ! "$VENV/bin/python" -c '' 2>/dev/null; then
      log "creating $VENV"
      rm -rf "$VENV"
      python3 -m venv "$VENV"
    fi
    log "pip install $pin"
    "$VENV/bin/pip" install -q --disable-pip-version-check "$pin" </dev/null
  ) 9>"$ROOT/.stack/.lock"
}

install_validator

status=0
mapfile -t manifests < <(find docker/k8s -name '*.yaml' ! -name kustomization.yaml | sort)
log "kubernetes-validate --strict, Kubernetes $K8S_VERSION: ${#manifests[@]} files"
"$VENV/bin/kubernetes-validate" --strict --kubernetes-version "$K8S_VERSION" "${manifests[@]}" || status=1

log "scripts/k8s_check.py"
"$VENV/bin/python" scripts/k8s_check.py || status=1

if command -v nginx >/dev/null; then
  work="$(mktemp -d /tmp/k8s-check.XXXXXX)"
  sed -E 's/\bgateway-[0-9]+:([0-9]+)/127.0.0.1:\1/' docker/nginx-scale.conf >"$work/nginx.conf"
  log "nginx -t docker/nginx-scale.conf"
  nginx -t -q -c "$work/nginx.conf" -e /dev/stderr || status=1
  rm -rf "$work"
else
  log "nginx is not installed: nginx -t skipped (apt-get install nginx to include it)"
fi

if [ "$status" -eq 0 ]; then log "passed"; else log "FAILED"; fi
exit "$status"
