"""``python -m citeval.rerank``: train a cross-encoder reranker, rerank runs, tabulate the cost.

    python -m citeval.rerank train --run RUN.trec --qrels QRELS.qrels [--run ... --qrels ...] \
        --papers corpus/papers --output-dir OUT --seed SEED [settings] \
        [--logging-steps N] [--threads N] [--keep-checkpoints]

writes ``OUT/model/`` (a CrossEncoder folder with ``training.json``); see
:mod:`citeval.rerank.train`. Settings: ``--base-model``, ``--base-layers`` (``none``: all
layers), ``--head``, ``--loss``, ``--top``, ``--learning-rate``, ``--weight-decay``,
``--dropout``, ``--warmup-steps``, ``--batch-size``, ``--epochs``, ``--max-steps`` (-1: the
epochs decide), ``--validation-fraction``, ``--eval-steps``, ``--query-tokens``,
``--candidate-tokens``, ``--device``, ``--seed``.

    python -m citeval.rerank rerank --model OUT/model --papers corpus/papers \
        --run FIRST_STAGE.trec --ks 100 200 --outputs ce100.trec ce200.trec \
        --timing timing.json [settings] [--threads N] [--tag-prefix ce-k]

writes one reranked run per K and the timing JSON; see :mod:`citeval.rerank.rerank`.
Settings: ``--batch-tokens``, ``--batch-size``, ``--dtype``, ``--device``. The token
budgets are the model's own (its ``training.json``); ``--query-tokens`` and
``--candidate-tokens`` may only repeat them.

    python -m citeval.rerank tradeoff --first-stage NAME BENCHMARK_TSV [BENCHMARK_TSV ...] \
        --entry NAME K METRICS_TSV [TIMING_JSON] [--entry ...] --output-dir DIR [--title T]

writes ``tradeoff.tsv``, ``tradeoff.md`` and ``tradeoff.png``; see
:mod:`citeval.rerank.tradeoff`.

Settings are config keys (:data:`citeval.stages.RERANK_TRAIN`, :data:`citeval.stages.RERANK`);
each defaults to the schema's value (``--help`` shows it) and null is written ``none``.
The other flags are wiring.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from pathlib import Path

from citeval import stages
from citeval.cli import positive_int, run_cli, run_tag
from citeval.errors import CitevalError

LOG = logging.getLogger(__name__)


def add_budget_arguments(parser: argparse.ArgumentParser) -> None:
    """``--query-tokens`` and ``--candidate-tokens`` for scoring with a trained model: its
    ``training.json`` gives them (:func:`citeval.rerank.model.trained_budgets`); a flag may
    only repeat them, or stand in for a model trained elsewhere."""
    for flag in ("--query-tokens", "--candidate-tokens"):
        parser.add_argument(
            flag,
            type=positive_int,
            default=None,
            help="default: the budget the model's training.json records (a different one "
            "is an error)",
        )


def _set_threads(threads: int | None) -> None:
    if threads is not None:
        import torch

        torch.set_num_threads(threads)


def train_command(args: argparse.Namespace) -> None:
    from citeval.rerank.train import FINAL_DIR, TRAINING_JSON, TrainSettings, load_training_data
    from citeval.rerank.train import train as run_training

    final = args.output_dir / FINAL_DIR / TRAINING_JSON
    if final.is_file():
        LOG.info("%s exists: training is finished, nothing to do", final)
        return
    _set_threads(args.threads)
    settings = TrainSettings(
        base_model=args.base_model,
        base_layers=args.base_layers,
        head=args.head,
        loss=args.loss,
        top=args.top,
        learning_rate=args.learning_rate,
        weight_decay=args.weight_decay,
        dropout=args.dropout,
        warmup_steps=args.warmup_steps,
        batch_size=args.batch_size,
        epochs=args.epochs,
        max_steps=args.max_steps,
        seed=args.seed,
        query_tokens=args.query_tokens,
        candidate_tokens=args.candidate_tokens,
        validation_fraction=args.validation_fraction,
        eval_steps=args.eval_steps,
    )
    pairs, valid_pairs, texts = load_training_data(
        args.run,
        args.qrels,
        args.papers,
        args.top,
        validation_fraction=settings.validation_fraction,
        seed=settings.seed,
        query_papers=args.query_papers,
        add_cited=args.add_cited,
    )
    run_training(
        pairs,
        valid_pairs,
        texts,
        settings,
        args.output_dir,
        device=args.device,
        logging_steps=args.logging_steps,
        keep_checkpoints=args.keep_checkpoints,
        extra={
            "runs": [str(p) for p in args.run],
            "qrels": [str(p) for p in args.qrels],
            "papers": str(args.papers),
            "query_papers": None if args.query_papers is None else str(args.query_papers),
            "add_cited": args.add_cited,
        },
    )


def rerank_command(args: argparse.Namespace) -> None:
    from citeval.rerank.rerank import rerank

    _set_threads(args.threads)
    rerank(
        args.run,
        args.papers,
        args.ks,
        args.outputs,
        model=args.model,
        timing_path=args.timing,
        query_tokens=args.query_tokens,
        candidate_tokens=args.candidate_tokens,
        batch_tokens=args.batch_tokens,
        batch_size=args.batch_size,
        dtype=args.dtype,
        device=args.device,
        tag_prefix=args.tag_prefix,
        query_papers=args.query_papers,
    )


def tradeoff_command(args: argparse.Namespace) -> None:
    from citeval.rerank.tradeoff import Entry, write_tradeoff

    first_stages: dict[str, list[str]] = {}
    for values in args.first_stage:
        if len(values) < 2:
            raise CitevalError(f"--first-stage needs NAME and a benchmark TSV, got {values}")
        if values[0] in first_stages:
            raise CitevalError(f"--first-stage {values[0]} given twice")
        first_stages[values[0]] = values[1:]
    entries = []
    for values in args.entry:
        if len(values) not in (3, 4):
            raise CitevalError(f"--entry needs NAME K METRICS_TSV [TIMING_JSON], got {values}")
        try:
            k = int(values[1])
        except ValueError:
            raise CitevalError(f"--entry {values}: K {values[1]!r} is not an integer") from None
        if k < 0:
            raise CitevalError(f"--entry {values}: K must be >= 0")
        timing = Path(values[3]) if len(values) == 4 else None
        entries.append(Entry(values[0], k, Path(values[2]), timing))
    rows = write_tradeoff(first_stages, entries, args.output_dir, args.title, args.name)
    LOG.info("%d rows written to %s", len(rows), args.output_dir)


def _add_threads(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--threads", type=positive_int, default=None, help="torch CPU threads")


def build_parser() -> argparse.ArgumentParser:
    from citeval.rerank.train import LOGGING_STEPS

    parser = argparse.ArgumentParser(
        prog="python -m citeval.rerank",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)

    train = commands.add_parser("train", help="train the cross-encoder on first-stage runs")
    train.add_argument("--run", required=True, type=Path, action="append", help="TREC run")
    train.add_argument(
        "--qrels", required=True, type=Path, action="append", help="its qrels (one per --run)"
    )
    train.add_argument("--papers", required=True, type=Path, help="corpus papers folder")
    train.add_argument(
        "--query-papers",
        type=Path,
        default=None,
        help="papers folder of the queries when they are not corpus papers (the local "
        "task's contexts: samples/local-<split>/query_papers)",
    )
    train.add_argument(
        "--add-cited",
        action="store_true",
        help="also pair each query with every paper its qrels call relevant, retrieved or "
        "not (HAtten's scheme for the local task)",
    )
    train.add_argument("--output-dir", required=True, type=Path)
    train.add_argument("--logging-steps", type=positive_int, default=LOGGING_STEPS)
    train.add_argument("--keep-checkpoints", action="store_true")
    _add_threads(train)
    stages.RERANK_TRAIN.add_to(train)
    train.set_defaults(handler=train_command)

    rerank = commands.add_parser("rerank", help="rerank a run's top K for several K")
    rerank.add_argument("--model", required=True, help="trained reranker folder")
    rerank.add_argument("--papers", required=True, type=Path, help="corpus papers folder")
    rerank.add_argument("--run", required=True, type=Path, help="first-stage TREC run")
    rerank.add_argument(
        "--query-papers",
        type=Path,
        default=None,
        help="papers folder of the queries when they are not corpus papers (the local "
        "task's contexts: samples/local-<split>/query_papers)",
    )
    rerank.add_argument("--ks", required=True, type=positive_int, nargs="+")
    rerank.add_argument("--outputs", required=True, type=Path, nargs="+", help="one per K")
    rerank.add_argument("--timing", required=True, type=Path, help="timing JSON to write")
    rerank.add_argument("--tag-prefix", default="ce-k", type=run_tag, help="run tag is <prefix><K>")
    _add_threads(rerank)
    add_budget_arguments(rerank)
    stages.RERANK.add_to(rerank)
    rerank.set_defaults(handler=rerank_command)

    tradeoff = commands.add_parser("tradeoff", help="R@10 and time per first stage and K")
    tradeoff.add_argument(
        "--first-stage",
        required=True,
        nargs="+",
        action="append",
        metavar="NAME_AND_BENCHMARKS",
        help="NAME BENCHMARK_TSV [BENCHMARK_TSV ...] (repeatable)",
    )
    tradeoff.add_argument(
        "--entry",
        required=True,
        nargs="+",
        action="append",
        metavar="NAME_K_METRICS_TIMING",
        help="NAME K METRICS_TSV [TIMING_JSON] (repeatable; K=0: the first stage alone)",
    )
    tradeoff.add_argument("--output-dir", required=True, type=Path)
    tradeoff.add_argument(
        "--name", default="tradeoff", help="file name of the outputs (default: tradeoff)"
    )
    tradeoff.add_argument("--title", default="Cross-encoder reranking: effectiveness against cost")
    tradeoff.set_defaults(handler=tradeoff_command)
    return parser


def command(args: argparse.Namespace) -> None:
    args.handler(args)


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(build_parser, command, argv)
