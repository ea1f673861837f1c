"""``python -m citeval.export beir``: a collection or MDCR's pairs as a BEIR folder.

A collection of the global or the local task::

    python -m citeval.export beir --samples results/demo/samples/dataset-test \\
        --collection pool-800.rep0 --papers results/demo/corpus/papers \\
        [--query-papers results/demo/samples/local-test/query_papers] \\
        [--config-json JSON] --output results/demo/export/beir/dataset-test/pool-800.rep0

MDCR's pairs (every field, or one with ``--field``)::

    python -m citeval.export beir --mdcr-benchmark results/demo/mdcr/mdcr_test.json \\
        --mdcr-data results/demo/mdcr/mdcr_test_data.jsonl [--field Biology] \\
        [--config-json JSON] --output results/demo/export/beir/mdcr-test

The folder holds ``corpus.jsonl``, ``queries.jsonl``, ``qrels/test.tsv`` and
``manifest.json`` (docs/contracts.md, docs/export.md).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from citeval.cli import positive_int, run_cli
from citeval.errors import ConfigError
from citeval.export.beir import write_beir_folder
from citeval.export.sources import Source, collection_source, mdcr_source
from citeval.io import file_fingerprint
from citeval.stages import EXPORT_BEIR

LOG = logging.getLogger(__name__)

# The corpus may be the whole of S2ORC: hashing it on every export would cost more than the
# export. The exported files' own digests stand for what was read from it.
UNHASHED_INPUTS = ("papers",)


def config_digest(config: dict[str, Any]) -> str:
    """The SHA-256 of the config as ``tables/provenance.json`` computes it, so an export
    and the tables of one run carry the same hash."""
    canonical = json.dumps(config, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def parse_config_json(text: str | None) -> dict[str, Any]:
    if text is None:
        LOG.warning("no --config-json: the manifest's config_sha256, seed and dataset are null")
        return {"config_sha256": None, "seed": None, "dataset": None}
    try:
        config = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(f"--config-json is not JSON: {error}") from None
    if not isinstance(config, dict):
        raise ConfigError(f"--config-json is not a JSON object: {text[:60]!r}")
    return {
        "config_sha256": config_digest(config),
        "seed": config.get("seed"),
        "dataset": config.get("dataset"),
    }


def input_records(inputs: dict[str, str]) -> dict[str, dict[str, str | None]]:
    """Each input's path and SHA-256 (null for the corpus, see :data:`UNHASHED_INPUTS`)."""
    hashed = {
        role: path
        for role, path in inputs.items()
        if role not in UNHASHED_INPUTS and path != inputs.get("papers")
    }
    return {
        role: {"path": path, "sha256": file_fingerprint(path) if role in hashed else None}
        for role, path in sorted(inputs.items())
    }


def read_source(args: argparse.Namespace) -> Source:
    collection_flags = {
        "--samples": args.samples,
        "--collection": args.collection,
        "--papers": args.papers,
    }
    mdcr_flags = {"--mdcr-benchmark": args.mdcr_benchmark, "--mdcr-data": args.mdcr_data}
    given = [flag for flag, value in {**collection_flags, **mdcr_flags}.items() if value]
    if any(mdcr_flags.values()) and any(collection_flags.values()):
        raise ConfigError(f"export one thing at a time: {' and '.join(given)} were given")
    if any(mdcr_flags.values()):
        missing = [flag for flag, value in mdcr_flags.items() if not value]
        if missing:
            raise ConfigError(f"an MDCR export needs {' and '.join(missing)} too")
        if args.query_papers:
            raise ConfigError("--query-papers is for collections; MDCR's texts are its data file")
        return mdcr_source(args.mdcr_benchmark, args.mdcr_data, args.field)
    missing = [flag for flag, value in collection_flags.items() if not value]
    if len(missing) == len(collection_flags):
        raise ConfigError(
            "nothing to export: give --samples, --collection and --papers (a collection) "
            "or --mdcr-benchmark and --mdcr-data (MDCR's pairs)"
        )
    if missing:
        raise ConfigError(f"a collection's export needs {' and '.join(missing)} too")
    if args.field:
        raise ConfigError("--field selects an MDCR field; a collection is one field already")
    return collection_source(
        args.samples,
        args.collection,
        args.papers,
        args.query_papers,
        threads=args.threads,
        memory_limit=args.memory_limit,
    )


def beir_command(args: argparse.Namespace) -> None:
    config = parse_config_json(args.config_json)
    source = read_source(args)
    manifest = {
        **config,
        "task": source.task,
        "collection": source.collection,
        "texts": source.texts(),
        "inputs": input_records(source.inputs),
    }
    write_beir_folder(
        args.output,
        source.documents,
        source.queries,
        source.qrels,
        manifest,
        n_documents=source.n_documents,
        where=source.where,
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m citeval.export",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    beir = commands.add_parser(
        "beir", help="a collection or MDCR's pairs as a BEIR folder (corpus, queries, qrels)"
    )
    beir.add_argument("--samples", type=Path, help="a sample folder, samples/<setup>-<split>")
    beir.add_argument(
        "--collection", help="<group>.rep<rep> of its collections.tsv, e.g. pool-800.rep0"
    )
    beir.add_argument("--papers", type=Path, help="the corpus papers folder (corpus/papers)")
    beir.add_argument(
        "--query-papers",
        type=Path,
        help="the queries' texts as a papers folder (default: --papers; for a local sample "
        "its query_papers/)",
    )
    beir.add_argument("--mdcr-benchmark", type=Path, help="MDCR benchmark, mdcr_<split>.json")
    beir.add_argument("--mdcr-data", type=Path, help="its data file, mdcr_<split>_data.jsonl")
    beir.add_argument("--field", help="MDCR: export this field only (default: every field)")
    beir.add_argument(
        "--config-json",
        help="the run's config as JSON (the tables rule's): its hash, seed and dataset go in "
        "the manifest",
    )
    beir.add_argument("--threads", type=positive_int, default=1, help="DuckDB threads")
    beir.add_argument(
        "--output", required=True, type=Path, help="the BEIR folder to write (replaced)"
    )
    EXPORT_BEIR.add_to(beir)
    beir.set_defaults(handler=beir_command)
    return parser


def command(args: argparse.Namespace) -> None:
    args.handler(args)


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(build_parser, command, argv)
