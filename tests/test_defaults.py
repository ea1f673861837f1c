"""Each default exists once: in the schema. The config structs, the stage commands and the
library hold no second copy (the issue: defaults written 2-4 times had drifted)."""

from __future__ import annotations

import argparse
import ast
import importlib
from pathlib import Path

import msgspec
import pytest

from citeval import config as config_module
from citeval import stages
from citeval.__main__ import STAGES
from citeval.config import load_config_file, schema_default
from citeval.settings import StageSettings

PACKAGE = Path(config_module.__file__).parent
ENTRIES = {name: value for name, value in vars(stages).items() if isinstance(value, StageSettings)}
SETTINGS_GROUP = "settings (config keys; defaults from the schema)"


def _sections():
    return [
        kind
        for kind in vars(config_module).values()
        if isinstance(kind, type)
        and issubclass(kind, config_module.Section)
        and kind is not config_module.Section
    ]


@pytest.mark.parametrize("section", _sections(), ids=lambda kind: kind.__name__)
def test_config_structs_declare_no_default(section):
    defaults = [
        f.name for f in msgspec.structs.fields(section) if f.default is not msgspec.NODEFAULT
    ]
    assert defaults == []


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_stage_flags_default_to_the_schema(name):
    parser = argparse.ArgumentParser()
    entry = ENTRIES[name]
    entry.add_to(parser)
    for action in parser._actions:
        key = next((k for k in entry.keys if entry.dest(k) == action.dest), None)
        if key is None:
            continue
        try:
            expected = schema_default(key)
        except KeyError:
            assert action.required, f"{key} has no schema default, so its flag is required"
        else:
            assert action.default == expected, key


# ACM-CR has no synthetic corpus, so no synth job.
COMMAND_LINES = [
    (name, configs)
    for configs in (["config/config.yaml"], ["config/config.yaml", "config/acm-cr.yaml"])
    for name in sorted(ENTRIES)
    if not (name == "SYNTH" and len(configs) > 1)
]


@pytest.mark.parametrize(("name", "configs"), COMMAND_LINES)
def test_the_rules_command_lines_parse_back_to_the_config(name, configs):
    config = load_config_file(*configs)
    entry = ENTRIES[name]
    # A key of one entry among many (fusion.*.k) takes the value the plan derives; here a
    # value of its type within its bounds, other than its default where it can be.
    per_entry = {k: _other_than_default(k) for k in entry.keys if "*" in k}
    values = {entry.dest(k): value for k, value in per_entry.items()}
    parser = argparse.ArgumentParser()
    entry.add_to(parser)
    parsed = entry.values(parser.parse_args(entry.argv(config, **values)))
    for key in entry.keys:
        if "*" in key:
            assert parsed[key] == per_entry[key]
            continue
        value = config
        for part in key.split("."):
            value = getattr(value, "import_" if part == "import" else part)
        assert parsed[key] == value, key


def _other_than_default(key):
    default = schema_default(key)
    return default / 2 if isinstance(default, float) else default + 7


def _parsers(parser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def _setting_defaults():
    found: dict[str, list] = {}
    for entry in ENTRIES.values():
        for key in entry.keys:
            try:
                found.setdefault(f"--{entry.flag(key)}", []).append(schema_default(key))
            except KeyError:
                found.setdefault(f"--{entry.flag(key)}", [])
    return found


SETTING_DEFAULTS = _setting_defaults()
SETTING_FLAGS = set(SETTING_DEFAULTS)


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_commands_take_config_settings_only_from_the_stage_table(stage):
    """A hand-written flag named like a setting would be a second default."""
    cli = importlib.import_module(f"citeval.{stage}.cli")
    for parser in _parsers(cli.build_parser()):
        for group in parser._action_groups:
            if group.title == SETTINGS_GROUP:
                continue
            for action in group._group_actions:
                for flag in SETTING_FLAGS.intersection(action.option_strings):
                    assert action.default not in SETTING_DEFAULTS[flag], (
                        f"{parser.prog}: {flag} repeats a schema default by hand"
                    )


def _defaults_in(tree):
    """(name, default, line) of every parameter and class field with a literal default."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            positional = [*args.posonlyargs, *args.args]
            pairs = list(
                zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True)
            )
            pairs += [
                (a, d)
                for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
                if d is not None
            ]
            for arg, default in pairs:
                if isinstance(default, ast.Constant):
                    yield arg.arg, default.value, default.lineno
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if (
                    isinstance(item, ast.AnnAssign)
                    and isinstance(item.target, ast.Name)
                    and isinstance(item.value, ast.Constant)
                ):
                    yield item.target.id, item.value.value, item.lineno


def _schema_defaults():
    """Setting name -> its schema defaults (the same name may sit in several sections)."""
    found: dict[str, list] = {}
    for entry in ENTRIES.values():
        for key in entry.keys:
            try:
                value = schema_default(key)
            except KeyError:
                continue
            for name in {key.rsplit(".", 1)[-1], entry.dest(key)}:
                found.setdefault(name, []).append(value)
    return found


def test_library_code_repeats_no_schema_default():
    """A parameter named after a setting whose literal default equals the schema's is the
    schema's default written a second time: take it from the caller instead."""
    defaults = _schema_defaults()
    repeated = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for name, value, line in _defaults_in(tree):
            if value is None or (isinstance(value, bool) and name not in defaults):
                continue
            if any(
                value == default and type(value) is type(default)
                for default in defaults.get(name, [])
            ):
                repeated.append(f"{path.relative_to(PACKAGE)}:{line} {name}={value!r}")
    assert repeated == []
