"""BM25 stage: the analyzed corpus, one index per pool, TREC runs, and k1/b tuning.

``python -m citeval.bm25 analyze|index|search|tune`` (see ``--help`` of each). Lucene is
reached through pyserini's Anserini jar; :mod:`citeval.lucene` starts the JVM and explains
how.

* ``analyze`` runs Anserini's analyzer once over every prefiltered paper's document,
  ``title + "\\n" + abstract`` (:mod:`citeval.analyzed`). Papers are streamed from the
  parquet parts in paper id order with a DuckDB semi-join, so the corpus is never in
  memory.
* ``index`` writes one index per collection (setup, split, group, rep): the impact matrix
  of its pool's papers (:mod:`citeval.impacts`), cut from the analyzed corpus, so no
  paper is analyzed twice however many pools hold it. Papers with neither title nor
  abstract are left out (nothing could match them). ``citeval-index.json`` inside the
  index records what went in. With ``--lucene-papers`` the folder is also the pool's
  Lucene index (an Anserini JsonCollection indexed with ``IndexCollection``, written by
  one thread, :data:`citeval.lucene.WRITER_THREADS`, so documents keep paper id order),
  and the matrix is checked against Lucene's statistics before the index is committed.
* ``search`` runs one query per query paper, ``title + " " + abstract``, with Lucene's
  ``BM25Similarity(k1, b)``, scored either by the impact matrix (``--searcher impacts``,
  the default: the same scores and rankings as Lucene, bit for bit, several times faster
  on long queries) or by Lucene's ``IndexSearcher`` (``--searcher lucene``, the
  reference). The query paper itself is never a candidate: k+1 hits are
  fetched and its own id dropped. Scores are Lucene's raw float32 values; the run is
  written in trec_eval's order (score descending, ties by docid descending). Where a tie
  straddles the k-th place, the query is searched deeper until the tie group is complete,
  so the cut is the same one trec_eval's order makes, not Lucene's (docid ascending).
* ``tune`` grid-searches (k1, b) on validation collections and writes every grid point's
  score and the chosen pair; ``search --params-json`` reads that file.

Tokenization and scoring, compared with rank-bm25 and bm25s
-----------------------------------------------------------
Lucene analyzes documents and queries with Anserini's ``DefaultEnglishAnalyzer``: Lucene's
``StandardTokenizer`` (Unicode word boundaries: hyphens and apostrophes split words,
dotted abbreviations stay whole), lower-casing, removal of Lucene's 33 English stop words,
and Porter stemming. For example ``"The 2019's U.S.A. e.g. citation-recommendation
networks"`` becomes ``2019 s u.s.a e.g citat recommend network`` and ``"BM25-based
Retrieval of COVID-19 papers"`` becomes ``bm25 base retriev covid 19 paper``. rank-bm25
takes whatever tokens the caller gives it (often ``text.split()``: no lower-casing,
punctuation glued to words, no stemming, stop words kept), and bm25s uses its own regex
tokenizer (lower-cased ``\\w\\w+`` tokens, so one-character tokens are dropped) with an
optional stop-word list and an optional PyStemmer stemmer (not installed here). The same
text thus gives different terms, hence different document lengths, IDFs and rankings,
unless every library is fed the tokens of the Lucene analyzer
(:func:`citeval.lucene.analyze`), as the tests do.

Even on identical tokens the scores differ:

* IDF: Lucene uses ``log(1 + (N - n + 0.5) / (n + 0.5))``, always positive. rank-bm25's
  ``BM25Okapi`` uses ``log((N - n + 0.5) / (n + 0.5))``, which is negative for terms in
  more than half the documents; those are floored at ``epsilon * mean_idf``. (``BM25L``
  and ``BM25Plus`` are other variants again.)
* Document length: Lucene stores each length as a one-byte ``SmallFloat`` code (exact up
  to 40 tokens, then within a few percent) and uses that lossy length in the ``b``
  normalization; rank-bm25 and bm25s use exact lengths.
* Lucene drops the constant ``(k1 + 1)`` factor of the textbook formula (since Lucene 8),
  which scales every score and changes no ranking.
* Repeated query terms: Anserini builds one clause per distinct term, boosted by its
  count; rank-bm25 loops over the query tokens; both weigh a term linearly by its query
  frequency.
* Arithmetic: Lucene computes in float32, rank-bm25 in float64.

Rankings therefore agree closely but not exactly; the tests check the top 10 against
rank-bm25 and an exact re-implementation of Lucene's formula.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
from tqdm import tqdm

from citeval import analyzed, impacts, lucene
from citeval.cli import positive_int, run_cli
from citeval.collections import collection_name, group_query_count, listing_path, read_collections
from citeval.errors import ConfigError, InputDataError
from citeval.io import atomic_path, parquet_glob, write_json
from citeval.trec import Run, rank_documents, read_qrels, write_run

LOG = logging.getLogger(__name__)

DEFAULT_K1 = 0.9
DEFAULT_B = 0.4
DOC_SEPARATOR = "\n"
QUERY_SEPARATOR = " "
JSON_BATCH_ROWS = 10_000


def paper_text(title: str | None, abstract: str | None, separator: str) -> str:
    """``title`` and ``abstract`` joined by ``separator``, leaving out empty parts."""
    parts = [part.strip() for part in (title, abstract) if part and part.strip()]
    return separator.join(parts)


def _connect(threads: int, memory_limit: str | None = None) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute(f"SET threads = {int(threads)}")
    if memory_limit:
        con.execute("SET memory_limit = ?", [memory_limit])
    return con


def _papers_glob(papers_dir: str | os.PathLike) -> str:
    path = Path(papers_dir)
    if not path.is_dir() or not any(path.glob("*.parquet")):
        raise InputDataError("no parquet parts in the papers folder", path=str(path))
    return parquet_glob(path)


def _require_file(path: str | os.PathLike, what: str) -> str:
    if not Path(path).is_file():
        raise InputDataError(f"{what} does not exist", path=str(path))
    return str(path)


def count_pool(
    con: duckdb.DuckDBPyConnection, pools_path: str | os.PathLike, group: str, rep: int
) -> int:
    """Number of papers in the pool of (group, rep); an error names the pools present."""
    pools = _require_file(pools_path, "pools file")
    [(n_pool,)] = con.execute(
        'SELECT count(*) FROM read_parquet(?) WHERE "group" = ? AND rep = ?',
        [pools, group, rep],
    ).fetchall()
    if n_pool == 0:
        present = con.execute(
            'SELECT DISTINCT "group", rep FROM read_parquet(?) ORDER BY ALL', [pools]
        ).fetchall()
        shown = ", ".join(f"{g}.rep{r}" for g, r in present[:10])
        raise InputDataError(
            f"no pool for group {group!r} rep {rep} (pools present: {shown or 'none'})",
            path=pools,
        )
    return int(n_pool)


def _check_all_found(
    con: duckdb.DuckDBPyConnection, ids_sql: str, params: list[Any], papers: str, what: str
) -> None:
    """Raise if any id selected by ``ids_sql`` is missing from the corpus.

    The corpus side is first cut down by a semi-join on the (small) id set, so DuckDB
    never builds a hash table over every corpus id.
    """
    missing = con.execute(
        f"WITH wanted AS ({ids_sql}), "
        "found AS (SELECT paper_id FROM read_parquet(?) "
        "WHERE paper_id IN (SELECT paper_id FROM wanted)) "
        "SELECT paper_id FROM wanted WHERE paper_id NOT IN (SELECT paper_id FROM found) "
        "ORDER BY paper_id",
        [*params, papers],
    ).fetchall()
    if missing:
        examples = ", ".join(repr(row[0]) for row in missing[:5])
        raise InputDataError(
            f"{len(missing)} {what} not in the corpus papers (e.g. {examples})", path=papers
        )


def iter_pool_papers(
    con: duckdb.DuckDBPyConnection,
    papers_dir: str | os.PathLike,
    pools_path: str | os.PathLike,
    group: str,
    rep: int,
    batch_rows: int = JSON_BATCH_ROWS,
) -> Iterator[pa.RecordBatch]:
    """Stream ``paper_id, title, abstract`` of one pool, sorted by ``paper_id``.

    Raises :class:`InputDataError` when a pool paper is missing from the corpus.
    """
    papers = _papers_glob(papers_dir)
    pools = _require_file(pools_path, "pools file")
    pool_ids = 'SELECT paper_id FROM read_parquet(?) WHERE "group" = ? AND rep = ?'
    _check_all_found(con, pool_ids, [pools, group, rep], papers, f"papers of pool {group}")
    reader = con.sql(
        "SELECT paper_id, title, abstract FROM read_parquet(?) "
        f"WHERE paper_id IN ({pool_ids}) ORDER BY paper_id",
        params=[papers, pools, group, rep],
    ).to_arrow_reader(batch_rows)
    yield from reader


def write_json_collection(
    batches: Iterable[pa.RecordBatch], out_dir: Path, n_docs: int
) -> tuple[int, int]:
    """Write an Anserini JsonCollection of one file, in input order; return
    ``(written, empty)``. ``n_docs`` sizes the progress bar."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = empty = 0
    with (
        open(out_dir / "part-00000.jsonl", "w", encoding="utf-8") as handle,
        tqdm(total=n_docs, desc="collection", unit="doc", mininterval=2) as bar,
    ):
        for batch in batches:
            for paper_id, title, abstract in zip(
                *(batch.column(i).to_pylist() for i in range(3)), strict=True
            ):
                contents = paper_text(title, abstract, DOC_SEPARATOR)
                if not contents:
                    empty += 1
                    continue
                record = {"id": paper_id, "contents": contents}
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
                written += 1
            bar.update(batch.num_rows)
    return written, empty


def iter_json_collection(directory: str | os.PathLike) -> Iterator[tuple[str, str]]:
    """``(id, contents)`` of every document of a JsonCollection written here, in order."""
    for path in sorted(Path(directory).glob("part-*.jsonl")):
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                record = json.loads(line)
                yield record["id"], record["contents"]


def iter_corpus_papers(
    con: duckdb.DuckDBPyConnection,
    papers_dir: str | os.PathLike,
    ids_path: str | os.PathLike | None = None,
    batch_rows: int = JSON_BATCH_ROWS,
) -> tuple[int, Iterator[pa.RecordBatch]]:
    """The number of papers and a stream of their ``paper_id, title, abstract``, sorted by
    ``paper_id``: every corpus paper, or those listed in ``ids_path`` (a parquet file with a
    ``paper_id`` column, such as the prefilter's output; each must be in the corpus)."""
    papers = _papers_glob(papers_dir)
    where, params = "", [papers]
    if ids_path is not None:
        ids = _require_file(ids_path, "paper id file")
        listed = "SELECT DISTINCT paper_id FROM read_parquet(?)"
        _check_all_found(con, listed, [ids], papers, f"papers listed in {ids}")
        where, params = f"WHERE paper_id IN ({listed})", [papers, ids]
    [(n_papers,)] = con.execute(f"SELECT count(*) FROM read_parquet(?) {where}", params).fetchall()
    reader = con.sql(
        f"SELECT paper_id, title, abstract FROM read_parquet(?) {where} ORDER BY paper_id",
        params=params,
    ).to_arrow_reader(batch_rows)
    return int(n_papers), iter(reader)


def _documents(batches: Iterable[pa.RecordBatch]) -> Iterator[tuple[str, str]]:
    """``(paper_id, title + "\\n" + abstract)`` of each paper, empty without text."""
    for batch in batches:
        columns = (batch.column(i).to_pylist() for i in range(3))
        for paper_id, title, abstract in zip(*columns, strict=True):
            yield paper_id, paper_text(title, abstract, DOC_SEPARATOR)


def analyze_corpus(
    papers_dir: str | os.PathLike,
    output_dir: str | os.PathLike,
    ids_path: str | os.PathLike | None = None,
    threads: int = 1,
    memory_limit: str | None = None,
) -> dict[str, Any]:
    """Analyze the documents of the corpus papers (or of those in ``ids_path``) once, for
    every pool index cut from them (:mod:`citeval.analyzed`); return the metadata."""
    lucene.start_jvm()
    con = _connect(threads, memory_limit)
    n_papers, batches = iter_corpus_papers(con, papers_dir, ids_path)
    LOG.info("analyzing %d papers with %d threads", n_papers, threads)
    meta = analyzed.write_analyzed_corpus(_documents(batches), output_dir, n_papers, threads)
    if meta["n_without_text"]:
        LOG.warning(
            "%d of %d papers have no title or abstract; no pool index will hold them",
            meta["n_without_text"],
            n_papers,
        )
    LOG.info(
        "analyzed %d papers: %d terms, %d postings",
        meta["n_papers"],
        meta["n_terms"],
        meta["n_postings"],
    )
    return meta


def _pool_rows(
    con: duckdb.DuckDBPyConnection,
    corpus: analyzed.AnalyzedCorpus,
    pools_path: str | os.PathLike,
    group: str,
    rep: int,
) -> tuple[list[str], np.ndarray, int]:
    """Paper ids (ascending) and analyzed rows of the pool's papers with text, and the
    number without text; a pool paper missing from the analyzed corpus is an error."""
    pools = _require_file(pools_path, "pools file")
    table = con.sql(
        "SELECT p.paper_id, a.paper_id IS NULL AS unknown, a.row "
        "FROM read_parquet(?) p LEFT JOIN read_parquet(?) a ON p.paper_id = a.paper_id "
        'WHERE p."group" = ? AND p.rep = ? ORDER BY p.paper_id',
        params=[pools, str(corpus.papers_path), group, rep],
    ).to_arrow_table()
    ids = table.column("paper_id").to_pylist()
    unknown = table.column("unknown").to_numpy(zero_copy_only=False)
    if unknown.any():
        examples = ", ".join(repr(ids[i]) for i in np.flatnonzero(unknown)[:5])
        raise InputDataError(
            f"{int(unknown.sum())} papers of pool {group} not in the analyzed corpus "
            f"{corpus.folder} (e.g. {examples})",
            path=pools,
        )
    rows = table.column("row").to_numpy(zero_copy_only=False)
    with_text = ~np.isnan(rows)
    kept = [paper_id for paper_id, keep in zip(ids, with_text, strict=True) if keep]
    return kept, rows[with_text].astype(np.int64), int((~with_text).sum())


def build_pool_index(
    analyzed_dir: str | os.PathLike,
    pools_path: str | os.PathLike,
    group: str,
    rep: int,
    index_dir: str | os.PathLike,
    threads: int = 1,
    memory_limit: str | None = None,
    lucene_papers_dir: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """Build the BM25 index of one collection's pool; return its metadata.

    The index is the pool's impact matrix (:mod:`citeval.impacts`), cut from the analyzed
    corpus at ``analyzed_dir`` (:mod:`citeval.analyzed`), with the paper id of each doc
    number. Documents are numbered in paper id order. With ``lucene_papers_dir`` (the
    corpus papers), the folder is also the pool's Lucene index, built from the papers'
    texts, and the matrix is checked against Lucene's statistics before it is committed;
    only Lucene's own searcher needs that.
    """
    con = _connect(threads, memory_limit)
    n_pool = count_pool(con, pools_path, group, rep)
    corpus = analyzed.AnalyzedCorpus(analyzed_dir)
    docids, rows, n_without_text = _pool_rows(con, corpus, pools_path, group, rep)
    what = f"pool {group}.rep{rep}"
    if n_without_text:
        LOG.warning(
            "%d of %d papers of %s have no title or abstract; not indexed",
            n_without_text,
            n_pool,
            what,
        )
    if not docids:
        raise InputDataError(f"{what} has no paper with text", path=str(pools_path))
    matrix, lengths, norms = corpus.pool_matrix(rows)
    metadata = {
        "group": group,
        "rep": int(rep),
        "pool_size": n_pool,
        "n_without_text": n_without_text,
        "document": "title + '\\n' + abstract",
        "analyzer": impacts.ANALYZER_NAME,
        "lucene": lucene_papers_dir is not None,
    }

    def add_impacts(index: Path) -> dict[str, Any]:
        if lucene_papers_dir is not None and lucene.read_docids(index) != docids:
            raise lucene.LuceneError(f"Lucene numbered the documents of {what} otherwise")
        verify = lucene_papers_dir is not None
        meta = impacts.write_impacts(index, matrix, corpus.term_names, lengths, norms, verify)
        return {"impacts": meta}

    LOG.info("indexing %d documents of %s", len(docids), what)
    if lucene_papers_dir is None:
        with atomic_path(index_dir) as tmp:
            tmp.mkdir()
            (tmp / lucene.DOCIDS_FILE).write_text("".join(f"{i}\n" for i in docids))
            text = json.dumps({**metadata, **add_impacts(tmp), "n_docs": len(docids)}, indent=2)
            (tmp / lucene.INDEX_METADATA).write_text(text + "\n")
    else:
        lucene.start_jvm()
        batches = iter_pool_papers(con, lucene_papers_dir, pools_path, group, rep)
        metadata["anserini_jar"] = lucene.anserini_jar().name
        Path(index_dir).parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(
            prefix=f".{Path(index_dir).name}.collection.", dir=Path(index_dir).parent
        ) as collection:
            written, _ = write_json_collection(batches, Path(collection), n_pool)
            n_docs = lucene.build_index(collection, index_dir, metadata, extend=add_impacts)
        if n_docs != written:
            raise lucene.LuceneError(f"Lucene indexed {n_docs} documents of {written} of {what}")
    LOG.info("index %s: %d documents", index_dir, len(docids))
    return lucene.read_index_metadata(index_dir)


def build_text_index(
    batches: Iterable[pa.RecordBatch],
    n_papers: int,
    index_dir: str | os.PathLike,
    threads: int,
    metadata: Mapping[str, Any],
    what: str,
    path: str | None = None,
) -> int:
    """Index ``(paper_id, title, abstract)`` batches, in the order given, into ``index_dir``
    with Lucene and the impact matrix; return the number of documents indexed.

    Papers with neither title nor abstract are left out and counted (``n_without_text`` in
    the index metadata, beside ``metadata``). ``what`` names the papers in messages and
    ``path`` is their file, for the error when none has text.
    """
    index_path = Path(index_dir)
    index_path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(
        prefix=f".{index_path.name}.collection.", dir=index_path.parent
    ) as tmp:
        written, empty = write_json_collection(batches, Path(tmp), n_papers)
        if empty:
            LOG.warning(
                "%d of %d papers of %s have no title or abstract; not indexed",
                empty,
                n_papers,
                what,
            )
        if written == 0:
            raise InputDataError(f"{what} has no paper with text", path=path)
        metadata = {
            **metadata,
            "n_without_text": empty,
            "document": "title + '\\n' + abstract",
            "analyzer": "Anserini DefaultEnglishAnalyzer (Porter stemming, English stop words)",
            "anserini_jar": lucene.anserini_jar().name,
        }
        LOG.info(
            "indexing %d documents of %s (Lucene: %d thread; impact matrix: %d)",
            written,
            what,
            lucene.WRITER_THREADS,
            threads,
        )

        def add_impacts(index: Path) -> dict[str, Any]:
            documents = iter_json_collection(tmp)
            return {"impacts": impacts.build_impacts(index, documents, written, threads)}

        n_docs = lucene.build_index(tmp, index_path, metadata, extend=add_impacts)
    if n_docs != written:
        raise lucene.LuceneError(
            f"Lucene indexed {n_docs} documents of {written} written for {what}"
        )
    LOG.info("index %s: %d documents", index_path, n_docs)
    return n_docs


def load_queries(
    con: duckdb.DuckDBPyConnection,
    papers_dir: str | os.PathLike,
    queries_path: str | os.PathLike,
    group: str,
) -> list[tuple[str, str]]:
    """``(query_id, title + " " + abstract)`` of one group's queries, sorted by id.

    Queries without any text are dropped with a warning (they cannot match anything). A
    group that sampling left without queries (its ``collections.tsv`` says 0) has none;
    any other group without queries is an error.
    """
    papers = _papers_glob(papers_dir)
    queries = _require_file(queries_path, "queries file")
    query_ids = 'SELECT query_id AS paper_id FROM read_parquet(?) WHERE "group" = ?'
    n_queries = con.execute(f"SELECT count(*) FROM ({query_ids})", [queries, group]).fetchone()[0]
    if n_queries == 0:
        if group_query_count(Path(queries).parent, group) > 0:
            raise InputDataError(f"no queries for group {group!r}", path=queries)
        LOG.warning("group %s has no queries (the sample report says why)", group)
        return []
    _check_all_found(con, query_ids, [queries, group], papers, f"queries of group {group}")
    rows = con.execute(
        "SELECT paper_id, title, abstract FROM read_parquet(?) "
        f"WHERE paper_id IN ({query_ids}) ORDER BY paper_id",
        [papers, queries, group],
    ).fetchall()
    result = [(qid, paper_text(title, abstract, QUERY_SEPARATOR)) for qid, title, abstract in rows]
    kept = [(qid, text) for qid, text in result if text]
    if len(kept) < len(result):
        LOG.warning("%d queries of %s have no text; skipped", len(result) - len(kept), group)
    return kept


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


def params_from_args(args: argparse.Namespace) -> tuple[float, float]:
    """``(k1, b)`` from ``--params-json`` (a tuning JSON), or ``--k1``/``--b`` and the
    defaults; giving both ways is an error."""
    if args.params_json is not None:
        if args.k1 is not None or args.b is not None:
            raise ConfigError("give either --params-json or --k1/--b, not both")
        return read_params(args.params_json)
    k1 = DEFAULT_K1 if args.k1 is None else args.k1
    b = DEFAULT_B if args.b is None else args.b
    return k1, b


def _check_index_group(index_dir: str | os.PathLike, group: str, rep: int | None) -> None:
    metadata = lucene.read_index_metadata(index_dir)
    if metadata is None:
        return
    if metadata.get("group") != group or (rep is not None and metadata.get("rep") != rep):
        held = collection_name(metadata.get("group"), metadata.get("rep"))
        wanted = group if rep is None else collection_name(group, rep)
        raise ConfigError(f"index {index_dir} holds the pool of {held}, not {wanted}")


def _check_searcher(index_dir: str | os.PathLike, searcher: str) -> None:
    metadata = lucene.read_index_metadata(index_dir) or {}
    if searcher == "lucene" and metadata.get("lucene") is False:
        raise ConfigError(
            f"index {index_dir} was built without Lucene's own index, which the lucene "
            "searcher needs: build it with `index --lucene-papers` (in the workflow, set "
            "bm25.searcher: lucene before the indexes are built)"
        )


def _start(args: argparse.Namespace) -> None:
    lucene.start_jvm(heap=args.java_heap, processors=args.threads)
    lucene.set_java_log_level("INFO" if args.log_level == "DEBUG" else "WARN")


def _analyze_command(args: argparse.Namespace) -> None:
    _start(args)
    analyze_corpus(args.papers, args.output, args.ids, args.threads, args.duckdb_memory)


def _index_command(args: argparse.Namespace) -> None:
    _start(args)
    build_pool_index(
        args.analyzed,
        args.pools,
        args.group,
        args.rep,
        args.index_dir,
        threads=args.threads,
        memory_limit=args.duckdb_memory,
        lucene_papers_dir=args.lucene_papers,
    )


def _search_command(args: argparse.Namespace) -> None:
    k1, b = params_from_args(args)
    _start(args)
    _check_index_group(args.index_dir, args.group, args.rep)
    _check_searcher(args.index_dir, args.searcher)
    con = _connect(args.threads, args.duckdb_memory)
    queries = load_queries(con, args.papers, args.queries, args.group)
    with impacts.open_searcher(args.index_dir, k1, b, args.searcher) as searcher:
        LOG.info(
            "BM25(k1=%s, b=%s), %s searcher: %d queries of %s on %d documents, k=%d",
            k1,
            b,
            args.searcher,
            len(queries),
            args.group,
            searcher.num_docs,
            args.k,
        )
        run = search_queries(searcher, queries, args.k, args.batch_size, threads=args.threads)
    no_hits = sum(1 for docs in run.values() if not docs)
    if no_hits:
        LOG.warning("%d queries retrieved nothing", no_hits)
    write_run(run, args.output, args.tag, args.k)
    LOG.info("wrote %s", args.output)


# --- tuning -------------------------------------------------------------------------------


def _grid(values: Sequence[float], name: str, upper: float | None = None) -> list[float]:
    grid = list(dict.fromkeys(float(v) for v in values))
    if not grid:
        raise ConfigError(f"{name} is empty")
    for value in grid:
        if not math.isfinite(value) or value < 0 or (upper is not None and value > upper):
            bound = f"in [0, {upper}]" if upper is not None else ">= 0"
            raise ConfigError(f"{name} values must be {bound}, got {value}")
    return grid


def choose_best(grid_scores: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The grid point with the highest ``score``; the first in grid order on ties.

    NaN scores never win.
    """
    best: dict[str, Any] | None = None
    for point in grid_scores:
        score = point["score"]
        if math.isnan(score):
            continue
        if best is None or score > best["score"]:
            best = point
    if best is None:
        raise ConfigError("every grid point scored NaN; nothing to choose")
    return best


def tune(
    papers_dir: str | os.PathLike,
    analyzed_dir: str | os.PathLike,
    sample_dir: str | os.PathLike,
    k1_grid: Sequence[float],
    b_grid: Sequence[float],
    metric: str = "map",
    k: int = 500,
    index_root: str | os.PathLike | None = None,
    collections: Sequence[str] | None = None,
    threads: int = 1,
    batch_size: int = 256,
    memory_limit: str | None = None,
    tmp_dir: str | os.PathLike | None = None,
    searcher_kind: str = "impacts",
) -> dict[str, Any]:
    """Grid-search BM25's (k1, b) on the collections of one validation sample.

    ``sample_dir`` is ``samples/<setup>-<split>/`` (collections.tsv, queries.parquet,
    pools.parquet, qrels/). Indexes come from ``<index_root>/<group>.rep<rep>``, or, with
    no ``index_root``, are built in a temporary folder under ``tmp_dir`` (default: the
    system's) and deleted after use.
    ``collections`` (names ``<group>.rep<rep>``) restricts the collections used.

    A grid point's score is the mean over collections of the mean ``metric`` over the
    collection's judged queries (a query with no hits counts as 0), so every pool or field
    weighs the same, as in the paper's tables. Grid order is k1 outer, b inner, as given;
    ties go to the first point. ``searcher_kind`` is ``impacts`` or ``lucene``
    (:func:`citeval.impacts.open_searcher`).
    """
    from citeval import metrics

    try:
        measure = str(metrics.parse_measure(metric))
    except ValueError as error:
        raise ConfigError(f"--metric: {error}") from error
    k1_values = _grid(k1_grid, "k1 grid")
    b_values = _grid(b_grid, "b grid", upper=1.0)
    sample = Path(sample_dir)
    rows = read_collections(sample)
    if collections:
        wanted = set(collections)
        unknown = wanted - {r.name for r in rows}
        if unknown:
            raise ConfigError(f"collections not in {listing_path(sample)}: {sorted(unknown)}")
        rows = [r for r in rows if r.name in wanted]
    without_queries = [r.name for r in rows if r.n_queries == 0]
    if without_queries:
        LOG.warning("%s have no queries: tuning leaves them out", ", ".join(without_queries))
        rows = [r for r in rows if r.n_queries > 0]
    if not rows:
        raise InputDataError(
            "no collection with queries to tune on: raise sampling.validation sizes or set "
            "bm25.tune.enabled: false",
            path=str(listing_path(sample)),
        )

    points = [(k1, b) for k1 in k1_values for b in b_values]
    per_point: list[dict[str, float]] = [{} for _ in points]
    con = _connect(threads, memory_limit)
    query_cache: dict[str, list[tuple[str, str]]] = {}
    names = [r.name for r in rows]
    for row, name in zip(rows, names, strict=True):
        group, rep = row.group, row.rep
        qrels = read_qrels(sample / "qrels" / f"{name}.qrels")
        if group not in query_cache:
            query_cache[group] = load_queries(con, papers_dir, sample / "queries.parquet", group)
        queries = [(qid, text) for qid, text in query_cache[group] if qid in qrels]
        judged = sorted(qrels)
        with contextlib.ExitStack() as stack:
            if index_root is not None:
                index_dir = Path(index_root) / name
                _check_index_group(index_dir, group, rep)
                _check_searcher(index_dir, searcher_kind)
            else:
                if tmp_dir is not None:
                    Path(tmp_dir).mkdir(parents=True, exist_ok=True)
                tmp = stack.enter_context(
                    tempfile.TemporaryDirectory(prefix=f".bm25-tune-{name}.", dir=tmp_dir)
                )
                index_dir = Path(tmp) / "index"
                build_pool_index(
                    analyzed_dir,
                    sample / "pools.parquet",
                    group,
                    rep,
                    index_dir,
                    threads,
                    memory_limit,
                    lucene_papers_dir=papers_dir if searcher_kind == "lucene" else None,
                )
            searcher = stack.enter_context(impacts.open_searcher(index_dir, searcher=searcher_kind))
            LOG.info(
                "tuning on %s: %d queries, %d documents", name, len(queries), searcher.num_docs
            )
            for i, (k1, b) in enumerate(tqdm(points, desc=name, unit="point")):
                searcher.set_bm25(k1, b)
                run = search_queries(
                    searcher, queries, k, batch_size, progress=False, threads=threads
                )
                values = metrics.evaluate(run, qrels, [measure])
                mean = metrics.mean_over_queries(
                    values, queries=judged, missing_as_zero=True, measures=[measure]
                )[measure]
                per_point[i][name] = mean
                LOG.debug("%s k1=%s b=%s %s=%.4f", name, k1, b, measure, mean)

    grid = [
        {
            "k1": k1,
            "b": b,
            "score": math.fsum(scores[n] for n in names) / len(names),
            "per_collection": {n: scores[n] for n in names},
        }
        for (k1, b), scores in zip(points, per_point, strict=True)
    ]
    best = choose_best(grid)
    LOG.info("best: k1=%s b=%s %s=%.4f", best["k1"], best["b"], measure, best["score"])
    return {
        "k1": best["k1"],
        "b": best["b"],
        "score": best["score"],
        "metric": measure,
        "k": k,
        "k1_grid": k1_values,
        "b_grid": b_values,
        "collections": names,
        "aggregate": "mean over collections of the mean over judged queries",
        "grid": grid,
    }


def _tune_command(args: argparse.Namespace) -> None:
    _start(args)
    result = tune(
        args.papers,
        args.analyzed,
        args.sample_dir,
        args.k1_grid,
        args.b_grid,
        metric=args.metric,
        k=args.k,
        index_root=args.index_root,
        collections=args.collection,
        threads=args.threads,
        batch_size=args.batch_size,
        memory_limit=args.duckdb_memory,
        tmp_dir=args.tmp_dir or Path(args.output).parent,
        searcher_kind=args.searcher,
    )
    write_json(result, args.output)
    LOG.info("wrote %s", args.output)


# --- command line -------------------------------------------------------------------------


def _add_runtime_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--threads",
        type=positive_int,
        default=1,
        help="CPU threads for DuckDB, the impact matrix and search; Lucene writes an index "
        "with one thread, so the index does not depend on this (default: 1)",
    )
    parser.add_argument(
        "--java-heap",
        default=None,
        help=f"JVM maximum heap, e.g. 4g (default: ${lucene.HEAP_ENV}, else the JVM's default)",
    )
    parser.add_argument(
        "--duckdb-memory", default=None, help="DuckDB memory_limit, e.g. 4GB (default: DuckDB's)"
    )


def _add_search_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--k", type=positive_int, default=500, help="hits per query (default: 500)")
    parser.add_argument(
        "--searcher",
        choices=impacts.SEARCHERS,
        default="impacts",
        help="impacts: Lucene's BM25 scored in bulk from the index's impact matrix, the same "
        "scores and ranking, several times faster; lucene: Lucene's IndexSearcher "
        "(default: impacts)",
    )
    parser.add_argument(
        "--batch-size",
        type=positive_int,
        default=256,
        help="queries per batch (progress is reported per batch; default: 256)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m citeval.bm25",
        description="BM25 with Lucene (pyserini/Anserini): index pools, search, tune k1/b.",
    )
    sub = parser.add_subparsers(dest="subcommand", required=True)

    analyze = sub.add_parser(
        "analyze", help="analyze the corpus papers once, for every pool index cut from them"
    )
    analyze.add_argument("--papers", required=True, help="corpus/papers folder of parquet parts")
    analyze.add_argument(
        "--ids",
        default=None,
        help="parquet file whose paper_id column lists the papers to analyze, e.g. "
        "filtered/papers.parquet (default: every corpus paper)",
    )
    analyze.add_argument("--output", required=True, help="analyzed corpus folder to write")
    _add_runtime_arguments(analyze)
    analyze.set_defaults(handler=_analyze_command)

    index = sub.add_parser("index", help="build the BM25 index of one collection's pool")
    index.add_argument("--analyzed", required=True, help="analyzed corpus folder (`analyze`)")
    index.add_argument(
        "--lucene-papers",
        default=None,
        metavar="PAPERS",
        help="also build Lucene's own index from this corpus/papers folder and check the "
        "impact matrix against it (the lucene searcher needs it)",
    )
    index.add_argument("--pools", required=True, help="samples/<setup>-<split>/pools.parquet")
    index.add_argument("--group", required=True, help="pool group, e.g. pool-200000 or biology")
    index.add_argument("--rep", type=int, required=True, help="repetition, from 0")
    index.add_argument("--index-dir", required=True, help="output index folder")
    _add_runtime_arguments(index)
    index.set_defaults(handler=_index_command)

    search = sub.add_parser("search", help="BM25 run of one collection's queries")
    search.add_argument("--index-dir", required=True, help="index built by `index`")
    search.add_argument("--papers", required=True, help="corpus/papers folder of parquet parts")
    search.add_argument("--queries", required=True, help="samples/<setup>-<split>/queries.parquet")
    search.add_argument("--group", required=True, help="query group (the pool's group)")
    search.add_argument(
        "--rep", type=int, default=None, help="repetition; checked against the index if given"
    )
    search.add_argument("--k1", type=float, default=None, help=f"BM25 k1 (default: {DEFAULT_K1})")
    search.add_argument("--b", type=float, default=None, help=f"BM25 b (default: {DEFAULT_B})")
    search.add_argument(
        "--params-json", default=None, help="take k1 and b from a `tune` output instead"
    )
    search.add_argument("--output", required=True, help="TREC run file to write")
    search.add_argument("--tag", default="bm25", help="run tag (default: bm25)")
    _add_search_arguments(search)
    _add_runtime_arguments(search)
    search.set_defaults(handler=_search_command)

    tune_parser = sub.add_parser("tune", help="grid-search k1 and b on validation collections")
    tune_parser.add_argument(
        "--papers", required=True, help="corpus/papers folder of parquet parts"
    )
    tune_parser.add_argument("--analyzed", required=True, help="analyzed corpus folder (`analyze`)")
    tune_parser.add_argument(
        "--sample-dir",
        required=True,
        help="samples/<setup>-<split>/: collections.tsv, queries.parquet, pools.parquet, qrels/",
    )
    tune_parser.add_argument(
        "--index-root",
        default=None,
        help="folder with one index per collection, <group>.rep<rep> "
        "(default: build each in a temporary folder)",
    )
    tune_parser.add_argument(
        "--collection",
        action="append",
        default=None,
        metavar="GROUP.repN",
        help="tune only on this collection (repeatable; default: all in collections.tsv)",
    )
    tune_parser.add_argument(
        "--k1-grid", type=float, nargs="+", required=True, help="k1 values, in grid order"
    )
    tune_parser.add_argument(
        "--b-grid", type=float, nargs="+", required=True, help="b values, in grid order"
    )
    tune_parser.add_argument("--metric", default="map", help="measure to maximize (default: map)")
    tune_parser.add_argument("--output", required=True, help="tuning JSON to write")
    tune_parser.add_argument(
        "--tmp-dir",
        default=None,
        help="where indexes built on the fly go (default: the folder of --output)",
    )
    _add_search_arguments(tune_parser)
    _add_runtime_arguments(tune_parser)
    tune_parser.set_defaults(handler=_tune_command)
    return parser


def command(args: argparse.Namespace) -> None:
    """Run the chosen subcommand."""
    args.handler(args)


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(build_parser, command, argv)


if __name__ == "__main__":
    sys.exit(main())
