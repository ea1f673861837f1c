"""What an export holds, read from the pipeline's files: a collection (global or local) or
MDCR's pairs, as BEIR documents, queries and qrels.

Texts are the ones the pipeline's systems see:

* documents: a pool paper's (or an MDCR candidate's) title and abstract as the corpus holds
  them, missing parts empty;
* queries: ``title + " " + abstract`` of the query's papers folder row, empty parts left
  out, which is BM25's query (:func:`citeval.bm25.papers.paper_text`). For the global task
  that row is the query paper; for the local task it is the context's row of the sample's
  ``query_papers/``, whose title is the local context and whose abstract the citing
  paper's title and abstract (null without ``local.global_context``), so the text is the
  context followed by its global context.

A collection's qrels are its qrels file as is. MDCR is a re-ranking benchmark: each query
is scored on its own listed candidates only. Its export is one corpus holding every
listed candidate once, and qrels that judge every listed (query, candidate) pair: 1 for a
positive (``true``), 0 for a negative of any type. The judged pairs are therefore the
candidate lists, and ranking each query's judged documents by a model's scores gives the
MDCR evaluator's values (docs/export.md).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from citeval.bm25.papers import (
    QUERY_SEPARATOR,
    connect,
    count_pool,
    iter_pool_papers,
    paper_text,
    papers_glob,
    require_file,
)
from citeval.collection_list import listing_path, read_collections
from citeval.errors import InputDataError
from citeval.export.beir import Document, Query
from citeval.layout import LOCAL_SETUP, MDCR_SPLIT_OF_FILE, QUERY_PAPERS
from citeval.mdcr.formats import POSITIVE_TYPE, load_benchmark, summarize
from citeval.trec import Qrels, read_qrels

LOG = logging.getLogger(__name__)

COLLECTION_NAME = re.compile(r"^(?P<group>[^/\s]+)\.rep(?P<rep>\d+)$")
GLOBAL_TASK, LOCAL_TASK, MDCR_TASK = "global", "local", "mdcr"
# A local query's row carries these besides its texts; the local tables split by them.
LOCAL_METADATA = ("citing_id", "granularity")
MDCR_FILE = re.compile(r"^mdcr_(?P<split>[a-z]+)\.json$")

DOCUMENT_TEXT = "corpus title; text: the abstract"
QUERY_TEXT = {
    GLOBAL_TASK: "the query paper's title + ' ' + abstract (BM25's query)",
    LOCAL_TASK: "the context + ' ' + the citing paper's title and abstract when the sample "
    "holds them (BM25's query)",
    MDCR_TASK: "the query paper's title + ' ' + abstract from the data file (BM25's query)",
}


@dataclass
class Source:
    """One export's content; ``documents`` streams (a pool may be large), in id order."""

    task: str
    collection: dict[str, Any]
    documents: Iterator[Document]
    n_documents: int
    queries: list[Query]
    qrels: Qrels
    inputs: dict[str, str]
    where: str

    def texts(self) -> dict[str, str]:
        return {"documents": DOCUMENT_TEXT, "queries": QUERY_TEXT[self.task]}


def parse_collection(name: str) -> tuple[str, int]:
    """``pool-800.rep0`` -> (``pool-800``, 0)."""
    match = COLLECTION_NAME.match(name)
    if match is None:
        raise InputDataError(
            f"collection {name!r} is not <group>.rep<rep> (e.g. pool-800.rep0, "
            "computer-science.rep1, contexts.rep0)"
        )
    return match["group"], int(match["rep"])


def collection_source(
    samples: str | os.PathLike,
    collection: str,
    papers: str | os.PathLike,
    query_papers: str | os.PathLike | None,
    *,
    threads: int = 1,
    memory_limit: str | None = None,
) -> Source:
    """A collection of a sample folder (``samples/<setup>-<split>``): its pool's papers,
    its queries and its qrels. ``query_papers`` holds the queries' texts: the corpus papers
    (global; the default), or a local sample's ``query_papers/`` (the default there)."""
    samples = Path(samples)
    group, rep = parse_collection(collection)
    rows = read_collections(samples)
    info = next((row for row in rows if row.name == collection), None)
    if info is None:
        present = ", ".join(row.name for row in rows[:10]) or "none"
        raise InputDataError(
            f"no collection {collection!r} (collections present: {present})",
            path=str(listing_path(samples)),
        )
    if info.n_queries == 0:
        raise InputDataError(
            f"collection {collection!r} has no queries (sampling could not draw any; the "
            "sample report says why): there is nothing to evaluate, so nothing to export",
            path=str(listing_path(samples)),
        )
    task = LOCAL_TASK if info.setup == LOCAL_SETUP else GLOBAL_TASK
    if query_papers is None:
        query_papers = samples / QUERY_PAPERS if task == LOCAL_TASK else papers
        LOG.info("query texts from %s", query_papers)
    con = connect(threads, memory_limit)
    queries_file = require_file(samples / "queries.parquet", "queries file")
    pools_file = str(samples / "pools.parquet")
    n_documents = count_pool(con, pools_file, group, rep)
    qrels_file = samples / "qrels" / f"{collection}.qrels"
    qrels = read_qrels(require_file(qrels_file, "qrels file"))
    queries = load_queries(con, queries_file, group, query_papers, task)
    LOG.info(
        "%s %s-%s/%s: %d queries, %d pool papers, %d judged queries",
        task,
        info.setup,
        info.split,
        collection,
        len(queries),
        n_documents,
        len(qrels),
    )
    batches = iter_pool_papers(con, papers, pools_file, group, rep)
    return Source(
        task=task,
        collection={
            "setup": info.setup,
            "split": info.split,
            "group": group,
            "rep": rep,
            "name": collection,
            "pool_size": info.pool_size,
            "requested_pool_size": info.requested_pool_size,
        },
        documents=pool_documents(batches),
        n_documents=n_documents,
        queries=queries,
        qrels=qrels,
        inputs={
            "collections": str(listing_path(samples)),
            "queries": queries_file,
            "pools": pools_file,
            "qrels": str(qrels_file),
            "papers": str(papers),
            "query_papers": str(query_papers),
        },
        where=str(qrels_file),
    )


def pool_documents(batches: Iterator[Any]) -> Iterator[Document]:
    for batch in batches:
        columns = (batch.column(i).to_pylist() for i in range(3))
        for paper_id, title, abstract in zip(*columns, strict=True):
            yield Document(paper_id, title or "", abstract or "")


def load_queries(
    con: Any, queries_file: str, group: str, query_papers: str | os.PathLike, task: str
) -> list[Query]:
    """The group's queries with their texts, by id; an error names queries without a row."""
    texts = papers_glob(query_papers)
    described = con.execute("DESCRIBE SELECT * FROM read_parquet(?)", [texts]).fetchall()
    columns = {row[0] for row in described}
    extra = [name for name in LOCAL_METADATA if name in columns] if task == LOCAL_TASK else []
    selected = ", ".join(f"p.{name}" for name in ("title", "abstract", *extra))
    rows = con.execute(
        f"SELECT q.query_id, p.paper_id IS NOT NULL, {selected} FROM read_parquet(?) q "
        "LEFT JOIN read_parquet(?) p ON p.paper_id = q.query_id "
        'WHERE q."group" = ? ORDER BY q.query_id',
        [queries_file, texts, group],
    ).fetchall()
    missing = [row[0] for row in rows if not row[1]]
    if missing:
        hint = (
            f"; a local sample's queries are contexts: pass --query-papers <samples>/{QUERY_PAPERS}"
            if task == GLOBAL_TASK
            else ""
        )
        raise InputDataError(
            f"{len(missing)} queries of group {group!r} have no row in {query_papers} "
            f"(e.g. {', '.join(map(repr, missing[:5]))}){hint}",
            path=queries_file,
        )
    queries = []
    for query_id, _found, title, abstract, *values in rows:
        metadata = {name: value for name, value in zip(extra, values, strict=True)}
        queries.append(Query(query_id, paper_text(title, abstract, QUERY_SEPARATOR), metadata))
    return queries


def mdcr_source(
    benchmark_path: str | os.PathLike, data_path: str | os.PathLike, field: str | None = None
) -> Source:
    """MDCR's pairs (of one ``field``, or of every field): every listed candidate once in
    the corpus, each query with its field as metadata, every listed pair judged."""
    benchmark, papers = load_benchmark(benchmark_path, data_path)
    if field is not None:
        if field not in benchmark:
            raise InputDataError(
                f"no field {field!r} in the benchmark (fields: {', '.join(sorted(benchmark))})",
                path=str(benchmark_path),
            )
        benchmark = {field: benchmark[field]}
    queries: list[Query] = []
    qrels: Qrels = {}
    for field_name, field_queries in benchmark.items():
        for query_id, candidates in field_queries.items():
            paper = papers[query_id]
            text = paper_text(paper.title, paper.abstract, QUERY_SEPARATOR)
            queries.append(Query(query_id, text, {"field": field_name}))
            judged = qrels.setdefault(query_id, {})
            for kind, ids in candidates.items():
                for candidate_id in ids:
                    # A candidate listed under two negative types is judged once; the
                    # benchmark's reader refuses one that is both positive and negative.
                    judged[candidate_id] = int(kind == POSITIVE_TYPE)
    queries.sort(key=lambda query: query.id)
    candidate_ids = sorted({doc for judged in qrels.values() for doc in judged})
    documents = (Document(doc, papers[doc].title, papers[doc].abstract) for doc in candidate_ids)
    match = MDCR_FILE.match(Path(benchmark_path).name)
    split = MDCR_SPLIT_OF_FILE.get(match["split"]) if match else None
    LOG.info(
        "MDCR %s: %d fields, %d queries, %d candidates, %d judged pairs",
        benchmark_path,
        len(benchmark),
        len(queries),
        len(candidate_ids),
        sum(len(judged) for judged in qrels.values()),
    )
    return Source(
        task=MDCR_TASK,
        collection={"split": split, "field": field, "fields": summarize(benchmark)},
        documents=iter(documents),
        n_documents=len(candidate_ids),
        queries=queries,
        qrels=qrels,
        inputs={"benchmark": str(benchmark_path), "data": str(data_path)},
        where=str(benchmark_path),
    )
