"""Command-line words the rules write: settings flags from the config, and the argument
lists the plan's decisions turn into (the reranking trade-off's entries, a trained
encoder's sampler flags). The plan decides; this module only spells it for a shell."""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from typing import Any

from citeval.config import Config
from citeval.settings import StageSettings


def shell_words(words: Iterable[Any]) -> str:
    """Words for a shell command line, each quoted."""
    return " ".join(shlex.quote(str(word)) for word in words)


def settings_flags(config: Config, stage: StageSettings, **values: Any) -> str:
    """A job's settings flags, shell-quoted (``values``: settings the plan derives)."""
    return shell_words(stage.argv(config, **values))


def tradeoff_arguments(tradeoff: Any) -> str:
    """``rerank tradeoff``'s first stages (each with its jobs' timing records) and its
    entries, from a :class:`citeval.plan.Tradeoff`."""
    words: list[Any] = []
    for first_stage, timings in tradeoff.first_stage_timings.items():
        words += ["--first-stage", first_stage, *timings]
    for row in tradeoff.rows:
        words += ["--entry", row.first_stage, row.k, row.metrics]
        words += [row.timing] if row.timing else []
    return shell_words(words)


def fit_sampler_arguments(prefetcher: bool, anchor_papers: str) -> list[str]:
    """``train fit`` flags that follow from the sampler: a prefetcher's anchors are
    contexts, and it trains with in-batch negatives."""
    return ["--loss", "in_batch", "--anchor-papers", anchor_papers] if prefetcher else []


def fill_command(template: str, **values: str | int | Sequence[str]) -> str:
    """A user's command (systems.*.command) with its placeholders filled: each path
    shell-quoted, a list of paths as quoted words. The config check has made sure the
    template names no other placeholder."""
    words = {
        name: shell_words(value) if isinstance(value, list | tuple) else shlex.quote(str(value))
        for name, value in values.items()
    }
    return template.format(**words)


def trained_arguments(trained_models: dict[str, str]) -> str:
    """``--trained NAME TRAINING_JSON`` for each trained model (name -> model folder)."""
    return shell_words(
        word
        for name, folder in trained_models.items()
        for word in ("--trained", name, f"{folder}/training.json")
    )
