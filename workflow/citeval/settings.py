"""Which config settings each stage command takes, as command-line flags.

A stage's settings are config keys (``prefilter.min_citations``). :class:`StageSettings`
turns one list of keys into both sides of a command line, so they cannot drift apart:

- :meth:`StageSettings.add_to` gives the stage's argparse parser one flag per key, typed
  from :class:`citeval.config.Config` and defaulting to the schema's default (a key the
  schema gives no default, such as ``seed``, is a required flag);
- :meth:`StageSettings.argv` writes those flags from a loaded config, for the rules.

Values: ``none`` stands for null, a boolean is ``--x``/``--no-x``, a list is the flag
followed by its items.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
from msgspec import inspect as mi

from citeval import config as config_module
from citeval.cli import memory_size, positive_int, probability

NONE = "none"

# Flags whose values argparse checks more closely than their type says.
_ARGPARSE_TYPES = {
    "jobs.memory_limit": memory_size,
    "tables.significance.permutations": positive_int,
    "tables.significance.alpha": probability,
}


@functools.cache
def _config_type() -> mi.StructType:
    return mi.type_info(config_module.Config)


def key_type(key: str) -> mi.Type:
    """The type of a dotted config key (``models.*.pooling`` inside the registry)."""
    node: mi.Type = _config_type()
    for part in key.split("."):
        node = _without_none(node)[0]
        if part == "*" and isinstance(node, mi.DictType | mi.ListType):
            node = node.value_type if isinstance(node, mi.DictType) else node.item_type
            continue
        if not isinstance(node, mi.StructType):
            raise KeyError(f"no config key {key!r}")
        by_name = {f.encode_name: f.type for f in node.fields}
        if part not in by_name:
            raise KeyError(f"no config key {key!r}")
        node = by_name[part]
    return node


def _without_none(kind: mi.Type) -> tuple[mi.Type, bool]:
    if isinstance(kind, mi.UnionType):
        types = [member for member in kind.types if not isinstance(member, mi.NoneType)]
        nullable = len(types) < len(kind.types)
        if len(types) == 1:
            return types[0], nullable
        return mi.UnionType(tuple(types)), nullable
    return kind, False


def _scalar(kind: mi.Type) -> tuple[Any, list[Any] | None]:
    """(argparse type, choices) of a scalar type."""
    if isinstance(kind, mi.LiteralType):
        values = list(kind.values)
        return type(values[0]), values
    for info, python in ((mi.IntType, int), (mi.FloatType, float), (mi.StrType, str)):
        if isinstance(kind, info):
            return python, None
    raise TypeError(f"no command-line form for {kind}")


_BOUND_CHECKS = {
    "minimum": (lambda value, bound: value >= bound, ">="),
    "maximum": (lambda value, bound: value <= bound, "<="),
    "exclusiveMinimum": (lambda value, bound: value > bound, ">"),
    "exclusiveMaximum": (lambda value, bound: value < bound, "<"),
}


def _bounded(convert: Any, bounds: Mapping[str, Any]) -> Any:
    """An argparse type that also holds the schema's bounds."""

    def parse(text: str) -> Any:
        value = convert(text)
        for name, bound in bounds.items():
            holds, sign = _BOUND_CHECKS[name]
            if not holds(value, bound):
                raise argparse.ArgumentTypeError(f"must be {sign} {bound}, got {value}")
        return value

    parse.__name__ = getattr(convert, "__name__", "value")
    return parse


def _nullable(convert: Any) -> Any:
    def parse(text: str) -> Any:
        return None if text == NONE else convert(text)

    parse.__name__ = getattr(convert, "__name__", "value")
    return parse


def _get(config: config_module.Config, key: str) -> Any:
    value: Any = config
    for part in key.split("."):
        value = getattr(value, "import_" if part == "import" else part)
    return value


def _words(value: Any) -> list[str]:
    if value is None:
        return [NONE]
    if isinstance(value, list | tuple):
        return [str(item) for item in value]
    return [str(value)]


@dataclass(frozen=True)
class StageSettings:
    """The config keys a stage command takes; ``flags`` renames a key's flag.

    A flag is named after the key's last part (``sampling.query_year`` -> ``--query-year``)
    unless ``flags`` names it otherwise.
    """

    keys: tuple[str, ...]
    flags: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, *keys: str | tuple[str, str]) -> StageSettings:
        """Settings from keys, or (key, flag name) pairs."""
        names = tuple(key if isinstance(key, str) else key[0] for key in keys)
        flags = {key[0]: key[1] for key in keys if not isinstance(key, str)}
        return cls(names, flags)

    @classmethod
    def section(cls, section: str, *, exclude: Sequence[str] = ()) -> StageSettings:
        """Every scalar and list key of a config section (nested sections left out)."""
        kind, _ = _without_none(key_type(section))
        if not isinstance(kind, mi.StructType):
            raise KeyError(f"{section} is not a config section")
        keys = tuple(
            f"{section}.{item.encode_name}"
            for item in kind.fields
            if item.encode_name not in exclude
            and not isinstance(_without_none(item.type)[0], mi.StructType | mi.DictType)
        )
        return cls(keys)

    def __add__(self, other: StageSettings) -> StageSettings:
        return StageSettings((*self.keys, *other.keys), {**self.flags, **other.flags})

    def flag(self, key: str) -> str:
        return self.flags.get(key, key.rsplit(".", 1)[-1].replace("_", "-"))

    def dest(self, key: str) -> str:
        return self.flag(key).replace("-", "_")

    def add_to(self, parser: argparse.ArgumentParser | Any) -> None:
        """One flag per key, defaulting to the schema's default."""
        group = parser.add_argument_group("settings (config keys; defaults from the schema)")
        for key in self.keys:
            kind, nullable = _without_none(key_type(key))
            options: dict[str, Any] = {"dest": self.dest(key)}
            try:
                options["default"] = config_module.schema_default(key)
            except KeyError:
                options["required"] = True
            if isinstance(kind, mi.BoolType):
                options["action"] = argparse.BooleanOptionalAction
            elif isinstance(kind, mi.ListType):
                options["type"], options["choices"] = _scalar(kind.item_type)
                options["nargs"] = "*"
            elif isinstance(kind, mi.UnionType):
                # A keyword or a list (mdcr.model_selection: auto | [names]).
                options["nargs"] = "+"
                options["type"] = str
            else:
                options["type"], options["choices"] = _scalar(kind)
            if key in _ARGPARSE_TYPES:
                options["type"] = _ARGPARSE_TYPES[key]
            bounds = config_module.schema_bounds(key)
            if bounds and "type" in options:
                options["type"] = _bounded(options["type"], bounds)
            if nullable and "type" in options:
                options["type"] = _nullable(options["type"])
            if options.get("choices") is None:
                options.pop("choices", None)
            elif nullable:
                options["choices"] = [*options["choices"], None]
            description = config_module.schema_description(key)
            default = options.get("default", "required")
            options["help"] = f"{key}: {description} (default: {default})".replace("%", "%%")
            group.add_argument(f"--{self.flag(key)}", **options)

    def argv(self, config: config_module.Config, **values: Any) -> list[str]:
        """The flags of this stage from a loaded config; ``values`` replace a key's value
        by its flag's dest name (for settings the plan derives, such as metric cutoffs)."""
        unknown = set(values) - {self.dest(key) for key in self.keys}
        if unknown:
            raise KeyError(f"not settings of this stage: {sorted(unknown)}")
        words: list[str] = []
        for key in self.keys:
            dest = self.dest(key)
            if dest not in values and "*" in key:
                raise KeyError(f"{key} names one entry of many: give its value")
            value = values[dest] if dest in values else _get(config, key)
            if isinstance(value, msgspec.Struct):
                raise TypeError(f"{key} is a section, not a setting")
            if isinstance(value, bool):
                words.append(f"--{'' if value else 'no-'}{self.flag(key)}")
            else:
                words += [f"--{self.flag(key)}", *_words(value)]
        return words

    def values(self, args: argparse.Namespace) -> dict[str, Any]:
        """The parsed settings by key, with a keyword-or-list setting decoded."""
        parsed = {}
        for key in self.keys:
            value = getattr(args, self.dest(key))
            kind, _ = _without_none(key_type(key))
            if isinstance(kind, mi.UnionType) and isinstance(value, list):
                keywords = [
                    word
                    for member in kind.types
                    if isinstance(member, mi.LiteralType)
                    for word in member.values
                ]
                if len(value) == 1 and value[0] in keywords:
                    value = value[0]
            parsed[key] = value
        return parsed
