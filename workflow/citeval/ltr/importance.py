"""The LTR models' feature importances (gain): a table and a bar chart per task.

Gain is the total loss reduction of the splits on a feature over the kept trees, so it
reads as "how much of the ranking this feature decides"; each model's gains are also
given as shares of its total, which compare across models.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from citeval.errors import InputDataError
from citeval.io import write_text
from citeval.plots.figures import pyplot, save_png


def read_gains(name: str, path: str | os.PathLike) -> tuple[str, dict[str, float]]:
    try:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
        gains = record["importance_gain"]
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as error:
        raise InputDataError(
            f"cannot read the feature importances ({error!r})",
            path=str(path),
            field="importance_gain",
        ) from None
    return name, {feature: float(value) for feature, value in gains.items()}


def write_importance(
    models: Sequence[tuple[str, dict[str, float]]], table: Path, plot: Path, title: str
) -> None:
    """``<table>.tsv`` and ``.md`` (model, feature, gain, share) and the bar chart."""
    rows = []
    for name, gains in models:
        total = sum(gains.values()) or 1.0
        for feature, gain in sorted(gains.items(), key=lambda item: (-item[1], item[0])):
            rows.append([name, feature, f"{gain:.3f}", f"{100 * gain / total:.1f}"])
    header = ["model", "feature", "gain", "share %"]
    write_text(
        "\n".join("\t".join(row) for row in [header, *rows]) + "\n", table.with_suffix(".tsv")
    )
    markdown = [
        f"### {title}",
        "",
        "| " + " | ".join(header) + " |",
        "|---|---|---:|---:|",
        *("| " + " | ".join(row) + " |" for row in rows),
        "",
        "Gain: the total loss reduction of the kept trees' splits on the feature; share: its "
        "part of the model's total (docs/ltr.md describes each feature).",
    ]
    write_text("\n".join(markdown) + "\n", table.with_suffix(".md"))
    draw(models, plot, title)


def draw(models: Sequence[tuple[str, dict[str, float]]], path: Path, title: str) -> None:
    plt = pyplot()
    height = max(2.5, 0.28 * max(len(gains) for _, gains in models) + 1)
    fig, axes = plt.subplots(1, len(models), figsize=(5 * len(models), height), squeeze=False)
    for axis, (name, gains) in zip(axes[0], models, strict=True):
        total = sum(gains.values()) or 1.0
        ordered = sorted(gains.items(), key=lambda item: (item[1], item[0]))
        axis.barh([f for f, _ in ordered], [100 * g / total for _, g in ordered], color="C0")
        axis.set_xlabel("share of gain (%)")
        axis.set_title(name, fontsize=10)
        axis.tick_params(axis="y", labelsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    save_png(fig, path)
