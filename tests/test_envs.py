"""Per-rule conda environments (envs/*.yaml, for ``--sdm conda``) hold what the rules run.

For every rule, the ``python -m citeval.<module> [<command>]`` it runs is followed through
the package's imports (module level, and inside the named command's handler of a
command-line module), the third-party packages reached are mapped to their distributions,
and each must be listed in the rule's env; every env package must be pinned to the lock's
version (requirements/*.lock; scripts/lock.py writes those pins).
Imports guarded by ``except ImportError`` are optional and skipped. An import inside a
library function (deferred so that a job starts fast) is not followed: counting every
function's imports would credit each command with every other command's packages.
"""

from __future__ import annotations

import ast
import importlib.metadata
import itertools
import re
import sys
from functools import cache
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "workflow"
# A rule at any indentation (rules inside ``if`` blocks too); a ``use rule`` block ends the
# rule before it and runs its base rule's command, checked there.
RULE = re.compile(r"^[ \t]*(?:rule (\w+)|checkpoint (\w+)|use rule \w+ as (\w+) with):", re.M)
COMMAND = re.compile(r"python -m (citeval(?:\.\w+)*)(?: ([a-z][a-z-]*))?")
WORD = re.compile(r"--[a-z-]+ ([a-z][a-z0-9-]*)\b")
CONDA = re.compile(r'conda:\s*\n\s*"\.\./(envs/[\w.-]+\.yaml)"')


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def rule_commands() -> list[tuple[str, str, str, str | None, frozenset[str]]]:
    """(rule, env file, citeval module, command or None, literal option values) for every
    rule's command."""
    found = []
    for path in sorted((REPO / "rules").glob("*.smk")):
        text = path.read_text()
        starts = [match.start() for match in RULE.finditer(text)] + [len(text)]
        for start, end in itertools.pairwise(starts):
            block = text[start:end]
            name = next(group for group in RULE.match(block).groups() if group)
            env = CONDA.search(block)
            words = frozenset(WORD.findall(block))
            for module, command in COMMAND.findall(block):
                found.append((name, env.group(1) if env else "", module, command or None, words))
    return found


def module_path(module: str) -> Path:
    base = PACKAGE.joinpath(*module.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def _optional(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """True when the import sits in a ``try`` that handles ImportError."""
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.Try):
            for handler in node.handlers:
                names = (
                    [handler.type] if not isinstance(handler.type, ast.Tuple) else handler.type.elts
                )
                if any(
                    isinstance(n, ast.Name) and n.id in ("ImportError", "ModuleNotFoundError")
                    for n in names
                ):
                    return True
    return False


@cache
def imports_of(
    module: str, handler: str | None = None, words: frozenset[str] = frozenset()
) -> frozenset[str]:
    """Absolute module names ``module`` imports at module level, plus those inside the
    function ``handler`` (a command's handler); there, an import under an ``if`` that
    compares with a string literal counts only when the rule's command holds that literal
    (``if args.kind == "dense"`` for ``--kind dense``)."""
    tree = ast.parse(module_path(module).read_text())
    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    package = module if module_path(module).name == "__init__.py" else module.rpartition(".")[0]
    names = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Import | ast.ImportFrom) or _optional(node, parents):
            continue
        ancestors = list(_ancestors(node, parents))
        functions = [p for p in ancestors if isinstance(p, ast.FunctionDef | ast.AsyncFunctionDef)]
        if functions and (functions[-1].name != handler or not _branch_taken(node, parents, words)):
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif node.level:
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            target = f"{base}.{node.module}" if node.module else base
            names.update(
                f"{target}.{a.name}" for a in node.names if _is_module(f"{target}.{a.name}")
            )
            names.add(target)
        else:
            names.add(node.module)
            names.update(
                f"{node.module}.{a.name}"
                for a in node.names
                if _is_module(f"{node.module}.{a.name}")
            )
    return frozenset(names)


def _branch_taken(node: ast.AST, parents: dict[ast.AST, ast.AST], words: frozenset[str]) -> bool:
    """False when ``node`` sits in the body of an ``if`` comparing with a string literal
    the command does not hold (an ``elif`` or ``else`` branch is judged by its own test)."""
    while node in parents:
        parent = parents[node]
        if (
            isinstance(parent, ast.If)
            and node in parent.body
            and isinstance(parent.test, ast.Compare)
        ):
            literals = [c.value for c in ast.walk(parent.test) if isinstance(c, ast.Constant)]
            if any(isinstance(v, str) and v not in words for v in literals):
                return False
        node = parent
    return True


def _ancestors(node: ast.AST, parents: dict[ast.AST, ast.AST]):
    while node in parents:
        node = parents[node]
        yield node


def _is_module(name: str) -> bool:
    return name.startswith("citeval") and (
        module_path(name).is_file() or PACKAGE.joinpath(*name.split(".")).is_dir()
    )


def third_party_of(
    module: str, command: str | None, words: frozenset[str] = frozenset()
) -> set[str]:
    """Top-level third-party names a rule's command reaches through citeval's imports."""
    entry = [module]
    if (PACKAGE.joinpath(*module.split(".")) / "cli.py").is_file():
        entry = [f"{module}.cli"]
    seen: set[str] = set()
    outside: set[str] = set()
    handler = f"{command.replace('-', '_')}_command" if command else None
    stack = [(name, handler) for name in entry]
    while stack:
        name, handler = stack.pop()
        if (name, handler) in seen:
            continue
        seen.add((name, handler))
        for imported in imports_of(name, handler, words if handler else frozenset()):
            top = imported.split(".")[0]
            if top == "citeval":
                if _is_module(imported):
                    stack.append((imported, None))
            elif top not in sys.stdlib_module_names and top != "__future__":
                outside.add(top)
    return outside


@cache
def distributions_of(top: str) -> list[str]:
    return [normalize(d) for d in importlib.metadata.packages_distributions().get(top, [])]


def env_packages(env: str) -> dict[str, str | None]:
    """``{distribution: pin or None}`` of an env file's pip list."""
    spec = yaml.safe_load((REPO / env).read_text())
    pip = next(item["pip"] for item in spec["dependencies"] if isinstance(item, dict))
    packages = {}
    for line in pip:
        if line.startswith("-"):  # a pip option (the CPU index of torch)
            continue
        name, _, version = line.partition("==")
        packages[normalize(name)] = version or None
    return packages


def lock_pins() -> dict[str, str]:
    pins = {}
    for lock in ("cpu.lock", "pyserini.lock"):
        for line in (REPO / "requirements" / lock).read_text().splitlines():
            match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", line)
            if match:
                pins[normalize(match.group(1))] = match.group(2)
    return pins


COMMANDS = rule_commands()


def test_every_rule_with_a_command_names_an_env():
    assert len(COMMANDS) >= 25
    assert [(rule, env) for rule, env, *_ in COMMANDS if not env] == []


@pytest.mark.parametrize(
    ("rule", "env", "module", "command", "words"), COMMANDS, ids=[c[0] for c in COMMANDS]
)
def test_the_rules_env_holds_every_package_its_command_imports(rule, env, module, command, words):
    listed = env_packages(env)
    missing = {}
    for top in sorted(third_party_of(module, command, words)):
        distributions = distributions_of(top)
        assert distributions, f"{rule}: no installed distribution provides {top!r}"
        if not any(d in listed for d in distributions):
            missing[top] = distributions
    assert missing == {}, f"{rule} ({module} {command or ''}) imports packages {env} lacks"


@pytest.mark.parametrize("env", sorted(p.name for p in (REPO / "envs").glob("*.yaml")))
def test_env_pins_are_the_locks_pins(env):
    pins = lock_pins()
    listed = env_packages(f"envs/{env}")
    wrong = {
        name: (version, pins.get(name))
        for name, version in listed.items()
        if version is None or version != pins.get(name)
    }
    assert wrong == {}, f"envs/{env}: (env pin, lock pin); rewrite them: python scripts/lock.py"


def test_an_env_that_installs_torch_names_the_index_of_its_cpu_build():
    for path in sorted((REPO / "envs").glob("*.yaml")):
        spec = yaml.safe_load(path.read_text())
        pip = next(item["pip"] for item in spec["dependencies"] if isinstance(item, dict))
        if "torch" in env_packages(f"envs/{path.name}"):
            assert "--extra-index-url https://download.pytorch.org/whl/cpu" in pip, path.name


def test_core_env_holds_no_package_the_core_rules_leave_unused():
    used = set()
    for _, env, module, command, words in COMMANDS:
        if env == "envs/core.yaml":
            used |= {
                d for top in third_party_of(module, command, words) for d in distributions_of(top)
            }
    # Imported inside the plotting functions (citeval.plots.figures, citeval.rerank.tradeoff)
    # and the LTR commands (citeval.ltr.model), which the analysis does not follow.
    deferred = {"matplotlib", "lightgbm"}
    assert set(env_packages("envs/core.yaml")) - used - deferred == set()


def test_the_analysis_sees_a_known_import():
    # faiss_index imports faiss at module level; retrieve reaches it through faiss_index.
    assert "faiss" in third_party_of("citeval.retrieve", None)
    # mdcr score imports torch only in its dense and cross-encoder branches.
    assert "torch" in third_party_of("citeval.mdcr", "score", frozenset({"dense"}))
    assert "torch" not in third_party_of("citeval.mdcr", "score", frozenset({"bm25"}))
