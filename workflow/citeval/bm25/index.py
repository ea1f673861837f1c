"""BM25 indexes: the corpus analyzed once, and each pool's index cut from it.

:func:`analyze_corpus` runs Anserini's analyzer once over the prefiltered papers
(:mod:`citeval.analyzed`); :func:`build_pool_index` cuts one collection's impact matrix
from it (and builds Lucene's own index beside it on request); :func:`build_text_index`
indexes papers given as text, for MDCR's data file.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from citeval import analyzed, impacts, lucene
from citeval.bm25.papers import (
    connect,
    count_pool,
    iter_corpus_papers,
    iter_json_collection,
    iter_pool_papers,
    paper_documents,
    require_file,
    write_json_collection,
)
from citeval.errors import InputDataError
from citeval.io import atomic_path

LOG = logging.getLogger(__name__)


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
    con = connect(threads, memory_limit)
    n_papers, batches = iter_corpus_papers(con, papers_dir, ids_path)
    LOG.info("analyzing %d papers with %d threads", n_papers, threads)
    meta = analyzed.write_analyzed_corpus(paper_documents(batches), output_dir, n_papers, threads)
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
    pools = require_file(pools_path, "pools file")
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
    con = connect(threads, memory_limit)
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
