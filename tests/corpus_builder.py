"""Build small canonical corpus tables (docs/contracts.md) directly, for stage tests."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa

from citeval.ingest import PAPERS_SCHEMA
from citeval.io import write_parquet


def write_corpus(
    root: Path,
    papers: Iterable[dict],
    citations: Iterable[tuple[str, str]],
) -> Path:
    """Write ``root/papers`` and ``root/citations`` with in-corpus citation counts."""
    papers = sorted(papers, key=lambda p: p["paper_id"])
    edges = sorted(set(citations))
    cited_by: dict[str, int] = {}
    references: dict[str, int] = {}
    for citing, cited in edges:
        references[citing] = references.get(citing, 0) + 1
        cited_by[cited] = cited_by.get(cited, 0) + 1
    rows = [
        {
            "paper_id": p["paper_id"],
            "title": p.get("title", f"title of {p['paper_id']}"),
            "abstract": p.get("abstract", "an abstract that is long enough to pass the rule"),
            "year": p.get("year", 2010),
            "fields": p.get("fields", ["Biology"]),
            "n_cited_by": cited_by.get(p["paper_id"], 0),
            "n_references": references.get(p["paper_id"], 0),
        }
        for p in papers
    ]
    write_parquet(
        pa.Table.from_pylist(rows, schema=PAPERS_SCHEMA), root / "papers" / "part-00000.parquet"
    )
    write_parquet(
        pa.table(
            {
                "citing_id": pa.array([c for c, _ in edges], pa.string()),
                "cited_id": pa.array([d for _, d in edges], pa.string()),
            }
        ),
        root / "citations" / "part-00000.parquet",
    )
    return root
