"""The package's house rules, read from its source with ``ast``.

Private names stay in their module. A name that starts with one underscore (``_helper``,
``_LIMIT``; a dunder such as ``__doc__`` is not private) belongs to the module that
defines it, and no other module of citeval imports it: not with ``from citeval.x import
_name``, nor as an attribute of an imported citeval module (``x._name``). The rule is per
module, not per package: modules of one package share through public names too, so
whatever another module relies on is part of its module's public face, and a module can
rename or drop its private names without looking elsewhere. A helper that several stage
packages need lives in a lower-level module (``citeval.draws``, ``citeval.memory``, ...)
and is public there.

Stage packages have small faces. The ``__init__.py`` of every package under citeval holds
a docstring, imports and ``__all__``, nothing else: the code lives in modules by concern,
and ``__all__`` lists exactly the names the package re-exports.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import citeval

PACKAGE = Path(citeval.__file__).parent


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}
STAGE_PACKAGES = sorted(path.parent.name for path in PACKAGE.glob("*/__init__.py"))


def absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The module a ``from ... import`` reads, relative imports resolved."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.endswith("__")


def private_imports(module: str, path: Path) -> list[str]:
    """Where ``module`` reaches for another module's private name."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    found = []
    aliases: dict[str, str] = {}  # local name -> the citeval module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = absolute(node, module, is_package)
            if source.partition(".")[0] != "citeval":
                continue
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                if submodule in MODULES:
                    aliases[alias.asname or alias.name] = submodule
                if is_private(alias.name):
                    found.append(f"{module}:{node.lineno} from {source} import {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.partition(".")[0] != "citeval":
                    continue
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:  # ``import citeval.x.y`` binds ``citeval``
                    aliases["citeval"] = "citeval"
                if any(is_private(part) for part in alias.name.split(".")):
                    found.append(f"{module}:{node.lineno} import {alias.name}")
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and is_private(node.attr)):
            continue
        dotted = []
        value = node.value
        while isinstance(value, ast.Attribute):
            dotted.append(value.attr)
            value = value.value
        if isinstance(value, ast.Name) and value.id in aliases:
            target = ".".join([aliases[value.id], *reversed(dotted)])
            if target in MODULES and target != module:
                found.append(f"{module}:{node.lineno} {target}.{node.attr}")
    return found


def test_no_module_imports_another_modules_private_name():
    found = [hit for module, path in MODULES.items() for hit in private_imports(module, path)]
    assert found == []


def test_the_rule_sees_every_way_of_reaching_a_private_name(tmp_path):
    """The checker itself, on a module that breaks the rule each way it looks for."""
    source = tmp_path / "probe.py"
    source.write_text(
        "import citeval.sample\n"
        "import citeval.sample as sampling\n"
        "from citeval import config\n"
        "from citeval.config import _schema, load_config\n"
        "from citeval.sample import __doc__ as doc\n"
        "a = config._schema_node\n"
        "b = citeval.sample.citations._sql_string\n"
        "c = sampling.__doc__\n"
        "d = load_config._private\n"  # a function's attribute, not a module's
    )
    assert [hit.split(" ", 1)[1] for hit in private_imports("citeval.probe", source)] == [
        "from citeval.config import _schema",
        "citeval.config._schema_node",
        "citeval.sample.citations._sql_string",
    ]


def face_problems(path: Path) -> list[str]:
    """What an ``__init__.py`` holds besides a docstring, imports and ``__all__``, and how
    its ``__all__`` differs from the names it imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    problems = []
    imported: set[str] = set()
    exported: list[str] | None = None
    for index, node in enumerate(tree.body):
        if (
            index == 0
            and isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            continue
        if isinstance(node, ast.ImportFrom | ast.Import):
            if not (isinstance(node, ast.ImportFrom) and node.module == "__future__"):
                imported.update((a.asname or a.name).partition(".")[0] for a in node.names)
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if (
            isinstance(node, ast.Assign | ast.AnnAssign)
            and [getattr(t, "id", None) for t in targets] == ["__all__"]
            and isinstance(node.value, ast.List | ast.Tuple)
        ):
            exported = [ast.literal_eval(item) for item in node.value.elts]
            continue
        problems.append(f"line {node.lineno}: {type(node).__name__}")
    if imported and exported is None:
        problems.append("imports without __all__")
    elif exported is not None and set(exported) != imported:
        problems.append(
            f"__all__ {sorted(set(exported) ^ imported)} differ from the names imported"
        )
    return problems


@pytest.mark.parametrize("package", STAGE_PACKAGES)
def test_a_stage_package_init_only_re_exports(package):
    assert face_problems(PACKAGE / package / "__init__.py") == []


def test_the_face_check_sees_code(tmp_path):
    init = tmp_path / "__init__.py"
    init.write_text(
        '"""Doc."""\n\nfrom __future__ import annotations\n\nfrom x import a, b\n\n'
        '__all__ = ["a"]\n\nLIMIT = 3\n\n\ndef helper():\n    return a\n'
    )
    assert face_problems(init) == [
        "line 9: Assign",
        "line 12: FunctionDef",
        "__all__ ['b'] differ from the names imported",
    ]
    init.write_text('"""Only a docstring."""\n')
    assert face_problems(init) == []
