"""Corpus and full-text inputs, as the staging shards the ingestion and context jobs name."""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterable

from citeval.config import Config


def shard_name(path: str, prefix: str = "") -> str:
    """A staging name for an input file: its base name without data suffixes."""
    name = os.path.basename(path)
    for suffix in (".gz", ".jsonl", ".json", ".parquet"):
        name = name.removesuffix(suffix)
    return prefix + re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def expand_patterns(patterns: Iterable[str]) -> list[str]:
    paths = []
    for pattern in patterns:
        matches = sorted(glob.glob(pattern))
        if not matches and not glob.has_magic(pattern):
            matches = [pattern]  # let Snakemake report a missing file by name
        paths.extend(matches)
    return paths


def input_shards(config: Config) -> dict[str, tuple[str, str]]:
    """Staging shard name -> (ingest format, input path)."""
    corpus = config.corpus
    if corpus.synthetic is not None:
        assert isinstance(corpus.paths, list)
        pattern = corpus.paths[0]
        return {
            f"{index:05d}": ("s2orc_v2020", pattern.format(shard=f"{index:05d}"))
            for index in range(corpus.synthetic.num_shards)
        }
    if not isinstance(corpus.paths, list):
        if corpus.format != "s2ag":
            raise ValueError("corpus.paths: a mapping of kinds is for format s2ag only")
        shards = {}
        for kind in ("papers", "abstracts", "citations"):
            for path in expand_patterns(getattr(corpus.paths, kind)):
                shards[shard_name(path, f"{kind}-")] = (f"s2ag-{kind}", path)
        return shards
    shards: dict[str, tuple[str, str]] = {}
    for path in expand_patterns(corpus.paths):
        name = shard_name(path)
        if name in shards:
            raise ValueError(f"two corpus inputs map to the same shard name {name!r}: {path}")
        shards[name] = (corpus.format, path)
    return shards


def local_inputs(config: Config, shards: Iterable[str]) -> dict[str, str]:
    """Staging name -> full-text or curated-contexts input file (synthetic: one per
    metadata shard)."""
    patterns = config.local.input.paths
    if config.corpus.synthetic is not None:
        return {shard: patterns[0].format(shard=shard) for shard in shards}
    inputs: dict[str, str] = {}
    for path in expand_patterns(patterns):
        name = shard_name(path)
        if name in inputs:
            raise ValueError(f"two local inputs map to the same staging name {name!r}: {path}")
        inputs[name] = path
    return inputs
