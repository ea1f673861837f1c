"""BM25 runs: top-k hits per query without the query itself, in trec_eval's order."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path

from tqdm import tqdm

from citeval import impacts, lucene
from citeval.collection_list import collection_name
from citeval.errors import ConfigError, InputDataError
from citeval.trec import Run, rank_documents

LOG = logging.getLogger(__name__)


def _top_k_without_self(
    searcher: impacts.Searcher,
    qid: str,
    text: str,
    hits: lucene.Hits,
    k: int,
    depth: int,
) -> dict[str, float]:
    """The top ``k`` hits other than ``qid`` itself, cut in trec_eval's order.

    ``hits`` holds Lucene's top ``depth``. Documents not fetched score at most the last
    hit's score, so the cut is exact unless the k-th kept hit ties with the last fetched
    one; then the query is searched deeper until the tie group is complete.
    """
    while True:
        scores = {doc_id: score for doc_id, score in hits if doc_id != qid}
        top = rank_documents(scores, k)
        exhausted = len(hits) < depth or depth >= searcher.num_docs
        if exhausted or (len(top) == k and top[-1][1] > hits[-1][1]):
            return dict(top)
        depth = min(2 * depth, searcher.num_docs)
        LOG.debug("query %s: score tie at rank %d; searching %d deep", qid, k, depth)
        hits = searcher.search(text, depth)


def search_queries(
    searcher: impacts.Searcher,
    queries: Sequence[tuple[str, str]],
    k: int,
    batch_size: int = 256,
    progress: bool = True,
    threads: int = 1,
) -> Run:
    """Search every ``(query_id, text)``; return ``{qid: {docid: score}}`` (top ``k``).

    A query is never its own candidate. Queries without hits have an empty dict. The
    result does not depend on ``threads`` or ``batch_size``.
    """
    if k < 1:
        raise ConfigError(f"k must be >= 1, got {k}")
    depth = k + 1
    run: Run = {}
    batches = range(0, len(queries), batch_size)
    for start in tqdm(batches, desc="search", unit="batch", disable=not progress, mininterval=2):
        batch = queries[start : start + batch_size]
        qids = [qid for qid, _ in batch]
        results = searcher.batch_search([text for _, text in batch], qids, depth, threads)
        for qid, text in batch:
            run[qid] = _top_k_without_self(searcher, qid, text, results.get(qid, []), k, depth)
    return run


def read_params(path: str | os.PathLike) -> tuple[float, float]:
    """``(k1, b)`` from a tuning JSON (top-level ``k1`` and ``b``)."""
    try:
        params = json.loads(Path(path).read_text())
        return float(params["k1"]), float(params["b"])
    except FileNotFoundError as error:
        raise InputDataError("parameters file does not exist", path=str(path)) from error
    except (ValueError, KeyError, TypeError) as error:
        raise InputDataError(
            f"expected a JSON object with numbers 'k1' and 'b' ({error})", path=str(path)
        ) from error


def resolve_params(
    k1: float, b: float, params_json: str | os.PathLike | None
) -> tuple[float, float]:
    """``(k1, b)`` to search with: the tuned pair in ``params_json`` (a tuning JSON) when
    one is given, which takes precedence over ``k1`` and ``b``; otherwise ``k1`` and ``b``."""
    if params_json is None:
        return k1, b
    tuned = read_params(params_json)
    if tuned != (k1, b):
        LOG.info("k1=%s b=%s from %s replace k1=%s b=%s", *tuned, params_json, k1, b)
    return tuned


def check_index_group(index_dir: str | os.PathLike, group: str, rep: int | None) -> None:
    metadata = lucene.read_index_metadata(index_dir)
    if metadata is None:
        return
    if metadata.get("group") != group or (rep is not None and metadata.get("rep") != rep):
        held = collection_name(metadata.get("group"), metadata.get("rep"))
        wanted = group if rep is None else collection_name(group, rep)
        raise ConfigError(f"index {index_dir} holds the pool of {held}, not {wanted}")


def check_searcher(index_dir: str | os.PathLike, searcher: str) -> None:
    metadata = lucene.read_index_metadata(index_dir) or {}
    if searcher == "lucene" and metadata.get("lucene") is False:
        raise ConfigError(
            f"index {index_dir} was built without Lucene's own index, which the lucene "
            "searcher needs: build it with `index --lucene-papers` (in the workflow, set "
            "bm25.searcher: lucene before the indexes are built)"
        )
