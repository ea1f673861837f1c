"""Small inputs for the rerank tests: a papers folder, runs and qrels written by hand."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq


def write_papers(directory: Path, texts: Mapping[str, tuple[str, str]]) -> Path:
    """A corpus papers folder (one parquet part) with paper_id, title, abstract."""
    directory.mkdir(parents=True, exist_ok=True)
    ids = sorted(texts)
    table = pa.table(
        {
            "paper_id": pa.array(ids, pa.string()),
            "title": pa.array([texts[i][0] for i in ids], pa.string()),
            "abstract": pa.array([texts[i][1] for i in ids], pa.string()),
            "year": pa.array([2000] * len(ids), pa.int32()),
        }
    )
    pq.write_table(table, directory / "part-00000.parquet")
    return directory


def write_ranked_run(path: Path, run: Mapping[str, Sequence[str]], tag: str = "first") -> Path:
    """A TREC run whose lists are in the given order (scores n, n-1, ...)."""
    lines = []
    for qid in sorted(run):
        docs = run[qid]
        for rank, doc in enumerate(docs, start=1):
            lines.append(f"{qid} Q0 {doc} {rank} {len(docs) - rank + 1}.0 {tag}\n")
    path.write_text("".join(lines))
    return path


def write_qrels(path: Path, qrels: Mapping[str, Sequence[str]]) -> Path:
    lines = [f"{q} 0 {d} 1\n" for q in sorted(qrels) for d in sorted(qrels[q])]
    path.write_text("".join(lines))
    return path


def cpu_reranker(path: str | Path, tokens: int, **settings: Any) -> Any:
    """A ``Reranker`` on the CPU with ``tokens`` per side and small scoring batches
    (``settings`` override them: ``batch_size``, ``dtype``, ...)."""
    from citeval.rerank.model import Reranker

    scoring = {"batch_tokens": 2048, "batch_size": 32, "dtype": "auto", "device": "cpu"}
    return Reranker(
        str(path), query_tokens=tokens, candidate_tokens=tokens, **{**scoring, **settings}
    )
