"""Regenerates the locks from the declared requirements, then the envs' pins from the locks.

    python scripts/lock.py                         # keep every pin that still resolves
    python scripts/lock.py --upgrade-package numpy  # any other option goes to uv pip compile

requirements/cpu.lock: pyproject.toml's dependencies and every extra but ``gpu``, each
transitive package pinned with its hashes. requirements/pyserini.lock: pyserini alone (it is
installed with --no-deps). Then every pip package of envs/*.yaml is pinned to the locks'
version. uv keeps the pins already in a lock unless told to upgrade, so a refresh changes
only what the declared requirements force.

torch's CPU build is not on PyPI (PyPI's Linux wheel is the CUDA build, which pulls 18
nvidia-* and cuda-* packages); PyTorch's CPU index serves it. TORCH_WHEELS names another
place holding that wheel (a folder or a page of links) for a machine that cannot reach it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
UV_VERSION = "0.13.8"
# The platform the CPU environment is installed on (README: Debian, Python 3.11, x86-64).
TARGET = ["--python-version", "3.11", "--python-platform", "x86_64-manylinux_2_28"]
TORCH_WHEELS = os.environ.get("TORCH_WHEELS", "https://download.pytorch.org/whl/cpu/torch/")
CPU_LOCK = REPO / "requirements" / "cpu.lock"
PYSERINI_LOCK = REPO / "requirements" / "pyserini.lock"
# A package line of an env's pip list: indentation and dash, name, optional pin, comment.
ENV_LINE = re.compile(r"^(\s*- )([A-Za-z0-9][A-Za-z0-9._-]*)(==\S+)?(\s*(?:#.*)?)$")


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_lock(path: Path) -> dict[str, str]:
    """``{normalized name: version}`` of a lock's pins."""
    pins = {}
    for line in path.read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", line)
        if match:
            pins[normalize(match.group(1))] = match.group(2)
    return pins


def uv() -> str:
    found = shutil.which("uv")
    if found is None:
        sys.exit(f"uv not found; install it with: pip install uv=={UV_VERSION}")
    version = subprocess.run([found, "--version"], capture_output=True, text=True).stdout
    if version.split()[1:2] != [UV_VERSION]:
        # Another uv may resolve or format differently; the lock's diff would then show
        # more than the requirements' change.
        sys.exit(f"uv {UV_VERSION} is needed (found {version.strip()})")
    return found


def compile_locks(options: list[str]) -> None:
    extras = sorted(
        tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    )
    extras.remove("gpu")
    common = ["--generate-hashes", *TARGET, "--custom-compile-command", "python scripts/lock.py"]
    command = [uv(), "pip", "compile", "--quiet", *common, *options]
    subprocess.run(
        [
            *command,
            "pyproject.toml",
            *(f"--extra={extra}" for extra in extras),
            "--find-links",
            TORCH_WHEELS,
            "--output-file",
            str(CPU_LOCK.relative_to(REPO)),
        ],
        cwd=REPO,
        check=True,
    )
    subprocess.run(
        [
            *command,
            "requirements/pyserini.in",
            "--no-deps",
            "--output-file",
            str(PYSERINI_LOCK.relative_to(REPO)),
        ],
        cwd=REPO,
        check=True,
    )


def pin_envs() -> None:
    pins = read_lock(CPU_LOCK) | read_lock(PYSERINI_LOCK)
    for env in sorted((REPO / "envs").glob("*.yaml")):
        lines = []
        for line in env.read_text().splitlines():
            match = ENV_LINE.match(line)
            if match and match.group(2) not in ("python", "pip"):
                indent, name, _, rest = match.groups()
                if normalize(name) not in pins:
                    sys.exit(f"{env.name}: {name} is in no lock; declare it in pyproject.toml")
                line = f"{indent}{name}=={pins[normalize(name)]}{rest}"
            lines.append(line)
        env.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    compile_locks(sys.argv[1:])
    pin_envs()
