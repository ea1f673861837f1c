"""Inputs shared by training and reranking: paper texts and first-stage runs, checked.

A run's document that is not in the corpus, or a query paper without a row, is an
:class:`~citeval.errors.InputDataError` naming the run file, its line and the id.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from citeval.errors import InputDataError
from citeval.trec import first_line, rank_documents, read_run

Texts = dict[str, tuple[str | None, str | None]]
COLUMNS = ("paper_id", "title", "abstract")


def read_papers(papers_dir: str | os.PathLike, paper_ids: Iterable[str]) -> Texts:
    """``{paper_id: (title, abstract)}`` of the wanted ids found in the parquet parts.

    Ids absent from the corpus are simply absent from the result (callers say where they
    came from).
    """
    import pyarrow as pa
    import pyarrow.dataset as ds

    path = Path(papers_dir)
    if not path.is_dir() or not any(path.glob("*.parquet")):
        raise InputDataError("no parquet parts in the papers folder", path=str(path))
    wanted = sorted(set(paper_ids))
    dataset = ds.dataset(sorted(str(p) for p in path.glob("*.parquet")), format="parquet")
    missing = [c for c in COLUMNS if c not in dataset.schema.names]
    if missing:
        raise InputDataError(f"papers have no column(s) {missing}", path=str(path))
    id_type = dataset.schema.field("paper_id").type
    table = dataset.to_table(
        columns=list(COLUMNS),
        filter=ds.field("paper_id").isin(pa.array(wanted).cast(id_type)),
    )
    ids = [str(v) for v in table.column("paper_id").to_pylist()]
    titles = table.column("title").to_pylist()
    abstracts = table.column("abstract").to_pylist()
    return dict(zip(ids, zip(titles, abstracts, strict=True), strict=True))


def read_run_texts(
    papers_dir: str | os.PathLike,
    runs: Iterable[dict[str, list[tuple[str, float]]]],
    depth: int | None,
    query_papers: str | os.PathLike | None = None,
    extra_ids: Iterable[str] = (),
) -> Texts:
    """The texts of every query and every document within ``depth`` of the runs (and of
    ``extra_ids``). Queries are papers of ``query_papers`` when given (the local task's
    contexts, whose ids are no paper's), else of ``papers_dir``."""
    runs = list(runs)
    ids = run_ids(runs, depth) | set(extra_ids)
    if query_papers is None:
        return read_papers(papers_dir, ids)
    queries = {qid for run in runs for qid in run}
    texts = read_papers(papers_dir, ids - queries)
    texts.update(read_papers(query_papers, queries))
    return texts


def check_in_corpus(
    run: dict[str, list[tuple[str, float]]],
    path: str | os.PathLike,
    texts: Texts,
    depth: int | None = None,
) -> None:
    """Every query of ``run`` and every document within ``depth`` must be in the corpus."""
    for qid in sorted(run):
        if qid not in texts:
            raise InputDataError(
                f"query paper {qid!r} is not in the papers corpus",
                path=str(path),
                line=first_line(path, qid),
                field="qid",
            )
        for doc_id, _ in run[qid][:depth]:
            if doc_id not in texts:
                raise InputDataError(
                    f"document {doc_id!r} of query {qid!r} is not in the papers corpus",
                    path=str(path),
                    line=first_line(path, qid, doc_id),
                    field="docid",
                )


def read_ranked_run(path: str | os.PathLike) -> dict[str, list[tuple[str, float]]]:
    """A run file as ``{qid: [(docid, score), ...]}`` in trec_eval's order (its ranking)."""
    run = read_run(path)
    return {qid: rank_documents(docs) for qid, docs in sorted(run.items())}


def run_ids(runs: Iterable[dict[str, list[tuple[str, float]]]], depth: int | None) -> set[str]:
    """Every query id and every document id within ``depth`` of the runs."""
    ids: set[str] = set()
    for run in runs:
        for qid, ranked in run.items():
            ids.add(qid)
            ids.update(doc for doc, _ in ranked[:depth])
    return ids
