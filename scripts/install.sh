#!/usr/bin/env bash
# Creates .venv and installs the pinned environment. Safe to re-run: pip skips what is
# already installed. Usage: bash scripts/install.sh
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
"$PYTHON" - <<'PY'
import sys
if sys.version_info[:2] < (3, 11):
    sys.exit(f"citeval needs Python >= 3.11 (found {sys.version.split()[0]})")
PY

[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
PIP=".venv/bin/python -m pip"
# The CPU build of torch goes first, and stays pinned as a constraint for everything after,
# so that no transitive requirement pulls the multi-GB CUDA build.
$PIP install --quiet torch==2.13.0
CONSTRAINT=$(mktemp)
trap 'rm -f "$CONSTRAINT"' EXIT
echo "torch==2.13.0" >"$CONSTRAINT"
$PIP install --quiet -c "$CONSTRAINT" -r requirements.txt -r requirements-test.txt
# pyserini's declared dependencies add ~76 packages (a web server, an MCP server, a pinned
# pytest) that its Lucene path never imports; the packages that path does import are in
# requirements.txt.
$PIP install --quiet --no-deps pyserini==1.6.0
$PIP install --quiet --no-deps -e .
echo "citeval installed in .venv (activate with: source .venv/bin/activate)"
