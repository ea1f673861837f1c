"""pyproject.toml, the locks and the running environment agree with each other and the tree."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
LOCKS = [REPO / "requirements" / "cpu.lock", REPO / "requirements" / "pyserini.lock"]
# Installed by scripts/install.sh but outside the locks: the installer and citeval itself.
UNLOCKED = {"pip", "citeval"}
# Imported under ``except ImportError`` for an optional feature that the locked environment
# cannot hold (adapters requires an older transformers; citeval.models says so).
NOT_INSTALLABLE = {"adapters"}


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", line)
        if match:
            pins[normalize(match.group(1))] = match.group(2)
    return pins


def locked() -> dict[str, str]:
    return lock_pins(LOCKS[0]) | lock_pins(LOCKS[1])


def declared(*, runtime_only: bool = False) -> dict[str, Requirement]:
    """The requirements of pyproject.toml (dependencies and every extra) and of
    requirements/pyserini.in, by normalized name."""
    project = PYPROJECT["project"]
    lines = list(project["dependencies"])
    for extra, requirements in project["optional-dependencies"].items():
        if not (runtime_only and extra == "test"):
            lines += requirements
    lines += [
        line
        for line in (REPO / "requirements" / "pyserini.in").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    return {normalize(Requirement(line).name): Requirement(line) for line in lines}


def test_package_data_names_existing_files() -> None:
    setuptools = PYPROJECT["tool"]["setuptools"]
    where = REPO / setuptools["packages"]["find"]["where"][0]
    for package, patterns in setuptools.get("package-data", {}).items():
        for pattern in patterns:
            assert list((where / package).glob(pattern)), f"{package}: {pattern}"


def test_every_declared_requirement_is_an_exact_pin_the_lock_holds() -> None:
    pins = locked()
    gpu = {
        normalize(Requirement(r).name) for r in PYPROJECT["project"]["optional-dependencies"]["gpu"]
    }
    wrong = {}
    for name, requirement in declared().items():
        (specifier,) = requirement.specifier
        assert specifier.operator == "==", f"{requirement}: pin it exactly"
        if name in gpu:
            assert name not in pins, f"{name} is the GPU nodes' and has no place in the CPU lock"
        # A torch pin without a local label is satisfied by the lock's CPU build (+cpu).
        elif name not in pins or Version(pins[name]) not in requirement.specifier:
            wrong[name] = (str(requirement.specifier), pins.get(name))
    assert wrong == {}, "(declared, locked); regenerate the locks: python scripts/lock.py"


def lock_parents(path: Path) -> dict[str, set[str]]:
    """``{locked package: what requires it}`` from the lock's ``# via`` notes."""
    parents: dict[str, set[str]] = {}
    current = None
    for line in path.read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==", line)
        if match:
            current = normalize(match.group(1))
            parents[current] = set()
        elif current and (note := re.match(r"^\s+#\s+(?:via(?:\s+|$))?(.*)$", line)):
            parents[current] |= {note.group(1).strip()} - {""}
    return parents


def test_the_lock_is_generated_from_the_current_requirements() -> None:
    """A requirement added to or dropped from pyproject.toml without a refresh, or a package
    whose every dependent has left the lock, fails here (the lock's ``# via`` notes)."""
    parents = lock_parents(LOCKS[0])
    root = "citeval (pyproject.toml)"
    gpu = PYPROJECT["project"]["optional-dependencies"]["gpu"]
    wanted = declared().keys() - {normalize(Requirement(r).name) for r in gpu} - {"pyserini"}
    assert {name for name, via in parents.items() if root in via} == wanted
    orphans = {
        name: via for name, via in parents.items() if not via or not via - {root} <= parents.keys()
    }
    assert orphans == {}, "regenerate the locks: python scripts/lock.py"


def test_every_locked_package_carries_a_hash() -> None:
    for path in LOCKS:
        entries = re.split(r"\n(?=[A-Za-z0-9])", path.read_text())
        for entry in entries:
            if re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]*==", entry):
                assert "--hash=sha256:" in entry, f"{path.name}: {entry.splitlines()[0]}"


def test_the_lock_holds_the_cpu_build_of_torch() -> None:
    pins = locked()
    assert pins["torch"].endswith("+cpu")
    assert not [name for name in pins if name.startswith(("nvidia-", "cuda-", "triton"))]


def test_the_installed_environment_is_the_lock() -> None:
    """What scripts/install.sh installed, and nothing else: an unpinned, missing or drifted
    package fails here."""
    installed = {
        normalize(d.metadata["Name"]): d.version for d in importlib.metadata.distributions()
    }
    for name in UNLOCKED:
        installed.pop(name, None)
    pins = locked()
    difference = {
        name: (installed.get(name), pins.get(name))
        for name in installed.keys() | pins.keys()
        if installed.get(name) != pins.get(name)
    }
    assert difference == {}, "(installed, locked) differ; reinstall with: bash scripts/install.sh"


def imported_distributions(root: Path) -> dict[str, set[str]]:
    """``{distribution: files}`` of the third-party modules imported under ``root``,
    optional (``except ImportError``) imports included."""
    # The tests and benchmarks import each other's modules by name (sys.path).
    local = {p.stem for folder in ("tests", "benchmarks") for p in (REPO / folder).rglob("*.py")}
    mapping = importlib.metadata.packages_distributions()
    found: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if (
                    top in sys.stdlib_module_names
                    or top in local
                    or top in {"citeval", "__future__"}
                ):
                    continue
                distributions = mapping.get(top, [top] if top in NOT_INSTALLABLE else [])
                assert distributions, f"{path.relative_to(REPO)}: no distribution provides {top}"
                for distribution in distributions:
                    found.setdefault(normalize(distribution), set()).add(
                        str(path.relative_to(REPO))
                    )
    return found


@pytest.mark.parametrize(
    ("root", "runtime_only"),
    [("workflow/citeval", True), ("examples", True), ("tests", False), ("benchmarks", False)],
)
def test_every_imported_package_is_declared(root: str, runtime_only: bool) -> None:
    """A package the code imports is in pyproject.toml itself, not just pulled in by another:
    the package (outside the ``test`` extra) and the examples need it at run time."""
    names = declared(runtime_only=runtime_only).keys() | NOT_INSTALLABLE
    undeclared = {
        distribution: sorted(files)
        for distribution, files in imported_distributions(REPO / root).items()
        if distribution not in names
    }
    assert undeclared == {}, f"imported under {root}/ but not declared in pyproject.toml"
