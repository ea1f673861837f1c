"""A trained LTR model applied: reordering a first stage's run, scoring MDCR's pairs.

A run: the first stage's top ``k`` of each query is reordered by the model's score (ties:
document id descending, as trec_eval breaks them), the candidates below ``k`` follow in
the first stage's order, and the scores are rewritten ``n - i`` as the cross-encoder's
reranked runs are (:func:`citeval.rerank.rerank.rerank_list`), so every evaluator reads
the intended ranking and recall past ``k`` is the first stage's.

MDCR: every candidate a query lists is scored, the feature systems' scores coming from
their own MDCR scores files (which cover every listed pair); the candidates the model
orders are the query's listed ones, so the rank features count among those.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import numpy as np

from citeval.ltr.features import FeatureReader, Scores
from citeval.ltr.model import Pairs, TrainedLtr, build_pairs, top_candidates
from citeval.mdcr.formats import Benchmark, check_scores_cover, read_scores, score_key
from citeval.rerank.data import read_ranked_run
from citeval.rerank.rerank import rerank_list
from citeval.trec import Run, read_run


def read_system_runs(paths: Mapping[str, str | os.PathLike]) -> dict[str, Scores]:
    """Each feature system's run, by name, in the order given."""
    return {name: read_run(path) for name, path in paths.items()}


def run_pairs(
    first_stage: Mapping[str, Sequence[tuple[str, float]]],
    feature_runs: Mapping[str, str | os.PathLike],
    k: int,
    read_papers: FeatureReader,
) -> Pairs:
    """Each query's top ``k`` of a ranked first stage with its features, the systems'
    scores read from their runs on the same collection."""
    candidates = top_candidates(first_stage, k)
    return build_pairs(candidates, read_system_runs(feature_runs), read_papers)


def rank_run(
    model: TrainedLtr,
    first_stage_path: str | os.PathLike,
    feature_runs: Mapping[str, str | os.PathLike],
    read_papers: FeatureReader,
) -> Run:
    """The first stage's run with each query's top ``k`` in the model's order."""
    model.check_systems(list(feature_runs), "--feature")
    k = int(model.record["settings"]["k"])
    first_stage = read_ranked_run(first_stage_path)
    pairs = run_pairs(first_stage, feature_runs, k, read_papers)
    scores = model.score(pairs)
    result: Run = {}
    position = 0
    for qid in pairs.query_ids:
        size = len(pairs.candidates[qid])
        head = scores[position : position + size]
        position += size
        result[qid] = dict(rerank_list(first_stage[qid], head, k))
    return result


def mdcr_pairs(
    benchmark: Benchmark,
    score_files: Mapping[str, str | os.PathLike],
    read_papers: FeatureReader,
) -> Pairs:
    """Every pair the benchmark lists with its features, the systems' scores read from
    their MDCR scores files (each checked to cover every pair)."""
    from citeval.mdcr.score import query_candidates

    candidates = query_candidates(benchmark)
    system_scores: dict[str, Scores] = {}
    for name, path in score_files.items():
        flat = read_scores(path)
        check_scores_cover(benchmark, flat, path)
        system_scores[name] = {
            qid: {doc: flat[score_key(qid, doc)] for doc in docs}
            for qid, docs in candidates.items()
        }
    return build_pairs(candidates, system_scores, read_papers)


def pair_scores(pairs: Pairs, scores: np.ndarray) -> dict[str, float]:
    """``{"<query_id>_<candidate_id>": score}`` of the pairs' rows (MDCR's scores format)."""
    keys = (score_key(qid, doc) for qid in pairs.query_ids for doc in pairs.candidates[qid])
    return {key: float(score) for key, score in zip(keys, scores, strict=True)}


def score_mdcr(
    model: TrainedLtr,
    benchmark: Benchmark,
    score_files: Mapping[str, str | os.PathLike],
    read_papers: FeatureReader,
) -> dict[str, float]:
    """The model's score of every pair the benchmark lists."""
    model.check_systems(list(score_files), "--system-scores")
    pairs = mdcr_pairs(benchmark, score_files, read_papers)
    return pair_scores(pairs, model.score(pairs))
