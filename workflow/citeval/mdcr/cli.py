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
in the published files (see docs/mdcr.md). ``--models`` names the models whose runs are
compared (the pipeline passes them explicitly, also when ``mdcr.models`` is empty).

    python -m citeval.mdcr score --benchmark mdcr_test.json --data mdcr_test_data.jsonl \
        --model bm25 --kind bm25 [--k1 0.9 --b 0.4] [--params-json tuning.json] \
        --output scores/bm25.json
    python -m citeval.mdcr score ... --model minilm --kind dense --model-json '{...}' \
        [--embeddings results/demo/embeddings/minilm] --output scores/minilm.json
    python -m citeval.mdcr score ... --model lsa --kind embeddings --similarity cosine \
        --embeddings results/demo/embeddings/lsa --output scores/lsa.json
    python -m citeval.mdcr score ... --model rrf --kind rrf --inputs a.json b.json --k 60 \
        --output scores/rrf.json
    python -m citeval.mdcr score ... --model ce --kind cross-encoder --model-dir OUT/model \
        [--batch-tokens none --dtype auto] \
        --output scores/ce.json

writes every pair's score in the published scores format (see citeval.mdcr.score). One
parser serves every kind, with the settings of all of them (each kind reads its own):
the tuned k1 and b of ``--params-json`` take precedence over ``--k1``/``--b``; ``--device``
is ``rerank.device`` for the cross-encoder and ``encode.device`` for a dense model.

    python -m citeval.mdcr tables --evaluations bm25=eval/bm25.tsv minilm=eval/minilm.tsv \
        --output-dir results/demo/tables [--per-query bm25=eval/bm25.per_query.tsv \
        minilm=eval/minilm.per_query.tsv] --baseline bm25 --permutations 10000 \
        --alpha 0.05 --seed 13

writes Tables 3 and 4 (``table3_mdcr``, ``table4_mdcr_types``, TSV and Markdown); with
``--per-query`` and a ``--baseline`` (not ``none``) also their ``_pvalues.tsv`` (see
docs/significance.md).

Settings flags (config keys, defaults from the schema) come from :mod:`citeval.stages`.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from citeval import stages
from citeval.cli import named_path, positive_int, require_unique, run_cli
from citeval.config import schema_node
from citeval.errors import ConfigError
from citeval.io import write_json
from citeval.learning import add_trained_argument, not_learned
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
from citeval.rerank.cli import add_budget_arguments
from citeval.settings import StageSettings
from citeval.systems import KINDS

LOG = logging.getLogger(__name__)


def one_flag_each(*entries: StageSettings) -> StageSettings:
    """The union of several entries' keys, one flag per name: a later key whose flag an
    earlier one already gives (``encode.device`` after ``rerank.device``) is left out."""
    keys: list[str] = []
    flags: dict[str, str] = {}
    seen: set[str] = set()
    for entry in entries:
        for key in entry.keys:
            if entry.flag(key) in seen:
                continue
            seen.add(entry.flag(key))
            keys.append(key)
            if key in entry.flags:
                flags[key] = entry.flags[key]
    return StageSettings(tuple(keys), flags)


# ``rerank.device`` (any string) before ``encode.device`` (auto, cpu or cuda), so that
# ``--device`` accepts what either writes.
SCORE_SETTINGS = one_flag_each(
    stages.MDCR_SCORE_BM25,
    stages.MDCR_SCORE_RERANK,
    stages.MDCR_SCORE_DENSE,
    stages.MDCR_SCORE_FUSION,
)


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

    settings = stages.MDCR_BUILD.values(args)
    build_split(
        args.split,
        samples=args.samples,
        runs=args.runs,
        corpus=args.corpus,
        filtered=args.filtered,
        output_dir=args.output_dir,
        seed=args.seed,
        fields=args.fields,
        models=args.models,
        model_selection=settings["mdcr.model_selection"],
        num_model_types=args.num_model_types,
        positives=args.positives,
        negatives_per_type=args.negatives_per_type,
        model_depth=args.model_depth,
        most_cited_depth=args.most_cited_depth,
        max_candidate_year=args.max_candidate_year,
        shortfall=args.shortfall,
        memory_limit=args.memory_limit,
        model_types_from=args.model_types_from,
        threads=args.threads,
    )


def score_command(args: argparse.Namespace) -> None:
    # Imported here: each kind loads what it needs (the JVM, torch) only when used.
    from citeval.mdcr import score

    benchmark, papers = load_benchmark(args.benchmark, args.data)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    if args.kind == "bm25":
        from citeval import lucene
        from citeval.bm25.search import resolve_params

        k1, b = resolve_params(args.k1, args.b, args.params_json)
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
        scores = score.score_dense(benchmark, papers, spec, args.embeddings, device=args.device)
    elif args.kind == "embeddings":
        if args.embeddings is None or args.similarity is None:
            raise ConfigError("--kind embeddings needs --embeddings and --similarity")
        scores = score.score_stored(benchmark, args.embeddings, args.similarity)
    elif args.kind == "cross-encoder":
        import torch

        from citeval.rerank.model import Reranker

        if args.model_dir is None:
            raise ConfigError("--kind cross-encoder needs --model-dir")
        torch.set_num_threads(args.threads)
        reranker = Reranker.trained(
            str(args.model_dir),
            query_tokens=args.query_tokens,
            candidate_tokens=args.candidate_tokens,
            batch_tokens=args.batch_tokens,
            batch_size=args.batch_size,
            dtype=args.dtype,
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


def tables_command(args: argparse.Namespace) -> None:
    from citeval.mdcr.tables import write_tables
    from citeval.significance import settings_for

    require_unique("--evaluations", [model for model, _ in args.evaluations])
    require_unique("--per-query", [model for model, _ in args.per_query])
    settings = settings_for(
        args.baseline, permutations=args.permutations, alpha=args.alpha, seed=args.seed
    )
    write_tables(
        args.evaluations, args.output_dir, settings, args.per_query, not_learned(args.trained)
    )
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
    build.add_argument("--samples", required=True, type=Path, help="samples/field-<split>")
    build.add_argument("--runs", required=True, type=Path, help="runs/field-<split>")
    build.add_argument(
        "--corpus", required=True, type=Path, help="corpus dir (papers/, citations/)"
    )
    build.add_argument("--filtered", required=True, type=Path, help="filtered/papers.parquet")
    build.add_argument(
        "--model-types-from",
        type=Path,
        default=None,
        help="take the model types of another split's mdcr_<split>_report.json",
    )
    build.add_argument("--output-dir", required=True, type=Path)
    build.add_argument("--threads", type=positive_int, default=2)
    stages.MDCR_BUILD.add_to(build)
    build.set_defaults(handler=build_command)

    score = commands.add_parser("score", help="score every query-candidate pair with a model")
    score.add_argument("--benchmark", required=True, type=Path, help="mdcr_<split>.json")
    score.add_argument("--data", required=True, type=Path, help="mdcr_<split>_data.jsonl")
    score.add_argument("--model", required=True, help="model name (for the log and the spec)")
    score.add_argument(
        "--kind",
        required=True,
        choices=[kind.mdcr_score for kind in KINDS.values() if kind.mdcr_score],
    )
    score.add_argument("--output", required=True, type=Path, help="scores JSON to write")
    score.add_argument(
        "--params-json",
        type=Path,
        default=None,
        help="bm25: tuning JSON whose k1 and b take precedence over --k1 and --b",
    )
    score.add_argument("--java-heap", default=None, help="bm25: JVM maximum heap, e.g. 4g")
    score.add_argument("--model-json", default=None, help="dense: the models.<name> entry")
    score.add_argument(
        "--embeddings",
        type=Path,
        default=None,
        help="dense: embedding store whose vectors are reused (others are encoded); "
        "embeddings: the store every vector comes from",
    )
    score.add_argument(
        "--similarity",
        choices=schema_node("systems.embeddings.*.similarity")["enum"],
        default=None,
        help="embeddings: how a query vector scores a candidate's",
    )
    score.add_argument(
        "--model-dir", type=Path, default=None, help="cross-encoder: trained reranker folder"
    )
    score.add_argument("--inputs", type=Path, nargs="+", default=None, help="rrf: scores files")
    score.add_argument("--threads", type=positive_int, default=1)
    SCORE_SETTINGS.add_to(score)
    add_budget_arguments(score)
    score.set_defaults(handler=score_command)

    tables = commands.add_parser("tables", help="Tables 3 and 4 from evaluation TSVs")
    tables.add_argument(
        "--evaluations",
        required=True,
        nargs="+",
        type=named_path,
        help="MODEL=PATH of `evaluate --output` TSVs, in row order",
    )
    tables.add_argument("--output-dir", required=True, type=Path)
    tables.add_argument(
        "--per-query",
        nargs="+",
        type=named_path,
        default=[],
        help="MODEL=PATH of `evaluate --per-query-output` TSVs (needed for --baseline)",
    )
    add_trained_argument(tables)
    stages.MDCR_TABLES.add_to(tables)
    tables.set_defaults(handler=tables_command)
    return parser


def command(args: argparse.Namespace) -> None:
    args.handler(args)


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(build_parser, command, argv)
