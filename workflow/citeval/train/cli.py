"""``python -m citeval.train``: the training graph, its embedding, triplets and training.

    python -m citeval.train graph --citations corpus/citations \
        --held-out-split samples/dataset-test [--held-out-split ...] \
        [--held-out-mdcr mdcr_test.json ...] --output-dir OUT/graph [settings] [--threads N]

    python -m citeval.train embed-graph --graph OUT/graph --seed SEED [settings] [--threads N]

    python -m citeval.train triplets --sampler {scincl,specter} --graph OUT/graph \
        --filtered filtered/papers.parquet --output-dir OUT/NAME --seed SEED [settings] \
        [--threads N]

    python -m citeval.train fit --triplets OUT/NAME/triplets.parquet --papers corpus/papers \
        --model-json '{"path": ..., "pooling": "cls", "similarity": "l2"}' --name NAME \
        --output-dir OUT/NAME --seed SEED [settings] [--logging-steps N] \
        [--threads N]

``embed-graph`` writes its files into the graph folder; ``fit`` writes ``OUT/NAME/model``.

Settings are config keys, each defaulting to the schema's value (``--help`` shows it):
``graph`` takes ``--memory-limit`` (:data:`citeval.stages.TRAIN_GRAPH`); ``embed-graph``
``--dim --iterations --seed`` (:data:`citeval.stages.TRAIN_EMBED_GRAPH`);
``triplets`` ``--num-queries --per-query --hard-negatives --k-positive --k-hard --index
--min-recall --recall-sample --seed``
(:data:`citeval.stages.TRAIN_TRIPLETS`); ``fit`` ``--epochs --batch-size
--gradient-accumulation --learning-rate --weight-decay --warmup-steps --margin --max-steps
--device --seed --memory-limit`` (:data:`citeval.stages.TRAIN_FIT`; ``--max-steps -1``: the epochs
decide). The other flags are wiring.
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Sequence
from pathlib import Path

from citeval import stages
from citeval.cli import positive_int, run_cli
from citeval.errors import ConfigError

LOG = logging.getLogger(__name__)


def graph_command(args: argparse.Namespace) -> None:
    from citeval.train.graph import build_training_graph, query_ids_of_mdcr, query_ids_of_split

    held_out = {f"split:{Path(d).name}": query_ids_of_split(d) for d in args.held_out_split}
    held_out.update({f"mdcr:{Path(f).name}": query_ids_of_mdcr(f) for f in args.held_out_mdcr})
    report = build_training_graph(
        args.citations,
        held_out,
        args.output_dir,
        memory_limit=args.memory_limit,
        threads=args.threads,
    )
    LOG.info(
        "training graph: %d nodes and %d edges; %d held-out papers removed with %d edges",
        report["nodes"], report["edges"], report["held_out_papers"], report["edges_removed"],
    )  # fmt: skip


def embed_graph_command(args: argparse.Namespace) -> None:
    from citeval.train.embed import GraphEmbeddingSettings, embed_graph

    settings = GraphEmbeddingSettings(dim=args.dim, iterations=args.iterations, seed=args.seed)
    embed_graph(args.graph, settings, args.graph, threads=args.threads)


def triplets_command(args: argparse.Namespace) -> None:
    from citeval.faiss_index import set_num_threads
    from citeval.train.neighbours import SearchSettings
    from citeval.train.triplets import TripletSettings, write_triplets

    set_num_threads(args.threads)

    settings = TripletSettings(
        num_queries=args.num_queries,
        per_query=args.per_query,
        hard_negatives=args.hard_negatives,
        k_positive=args.k_positive,
        k_hard=args.k_hard,
        seed=args.seed,
    )
    search = SearchSettings(
        index=args.index, min_recall=args.min_recall, recall_sample=args.recall_sample
    )
    report = write_triplets(
        args.sampler, args.graph, args.filtered, settings, args.output_dir,
        embedding_dir=args.graph, search=search,
    )  # fmt: skip
    LOG.info("%s: %d triplets from %d queries", args.sampler, report["triplets"], report["queries"])


def fit_command(args: argparse.Namespace) -> None:
    from citeval.models import ModelSpec
    from citeval.train.fit import FitSettings, train_encoder

    try:
        entry = json.loads(args.model_json)
    except json.JSONDecodeError as error:
        raise ConfigError(f"--model-json is not JSON ({error})") from None
    spec = ModelSpec.from_config(args.name, entry)
    if args.threads is not None:
        import torch

        torch.set_num_threads(args.threads)
    settings = FitSettings(
        epochs=args.epochs,
        batch_size=args.batch_size,
        gradient_accumulation=args.gradient_accumulation,
        learning_rate=args.learning_rate,
        weight_decay=args.weight_decay,
        warmup_steps=args.warmup_steps,
        margin=args.margin,
        max_steps=args.max_steps,
        validation_fraction=args.validation_fraction,
        eval_steps=args.eval_steps,
        seed=args.seed,
    )
    train_encoder(
        args.triplets,
        args.papers,
        spec,
        settings,
        args.output_dir,
        device=args.device,
        memory_limit=args.memory_limit,
        logging_steps=args.logging_steps,
        loss_name=args.loss,
        anchor_papers=args.anchor_papers,
    )


def build_parser() -> argparse.ArgumentParser:
    from citeval.train.fit import LOGGING_STEPS, LOSSES

    parser = argparse.ArgumentParser(
        prog="python -m citeval.train",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)

    graph = commands.add_parser("graph", help="the citation graph without evaluation queries")
    graph.add_argument("--citations", required=True, type=Path, help="corpus citations folder")
    graph.add_argument(
        "--held-out-split", type=Path, action="append", default=[],
        help="a sample folder whose queries.parquet papers are removed (repeatable)",
    )  # fmt: skip
    graph.add_argument(
        "--held-out-mdcr", type=Path, action="append", default=[],
        help="an MDCR benchmark JSON whose query papers are removed (repeatable)",
    )  # fmt: skip
    graph.add_argument("--output-dir", required=True, type=Path)
    graph.add_argument("--threads", type=positive_int, default=2)
    stages.TRAIN_GRAPH.add_to(graph)
    graph.set_defaults(handler=graph_command)

    embed = commands.add_parser("embed-graph", help="citation embeddings of the graph's nodes")
    embed.add_argument("--graph", required=True, type=Path, help="the graph command's folder")
    stages.TRAIN_EMBED_GRAPH.add_to(embed)
    embed.add_argument("--threads", type=positive_int, default=2)
    embed.set_defaults(handler=embed_graph_command)

    triplets = commands.add_parser("triplets", help="sample training triplets")
    triplets.add_argument("--sampler", required=True, choices=["scincl", "specter"])
    triplets.add_argument("--graph", required=True, type=Path, help="graph (and embedding) folder")
    triplets.add_argument("--filtered", required=True, type=Path, help="filtered/papers.parquet")
    triplets.add_argument("--output-dir", required=True, type=Path)
    triplets.add_argument("--threads", type=positive_int, default=2, help="Faiss threads")
    stages.TRAIN_TRIPLETS.add_to(triplets)
    triplets.set_defaults(handler=triplets_command)

    fit = commands.add_parser("fit", help="fine-tune an encoder on triplets")
    fit.add_argument("--triplets", required=True, type=Path)
    fit.add_argument("--papers", required=True, type=Path, help="corpus papers folder")
    fit.add_argument("--name", required=True, help="the trained model's registry name")
    fit.add_argument("--model-json", required=True, help="the base model's registry entry")
    fit.add_argument("--output-dir", required=True, type=Path)
    fit.add_argument(
        "--anchor-papers",
        type=Path,
        default=None,
        help="papers folder of the anchors when they are not corpus papers (the local "
        "prefetcher: samples/local-train/query_papers)",
    )
    fit.add_argument(
        "--loss",
        choices=LOSSES,
        default="triplet",
        help="triplet = margin loss (SciNCL, SPECTER); in_batch = in-batch and hard "
        "negatives (the local prefetcher) (default: triplet)",
    )
    fit.add_argument("--logging-steps", type=positive_int, default=LOGGING_STEPS)
    fit.add_argument("--threads", type=positive_int, default=None, help="torch CPU threads")
    stages.TRAIN_FIT.add_to(fit)
    fit.set_defaults(handler=fit_command)
    return parser


def command(args: argparse.Namespace) -> None:
    args.handler(args)


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(build_parser, command, argv)
