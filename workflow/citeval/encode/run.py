"""Embedding one shard (or several with one loaded model), chunk by checkpointed chunk.

Each chunk of ``--chunk-size`` papers is checkpointed under ``.partial/shard-IIIII/``
next to the output; a killed job restarts after its last finished chunk. The checkpoints
are discarded if the model spec, shard or chunk size changed, and removed once the shard
is complete (:func:`citeval.embeddings.write_shard` writes it). Vectors are kept as
float16 (:func:`citeval.embeddings.to_float16`, which fails where they would overflow).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from tqdm import tqdm

from citeval.embeddings import (
    IDS_SUFFIX,
    ids_path_for,
    ids_schema,
    shard_name,
    to_float16,
    write_shard,
)
from citeval.encode.papers import iter_paper_chunks
from citeval.encode.shards import read_shard_ids
from citeval.errors import CitevalError
from citeval.io import atomic_path, write_json, write_parquet
from citeval.models import Encoded, Encoder, ModelSpec, load_encoder

log = logging.getLogger(__name__)

DEFAULT_CHUNK_SIZE = 10_000
PARTIAL_DIR = ".partial"


def iter_encoded(
    encoder: Encoder,
    chunks: Iterator[pa.Table],
    progress: Any | None = None,
    role: str | None = None,
) -> Iterator[tuple[pa.Table, Encoded]]:
    """Encode chunks as ``role``'s inputs (queries, documents, or ``None``: both), fetching
    and tokenising the next one in a thread meanwhile.

    DuckDB and the Rust tokenizer release the GIL, so the CPU side overlaps the model's
    forward passes (the GPU path needs it to stay busy).
    """

    def fetch_and_prepare() -> tuple[pa.Table, Any] | None:
        chunk = next(chunks, None)
        if chunk is None:
            return None
        titles = chunk.column("title").to_pylist()
        abstracts = chunk.column("abstract").to_pylist()
        return chunk, encoder.prepare(titles, abstracts, role)

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(fetch_and_prepare)
        while True:
            item = future.result()
            if item is None:
                return
            future = pool.submit(fetch_and_prepare)
            chunk, prepared = item
            yield chunk, encoder.run(prepared, progress, role=role)


def _ids_table(chunk: pa.Table, encoded: Encoded, multi_vector: bool) -> pa.Table:
    paper_ids = chunk.column("paper_id").combine_chunks().take(pa.array(encoded.paper_index))
    columns: dict[str, pa.Array] = {"paper_id": paper_ids.cast(pa.string())}
    if multi_vector:
        columns["sentence"] = pa.array(encoded.sentence, pa.int32())
    return pa.Table.from_pydict(columns, schema=ids_schema(multi_vector))


def _fingerprint(spec: ModelSpec, ids: pa.Array, chunk_size: int) -> str:
    digest = hashlib.sha256()
    digest.update(spec.to_json().encode())
    digest.update(str(chunk_size).encode())
    for value in ids.to_pylist():
        digest.update(value.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def _completed_chunks(partial: Path, num_chunks: int) -> int:
    done = 0
    while done < num_chunks and (partial / f"chunk-{done:05d}.npy").exists():
        done += 1
    return done


def encode_shard(
    spec: ModelSpec,
    papers: str | os.PathLike,
    ids_path: str | os.PathLike,
    shard_id: int,
    num_shards: int,
    output: str | os.PathLike,
    *,
    device: str,
    memory_limit: str,
    encoder: Encoder | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    threads: int = 2,
    force: bool = False,
    show_progress: bool = True,
    role: str | None = None,
    ids_column: str = "paper_id",
) -> bool:
    """Embed one shard; return False (and do nothing) when its output already exists.

    ``encoder`` may be passed to reuse a loaded model across shards; otherwise the model
    is loaded only when there is work to do. ``role`` picks the prompt (``query`` or
    ``document``; ``None``: one store for both, as long as the model's prompts agree);
    ``ids_column`` reads the ids from a queries table (``query_id``).
    """
    if chunk_size < 1:
        raise CitevalError(f"--chunk-size must be at least 1, got {chunk_size}")
    output = Path(output)
    ids_path_for(output)  # rejects an --output that is not a .npy before any work
    if output.exists() and not force:
        log.info("%s exists; shard %d is already done", output, shard_id)
        return False
    started = time.perf_counter()
    ids = read_shard_ids(ids_path, shard_id, num_shards, ids_column)
    num_chunks = -(-len(ids) // chunk_size)
    partial = output.parent / PARTIAL_DIR / output.name.removesuffix(".npy")
    manifest = {
        "model": spec.name,
        "spec": spec.to_config(),
        "shard_id": shard_id,
        "num_shards": num_shards,
        "num_ids": len(ids),
        "chunk_size": chunk_size,
        "fingerprint": _fingerprint(spec, ids, chunk_size),
    }
    if role is not None:
        manifest["role"] = role
    manifest_file = partial / "manifest.json"
    if partial.exists():
        try:
            previous = json.loads(manifest_file.read_text())
        except (OSError, ValueError):
            previous = None
        if previous != manifest or force:
            log.info("discarding stale checkpoints in %s", partial)
            shutil.rmtree(partial)
    partial.mkdir(parents=True, exist_ok=True)
    write_json(manifest, manifest_file)
    done = _completed_chunks(partial, num_chunks)
    if done:
        log.info("resuming shard %d after %d of %d chunks", shard_id, done, num_chunks)

    if encoder is None:
        encoder = load_encoder(spec, device=device)
    remaining = ids.slice(done * chunk_size)
    chunks = iter_paper_chunks(
        papers,
        remaining,
        chunk_size,
        memory_limit=memory_limit,
        threads=threads,
        temp_directory=partial / "duckdb-tmp",
    )
    with tqdm(
        total=len(ids),
        initial=min(done * chunk_size, len(ids)),
        unit="paper",
        desc=f"{spec.name} {shard_name(shard_id)}",
        disable=not show_progress,
        mininterval=5.0,
    ) as bar:
        for k, (chunk, encoded) in enumerate(iter_encoded(encoder, chunks, bar, role), start=done):
            write_parquet(
                _ids_table(chunk, encoded, spec.multi_vector),
                partial / f"chunk-{k:05d}{IDS_SUFFIX}",
            )
            with atomic_path(partial / f"chunk-{k:05d}.npy") as tmp:
                np.save(tmp, to_float16(encoded.vectors, spec.name))
    parts = [
        (partial / f"chunk-{k:05d}.npy", partial / f"chunk-{k:05d}{IDS_SUFFIX}")
        for k in range(num_chunks)
    ]
    total = write_shard(output, parts, encoder.dim, spec.multi_vector)
    shutil.rmtree(partial, ignore_errors=True)
    _remove_if_empty(output.parent / PARTIAL_DIR)
    elapsed = time.perf_counter() - started
    log.info(
        "shard %d: %d papers -> %d vectors of dim %d in %.1fs (%s)",
        shard_id,
        len(ids),
        total,
        encoder.dim,
        elapsed,
        output,
    )
    return True


def _remove_if_empty(directory: Path) -> None:
    with contextlib.suppress(OSError):
        directory.rmdir()


def encode_shards(
    spec: ModelSpec,
    papers: str | os.PathLike,
    ids_path: str | os.PathLike,
    num_shards: int,
    output_dir: str | os.PathLike,
    *,
    device: str,
    memory_limit: str,
    shard_ids: Sequence[int] | None = None,
    **options: Any,
) -> list[int]:
    """Embed several shards into ``output_dir`` with one loaded model; return those computed.

    Shards whose output exists are skipped without loading the model.
    """
    computed = []
    encoder: Encoder | None = None
    for shard_id in range(num_shards) if shard_ids is None else shard_ids:
        output = Path(output_dir) / f"{shard_name(shard_id)}.npy"
        if output.exists() and not options.get("force", False):
            log.info("%s exists; shard %d is already done", output, shard_id)
            continue
        if encoder is None:
            encoder = load_encoder(spec, device=device)
        encode_shard(
            spec,
            papers,
            ids_path,
            shard_id,
            num_shards,
            output,
            device=device,
            memory_limit=memory_limit,
            encoder=encoder,
            **options,
        )
        computed.append(shard_id)
    return computed
