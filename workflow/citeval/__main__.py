"""``citeval <stage> ...``: every stage command under one name (``python -m citeval``).

``citeval bm25 search ...`` runs what ``python -m citeval.bm25 search ...`` runs; each
stage's ``cli`` module holds its parser.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

# Stage -> what it does, in pipeline order.
STAGES = {
    "synth": "write a synthetic S2ORC-like corpus",
    "ingest": "parse S2ORC / Semantic Scholar / parquet shards and merge them",
    "filter": "prefilter the corpus (year, title, abstract, citations)",
    "sample": "sample queries and candidate pools",
    "bm25": "BM25: analyze, index, tune, search",
    "encode": "embed papers with an encoder, one shard",
    "retrieve": "dense retrieval with Faiss",
    "external": "check and import your own runs, vectors and MDCR scores",
    "fusion": "reciprocal rank fusion of runs",
    "metrics": "per-query trec_eval metrics of a run",
    "mdcr": "MDCR: build, score, evaluate, tables",
    "contexts": "local citation contexts: extract per file, merge against the corpus",
    "rerank": "cross-encoder: train, rerank, trade-off",
    "ltr": "learning to rank (LambdaMART): train, rank, score MDCR, importances",
    "local": "local citation recommendation: samples from contexts, tables",
    "train": "encoders from the citation graph: graph, embed-graph, triplets, fit",
    "tables": "the paper's tables and the provenance record",
    "plots": "figures of the tables",
    "export": "a collection or MDCR's pairs as a BEIR folder",
    "regressions": "a finished run's main numbers against those its config pins",
}


def usage() -> str:
    width = max(map(len, STAGES))
    lines = [f"  {name:<{width}}  {text}" for name, text in STAGES.items()]
    return "usage: citeval <stage> [arguments]\n\nstages:\n" + "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in {"-h", "--help"}:
        print(usage())
        return 0 if args else 2
    stage, rest = args[0], args[1:]
    if stage not in STAGES:
        print(f"citeval: unknown stage {stage!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(f"citeval.{stage}.cli")
    return module.main(rest)


if __name__ == "__main__":
    raise SystemExit(main())
