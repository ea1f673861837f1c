"""A run system of your own: BM25 rankings by rank-bm25's BM25Okapi (its defaults,
k1 1.5 and b 0.75, plain lower-cased word tokens), written as TREC runs and MDCR scores.

citeval runs it as the `command` and `mdcr_command` of `systems.runs.bm25okapi` in
config/config.yaml, once per collection and once per MDCR split:

    python examples/rank_bm25_runs.py run --queries {queries} --pools {pools} \\
        --group {group} --rep {rep} --query-papers {query_papers} --papers {papers} \\
        --k {k} --output {output}
    python examples/rank_bm25_runs.py mdcr --benchmark {benchmark} --data {data} \\
        --output {output}

and then checks and imports what it wrote (docs/contracts.md, "Your own system"). It
imports nothing from citeval: the run and scores formats are all it shares with the
pipeline.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.dataset as ds
from rank_bm25 import BM25Okapi

TOKEN = re.compile(r"\w+")


def tokens(text: str) -> list[str]:
    return TOKEN.findall(text.lower())


def texts_of(path: Path, ids: list[str]) -> list[str]:
    """Title and abstract of each of ``ids`` from a papers-format parquet file or folder."""
    table = ds.dataset(path, format="parquet").to_table(
        columns=["paper_id", "title", "abstract"],
        filter=pc.field("paper_id").isin(ids),
    )
    text = {
        paper_id: f"{title or ''} {abstract or ''}"
        for paper_id, title, abstract in zip(
            *(table.column(c).to_pylist() for c in table.column_names), strict=True
        )
    }
    return [text[paper_id] for paper_id in ids]


def ranked(scores: np.ndarray, ids: list[str], k: int) -> list[tuple[str, float]]:
    """The top ``k`` in trec_eval's order: score descending, then id descending."""
    order = sorted(zip(scores.tolist(), ids, strict=True), reverse=True)[:k]
    return [(paper_id, score) for score, paper_id in order]


def run_command(args: argparse.Namespace) -> None:
    queries = ds.dataset(args.queries).to_table(filter=pc.field("group") == args.group)
    pool = ds.dataset(args.pools).to_table(
        filter=(pc.field("group") == args.group) & (pc.field("rep") == args.rep)
    )
    query_ids = sorted(set(queries.column("query_id").to_pylist()))
    pool_ids = sorted(set(pool.column("paper_id").to_pylist()))
    lines = []
    if query_ids:
        bm25 = BM25Okapi([tokens(text) for text in texts_of(args.papers, pool_ids)])
        for query_id, text in zip(query_ids, texts_of(args.query_papers, query_ids), strict=True):
            scores = bm25.get_scores(tokens(text))
            for rank, (paper_id, score) in enumerate(ranked(scores, pool_ids, args.k), start=1):
                lines.append(f"{query_id} Q0 {paper_id} {rank} {score!r} bm25okapi\n")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text("".join(lines), encoding="utf-8")


def mdcr_command(args: argparse.Namespace) -> None:
    benchmark = json.loads(args.benchmark.read_text(encoding="utf-8"))
    papers = {}
    with args.data.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                record = json.loads(line)
                papers[record["paper_id"]] = f"{record['title'] or ''} {record['abstract'] or ''}"
    ids = sorted(papers)
    bm25 = BM25Okapi([tokens(papers[paper_id]) for paper_id in ids])
    position = {paper_id: index for index, paper_id in enumerate(ids)}
    scores = {}
    for queries in benchmark.values():
        for query_id, candidates in queries.items():
            row = bm25.get_scores(tokens(papers[query_id]))
            for candidate in sorted({c for group in candidates.values() for c in group}):
                scores[f"{query_id}_{candidate}"] = float(row[position[candidate]])
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(scores, sort_keys=True, indent=0) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="one collection's run")
    run.add_argument("--queries", required=True, type=Path)
    run.add_argument("--pools", required=True, type=Path)
    run.add_argument("--group", required=True)
    run.add_argument("--rep", required=True, type=int)
    run.add_argument("--query-papers", required=True, type=Path)
    run.add_argument("--papers", required=True, type=Path)
    run.add_argument("--k", required=True, type=int)
    run.add_argument("--output", required=True, type=Path)
    run.set_defaults(handler=run_command)
    mdcr = commands.add_parser("mdcr", help="an MDCR split's scores")
    mdcr.add_argument("--benchmark", required=True, type=Path)
    mdcr.add_argument("--data", required=True, type=Path)
    mdcr.add_argument("--output", required=True, type=Path)
    mdcr.set_defaults(handler=mdcr_command)
    args = parser.parse_args()
    args.handler(args)


if __name__ == "__main__":
    main()
