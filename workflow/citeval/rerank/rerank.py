"""Rerank a first-stage run's top K with the cross-encoder, for several K at once.

    python -m citeval.rerank rerank --model OUT/model --papers corpus/papers \
        --run runs/.../bm25.trec --ks 100 200 1000 \
        --outputs bm25.ce100.trec bm25.ce200.trec bm25.ce1000.trec --timing timing.json \
        [settings] [--tag-prefix ce-k]

The settings (``--query-tokens``, ``--candidate-tokens``, ``--batch-tokens``,
``--batch-size``, ``--dtype``, ``--device``) are the config's ``rerank.*`` keys
(:data:`citeval.stages.RERANK`), with the schema's defaults (:mod:`citeval.rerank.cli`).

Query texts are the query papers' title + abstract from ``--papers`` (query ids are paper
ids), like the candidates'.

Score once, write every K. The (query, candidate) pairs of each query's top max(K) are
scored once; every K's run is cut from those scores.

Each output run (for one K) holds the first stage's candidates of every query, no more,
no fewer: its top K reordered by the cross-encoder's p(relevant), ties broken as trec_eval
breaks them (document id descending), then the candidates below K in the first stage's
order. Recall past K is therefore the first stage's. The scores are rewritten as
``n - i`` for the i-th (0-based) of a query's n lines, so the file is in trec_eval's order
and any evaluator reads the intended ranking; the run tag is ``<tag-prefix><K>``.

Timing JSON (``--timing``): ``queries``, ``pairs_scored`` (distinct pairs of the top max(K)),
``model_load_seconds`` (kept apart), ``seconds`` (tokenizing and scoring, model load
excluded), ``pairs_per_second``, ``device``, and per K (``per_k["<K>"]``): ``pairs`` (the
pairs within the top K) and ``seconds`` = pairs / pairs_per_second, that is the time a
run that scored only the top K would have taken at the measured throughput (pro-rated,
not measured separately), and ``seconds_per_query``.

Errors: a K larger than the longest list of the run (the run cannot hold K candidates for
any query: prefetch deeper or lower K); a query or candidate not in ``--papers``
(:class:`~citeval.errors.InputDataError` naming the run file, line and id).
"""

from __future__ import annotations

import collections
import logging
import os
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from citeval.errors import CitevalError
from citeval.io import write_json
from citeval.rerank.data import Texts, check_in_corpus, read_ranked_run, read_run_texts
from citeval.trec import write_run

LOG = logging.getLogger(__name__)

Ranked = dict[str, list[tuple[str, float]]]

# Pairs scored per chunk of queries (bounds the texts and scores held at once).
CHUNK_PAIRS = 65_536


def check_ks(run: Ranked, ks: Sequence[int], run_path: str | os.PathLike) -> None:
    """Every K must be at least 1 and, unless the run has no queries (its collection has
    none), at most the run's longest list."""
    depth = max((len(ranked) for ranked in run.values()), default=0)
    for k in ks:
        if k < 1:
            raise CitevalError(f"K must be >= 1, got {k}")
        if run and k > depth:
            raise CitevalError(
                f"K={k} is larger than the depth of run {run_path} (its longest list has "
                f"{depth} candidates): prefetch at least {k} candidates or lower K"
            )


def _query_chunks(
    run: Ranked, texts: Texts, reranker: Any, depth: int, chunk_pairs: int
) -> Iterator[tuple[list[str], list[str], list[str], list[int]]]:
    """``(query ids, query texts, candidate texts, bounds)`` of about ``chunk_pairs`` pairs
    each; query ``i``'s pairs are ``[bounds[i], bounds[i + 1])``."""
    chunk: list[str] = []
    size = 0
    qids = sorted(run)
    for position, qid in enumerate(qids):
        chunk.append(qid)
        size += min(depth, len(run[qid]))
        if size >= chunk_pairs or position == len(qids) - 1:
            queries: list[str] = []
            candidates: list[str] = []
            bounds = [0]
            for member in chunk:
                query_text = reranker.text(*texts[member])
                top = run[member][:depth]
                queries.extend([query_text] * len(top))
                candidates.extend(reranker.text(*texts[doc]) for doc, _ in top)
                bounds.append(len(queries))
            yield chunk, queries, candidates, bounds
            chunk, size = [], 0


def score_pairs(
    run: Ranked, texts: Texts, reranker: Any, depth: int, chunk_pairs: int = CHUNK_PAIRS
) -> dict[str, np.ndarray]:
    """Cross-encoder scores of each query's top ``depth`` candidates, each pair once.

    Queries are scored in chunks of about ``chunk_pairs`` pairs, so memory stays bounded
    on deep runs; the next chunks are tokenized (:meth:`Reranker.tokenize_ahead`) while
    the model scores this one.
    """
    from tqdm import tqdm

    total = sum(min(depth, len(ranked)) for ranked in run.values())
    result: dict[str, np.ndarray] = {}
    chunks = _query_chunks(run, texts, reranker, depth, chunk_pairs)
    pending: collections.deque = collections.deque()

    def tokenize_next() -> None:
        chunk = next(chunks, None)
        if chunk is not None:
            members, queries, candidates, bounds = chunk
            pending.append((members, bounds, reranker.tokenize_ahead(queries, candidates)))

    with tqdm(total=total, unit="pair", desc="rerank", mininterval=5.0) as bar:
        for _ in range(reranker.chunks_ahead):
            tokenize_next()
        while pending:
            members, bounds, tokens = pending.popleft()
            tokenize_next()
            scores = reranker.score_tokens(tokens.result(), progress=bar)
            for i, member in enumerate(members):
                result[member] = scores[bounds[i] : bounds[i + 1]]
    return result


def rerank_list(
    ranked: Sequence[tuple[str, float]], scores: np.ndarray, k: int
) -> list[tuple[str, float]]:
    """The top ``k`` by cross-encoder score (ties: id descending), then the rest as given.

    ``scores`` holds the scores of at least the top ``k`` (in ``ranked``'s order). The
    returned scores are ``n - i``, strictly decreasing (see the module docstring).
    """
    head = [(float(scores[i]), doc) for i, (doc, _) in enumerate(ranked[:k])]
    head.sort(reverse=True)
    order = [doc for _, doc in head] + [doc for doc, _ in ranked[k:]]
    n = len(order)
    return [(doc, float(n - i)) for i, doc in enumerate(order)]


def rerank_run(
    run: Ranked, scores: dict[str, np.ndarray], ks: Sequence[int]
) -> dict[int, dict[str, dict[str, float]]]:
    """``{K: {qid: {docid: score}}}``: each K's reranked run from the shared scores."""
    return {
        k: {qid: dict(rerank_list(ranked, scores[qid], k)) for qid, ranked in run.items()}
        for k in ks
    }


def rerank(
    run_path: str | os.PathLike,
    papers_dir: str | os.PathLike,
    ks: Sequence[int],
    outputs: Sequence[str | os.PathLike],
    *,
    model: str | None = None,
    reranker: Any | None = None,
    timing_path: str | os.PathLike | None = None,
    query_tokens: int | None = None,
    candidate_tokens: int | None = None,
    batch_tokens: int | None = None,
    batch_size: int | None = None,
    dtype: str | None = None,
    device: str | None = None,
    tag_prefix: str = "ce-k",
    query_papers: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """Rerank ``run_path`` for every K, write each K's run and the timing; return timing.

    With ``model`` (a trained folder to load), ``dtype`` and ``device`` are required,
    ``batch_tokens`` (None: the device's) and ``batch_size`` (None: no cap) optional: they
    are the config's ``rerank.*`` settings and have no default here (the schema's are the
    only ones); ``query_tokens`` and ``candidate_tokens`` are the model's own
    (:meth:`citeval.rerank.model.Reranker.trained`), and may only repeat them. With a
    loaded ``reranker`` every setting is its own and must be left out.
    """
    from citeval.rerank.model import Reranker

    if len(ks) != len(outputs):
        raise CitevalError(f"give one output per K ({len(ks)} Ks, {len(outputs)} outputs)")
    if len(set(ks)) != len(ks):
        raise CitevalError(f"repeated K in {list(ks)}")
    run = read_ranked_run(run_path)
    check_ks(run, ks, run_path)
    depth = max(ks)
    texts = read_run_texts(papers_dir, [run], depth, query_papers)
    check_in_corpus(run, run_path, texts, depth)

    scoring = {
        "query_tokens": query_tokens,
        "candidate_tokens": candidate_tokens,
        "batch_tokens": batch_tokens,
        "batch_size": batch_size,
        "dtype": dtype,
        "device": device,
    }
    load_began = time.perf_counter()
    if reranker is None:
        if model is None:
            raise CitevalError("give a model folder or a loaded reranker")
        missing = [name for name in ("dtype", "device") if scoring[name] is None]
        if missing:
            raise CitevalError(f"loading {model} needs {', '.join(missing)}")
        reranker = Reranker.trained(model, **scoring)
    elif any(value is not None for value in scoring.values()):
        raise CitevalError(
            "a loaded reranker has its own query_tokens, candidate_tokens, batch_tokens, "
            "batch_size, dtype and device"
        )
    model_load_seconds = time.perf_counter() - load_began
    reranker.model.eval()

    began = time.perf_counter()
    scores = score_pairs(run, texts, reranker, depth)
    if reranker.device.type == "cuda":
        import torch

        torch.cuda.synchronize()
    seconds = time.perf_counter() - began
    pairs_scored = sum(len(s) for s in scores.values())
    throughput = pairs_scored / seconds if seconds > 0 else float("inf")
    LOG.info(
        "%d pairs of %d queries scored in %.2f s (%.1f pairs/s)",
        pairs_scored,
        len(run),
        seconds,
        throughput,
    )

    runs = rerank_run(run, scores, ks)
    per_k = {}
    for k, output in zip(ks, outputs, strict=True):
        write_run(runs[k], output, tag=f"{tag_prefix}{k}")
        pairs_k = sum(min(k, len(ranked)) for ranked in run.values())
        seconds_k = pairs_k / throughput if throughput > 0 else 0.0
        per_k[str(k)] = {
            "pairs": pairs_k,
            "seconds": seconds_k,
            "seconds_per_query": seconds_k / len(run) if run else 0.0,
        }
        LOG.info("K=%d: wrote %s", k, output)
    timing = {
        "run": str(run_path),
        "queries": len(run),
        "pairs_scored": pairs_scored,
        "seconds": seconds,
        "model_load_seconds": model_load_seconds,
        "pairs_per_second": throughput,
        "device": str(reranker.device),
        "batch_tokens": reranker.batch_tokens,
        "batch_size": reranker.batch_size,
        "dtype": str(reranker.dtype).removeprefix("torch."),
        "query_tokens": reranker.query_tokens,
        "candidate_tokens": reranker.candidate_tokens,
        "per_k": per_k,
    }
    if timing_path is not None:
        write_json(timing, timing_path)
    return timing
