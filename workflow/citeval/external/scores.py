"""A user's MDCR scores, checked against the benchmark's pairs and imported.

The published format is one JSON object ``{"<query_id>_<candidate_id>": score}``
(:mod:`citeval.mdcr.formats`). Every pair of the benchmark needs a finite score; a key
that is no pair of the benchmark is an error too, since it says the scores were made for
another benchmark (or another split).
"""

from __future__ import annotations

import os

from citeval.errors import InputDataError
from citeval.mdcr.formats import (
    Scores,
    check_scores_cover,
    iter_pairs,
    read_benchmark,
    read_scores,
    score_key,
)


def import_mdcr_scores(path: str | os.PathLike, benchmark_path: str | os.PathLike) -> Scores:
    """The scores at ``path``, exactly the pairs of the benchmark at ``benchmark_path``."""
    benchmark = read_benchmark(benchmark_path)
    scores = read_scores(path)
    check_scores_cover(benchmark, scores, path)
    pairs = {score_key(*pair) for pair in iter_pairs(benchmark)}
    extra = sorted(key for key in scores if key not in pairs)
    if extra:
        raise InputDataError(
            f"{len(extra)} keys are no query–candidate pair of {benchmark_path}, first: "
            + ", ".join(repr(key) for key in extra[:5])
            + " (scores of another benchmark or split?)",
            path=str(path),
        )
    return scores
