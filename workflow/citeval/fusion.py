"""Reciprocal rank fusion (RRF) of TREC runs: the ``fuse`` stage.

For each query, a document's fused score is ``sum(1 / (k + rank))`` over the input runs
that retrieved it, where ``rank`` counts from 1 in trec_eval's order of that run (score
descending, doc id descending; Cormack, Clarke & Büttcher, SIGIR 2009). A run that did not
retrieve the document contributes nothing. The fused run keeps the top ``depth`` documents,
again in trec_eval's order.

The sum is computed with :func:`math.fsum`, which rounds exactly once, so the fused scores
(and hence the order of near-ties) do not depend on the order the runs are given in.

    python -m citeval.fusion --runs bm25.trec scincl.trec --k 60 --depth 500 \\
        --output bm25+scincl.trec --tag rrf
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from citeval.cli import run_cli
from citeval.errors import ConfigError
from citeval.trec import Run, rank_documents, read_run, write_run

log = logging.getLogger(__name__)


def reciprocal_rank_fusion(
    runs: Sequence[Mapping[str, Mapping[str, float]]],
    *,
    k: float = 60,
    depth: int | None = None,
) -> Run:
    """Fuse ``runs`` (``{qid: {docid: score}}``) by RRF; keep the top ``depth`` per query.

    Queries present in any run appear in the result. ``depth=None`` keeps every document.
    """
    if k < 0:
        raise ConfigError(f"RRF k must be >= 0, got {k}")
    if depth is not None and depth < 1:
        raise ConfigError(f"depth must be >= 1, got {depth}")
    terms: dict[str, dict[str, list[float]]] = {}
    for run in runs:
        for qid, scores in run.items():
            per_doc = terms.setdefault(qid, {})
            for rank, (doc_id, _) in enumerate(rank_documents(scores), start=1):
                per_doc.setdefault(doc_id, []).append(1.0 / (k + rank))
    fused: Run = {}
    for qid in sorted(terms):
        scores = {doc_id: math.fsum(values) for doc_id, values in terms[qid].items()}
        fused[qid] = dict(rank_documents(scores, depth))
    return fused


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m citeval.fusion",
        description="Reciprocal rank fusion of TREC runs.",
    )
    parser.add_argument(
        "--runs", required=True, nargs="+", type=Path, help="TREC runs to fuse (2 or more)"
    )
    parser.add_argument("--k", type=int, default=60, help="RRF constant k (default 60)")
    parser.add_argument(
        "--depth", type=int, default=500, help="documents kept per query (default 500)"
    )
    parser.add_argument("--output", required=True, type=Path, help="fused TREC run to write")
    parser.add_argument("--tag", default="rrf", help="run tag (default rrf)")
    return parser


def command(args: argparse.Namespace) -> None:
    if len(args.runs) < 2:
        raise ConfigError(f"--runs needs at least 2 runs to fuse, got {len(args.runs)}")
    if not args.tag or any(ch.isspace() for ch in args.tag):
        raise ConfigError(f"--tag must be non-empty without whitespace, got {args.tag!r}")
    runs = []
    for path in args.runs:
        run = read_run(path)
        log.info("read %s: %d queries", path, len(run))
        runs.append(run)
    fused = reciprocal_rank_fusion(runs, k=args.k, depth=args.depth)
    write_run(fused, args.output, args.tag, k=args.depth)
    log.info(
        "wrote %s: %d queries fused from %d runs (k=%d, depth=%d)",
        args.output,
        len(fused),
        len(runs),
        args.k,
        args.depth,
    )


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(build_parser, command, argv)


if __name__ == "__main__":
    sys.exit(main())
