"""LambdaMART over the features of :mod:`citeval.ltr.features`: training, selection, scoring.

The model is LightGBM's ``lambdarank`` objective (gradient-boosted trees whose gradients
are LambdaRank's, i.e. LambdaMART; Burges 2010). LightGBM rather than XGBoost's
``rank:map``: it is the LambdaMART implementation the LTR literature and pyserini's
MS MARCO reranker use, its text model file is small and stable, and its
``deterministic`` mode with one thread gives the same trees, byte for byte, for a seed.

Training reads the training split only: the first stage's top ``k`` for each training
query (the reranker's training split, queries of the years before the query year; never a
test or validation query) labelled by that split's qrels. A seeded share of these queries
(``validation_fraction``) is held out: the trees are grown up to ``max_trees``, the
held-out queries are ranked every ``eval_every`` trees and at step 0 (the first stage's own
order, the starting point), and the model keeps the trees up to its best held-out MAP
(early stopping on the held-out queries: the file holds no tree past that point). The
curve goes into ``training.json`` with the learned verdict of :mod:`citeval.curves`.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from citeval.curves import CARD_FILE, Curve, Point, split_queries
from citeval.errors import ConfigError, InputDataError
from citeval.io import atomic_path, write_json, write_text
from citeval.ltr.features import (
    PAPER_FEATURES,
    SYSTEM_FEATURES,
    Candidates,
    FeatureReader,
    Scores,
    feature_matrix,
    feature_names,
)
from citeval.trec import rank_documents

MODEL_FILE = "model.txt"
TRAINING_FILE = "training.json"
# The held-out curve's MRR cut, as every trainer's (citeval.curves).
MRR_CUTOFF = 10


@dataclass(frozen=True)
class LtrSettings:
    """One ``ltr`` entry's model settings (config keys ``ltr[].k`` and ``ltr[].train.*``)."""

    k: int
    learning_rate: float
    num_leaves: int
    min_data_in_leaf: int
    max_trees: int
    eval_every: int
    validation_fraction: float
    seed: int

    def lightgbm_parameters(self) -> dict[str, Any]:
        return {
            "objective": "lambdarank",
            "learning_rate": self.learning_rate,
            "num_leaves": self.num_leaves,
            "min_data_in_leaf": self.min_data_in_leaf,
            # Each query's whole candidate list counts in its gradients.
            "lambdarank_truncation_level": self.k,
            "seed": self.seed,
            "deterministic": True,
            "force_row_wise": True,
            "num_threads": 1,
            "verbosity": -1,
        }


@dataclass(frozen=True)
class Pairs:
    """The (query, candidate) rows of some queries: ids in row order and their features."""

    query_ids: list[str]
    candidates: dict[str, list[str]]
    features: np.ndarray

    @property
    def group_sizes(self) -> list[int]:
        return [len(self.candidates[qid]) for qid in self.query_ids]

    def labels(self, qrels: Mapping[str, Mapping[str, int]]) -> np.ndarray:
        return np.array(
            [
                1.0 if qrels.get(qid, {}).get(doc, 0) > 0 else 0.0
                for qid in self.query_ids
                for doc in self.candidates[qid]
            ]
        )

    def take(self, query_ids: Sequence[str]) -> Pairs:
        """These pairs restricted to ``query_ids`` (rows stay in query order)."""
        keep = set(query_ids)
        starts = np.cumsum([0, *self.group_sizes])
        rows = [
            np.arange(starts[i], starts[i + 1])
            for i, qid in enumerate(self.query_ids)
            if qid in keep
        ]
        index = np.concatenate(rows) if rows else np.array([], dtype=int)
        ids = [qid for qid in self.query_ids if qid in keep]
        return Pairs(ids, {qid: self.candidates[qid] for qid in ids}, self.features[index])

    def ranked(self, scores: np.ndarray) -> dict[str, dict[str, float]]:
        """``{qid: {doc: score}}`` of these rows' model scores."""
        result: dict[str, dict[str, float]] = {}
        position = 0
        for qid in self.query_ids:
            docs = self.candidates[qid]
            result[qid] = {doc: float(s) for doc, s in zip(docs, scores[position:], strict=False)}
            position += len(docs)
        return result


def top_candidates(first_stage: Mapping[str, Sequence[tuple[str, float]]], k: int) -> Candidates:
    """Each query's top ``k`` of a ranked first stage (``{qid: [(doc, score), ...]}``)."""
    return {qid: [doc for doc, _ in ranked[:k]] for qid, ranked in first_stage.items() if ranked}


def build_pairs(
    candidates: Candidates, system_scores: Mapping[str, Scores], read_papers: FeatureReader
) -> Pairs:
    facts, citing = read_papers(candidates)
    query_ids = sorted(qid for qid, docs in candidates.items() if docs)
    features = feature_matrix(candidates, system_scores, facts, citing)
    return Pairs(query_ids, {qid: list(candidates[qid]) for qid in query_ids}, features)


def _average_precisions(
    ranked: Mapping[str, Mapping[str, float]], qrels: Mapping[str, Mapping[str, int]]
) -> tuple[list[float], list[float]]:
    """Each query's AP (over all its relevant papers, as the tables count them) and
    reciprocal rank within the top :data:`MRR_CUTOFF`, by pytrec_eval."""
    import pytrec_eval

    queries = sorted(ranked)
    judged = {qid: dict(qrels.get(qid, {})) for qid in queries}
    evaluator = pytrec_eval.RelevanceEvaluator(judged, {"map", "recip_rank"})
    full = evaluator.evaluate({qid: dict(ranked[qid]) for qid in queries})
    top = {qid: dict(rank_documents(ranked[qid], MRR_CUTOFF)) for qid in queries}
    cut = evaluator.evaluate(top)
    return [full[q]["map"] for q in queries], [cut[q]["recip_rank"] for q in queries]


def _point(step: int, ranked: Mapping[str, Mapping[str, float]], qrels: Any) -> Point:
    precisions, reciprocal = _average_precisions(ranked, qrels)
    return Point(
        step=step,
        map=float(np.mean(precisions)) if precisions else 0.0,
        mrr=float(np.mean(reciprocal)) if reciprocal else 0.0,
        loss=None,
        average_precisions=tuple(precisions),
    )


def first_stage_order(pairs: Pairs) -> dict[str, dict[str, float]]:
    """The candidates in their first stage's order, as scores (step 0 of the curve)."""
    return {
        qid: {doc: float(len(docs) - i) for i, doc in enumerate(docs)}
        for qid, docs in pairs.candidates.items()
    }


def train(
    pairs: Pairs,
    qrels: Mapping[str, Mapping[str, int]],
    settings: LtrSettings,
    names: Sequence[str],
) -> tuple[Any, Curve, dict[str, int]]:
    """Grow the trees on the training queries, keep the best held-out point; return the
    booster (cut to the kept trees), the curve and the query and pair counts."""
    import lightgbm

    fit_ids, held_ids = split_queries(pairs.query_ids, settings.validation_fraction, settings.seed)
    fit, held = pairs.take(fit_ids), pairs.take(held_ids)
    labels = fit.labels(qrels)
    if not labels.any():
        raise InputDataError(
            "no training query has a cited paper among its first stage's top "
            f"{settings.k}: nothing to learn from (a larger k or more training queries)"
        )
    dataset = lightgbm.Dataset(
        fit.features,
        label=labels,
        group=fit.group_sizes,
        feature_name=list(names),
        free_raw_data=False,
        params={"verbosity": -1},
    )
    booster = lightgbm.train(
        settings.lightgbm_parameters(), dataset, num_boost_round=settings.max_trees
    )
    held_qrels = {qid: qrels.get(qid, {}) for qid in held.query_ids}
    points = [_point(0, first_stage_order(held), held_qrels)]
    steps = range(settings.eval_every, settings.max_trees + 1, settings.eval_every)
    for step in sorted({*steps, settings.max_trees}):
        scores = booster.predict(held.features, num_iteration=step)
        points.append(_point(step, held.ranked(scores), held_qrels))
    # LambdaMART always has trees: the kept point is the best after step 0 (earliest on
    # ties); step 0 is the first stage it must beat to have learned.
    best = max(point.map for point in points[1:])
    kept = next(point for point in points[1:] if point.map == best)
    curve = Curve(tuple(points), len(held.query_ids), kept_at=kept.step)
    kept_booster = lightgbm.Booster(model_str=booster.model_to_string(num_iteration=kept.step))
    counts = {
        "training_queries": len(fit.query_ids),
        "held_out_queries": len(held.query_ids),
        "pairs": len(labels),
        "positives": int(labels.sum()),
    }
    return kept_booster, curve, counts


def importances(booster: Any, names: Sequence[str]) -> dict[str, float]:
    """Each feature's total gain over the kept trees."""
    gains = booster.feature_importance(importance_type="gain")
    return {name: float(gain) for name, gain in zip(names, gains, strict=True)}


def save(
    booster: Any, output_dir: str | os.PathLike, record: dict[str, Any], name: str, curve: Curve
) -> None:
    """``model.txt`` (LightGBM's text model), ``training.json`` and the model card
    (``README.md``: what it reorders, from what, and its validation curve), each
    atomically."""
    folder = Path(output_dir)
    folder.mkdir(parents=True, exist_ok=True)
    text = booster.model_to_string()
    with atomic_path(folder / MODEL_FILE) as path:
        path.write_text(text, encoding="utf-8")
    record = {**record, "model_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()}
    write_json(record, folder / TRAINING_FILE)
    card = (
        f"# {name}: a LambdaMART second stage (citeval.ltr)\n\n"
        f"Reorders the top {record['settings']['k']} of `{record['first_stage']}` from the "
        f"scores and ranks of {', '.join(f'`{s}`' for s in record['feature_systems'])} and "
        f"the candidates' citation counts, years and lengths; {record['trees']} trees "
        f"(LightGBM {record['lightgbm']['version']})."
    )
    write_text(card + curve.card_section(name), folder / CARD_FILE)


def training_record(
    *,
    first_stage: str,
    systems: Sequence[str],
    settings: LtrSettings,
    curve: Curve,
    counts: Mapping[str, int],
    gains: Mapping[str, float],
    seconds: float,
) -> dict[str, Any]:
    import lightgbm

    return {
        "first_stage": first_stage,
        "feature_systems": list(systems),
        "features": feature_names(systems),
        "feature_descriptions": {
            **{f"<system>.{f.name}": f.description for f in SYSTEM_FEATURES},
            **{f.name: f.description for f in PAPER_FEATURES},
        },
        "settings": asdict(settings),
        "lightgbm": {"version": lightgbm.__version__, **settings.lightgbm_parameters()},
        **counts,
        "trees": curve.kept.step,
        "validation": curve.record(),
        "importance_gain": dict(gains),
        "seconds": round(seconds, 3),
    }


@dataclass(frozen=True)
class TrainedLtr:
    """A saved model: its booster and what it was trained on (``training.json``)."""

    booster: Any
    record: dict[str, Any]

    @classmethod
    def load(cls, model_dir: str | os.PathLike) -> TrainedLtr:
        import json

        import lightgbm

        folder = Path(model_dir)
        for name in (MODEL_FILE, TRAINING_FILE):
            if not (folder / name).is_file():
                raise InputDataError(f"no {name} in the LTR model folder", path=str(folder))
        record = json.loads((folder / TRAINING_FILE).read_text(encoding="utf-8"))
        return cls(lightgbm.Booster(model_file=str(folder / MODEL_FILE)), record)

    @property
    def systems(self) -> list[str]:
        return list(self.record["feature_systems"])

    def check_systems(self, given: Sequence[str], where: str) -> None:
        if list(given) != self.systems:
            raise ConfigError(
                f"{where} gives the feature systems {list(given)}, but the model was trained "
                f"on {self.systems} (training.json)"
            )

    def score(self, pairs: Pairs) -> np.ndarray:
        if len(pairs.features) == 0:
            return np.empty(0)
        return self.booster.predict(pairs.features, num_threads=1)
