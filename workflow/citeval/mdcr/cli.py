"""``python -m citeval.mdcr``: build an MDCR benchmark, or evaluate a scores file on one.

    python -m citeval.mdcr evaluate --benchmark mdcr_test.json --scores scores.json \
        [--output results.tsv] [--per-query-output results.per_query.tsv]

prints the overall MAP, NDCG and R@5 (×100) as the published evaluator does, writes one
row per (candidate subset, field) to ``--output`` and one per (subset, field, query) to
``--per-query-output``.

    python -m citeval.mdcr check --benchmark mdcr_test.json --data mdcr_test_data.jsonl \
        [--output summary.json]

imports a published (or exported) benchmark and its data file, checks them together, and
writes the number of queries, pairs and candidates per type of each field.

    python -m citeval.mdcr build --split test --seed 13 \
        --samples results/demo/samples/field-test --runs results/demo/runs/field-test \
        --corpus results/demo/corpus --filtered results/demo/filtered/papers.parquet \
        --fields "Computer Science" Biology --models bm25 minilm rrf \
        --output-dir results/demo/mdcr

writes ``mdcr_<name>.json``, ``mdcr_<name>_data.jsonl``, ``mdcr_<name>_jaccard.tsv``
and ``mdcr_<name>_report.json``, where ``<name>`` is ``test`` or, for ``valid``, ``val`` as
in the published files (see docs/mdcr.md).

    python -m citeval.mdcr score --benchmark mdcr_test.json --data mdcr_test_data.jsonl \
        --model bm25 --kind bm25 [--params-json tuning.json | --k1 0.9 --b 0.4] \
        --output scores/bm25.json
    python -m citeval.mdcr score ... --model minilm --kind dense --model-json '{...}' \
        [--embeddings results/demo/embeddings/minilm] --output scores/minilm.json
    python -m citeval.mdcr score ... --model rrf --kind rrf --inputs a.json b.json --k 60 \
        --output scores/rrf.json
    python -m citeval.mdcr score ... --model ce --kind cross-encoder --model-dir OUT/model \
        [--query-tokens 256 --candidate-tokens 256 --batch-size 32 --device auto] \
        --output scores/ce.json

writes every pair's score in the published scores format (see citeval.mdcr.score).

    python -m citeval.mdcr tables --evaluations bm25=eval/bm25.tsv minilm=eval/minilm.tsv \
        --output-dir results/demo/tables [--per-query bm25=eval/bm25.per_query.tsv \
        minilm=eval/minilm.per_query.tsv --baseline bm25 --permutations 10000 --alpha 0.05 \
        --seed 13]

writes Tables 3 and 4 (``table3_mdcr``, ``table4_mdcr_types``, TSV and Markdown); with
``--baseline`` and ``--per-query`` also their ``_pvalues.tsv`` (see docs/significance.md).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from citeval.cli import add_significance_arguments, memory_size, positive_int, run_cli
from citeval.errors import ConfigError
from citeval.io import write_json
from citeval.mdcr.evaluate import (
    evaluate_queries,
    format_summary,
    rows_of,
    write_queries_tsv,
    write_rows_tsv,
)
from citeval.mdcr.formats import (
    check_scores_cover,
    load_benchmark,
    read_benchmark,
    read_scores,
    summarize,
    write_scores,
)

LOG = logging.getLogger(__name__)


def evaluate_command(args: argparse.Namespace) -> None:
    benchmark = read_benchmark(args.benchmark)
    scores = read_scores(args.scores)
    per_query = evaluate_queries(benchmark, scores, scores_path=args.scores)
    rows = rows_of(per_query)
    if args.output is not None:
        write_rows_tsv(rows, args.output)
    if args.per_query_output is not None:
        write_queries_tsv(per_query, args.per_query_output)
    sys.stdout.write(format_summary(rows))


def check_command(args: argparse.Namespace) -> None:
    benchmark, papers = load_benchmark(args.benchmark, args.data)
    summary = {"fields": summarize(benchmark), "papers": len(papers)}
    if args.output is not None:
        write_json(summary, args.output)
    LOG.info(
        "%d fields, %d queries, %d pairs, %d papers",
        len(benchmark),
        sum(s["queries"] for s in summary["fields"].values()),
        sum(s["pairs"] for s in summary["fields"].values()),
        len(papers),
    )


def build_command(args: argparse.Namespace) -> None:
    # Imported here so that `evaluate` does not pay for DuckDB and the construction code.
    from citeval.mdcr.build import build_split

    build_split(args)


def score_command(args: argparse.Namespace) -> None:
    # Imported here: each kind loads what it needs (the JVM, torch) only when used.
    from citeval.mdcr import score

    benchmark, papers = load_benchmark(args.benchmark, args.data)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    if args.kind == "bm25":
        from citeval import lucene
        from citeval.bm25.search import params_from_args

        k1, b = params_from_args(args)
        lucene.start_jvm(heap=args.java_heap, processors=args.threads)
        lucene.set_java_log_level("WARN")
        scores = score.score_bm25(
            benchmark,
            papers,
            k1,
            b,
            searcher_kind=args.searcher,
            threads=args.threads,
            tmp_dir=args.output.parent,
        )
    elif args.kind == "dense":
        from citeval.faiss_index import set_num_threads
        from citeval.models import ModelSpec

        if args.model_json is None:
            raise ConfigError("--kind dense needs --model-json")
        try:
            entry = json.loads(args.model_json)
        except json.JSONDecodeError as error:
            raise ConfigError(f"--model-json is not valid JSON: {error}") from error
        import torch

        set_num_threads(args.threads)
        # torch would otherwise start one thread per core of the node, not of the job.
        torch.set_num_threads(args.threads)
        spec = ModelSpec.from_config(args.model, entry)
        scores = score.score_dense(benchmark, papers, spec, args.embeddings, args.device)
    elif args.kind == "cross-encoder":
        import torch

        from citeval.rerank.model import Reranker

        if args.model_dir is None:
            raise ConfigError("--kind cross-encoder needs --model-dir")
        torch.set_num_threads(args.threads)
        reranker = Reranker(
            str(args.model_dir),
            query_tokens=args.query_tokens,
            candidate_tokens=args.candidate_tokens,
            batch_size=args.batch_size,
            device=args.device,
        )
        scores = score.cross_encoder_scores(benchmark, papers, reranker)
    else:
        if not args.inputs or len(args.inputs) < 2:
            raise ConfigError("--kind rrf needs --inputs with at least 2 scores files")
        inputs = [read_scores(path) for path in args.inputs]
        for path, scores_in in zip(args.inputs, inputs, strict=True):
            check_scores_cover(benchmark, scores_in, path)
        scores = score.rrf_scores(benchmark, inputs, args.k)
    write_scores(scores, args.output)
    LOG.info("%s: %d pairs scored, wrote %s", args.model, len(scores), args.output)


def evaluation_pair(text: str) -> tuple[str, Path]:
    """argparse type for ``MODEL=PATH``."""
    model, sep, path = text.partition("=")
    if not sep or not model or not path:
        raise argparse.ArgumentTypeError(f"expected MODEL=PATH, got {text!r}")
    return model, Path(path)


def tables_command(args: argparse.Namespace) -> None:
    from citeval.mdcr.tables import write_tables
    from citeval.significance import settings_from_args

    write_tables(args.evaluations, args.output_dir, settings_from_args(args), args.per_query)
    LOG.info("MDCR tables written to %s", args.output_dir)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m citeval.mdcr",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)

    evaluate = commands.add_parser("evaluate", help="MAP, NDCG, R@5 of a scores file")
    evaluate.add_argument("--benchmark", required=True, type=Path, help="mdcr_<split>.json")
    evaluate.add_argument(
        "--scores", required=True, type=Path, help='JSON {"<query_id>_<candidate_id>": score}'
    )
    evaluate.add_argument(
        "--output", type=Path, default=None, help="TSV of every (candidate subset, field)"
    )
    evaluate.add_argument(
        "--per-query-output",
        type=Path,
        default=None,
        help="TSV of every (candidate subset, field, query), for significance tests",
    )
    evaluate.set_defaults(handler=evaluate_command)

    check = commands.add_parser("check", help="import and check a benchmark and data file")
    check.add_argument("--benchmark", required=True, type=Path, help="mdcr_<split>.json")
    check.add_argument("--data", required=True, type=Path, help="mdcr_<split>_data.jsonl")
    check.add_argument("--output", type=Path, default=None, help="summary JSON")
    check.set_defaults(handler=check_command)

    build = commands.add_parser("build", help="construct a split's benchmark")
    build.add_argument(
        "--split", required=True, choices=["test", "valid"], help="sample split (test or valid)"
    )
    build.add_argument("--seed", required=True, type=int)
    build.add_argument("--samples", required=True, type=Path, help="samples/field-<split>")
    build.add_argument("--runs", required=True, type=Path, help="runs/field-<split>")
    build.add_argument(
        "--corpus", required=True, type=Path, help="corpus dir (papers/, citations/)"
    )
    build.add_argument("--filtered", required=True, type=Path, help="filtered/papers.parquet")
    build.add_argument(
        "--fields", required=True, nargs="+", help="MAG field names, as the sample used them"
    )
    build.add_argument(
        "--models", required=True, nargs="+", help="models whose rep-0 runs are compared"
    )
    build.add_argument(
        "--model-selection",
        nargs="+",
        default=["auto"],
        help="'auto' (the --num-model-types models least alike by Jaccard) or model names",
    )
    build.add_argument(
        "--model-types-from",
        type=Path,
        default=None,
        help="take the model types of another split's mdcr_<split>_report.json",
    )
    build.add_argument("--num-model-types", type=positive_int, default=3)
    build.add_argument("--positives", type=positive_int, default=5)
    build.add_argument("--negatives-per-type", type=positive_int, default=10)
    build.add_argument(
        "--model-depth", type=positive_int, default=200, help="top non-cited results per model"
    )
    build.add_argument(
        "--most-cited-depth", type=positive_int, default=200, help="most-cited papers per field"
    )
    build.add_argument(
        "--max-candidate-year",
        choices=["query_year", "none"],
        default="query_year",
        help="candidates must be published in or before the query's year, or any year",
    )
    build.add_argument(
        "--shortfall", choices=["fill_from_random", "keep_fewer"], default="fill_from_random"
    )
    build.add_argument("--output-dir", required=True, type=Path)
    build.add_argument("--memory-limit", type=memory_size, default="2GB")
    build.add_argument("--threads", type=positive_int, default=2)
    build.set_defaults(handler=build_command)

    score = commands.add_parser("score", help="score every query-candidate pair with a model")
    score.add_argument("--benchmark", required=True, type=Path, help="mdcr_<split>.json")
    score.add_argument("--data", required=True, type=Path, help="mdcr_<split>_data.jsonl")
    score.add_argument("--model", required=True, help="model name (for the log and the spec)")
    score.add_argument("--kind", required=True, choices=["bm25", "dense", "rrf", "cross-encoder"])
    score.add_argument("--output", required=True, type=Path, help="scores JSON to write")
    score.add_argument("--params-json", type=Path, default=None, help="bm25: tuned k1 and b")
    score.add_argument("--k1", type=float, default=None, help="bm25: k1 (default 0.9)")
    score.add_argument("--b", type=float, default=None, help="bm25: b (default 0.4)")
    score.add_argument(
        "--searcher", choices=["impacts", "lucene"], default="impacts", help="bm25 searcher"
    )
    score.add_argument("--java-heap", default=None, help="bm25: JVM maximum heap, e.g. 4g")
    score.add_argument("--model-json", default=None, help="dense: the models.<name> entry")
    score.add_argument(
        "--embeddings",
        type=Path,
        default=None,
        help="dense: embedding store whose vectors are reused (others are encoded)",
    )
    score.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    score.add_argument(
        "--model-dir", type=Path, default=None, help="cross-encoder: trained reranker folder"
    )
    score.add_argument("--query-tokens", type=positive_int, default=256, help="cross-encoder")
    score.add_argument("--candidate-tokens", type=positive_int, default=256, help="cross-encoder")
    score.add_argument("--batch-size", type=positive_int, default=32, help="cross-encoder")
    score.add_argument("--inputs", type=Path, nargs="+", default=None, help="rrf: scores files")
    score.add_argument("--k", type=positive_int, default=60, help="rrf: constant k (default 60)")
    score.add_argument("--threads", type=positive_int, default=1)
    score.set_defaults(handler=score_command)

    tables = commands.add_parser("tables", help="Tables 3 and 4 from evaluation TSVs")
    tables.add_argument(
        "--evaluations",
        required=True,
        nargs="+",
        type=evaluation_pair,
        help="MODEL=PATH of `evaluate --output` TSVs, in row order",
    )
    tables.add_argument("--output-dir", required=True, type=Path)
    tables.add_argument(
        "--per-query",
        nargs="+",
        type=evaluation_pair,
        default=[],
        help="MODEL=PATH of `evaluate --per-query-output` TSVs (needed for --baseline)",
    )
    add_significance_arguments(tables)
    tables.set_defaults(handler=tables_command)
    return parser


def command(args: argparse.Namespace) -> None:
    args.handler(args)


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(build_parser, command, argv)
