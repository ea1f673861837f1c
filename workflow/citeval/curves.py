"""Validation curves: whether a trained model learned, measured the same way for each trainer.

Every trainer (the reranker, the local reranker, the graph-trained encoders, the local
prefetcher) holds out part of its *training* queries (:func:`split_queries`; never a test
or validation query of the tables, which are already kept out of training) and ranks their
candidates with the model at step 0 and at every checkpoint: transformers' ``Trainer``
evaluates with sentence-transformers' evaluators (:func:`evaluation_arguments`). The
points go into ``training.json`` as the ``validation`` record (:meth:`Curve.record`):

* ``curve``: step, validation MAP and MRR@10 (0–1), and the training loss logged nearest
  before the step;
* ``kept_step``: the checkpoint the model folder holds, the best validation MAP (the
  earliest on ties). Step 0 is a candidate: a run that only made its base worse keeps
  its base;
* ``learned``: whether the kept checkpoint beats step 0 by at least :data:`LEARNED_MARGIN`
  MAP *and* significantly: a paired randomization test over the held-out queries' average
  precisions (:func:`citeval.significance.paired_test`, p <= :data:`LEARNED_ALPHA`), so that
  the best of a dozen noisy points over a few queries is not taken for learning. The
  evaluators report each query's average precision for it (``<name>_ap/<i>``). A model
  that did not learn is flagged in its log, in its model card and in the
  tables' notes (:mod:`citeval.learning`), so rows at chance are never read as results.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from citeval.errors import ConfigError

LOG = logging.getLogger(__name__)

# One MAP point at least, and a paired test over the held-out queries at this level.
LEARNED_MARGIN = 0.01
LEARNED_ALPHA = 0.05
TEST_PERMUTATIONS = 10_000
# The evaluators' per-query average precisions: metric keys <name>_ap/<query index>.
PER_QUERY = "ap/"
# The evaluators' name: the metrics are logged as eval_<name>_<measure>.
EVALUATOR_NAME = "validation"
CARD_FILE = "README.md"
CARD_HEADING = "## Validation curve (citeval)"


def split_queries(
    query_ids: Iterable[str], fraction: float, seed: int
) -> tuple[list[str], list[str]]:
    """``(training, held out)`` query ids, sorted: a seeded draw of ``fraction`` of them
    (at least one) held out for the validation curve, at least one kept for training."""
    ids = sorted(set(query_ids))
    if not 0 < fraction < 1:
        raise ConfigError(f"validation_fraction must be between 0 and 1, got {fraction}")
    held = round(fraction * len(ids))
    if len(ids) < 2:
        raise ConfigError(
            f"{len(ids)} training quer{'y' if len(ids) == 1 else 'ies'}: at least 2 are "
            "needed to hold some out for the validation curve"
        )
    held = min(max(held, 1), len(ids) - 1)
    chosen = set(np.random.default_rng(seed).choice(len(ids), size=held, replace=False))
    valid = [qid for position, qid in enumerate(ids) if position in chosen]
    train = [qid for position, qid in enumerate(ids) if position not in chosen]
    return train, valid


def evaluation_arguments(eval_steps: int, map_key: str, *, resuming: bool) -> dict[str, Any]:
    """Training-arguments keywords: evaluate at step 0 (a resumed run has that point in
    its checkpoint's log), every ``eval_steps`` (the trainers checkpoint at the same
    steps: :func:`citeval.training.loop_arguments`) and at the end; track the best
    checkpoint, which transformers then keeps on disk besides the latest ones."""
    return {
        "eval_strategy": "steps",
        "eval_steps": eval_steps,
        "eval_on_start": not resuming,
        "metric_for_best_model": map_key,
        "greater_is_better": True,
    }


@dataclass(frozen=True)
class Point:
    step: int
    map: float
    mrr: float
    loss: float | None
    average_precisions: tuple[float, ...] = ()


@dataclass(frozen=True)
class Curve:
    """A model's validation points, in step order."""

    points: tuple[Point, ...]
    queries: int
    # The step a trainer kept where it cannot keep step 0 (a LambdaMART model always has
    # trees); None: the best point, the earliest on ties.
    kept_at: int | None = None

    @classmethod
    def from_log_history(
        cls, log_history: Sequence[dict[str, Any]], map_key: str, mrr_key: str, queries: int
    ) -> Curve:
        """The points of transformers' ``log_history`` (evaluations carry ``eval_<key>``;
        the training loss is the last one logged at or before each evaluation's step)."""
        points: dict[int, Point] = {}
        loss: float | None = None
        per_query = f"eval_{EVALUATOR_NAME}_{PER_QUERY}"
        for entry in sorted(log_history, key=lambda e: (e.get("step", 0), "loss" not in e)):
            if "loss" in entry:
                loss = float(entry["loss"])
            if f"eval_{map_key}" in entry:
                step = int(entry["step"])
                precisions = sorted(
                    (int(key.removeprefix(per_query)), float(value))
                    for key, value in entry.items()
                    if key.startswith(per_query)
                )
                points[step] = Point(
                    step=step,
                    map=float(entry[f"eval_{map_key}"]),
                    mrr=float(entry[f"eval_{mrr_key}"]),
                    loss=loss if step > 0 else None,
                    average_precisions=tuple(value for _, value in precisions),
                )
        if 0 not in points:
            raise ValueError("no step-0 evaluation in the trainer's log history")
        return cls(tuple(points[step] for step in sorted(points)), queries)

    @property
    def start(self) -> Point:
        return self.points[0]

    @property
    def kept(self) -> Point:
        if self.kept_at is not None:
            return next(point for point in self.points if point.step == self.kept_at)
        best = max(point.map for point in self.points)
        return next(point for point in self.points if point.map == best)

    @property
    def p_value(self) -> float:
        """The one-sided paired randomization test's p of the kept point against step 0
        (1: the same point, or no per-query values to pair)."""
        from citeval.significance import paired_test  # scipy: only where a curve is judged

        start, kept = self.start.average_precisions, self.kept.average_precisions
        if self.kept.step == self.start.step or not start or len(start) != len(kept):
            return 1.0
        result = paired_test(
            dict(enumerate(kept)),
            dict(enumerate(start)),
            TEST_PERMUTATIONS,
            np.random.default_rng(0),
        )
        # One-sided (the kept point is the better one): half the symmetric two-sided p.
        return result.p_perm / 2 if result.mean_diff > 0 else 1.0

    @property
    def learned(self) -> bool:
        gain = self.kept.map >= self.start.map + LEARNED_MARGIN
        return gain and self.p_value <= LEARNED_ALPHA

    def verdict(self, name: str) -> str:
        """One line for the log and the notes."""
        start, kept = self.start, self.kept
        if self.learned:
            return (
                f"{name} learned: validation MAP {_points(start.map)} at step 0, "
                f"{_points(kept.map)} at the kept step {kept.step} (p = {self.p_value:.3g}, "
                f"{self.queries} held-out training queries)"
            )
        if kept.step == 0:
            where = "no checkpoint beat step 0, so the model is its starting point"
        elif kept.map < start.map + LEARNED_MARGIN:
            where = (
                f"its best checkpoint (step {kept.step}) is within "
                f"{_points(LEARNED_MARGIN)} of step 0"
            )
        else:
            where = (
                f"its best checkpoint (step {kept.step}) is not significantly better than "
                f"step 0 (paired randomization test, p = {self.p_value:.3g} > {LEARNED_ALPHA})"
            )
        return (
            f"{name} did NOT learn: validation MAP {_points(start.map)} at step 0, "
            f"{_points(kept.map)} at best; {where} ({self.queries} held-out training "
            "queries). Its rows are not results of a trained model."
        )

    def record(self) -> dict[str, Any]:
        return {
            "queries": self.queries,
            "measure": "MAP",
            "curve": [
                {
                    "step": p.step,
                    "map": p.map,
                    "mrr@10": p.mrr,
                    "loss": p.loss,
                    "average_precisions": list(p.average_precisions),
                }
                for p in self.points
            ],
            "start_map": self.start.map,
            "kept_step": self.kept.step,
            "kept_map": self.kept.map,
            "p_value": self.p_value,
            "learned": self.learned,
            "learned_margin": LEARNED_MARGIN,
            "learned_alpha": LEARNED_ALPHA,
        }

    def log(self, name: str) -> None:
        (LOG.info if self.learned else LOG.warning)(self.verdict(name))

    def card_section(self, name: str) -> str:
        """Markdown for the model card (the folder's README.md)."""
        rows = "\n".join(
            f"| {p.step} | {_points(p.map)} | {_points(p.mrr)} | "
            f"{'' if p.loss is None else f'{p.loss:.4f}'} |"
            for p in self.points
        )
        return (
            f"\n\n{CARD_HEADING}\n\n{self.verdict(name)}\n\n"
            "| step | MAP | MRR@10 | training loss |\n|---|---|---|---|\n"
            f"{rows}\n"
        )


def append_card_section(folder: str | os.PathLike, section: str) -> None:
    """Add ``section`` to the model card (``README.md``) of a saved model folder."""
    card = Path(folder) / CARD_FILE
    existing = card.read_text(encoding="utf-8") if card.is_file() else ""
    card.write_text(existing.rstrip("\n") + section, encoding="utf-8")


def per_query_metrics(name: str, average_precisions: Sequence[float]) -> dict[str, float]:
    """The evaluator metrics that carry each held-out query's average precision."""
    return {f"{name}_{PER_QUERY}{i}": float(v) for i, v in enumerate(average_precisions)}


def _points(value: float) -> str:
    return f"{100 * value:.1f}"


def read_curve(record: dict[str, Any]) -> Curve:
    """A :class:`Curve` back from its ``training.json`` record."""
    points = tuple(
        Point(
            step=int(p["step"]),
            map=float(p["map"]),
            mrr=float(p["mrr@10"]),
            loss=p["loss"],
            average_precisions=tuple(float(v) for v in p.get("average_precisions", ())),
        )
        for p in record["curve"]
    )
    return Curve(points, int(record["queries"]), kept_at=int(record["kept_step"]))
