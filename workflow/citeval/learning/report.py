"""Did each trained model learn? Its validation curve, tabulated and drawn.

Every trained model (the reranker, the local reranker, the graph-trained encoders, the
local prefetcher) keeps a validation curve in its ``training.json``
(:mod:`citeval.curves`). This stage reads them all and writes:

* ``tables/learning.{tsv,md}``: per model, the held-out queries, validation MAP at step 0
  and at the kept checkpoint, the kept step, and whether it learned; the Markdown names
  every model that did not, so its rows in the other tables are not read as results;
* a figure (``plots/learning.png``): each model's validation MAP against the step, with its step-0
  value (the starting point: chance for a new head, the base for a fine-tuned encoder)
  as a dashed line and the kept checkpoint marked.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from citeval.curves import LEARNED_ALPHA, LEARNED_MARGIN, Curve, read_curve
from citeval.errors import InputDataError
from citeval.io import write_text
from citeval.plots.figures import pyplot, save_png

TABLE = "learning"


@dataclass(frozen=True)
class Trained:
    name: str
    curve: Curve


def read_trained(name: str, path: str | os.PathLike) -> Trained:
    """A model's curve from its ``training.json`` (an error names the file and field)."""
    try:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise InputDataError(f"cannot read a training record ({error})", path=str(path)) from None
    validation = record.get("validation")
    if not isinstance(validation, dict):
        raise InputDataError(
            "no validation curve (a model trained before curves were recorded: retrain it)",
            path=str(path),
            field="validation",
        )
    try:
        return Trained(name, read_curve(validation))
    except (KeyError, TypeError, ValueError) as error:
        raise InputDataError(
            f"malformed validation curve ({error!r})", path=str(path), field="validation"
        ) from None


def add_trained_argument(parser: argparse.ArgumentParser) -> None:
    """``--trained NAME TRAINING_JSON``: the run's trained models, so that a table with
    rows of one that did not learn says so."""
    parser.add_argument(
        "--trained",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "TRAINING_JSON"),
        help="a trained model and its training.json (repeatable)",
    )


def not_learned(trained: Sequence[Sequence[str]]) -> dict[str, str]:
    """``{name: verdict}`` of the ``(name, training.json)`` models that did not learn."""
    models = [read_trained(name, path) for name, path in trained]
    return {m.name: m.curve.verdict(m.name) for m in models if not m.curve.learned}


def not_learned_notes(models: Sequence[Trained]) -> list[str]:
    """One note per model that did not learn."""
    return [f"**Not learned.** {m.curve.verdict(m.name)}" for m in models if not m.curve.learned]


def write_learning(models: Sequence[Trained], tables_dir: Path, plot: Path) -> None:
    header = ["model", "held-out queries", "MAP at step 0", "kept MAP", "kept step", "learned"]
    rows = [
        [
            m.name,
            str(m.curve.queries),
            f"{100 * m.curve.start.map:.1f}",
            f"{100 * m.curve.kept.map:.1f}",
            str(m.curve.kept.step),
            "yes" if m.curve.learned else "NO",
        ]
        for m in models
    ]
    write_text(
        "\n".join("\t".join(row) for row in [header, *rows]) + "\n", tables_dir / f"{TABLE}.tsv"
    )
    markdown = [
        "### Validation curves of the trained models",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(row) + " |" for row in rows),
        "",
        "Validation: each model's held-out training queries (never a test or validation query "
        "of the tables) rank their cited papers at step 0 and at every checkpoint; the kept "
        "checkpoint is the best (step 0 included). A model learned when it beats step 0 by "
        f"at least {100 * LEARNED_MARGIN:.0f} MAP point and a one-sided paired randomization "
        f"test over the held-out queries gives p <= {LEARNED_ALPHA}.",
        *(f"\n{note}" for note in not_learned_notes(models)),
    ]
    write_text("\n".join(markdown) + "\n", tables_dir / f"{TABLE}.md")
    draw_curves(models, plot)


def draw_curves(models: Sequence[Trained], path: Path) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(
        1, len(models), figsize=(4 * len(models), 3.2), squeeze=False, sharey=False
    )
    for axis, model in zip(axes[0], models, strict=True):
        steps = [p.step for p in model.curve.points]
        values = [100 * p.map for p in model.curve.points]
        axis.plot(steps, values, marker="o", label="validation MAP")
        axis.axhline(100 * model.curve.start.map, linestyle="--", color="grey", label="step 0")
        kept = model.curve.kept
        axis.plot([kept.step], [100 * kept.map], marker="*", markersize=14, color="C3",
                  linestyle="none", label="kept")  # fmt: skip
        verdict = "learned" if model.curve.learned else "NOT learned"
        axis.set_title(f"{model.name} ({verdict})", fontsize=10)
        axis.set_xlabel("step")
        axis.set_ylabel("MAP (held-out training queries)")
        axis.legend(fontsize=7)
    fig.tight_layout()
    save_png(fig, path)
