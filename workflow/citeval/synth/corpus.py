"""Writing the synthetic corpus as gzip'd JSONL shards."""

from __future__ import annotations

import contextlib
import gzip
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import numpy as np
from tqdm import tqdm

from citeval.errors import ConfigError
from citeval.io import atomic_path
from citeval.synth.citations import build_citations
from citeval.synth.fulltext import FullTextWriter
from citeval.synth.records import RecordWriter
from citeval.synth.shape import DENSITIES, TEXT_BLOCK, Density
from citeval.synth.structure import build_structure
from citeval.synth.text import build_vocabulary

try:  # python-isal's igzip compresses faster than zlib at the same ratio.
    from isal import igzip as _igzip
except ImportError:  # pragma: no cover - isal is a pinned requirement
    _igzip = None

log = logging.getLogger(__name__)


@contextlib.contextmanager
def _gzip_writer(path: Path, level: int) -> Iterator[IO[bytes]]:
    """A gzip stream with no file name and mtime 0 in its header, for byte-stable output."""
    with open(path, "wb") as raw:
        handle: IO[bytes]
        if _igzip is not None:
            handle = _igzip.IGzipFile(
                filename="", mode="wb", compresslevel=min(level, 3), fileobj=raw, mtime=0
            )
        else:  # pragma: no cover - isal is a pinned requirement
            handle = gzip.GzipFile(
                filename="", mode="wb", compresslevel=level, fileobj=raw, mtime=0
            )
        with handle:
            yield handle


def shard_path(output_pattern: str, shard: int) -> Path:
    """The output path of ``shard`` (``{shard}`` becomes a 5-digit number)."""
    return Path(output_pattern.format(shard=f"{shard:05d}"))


def shard_ranges(num_papers: int, num_shards: int) -> list[tuple[int, int]]:
    """Contiguous paper-index ranges, one per shard, as even as possible."""
    return [
        (k * num_papers // num_shards, (k + 1) * num_papers // num_shards)
        for k in range(num_shards)
    ]


def _validate_pattern(name: str, pattern: str, num_shards: int) -> None:
    if num_shards > 1 and "{shard}" not in pattern:
        raise ConfigError(f"{name} {pattern!r} needs a '{{shard}}' placeholder")
    try:
        pattern.format(shard="00000")
    except (KeyError, IndexError, ValueError) as error:
        raise ConfigError(f"{name} {pattern!r} is not a valid pattern: {error}") from None


def _validate(
    num_papers: int,
    num_shards: int,
    seed: int,
    first_year: int,
    last_year: int,
    pattern: str,
    fulltext_pattern: str | None = None,
) -> None:
    if num_papers < 1:
        raise ConfigError(f"num_papers must be at least 1, got {num_papers}")
    if num_shards < 1:
        raise ConfigError(f"num_shards must be at least 1, got {num_shards}")
    if seed < 0:
        raise ConfigError(f"seed must be non-negative, got {seed}")
    if first_year > last_year:
        raise ConfigError(f"first_year ({first_year}) is after last_year ({last_year})")
    _validate_pattern("output_pattern", pattern, num_shards)
    if fulltext_pattern is not None:
        _validate_pattern("fulltext_pattern", fulltext_pattern, num_shards)
        if fulltext_pattern.format(shard="00000") == pattern.format(shard="00000"):
            raise ConfigError(f"fulltext_pattern {fulltext_pattern!r} is the output_pattern")


def _write_fulltext(
    fulltext: FullTextWriter, path: Path, lo: int, hi: int, compresslevel: int, bar: tqdm
) -> int:
    """Write the full-text records of papers ``[lo, hi)`` to ``path``; return how many."""
    written = 0
    with atomic_path(path) as tmp, _gzip_writer(tmp, compresslevel) as out:
        for block in range(lo // TEXT_BLOCK, -(-hi // TEXT_BLOCK)):
            start = block * TEXT_BLOCK
            a, b = max(lo, start), min(hi, start + TEXT_BLOCK)
            if a >= b:
                continue
            ids, lines = fulltext.lines(block)
            i, j = np.searchsorted(ids, [a, b]).tolist()
            out.write("".join(lines[i:j]).encode("utf-8"))
            written += j - i
            bar.update(b - a)
    return written


def generate_corpus(
    num_papers: int,
    num_shards: int,
    seed: int,
    first_year: int,
    last_year: int,
    output_pattern: str,
    *,
    compresslevel: int = 1,
    density: Density = DENSITIES["default"],
    progress: bool = True,
    fulltext_pattern: str | None = None,
) -> list[Path]:
    """Write the synthetic corpus as ``num_shards`` gzip'd JSONL shards; return their paths.

    Shard ``k`` holds the papers with indices ``[k*N/S, (k+1)*N/S)`` in id order. The same
    arguments give byte-identical files (for the same gzip backend), and the concatenated
    records do not depend on ``num_shards``.

    With ``fulltext_pattern`` (a path with ``{shard}``, like ``output_pattern``), each
    metadata shard also gets a full-text shard there (S2ORC v2020 ``pdf_parses`` records of
    the same papers, see :mod:`~citeval.synth.fulltext`); only the metadata paths are
    returned. The metadata shards are the same with or without it.
    """
    _validate(num_papers, num_shards, seed, first_year, last_year, output_pattern, fulltext_pattern)
    started = time.perf_counter()
    structure = build_structure(num_papers, seed, first_year, last_year)
    graph = build_citations(structure, seed, references=density.references, progress=progress)
    vocab = build_vocabulary(structure, seed)
    log.info(
        "structure: %d papers, %d topics, %d subtopics, %d citations, vocabulary %d words (%.1f s)",
        num_papers,
        structure.topic_field.shape[0],
        structure.sub_topic.shape[0],
        graph.num_edges,
        vocab.words.shape[0],
        time.perf_counter() - started,
    )
    writer = RecordWriter(structure, graph, vocab, seed, density.null_abstract_rate)
    fulltext = None
    if fulltext_pattern is not None:
        fulltext = FullTextWriter(structure, graph, vocab, seed, density.null_abstract_rate)
        log.info("full text: indexed the titles in %.1f s", fulltext.index_seconds)
    n_fulltext = 0
    paths = []
    total = num_papers * (1 if fulltext is None else 2)
    with tqdm(total=total, desc="papers", unit="paper", disable=not progress) as bar:
        for shard, (lo, hi) in enumerate(shard_ranges(num_papers, num_shards)):
            path = shard_path(output_pattern, shard)
            with atomic_path(path) as tmp, _gzip_writer(tmp, compresslevel) as out:
                # A shard boundary may cut a text block: build the block, keep its slice.
                for block in range(lo // TEXT_BLOCK, -(-hi // TEXT_BLOCK)):
                    start = block * TEXT_BLOCK
                    a, b = max(lo, start) - start, min(hi, start + TEXT_BLOCK) - start
                    if a >= b:
                        continue
                    out.write("".join(writer.lines(block)[a:b]).encode("utf-8"))
                    bar.update(b - a)
            paths.append(path)
            if fulltext is not None:
                assert fulltext_pattern is not None
                n_fulltext += _write_fulltext(
                    fulltext, shard_path(fulltext_pattern, shard), lo, hi, compresslevel, bar
                )
    elapsed = time.perf_counter() - started
    if fulltext is not None:
        log.info("wrote %d full-text records in %d shards", n_fulltext, num_shards)
    log.info(
        "wrote %d papers in %d shards in %.1f s (%.0f papers/s)",
        num_papers,
        num_shards,
        elapsed,
        num_papers / max(elapsed, 1e-9),
    )
    return paths
