"""``python -m citeval.metrics``: the metrics stage's command line."""

from __future__ import annotations

import argparse
import logging
import math
from collections.abc import Sequence
from pathlib import Path

from citeval.cli import run_cli
from citeval.errors import ConfigError, InputDataError
from citeval.measures import EVALUATED, EVALUATED_AT_EACH_CUTOFF, names, spoken_list
from citeval.metrics import (
    ALL_QUERIES,
    evaluate,
    mean_over_queries,
    measures_for,
    write_per_query_tsv,
)
from citeval.stages import METRICS
from citeval.trec import Qrels, Run, read_qrels, read_run

LOG = logging.getLogger(__name__)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m citeval.metrics",
        description="Evaluate a TREC run against qrels with trec_eval (pytrec_eval) "
        "and write per-query values plus their mean (query id 'all') as TSV: "
        f"{spoken_list(names(EVALUATED))}, and "
        f"{spoken_list(f'{kind.name}_k' for kind in EVALUATED_AT_EACH_CUTOFF)} "
        "for every k of --cutoffs.",
    )
    parser.add_argument("--run", required=True, type=Path, help="TREC run file")
    parser.add_argument("--qrels", required=True, type=Path, help="TREC qrels file")
    parser.add_argument(
        "--missing-as-zero",
        action="store_true",
        help="score qrels queries absent from the run as 0 (like trec_eval -c); they then "
        "also get per-query rows of zeros",
    )
    parser.add_argument("--output", required=True, type=Path, help="per-query TSV to write")
    METRICS.add_to(parser)
    return parser


def command(args: argparse.Namespace) -> None:
    bad = [k for k in args.cutoffs if k < 1]
    if bad:
        raise ConfigError(f"--cutoffs must be >= 1, got {bad}")
    run: Run = read_run(args.run)
    qrels: Qrels = read_qrels(args.qrels)
    measures = measures_for(args.cutoffs)
    if not qrels and not run:
        # A collection that sampling left without queries: its means are undefined (NaN),
        # which the tables show as a dash with the reason.
        LOG.warning("no queries in %s and %s: every mean is NaN", args.qrels, args.run)
        write_per_query_tsv({}, dict.fromkeys(measures, math.nan), args.output)
        return
    per_query = evaluate(run, qrels, measures)
    only_run = len(run.keys() - qrels.keys())
    only_qrels = sorted(qrels.keys() - run.keys())
    if only_run:
        LOG.warning("%d run queries have no qrels and are ignored", only_run)
    if only_qrels:
        LOG.warning(
            "%d qrels queries are missing from the run (%s)",
            len(only_qrels),
            "scored 0" if args.missing_as_zero else "left out of the mean",
        )
    if args.missing_as_zero:
        zeros = dict.fromkeys(measures, 0.0)
        per_query = {qid: per_query.get(qid, zeros) for qid in sorted(qrels)}
    if not per_query:
        raise InputDataError(
            f"no query to evaluate: none of the run's {len(run)} queries is among the "
            f"{len(qrels)} queries of {args.qrels}",
            path=str(args.run),
        )
    if ALL_QUERIES in per_query:
        raise InputDataError(
            f"query id {ALL_QUERIES!r} is reserved for the mean", path=str(args.qrels)
        )
    mean = mean_over_queries(per_query, measures=measures)
    write_per_query_tsv(per_query, mean, args.output)
    LOG.info(
        "evaluated %d queries: %s",
        len(per_query),
        ", ".join(f"{m}={mean[m]:.4f}" for m in measures),
    )


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(build_parser, command, argv)
