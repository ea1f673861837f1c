"""HAtten's "oracle prefetch": a first stage whose top K always holds the cited papers.

The literature on ACL-200 and RefSeer reports rerankers over an *oracle* prefetch (for
example "oracle-BM25"): when the prefetcher misses a cited paper in its top K, the paper is
put there anyway, so the reranker's score measures reranking alone. Here each query's
missing cited papers replace the lowest-ranked uncited candidates of its top K (in id
order), and a cited paper found below K moves up; everything else keeps its rank. The
result is a run like any other (scores ``n - i``), to be reranked at the same K and
labelled as an oracle (``bm25+oracle20>ce@20``), never compared as a real first stage.
"""

from __future__ import annotations

import logging
import os

from citeval.errors import CitevalError, InputDataError
from citeval.rerank.data import read_ranked_run
from citeval.trec import Run, read_qrels, write_run

log = logging.getLogger(__name__)


def oracle_list(ranked: list[str], cited: set[str], k: int) -> list[str]:
    """``ranked`` (ids, best first) with every ``cited`` id in its top ``k``."""
    if len(cited) > k:
        raise CitevalError(f"{len(cited)} cited papers cannot fit in a top {k}")
    top = ranked[:k]
    missing = sorted(cited - set(top))
    if not missing:
        return ranked
    # The lowest-ranked uncited candidates of the top k make room, the order kept.
    removable = [i for i in range(len(top) - 1, -1, -1) if top[i] not in cited]
    room = len(missing) - (k - len(top))
    dropped = set(removable[: max(room, 0)])
    head = [doc for i, doc in enumerate(top) if i not in dropped] + missing
    tail = [doc for doc in ranked[k:] if doc not in cited]
    return head + [top[i] for i in sorted(dropped)] + tail


def oracle_run(run_path: str | os.PathLike, qrels_path: str | os.PathLike, k: int) -> Run:
    """The run of ``run_path`` with every query's cited papers in its top ``k``."""
    if k < 1:
        raise CitevalError(f"K must be >= 1, got {k}")
    qrels = read_qrels(qrels_path)
    run = read_ranked_run(run_path)
    unjudged = sorted(set(run) - set(qrels))
    if run and len(unjudged) == len(run):
        # Another split's qrels: the oracle would place nothing and copy the run.
        raise InputDataError(
            f"none of the run's {len(run)} queries is in the qrels {qrels_path}", path=str(run_path)
        )
    if unjudged:
        log.warning(
            "%d queries of %s are not in %s: kept as ranked", len(unjudged), run_path, qrels_path
        )
    result: Run = {}
    for qid, ranked in run.items():
        cited = {doc for doc, rel in qrels.get(qid, {}).items() if rel > 0}
        order = oracle_list([doc for doc, _ in ranked], cited, k)
        result[qid] = {doc: float(len(order) - i) for i, doc in enumerate(order)}
    return result


def write_oracle_run(
    run_path: str | os.PathLike, qrels_path: str | os.PathLike, k: int, output: str | os.PathLike
) -> None:
    write_run(oracle_run(run_path, qrels_path, k), output, tag=f"oracle{k}")
