"""The input files of a config, named as staging shards.

Every corpus input file becomes one staging shard of ``ingest parse`` (and every local
input file one of ``contexts extract``), named after the file: its base name without the
``.gz``, ``.jsonl``, ``.json`` or ``.parquet`` suffixes, every run of other characters than
letters, digits, ``_``, ``.`` and ``-`` replaced by ``_`` (:func:`staging_name`). The
patterns of a config are globbed in order, each one's matches sorted
(:func:`expand_patterns`); a pattern that matches nothing and has no wildcard is kept, so
that Snakemake reports the missing file by name.

How a corpus format's files are staged is declared in :mod:`citeval.corpus_formats`: a
format of one kind of file parses each with its own name; S2AG's shards are named
``papers-``, ``abstracts-`` or ``citations-`` after the table they stage. A synthetic
corpus has one shard per generated file, ``00000``, ``00001``, ...
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterable

from citeval.config import Config
from citeval.corpus_formats import BY_NAME, SYNTHETIC

_SUFFIXES = (".gz", ".jsonl", ".json", ".parquet")


def staging_name(path: str, prefix: str = "") -> str:
    """The staging shard name of an input file, after ``prefix``."""
    name = os.path.basename(path)
    for suffix in _SUFFIXES:
        name = name.removesuffix(suffix)
    return prefix + re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def expand_patterns(patterns: Iterable[str]) -> list[str]:
    """The files of ``patterns``, pattern by pattern, each one's matches sorted; a pattern
    without a wildcard that matches nothing stays as it is."""
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
            f"{index:05d}": (SYNTHETIC, pattern.format(shard=f"{index:05d}"))
            for index in range(corpus.synthetic.num_shards)
        }
    corpus_format = BY_NAME[corpus.format]
    if not isinstance(corpus.paths, list):
        if not corpus_format.paths_by_table:
            raise ValueError(
                f"corpus.paths: a mapping of kinds is for format "
                f"{' or '.join(f.name for f in BY_NAME.values() if f.paths_by_table)} only"
            )
        shards = {}
        for parse_format, table in corpus_format.parse.items():
            for path in expand_patterns(getattr(corpus.paths, table)):
                shards[staging_name(path, f"{table}-")] = (parse_format, path)
        return shards
    if corpus_format.paths_by_table:
        tables = ", ".join(corpus_format.parse.values())
        raise ValueError(f"corpus.paths: format {corpus.format} takes a mapping of {tables}")
    (parse_format,) = corpus_format.parse
    shards: dict[str, tuple[str, str]] = {}
    for path in expand_patterns(corpus.paths):
        name = staging_name(path)
        if name in shards:
            raise ValueError(f"two corpus inputs map to the same shard name {name!r}: {path}")
        shards[name] = (parse_format, path)
    return shards


def local_inputs(config: Config, shards: Iterable[str]) -> dict[str, str]:
    """Staging name -> the local task's full-text or curated-contexts input file (a
    synthetic corpus: one per metadata shard, named by ``shards``)."""
    patterns = config.local.input.paths
    if config.corpus.synthetic is not None:
        return {shard: patterns[0].format(shard=shard) for shard in shards}
    inputs: dict[str, str] = {}
    for path in expand_patterns(patterns):
        name = staging_name(path)
        if name in inputs:
            raise ValueError(f"two local inputs map to the same staging name {name!r}: {path}")
        inputs[name] = path
    return inputs
