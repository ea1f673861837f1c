"""``python -m citeval.ltr``: train a LambdaMART second stage, apply it, show its features.

    python -m citeval.ltr train --first-stage bm25=TRAIN_RUN \\
        --feature bm25=TRAIN_RUN --feature minilm=RUN ... --qrels TRAIN.qrels \\
        --papers corpus/papers --graph train/graph --output-dir OUT [settings]

writes ``OUT/model.txt`` and ``OUT/training.json`` (:mod:`citeval.ltr.model`).

    python -m citeval.ltr rank --model OUT --run FIRST_STAGE.trec \\
        --feature bm25=RUN --feature minilm=RUN ... --papers corpus/papers \\
        --graph train/graph --output LTR.trec [--tag ltr] [--query-papers SAMPLE/query_papers]

    python -m citeval.ltr score-mdcr --model OUT --benchmark mdcr_test.json \\
        --system-scores bm25=SCORES.json ... --papers corpus/papers --graph train/graph \\
        --output SCORES.json

    python -m citeval.ltr importance --model NAME=OUT/training.json ... \\
        --table tables/ltr_importance --plot tables/plots/ltr_importance.png

Settings (``--k``, ``--learning-rate``, ``--num-leaves``, ``--min-data-in-leaf``,
``--max-trees``, ``--eval-every``, ``--validation-fraction``, ``--seed``) are the config's
``ltr[]`` keys (:data:`citeval.stages.LTR_TRAIN`). A feature system's files are named
``NAME=PATH``, in the model's order; ``rank`` and ``score-mdcr`` refuse systems other than
those the model was trained on.
"""

from __future__ import annotations

import argparse
import logging
import time
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path

from citeval import stages
from citeval.cli import named_path, require_unique, run_cli, run_tag

LOG = logging.getLogger(__name__)


def _named(args: Sequence[tuple[str, Path]], flag: str) -> dict[str, Path]:
    require_unique(flag, [name for name, _ in args])
    return dict(args)


def _reader(args: argparse.Namespace):
    from citeval.ltr.features import paper_reader

    return paper_reader(
        args.graph, args.papers, getattr(args, "query_papers", None), args.memory_limit
    )


def train_command(args: argparse.Namespace) -> None:
    from citeval.ltr.features import feature_names
    from citeval.ltr.model import LtrSettings, importances, save, train, training_record
    from citeval.ltr.rank import run_pairs
    from citeval.rerank.data import read_ranked_run
    from citeval.trec import read_qrels

    start = time.perf_counter()
    by_name = {key.rsplit(".", 1)[-1]: v for key, v in stages.LTR_TRAIN.values(args).items()}
    settings = LtrSettings(**{field.name: by_name[field.name] for field in fields(LtrSettings)})
    first_name, first_path = args.first_stage
    features = _named(args.feature, "--feature")
    systems = list(features)
    pairs = run_pairs(read_ranked_run(first_path), features, settings.k, _reader(args))
    LOG.info("%d training queries, %d pairs, %d features", len(pairs.query_ids),
             len(pairs.features), pairs.features.shape[1])  # fmt: skip
    names = feature_names(systems)
    booster, curve, counts = train(pairs, read_qrels(args.qrels), settings, names)
    curve.log(args.name)
    record = training_record(
        first_stage=first_name,
        systems=systems,
        settings=settings,
        curve=curve,
        counts=counts,
        gains=importances(booster, names),
        seconds=time.perf_counter() - start,
    )
    save(booster, args.output_dir, record, args.name, curve)
    LOG.info("wrote %s (%d trees)", args.output_dir, curve.kept.step)


def rank_command(args: argparse.Namespace) -> None:
    from citeval.ltr.model import TrainedLtr
    from citeval.ltr.rank import rank_run
    from citeval.trec import write_run

    model = TrainedLtr.load(args.model)
    run = rank_run(model, args.run, _named(args.feature, "--feature"), _reader(args))
    write_run(run, args.output, args.tag)
    LOG.info("wrote %s: %d queries", args.output, len(run))


def score_mdcr_command(args: argparse.Namespace) -> None:
    from citeval.ltr.model import TrainedLtr
    from citeval.ltr.rank import score_mdcr
    from citeval.mdcr.formats import read_benchmark, write_scores

    model = TrainedLtr.load(args.model)
    benchmark = read_benchmark(args.benchmark)
    scores = score_mdcr(
        model, benchmark, _named(args.system_scores, "--system-scores"), _reader(args)
    )
    write_scores(scores, args.output)
    LOG.info("wrote %s: %d pairs", args.output, len(scores))


def importance_command(args: argparse.Namespace) -> None:
    from citeval.ltr.importance import read_gains, write_importance

    require_unique("--model", [name for name, _ in args.model])
    models = [read_gains(name, path) for name, path in args.model]
    write_importance(models, args.table, args.plot, args.title)


def _add_inputs(parser: argparse.ArgumentParser, contexts: bool = True) -> None:
    parser.add_argument("--papers", required=True, type=Path, help="the corpus's papers")
    parser.add_argument(
        "--graph", required=True, type=Path, help="the training graph's folder (train graph)"
    )
    if contexts:
        parser.add_argument(
            "--query-papers",
            type=Path,
            default=None,
            help="the local task's contexts (a sample's query_papers/), when they are the queries",
        )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m citeval.ltr", description="LambdaMART over every system's evidence."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    fit = commands.add_parser("train", help="train on the training split's runs and qrels")
    fit.add_argument("--name", default="ltr", help="the system's name (the log's verdict)")
    fit.add_argument("--first-stage", required=True, type=named_path, metavar="NAME=RUN")
    fit.add_argument(
        "--feature", required=True, action="append", type=named_path, metavar="NAME=RUN"
    )
    fit.add_argument("--qrels", required=True, type=Path)
    fit.add_argument("--output-dir", required=True, type=Path)
    _add_inputs(fit)
    stages.LTR_TRAIN.add_to(fit)
    fit.set_defaults(handler=train_command)

    rank = commands.add_parser("rank", help="reorder a first stage's run")
    rank.add_argument("--model", required=True, type=Path)
    rank.add_argument("--run", required=True, type=Path, help="the first stage's run")
    rank.add_argument(
        "--feature", required=True, action="append", type=named_path, metavar="NAME=RUN"
    )
    rank.add_argument("--output", required=True, type=Path)
    rank.add_argument("--tag", default="ltr", type=run_tag)
    _add_inputs(rank)
    stages.LTR_APPLY.add_to(rank)
    rank.set_defaults(handler=rank_command)

    mdcr = commands.add_parser("score-mdcr", help="score every pair of an MDCR benchmark")
    mdcr.add_argument("--model", required=True, type=Path)
    mdcr.add_argument("--benchmark", required=True, type=Path)
    mdcr.add_argument(
        "--system-scores", required=True, action="append", type=named_path,
        metavar="NAME=SCORES",
    )  # fmt: skip
    mdcr.add_argument("--output", required=True, type=Path)
    _add_inputs(mdcr, contexts=False)
    stages.LTR_APPLY.add_to(mdcr)
    mdcr.set_defaults(handler=score_mdcr_command)

    importance = commands.add_parser("importance", help="the feature importances")
    importance.add_argument(
        "--model", required=True, nargs="+", type=named_path, metavar="NAME=TRAINING_JSON"
    )
    importance.add_argument("--table", required=True, type=Path, help="path without suffix")
    importance.add_argument("--plot", required=True, type=Path)
    importance.add_argument("--title", default="LTR feature importance (gain)")
    importance.set_defaults(handler=importance_command)
    return parser


def command(args: argparse.Namespace) -> None:
    args.handler(args)


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(build_parser, command, argv)
