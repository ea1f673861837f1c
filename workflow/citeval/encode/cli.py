"""``python -m citeval.encode``: the encode stage's command line."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

import msgspec
import yaml

from citeval.cli import run_cli
from citeval.config import load_config_file
from citeval.encode import DEFAULT_CHUNK_SIZE, encode_shard
from citeval.errors import ConfigError
from citeval.models import ModelSpec
from citeval.st_modules import ROLES
from citeval.stages import ENCODE


def load_spec(name: str, model_json: str | None, config_paths: Sequence[str] | None) -> ModelSpec:
    """The model spec from ``--model-json``, or from the ``models`` registry of the config
    that ``--config`` files make, merged left to right (as ``--configfile`` does) and
    loaded as the pipeline loads it: with the schema's defaults, validated."""
    if model_json is not None:
        try:
            entry = json.loads(model_json)
        except json.JSONDecodeError as error:
            raise ConfigError(f"--model-json is not valid JSON: {error}") from error
        return ModelSpec.from_config(name, entry)
    assert config_paths
    try:
        config = load_config_file(*config_paths)
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError(f"cannot read config {' '.join(config_paths)}: {error}") from error
    if name not in config.models:
        raise ConfigError(
            f"{' '.join(config_paths)}: model {name!r} is not in models ({sorted(config.models)})"
        )
    return ModelSpec.from_config(name, msgspec.to_builtins(config.models[name]))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m citeval.encode",
        description="Embed one shard of samples/embed_ids.parquet with one registered model.",
    )
    parser.add_argument("--model", required=True, help="registry name of the model")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--model-json", help="the model's registry entry as JSON")
    source.add_argument(
        "--config",
        nargs="+",
        help="config YAML file(s), merged in order, whose `models` section defines --model",
    )
    parser.add_argument("--papers", required=True, help="corpus/papers parquet directory")
    parser.add_argument(
        "--ids",
        required=True,
        help="samples/embed_ids.parquet, or a sample's queries.parquet with --ids-column query_id",
    )
    parser.add_argument(
        "--ids-column",
        choices=("paper_id", "query_id"),
        default="paper_id",
        help="the column of --ids that lists the papers (query_id: a queries table's "
        "distinct queries)",
    )
    parser.add_argument(
        "--role",
        choices=ROLES,
        default=None,
        help="embed the papers as queries or as documents, with that role's prompt; "
        "without it the store serves both, which a model whose prompts differ refuses",
    )
    parser.add_argument("--shard-id", type=int, required=True, help="shard to embed, from 0")
    parser.add_argument("--output", required=True, help="embeddings/<model>/shard-IIIII.npy")
    parser.add_argument(
        "--chunk-size",
        type=int,
        default=DEFAULT_CHUNK_SIZE,
        help=f"papers per checkpoint (default {DEFAULT_CHUNK_SIZE})",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=2,
        help="CPU threads for DuckDB and for torch on CPU; the encode rule passes its "
        "threads (default 2)",
    )
    parser.add_argument("--force", action="store_true", help="recompute an existing shard")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    ENCODE.add_to(parser)
    return parser


def command(args: argparse.Namespace) -> None:
    if args.threads < 1:
        raise ConfigError(f"--threads must be at least 1, got {args.threads}")
    spec = load_spec(args.model, args.model_json, args.config)
    import torch

    # torch would otherwise start one thread per core of the node, not of the job.
    torch.set_num_threads(args.threads)
    encode_shard(
        spec,
        args.papers,
        args.ids,
        args.shard_id,
        args.num_shards,
        args.output,
        device=args.device,
        chunk_size=args.chunk_size,
        memory_limit=args.memory_limit,
        threads=args.threads,
        force=args.force,
        show_progress=not args.no_progress,
        role=args.role,
        ids_column=args.ids_column,
    )


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(build_parser, command, argv)
