#!/usr/bin/env bash
# Creates .venv and installs exactly the locked environment (requirements/*.lock, generated
# by scripts/lock.py; docs/environment.md). Safe to re-run: pip skips what is already
# installed, and what the locks no longer hold is removed. Usage: bash scripts/install.sh
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
TORCH=$(mktemp)
trap 'rm -f "$TORCH"' EXIT
# The lock's torch is the CPU build, which only PyTorch's index serves; it goes alone so that
# the other packages are looked up on PyPI only (each extra index is asked for every package).
awk '/^torch==/ { keep = 1 } keep { print } keep && !/\\$/ { exit }' requirements/cpu.lock \
    >"$TORCH"
$PIP install --quiet --require-hashes --no-deps \
    --extra-index-url "${TORCH_INDEX:-https://download.pytorch.org/whl/cpu}" -r "$TORCH"
$PIP install --quiet --require-hashes -r requirements/cpu.lock
# pyserini's declared dependencies add ~76 packages (a web server, an MCP server, a pinned
# pytest) that its Lucene path never imports; the packages that path does import are in
# the lock (the `pyserini` extra).
$PIP install --quiet --require-hashes --no-deps -r requirements/pyserini.lock
# setuptools is in the lock; building citeval with it keeps the install from fetching an
# unpinned one.
$PIP install --quiet --no-deps --no-build-isolation -e .
# A package an older lock held, or one installed by hand, would make the environment differ
# from the lock (tests/test_packaging.py fails on it).
STALE=$(.venv/bin/python - <<'PY'
import importlib.metadata, re

def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()

locked = {"pip", "citeval"}
for path in ("requirements/cpu.lock", "requirements/pyserini.lock"):
    for line in open(path):
        match = re.match(r"([A-Za-z0-9][A-Za-z0-9._-]*)==", line)
        if match:
            locked.add(normalize(match.group(1)))
names = {normalize(d.metadata["Name"]) for d in importlib.metadata.distributions()}
print(" ".join(sorted(names - locked)))
PY
)
if [ -n "$STALE" ]; then
    # shellcheck disable=SC2086
    $PIP uninstall --quiet --yes $STALE
fi
echo "citeval installed in .venv (activate with: source .venv/bin/activate)"
