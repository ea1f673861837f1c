"""pyproject.toml and the requirements files agree with each other and with the tree."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def requirement_names(lines: list[str]) -> set[str]:
    """Normalized distribution names of requirement lines (comments and blanks skipped)."""
    names = set()
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if line:
            names.add(re.split(r"[<>=!~\[; ]", line, maxsplit=1)[0].lower().replace("_", "-"))
    return names


def test_package_data_names_existing_files() -> None:
    setuptools = PYPROJECT["tool"]["setuptools"]
    where = REPO / setuptools["packages"]["find"]["where"][0]
    for package, patterns in setuptools.get("package-data", {}).items():
        for pattern in patterns:
            assert list((where / package).glob(pattern)), f"{package}: {pattern}"


def test_test_only_tools_are_pinned_in_requirements_test_and_the_test_extra() -> None:
    runtime = requirement_names((REPO / "requirements.txt").read_text().splitlines())
    test_pins = requirement_names((REPO / "requirements-test.txt").read_text().splitlines())
    extras = PYPROJECT["project"]["optional-dependencies"]
    test_extra = requirement_names(extras["test"])
    assert test_pins <= test_extra
    assert not test_pins & runtime
    assert {"rank-bm25", "bm25s"} <= test_pins
    for name, requirements in extras.items():
        if name != "test":
            assert not requirement_names(requirements) & test_pins, name
    assert not requirement_names(PYPROJECT["project"]["dependencies"]) & test_pins
