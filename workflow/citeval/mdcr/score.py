"""Scores of every query–candidate pair of an MDCR benchmark, in the published format.

``python -m citeval.mdcr score`` reads a benchmark and its data file (built or imported)
and writes ``{"<query_id>_<candidate_id>": score}`` for every listed pair, higher meaning
more relevant. The kinds of model:

* **bm25.** One Lucene index of the data file's papers (every query and candidate of the
  split, ``title + "\\n" + abstract`` as in the pipeline's pool indexes), built in a
  temporary folder with its impact matrix, searched with ``BM25Similarity(k1, b)``; a
  query is ``title + " " + abstract``. This is what a user of the published files would
  do. A candidate's score is the one Lucene gives it for the query: the impact searcher
  scores the whole index per query and reads the candidates' entries
  (:meth:`citeval.impacts.ImpactSearcher.score_documents`), and the Lucene searcher (the
  reference) fetches every matching document. Both are exact, and reading listed
  candidates needs no search depth to tune. A candidate that shares no term with the
  query, or has no text, is not retrieved by Lucene at all and scores 0, below every
  retrieved one (Lucene's BM25 scores are positive).
* **dense.** The similarity the encoder was trained with (``models.<name>.similarity``):
  ``ip`` the inner product, ``cosine`` the inner product of L2-normalised vectors, ``l2``
  the negative squared Euclidean distance, as the retrieval stage ranks. A multi-vector
  model (ASPIRE) scores a pair by its best sentence pair. Vectors come from the
  pipeline's embedding store where it holds the paper (``--embeddings``); the others
  (MDCR's random, most-cited and graph candidates lie mostly outside the test pools the
  encode stage embeds, and an imported benchmark's papers are not in the store) are
  encoded here from the data file's text and rounded through float16 as the store keeps
  them, so every vector has the same precision. Pairs are computed in float64.
* **embeddings.** A user's stored vectors (an ``embeddings`` system), scored as dense
  vectors are; every paper of the benchmark needs one, since there is no model to encode
  the rest.
* **rrf.** Reciprocal rank fusion of other models' scores files over each query's
  candidate list, by :func:`citeval.fusion.reciprocal_rank_fusion`: every input ranks
  all of a query's candidates (trec_eval's order: score descending, id descending), so a
  candidate BM25 scores 0 still takes its place at the end of BM25's list.
* **cross-encoder.** A trained reranker (``citeval.rerank train``'s model folder) scores
  every pair from the data file's texts: the query paper as sequence A, the candidate as
  sequence B, each ``title [SEP] abstract`` cut to its own token budget
  (:mod:`citeval.rerank.model`); the score is p(relevant).
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from citeval.errors import InputDataError
from citeval.mdcr.formats import Benchmark, Paper, Scores, check_scores_cover, score_key

LOG = logging.getLogger(__name__)

BM25_BATCH = 64


def query_candidates(benchmark: Benchmark) -> dict[str, list[str]]:
    """``{query_id: candidate ids}``: each query's distinct candidates, sorted."""
    result: dict[str, list[str]] = {}
    for queries in benchmark.values():
        for query_id, candidates in queries.items():
            result[query_id] = sorted({c for ids in candidates.values() for c in ids})
    return result


def _needed_papers(benchmark: Benchmark) -> list[str]:
    pairs = query_candidates(benchmark)
    return sorted(set(pairs) | {c for ids in pairs.values() for c in ids})


# --- BM25 --------------------------------------------------------------------------------


def build_bm25_index(
    papers: Iterable[Paper], index_dir: str | os.PathLike, threads: int = 1
) -> int:
    """A Lucene index (with its impact matrix) of ``papers``; return the documents indexed.

    Documents are ``title + "\\n" + abstract``, in ``paper_id`` order, built as the pool
    indexes are (:func:`citeval.bm25.index.build_text_index`): papers with neither are left out.
    """
    import pyarrow as pa

    from citeval import lucene
    from citeval.bm25.index import build_text_index

    lucene.start_jvm()
    ordered = sorted(papers, key=lambda p: p.paper_id)
    batch = pa.record_batch(
        [
            pa.array([p.paper_id for p in ordered], pa.string()),
            pa.array([p.title for p in ordered], pa.string()),
            pa.array([p.abstract for p in ordered], pa.string()),
        ],
        names=["paper_id", "title", "abstract"],
    )
    metadata = {"source": "MDCR data file"}
    return build_text_index([batch], len(ordered), index_dir, threads, metadata, "the data file")


def bm25_scores(
    benchmark: Benchmark,
    papers: Mapping[str, Paper],
    index_dir: str | os.PathLike,
    k1: float,
    b: float,
    searcher_kind: str,
) -> Scores:
    """BM25 score of every pair on the index at ``index_dir`` (see the module docstring)."""
    from citeval import impacts
    from citeval.bm25.papers import QUERY_SEPARATOR, paper_text

    pairs = query_candidates(benchmark)
    scores: Scores = {}
    query_ids = sorted(pairs)
    with impacts.open_searcher(index_dir, k1=k1, b=b, searcher=searcher_kind) as searcher:
        for start in range(0, len(query_ids), BM25_BATCH):
            batch = query_ids[start : start + BM25_BATCH]
            texts = [
                paper_text(papers[q].title, papers[q].abstract, QUERY_SEPARATOR) for q in batch
            ]
            with_text = [(q, t) for q, t in zip(batch, texts, strict=True) if t]
            for query_id in set(batch) - {q for q, _ in with_text}:
                LOG.warning("query %s has no text: its candidates score 0", query_id)
                scores.update({score_key(query_id, c): 0.0 for c in pairs[query_id]})
            if not with_text:
                continue
            if isinstance(searcher, impacts.ImpactSearcher):
                values = searcher.score_documents(
                    [t for _, t in with_text], [pairs[q] for q, _ in with_text]
                )
            else:
                # Lucene's own searcher: every matching document, then the listed ones.
                hits = searcher.batch_search(
                    [t for _, t in with_text], [q for q, _ in with_text], searcher.num_docs
                )
                values = [[dict(hits[q]).get(c, 0.0) for c in pairs[q]] for q, _ in with_text]
            for (query_id, _), row in zip(with_text, values, strict=True):
                for candidate_id, value in zip(pairs[query_id], row, strict=True):
                    scores[score_key(query_id, candidate_id)] = value
    return scores


def score_bm25(
    benchmark: Benchmark,
    papers: Mapping[str, Paper],
    k1: float,
    b: float,
    searcher_kind: str,
    threads: int = 1,
    tmp_dir: str | os.PathLike | None = None,
) -> Scores:
    """Index the data file's papers in a temporary folder, score, delete the index."""
    needed = _needed_papers(benchmark)
    with tempfile.TemporaryDirectory(prefix=".mdcr-bm25.", dir=tmp_dir) as tmp:
        index_dir = Path(tmp) / "index"
        n_docs = build_bm25_index((papers[p] for p in needed), index_dir, threads)
        LOG.info("BM25(k1=%s, b=%s) over %d documents of the data file", k1, b, n_docs)
        return bm25_scores(benchmark, papers, index_dir, k1, b, searcher_kind)


# --- dense -------------------------------------------------------------------------------


def _split_rows(
    vectors: np.ndarray, row_paper: np.ndarray, paper_ids: Sequence[str]
) -> dict[str, np.ndarray]:
    """``{paper_id: its rows}`` from rows grouped by paper (row_paper non-decreasing)."""
    bounds = np.searchsorted(row_paper, np.arange(len(paper_ids) + 1))
    return {
        paper_id: vectors[bounds[i] : bounds[i + 1]]
        for i, paper_id in enumerate(paper_ids)
        if bounds[i + 1] > bounds[i]
    }


def stored_vectors(
    store_dir: str | os.PathLike, paper_ids: Sequence[str], normalize: bool
) -> dict[str, np.ndarray]:
    """The store's float32 rows of each of ``paper_ids`` it holds (the others are left out)."""
    import polars as pl

    from citeval.embeddings import EmbeddingStore

    store = EmbeddingStore(store_dir)
    wanted = pl.DataFrame({"paper_id": pl.Series(list(paper_ids), dtype=pl.String)})
    held: set[str] = set()
    for shard in store.shards:
        ids = pl.read_parquet(shard.ids_path, columns=["paper_id"])
        ids = ids.with_columns(pl.col("paper_id").cast(pl.String))
        held.update(wanted.join(ids, on="paper_id", how="semi")["paper_id"].to_list())
    if not held:
        return {}
    selection = store.locate(sorted(held), what="MDCR papers")
    vectors = store.gather(selection, normalize=normalize, progress=False)
    return _split_rows(vectors, selection.row_paper(), list(selection.paper_ids))


def encoded_vectors(
    papers: Sequence[Paper],
    spec,
    device: str,
    normalize: bool = False,
    *,
    role: str | None = None,
    encoder=None,
) -> dict[str, np.ndarray]:
    """Vectors of ``papers`` encoded now as ``role``'s inputs (its prompt), with the
    store's precision (float16)."""
    import faiss
    from tqdm import tqdm

    from citeval.embeddings import to_float16
    from citeval.models import load_encoder

    if not papers:
        return {}
    if encoder is None:
        encoder = load_encoder(spec, device=device)
    with tqdm(total=len(papers), unit="paper", desc=spec.name, mininterval=5.0) as bar:
        encoded = encoder.encode(
            [p.title for p in papers], [p.abstract for p in papers], bar, role=role
        )
    # The store keeps float16 (citeval.embeddings.to_float16, with its overflow check); the
    # same rounding here keeps stored and fresh vectors alike, so a paper scores the same
    # either way.
    vectors = np.ascontiguousarray(to_float16(encoded.vectors, spec.name).astype(np.float32))
    if normalize:
        faiss.normalize_L2(vectors)
    return _split_rows(vectors, encoded.paper_index, [p.paper_id for p in papers])


def pair_score(query: np.ndarray, candidate: np.ndarray, similarity: str) -> float:
    """Best score over the (query row, candidate row) pairs, in float64.

    ``l2`` is the negative squared distance; ``cosine`` expects normalised rows.
    """
    q = query.astype(np.float64)
    c = candidate.astype(np.float64)
    if similarity == "l2":
        return float(-((q[:, None, :] - c[None, :, :]) ** 2).sum(axis=2).max())
    return float((q @ c.T).max())


def dense_scores(
    benchmark: Benchmark,
    vectors: Mapping[str, np.ndarray],
    similarity: str,
    query_vectors: Mapping[str, np.ndarray] | None = None,
) -> Scores:
    """Score every pair from ``{paper_id: rows}`` (the queries' rows from
    ``query_vectors`` when given); a paper without rows is an error."""
    pairs = query_candidates(benchmark)
    queries = vectors if query_vectors is None else query_vectors
    candidates = {c for listed in pairs.values() for c in listed}
    missing = sorted(
        {q for q in pairs if q not in queries} | {c for c in candidates if c not in vectors}
    )
    if missing:
        raise InputDataError(
            f"{len(missing)} papers have no vector (no sentence to encode?), first: {missing[:5]}"
        )
    return {
        score_key(query_id, candidate_id): pair_score(
            queries[query_id], vectors[candidate_id], similarity
        )
        for query_id, candidates in pairs.items()
        for candidate_id in candidates
    }


def score_dense(
    benchmark: Benchmark,
    papers: Mapping[str, Paper],
    spec,
    store_dir: str | os.PathLike | None = None,
    *,
    device: str,
) -> Scores:
    """Vectors from the store where it has them, the rest encoded; then every pair.

    A model whose query prompt differs from its document prompt has its query papers
    encoded here with the query prompt (the store holds every paper as a candidate)."""
    from citeval.faiss_index import needs_normalization
    from citeval.models import load_encoder, model_prompts

    normalize = needs_normalization(spec.similarity)
    apart = model_prompts(spec).differ
    queries = sorted(query_candidates(benchmark))
    needed = _needed_papers(benchmark)
    if apart:
        listed = {c for ids in query_candidates(benchmark).values() for c in ids}
        needed = [p for p in needed if p in listed]
    vectors = {} if store_dir is None else stored_vectors(store_dir, needed, normalize)
    missing = [papers[p] for p in needed if p not in vectors]
    LOG.info(
        "%s: %d of %d papers from the embedding store, %d to encode%s",
        spec.name,
        len(vectors),
        len(needed),
        len(missing),
        f", and {len(queries)} queries with the query prompt" if apart else "",
    )
    if not apart:
        vectors.update(encoded_vectors(missing, spec, device, normalize))
        return dense_scores(benchmark, vectors, spec.similarity)
    encoder = load_encoder(spec, device=device)
    vectors.update(
        encoded_vectors(missing, spec, device, normalize, role="document", encoder=encoder)
    )
    query_vectors = encoded_vectors(
        [papers[q] for q in queries], spec, device, normalize, role="query", encoder=encoder
    )
    return dense_scores(benchmark, vectors, spec.similarity, query_vectors)


def score_stored(benchmark: Benchmark, store_dir: str | os.PathLike, similarity: str) -> Scores:
    """Every pair from a user's store alone (an embeddings system has no model to encode
    what the store lacks): a paper without a vector is an error naming the store."""
    needed = _needed_papers(benchmark)
    vectors = stored_vectors(store_dir, needed, normalize=similarity == "cosine")
    missing = [paper for paper in needed if paper not in vectors]
    if missing:
        raise InputDataError(
            f"{len(missing)} of the {len(needed)} MDCR papers have no vector, e.g. {missing[:5]}",
            path=str(store_dir),
        )
    return dense_scores(benchmark, vectors, similarity)


# --- fusion ------------------------------------------------------------------------------


def rrf_scores(benchmark: Benchmark, inputs: Sequence[Mapping[str, float]], k: float) -> Scores:
    """RRF of ``inputs`` (scores files) over each query's candidates."""
    from citeval.fusion import reciprocal_rank_fusion

    for scores in inputs:
        check_scores_cover(benchmark, scores)
    pairs = query_candidates(benchmark)
    runs = [
        {q: {c: scores[score_key(q, c)] for c in candidates} for q, candidates in pairs.items()}
        for scores in inputs
    ]
    fused = reciprocal_rank_fusion(runs, k=k)
    return {score_key(q, c): fused[q][c] for q, candidates in pairs.items() for c in candidates}


# --- cross-encoder -----------------------------------------------------------------------


def cross_encoder_scores(benchmark: Benchmark, papers: Mapping[str, Paper], reranker) -> Scores:
    """p(relevant) of every pair by a :class:`citeval.rerank.model.Reranker`."""
    from tqdm import tqdm

    pairs = query_candidates(benchmark)
    keys: list[str] = []
    queries: list[str] = []
    candidates: list[str] = []
    for query_id in sorted(pairs):
        query = papers[query_id]
        query_text = reranker.text(query.title, query.abstract)
        for candidate_id in pairs[query_id]:
            candidate = papers[candidate_id]
            keys.append(score_key(query_id, candidate_id))
            queries.append(query_text)
            candidates.append(reranker.text(candidate.title, candidate.abstract))
    with tqdm(total=len(keys), unit="pair", desc="cross-encoder", mininterval=5.0) as bar:
        values = reranker.score(queries, candidates, progress=bar)
    return {key: float(value) for key, value in zip(keys, values, strict=True)}
