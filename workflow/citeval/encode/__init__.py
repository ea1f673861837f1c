"""Stage ``encode``: embed one shard of ``samples/embed_ids.parquet`` with one model.

    python -m citeval.encode --model specter --model-json '{"path": "allenai/specter", ...}' \\
        --papers results/demo/corpus/papers --ids results/demo/samples/embed_ids.parquet \\
        --shard-id 3 --num-shards 8 --output results/demo/embeddings/specter/shard-00003.npy

Shard ``i`` of ``N`` takes rows ``[i*n//N, (i+1)*n//N)`` of the sorted id list. Titles and
abstracts are streamed from the corpus by one DuckDB range scan per shard (row groups
outside the shard's id range are skipped by their statistics; the corpus parts are sorted
by paper_id, so the scan yields papers in id order with no sort) with a semi-join on each
scanned batch. The corpus is never loaded whole: memory is one scan batch, DuckDB's reader
buffers (bounded by ``--memory-limit``) and two chunks (one encoding, one prefetched),
whatever the shard size.

Outputs (docs/contracts.md, ``embeddings/``, written by :func:`citeval.embeddings.write_shard`):
``shard-IIIII.ids.parquet`` is written first and ``shard-IIIII.npy`` (float16) last, both
atomically, so the ``.npy`` marks a finished shard; a shard whose ``.npy`` exists is
skipped. Vectors are stored as the encoder returns them: L2-normalised for
``similarity: cosine``, raw for ``ip`` and ``l2``.

Resume within a shard: each chunk of ``--chunk-size`` papers is checkpointed under
``.partial/shard-IIIII/`` next to the output. A killed job restarts after its last finished
chunk; the checkpoints are discarded if the model spec, shard or chunk size changed, and
removed once the shard is complete.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import itertools
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
import pyarrow.compute as pc
import pyarrow.parquet as pq
from tqdm import tqdm

from citeval.embeddings import IDS_SUFFIX, ids_path_for, ids_schema, shard_name, write_shard
from citeval.errors import CitevalError, InputDataError
from citeval.io import atomic_path, write_json, write_parquet
from citeval.models import Encoded, Encoder, ModelSpec, load_encoder

log = logging.getLogger(__name__)

DEFAULT_CHUNK_SIZE = 10_000
# Rows per Arrow batch of the corpus range scan: memory holds one batch of titles and
# abstracts, whatever the shard size.
SCAN_BATCH = 16_384
PARTIAL_DIR = ".partial"


def shard_bounds(num_ids: int, shard_id: int, num_shards: int) -> tuple[int, int]:
    """Rows ``[shard_id*n//N, (shard_id+1)*n//N)``: every row in exactly one shard."""
    if num_shards < 1:
        raise CitevalError(f"--num-shards must be at least 1, got {num_shards}")
    if not 0 <= shard_id < num_shards:
        raise CitevalError(f"--shard-id must be in [0, {num_shards}), got {shard_id}")
    return shard_id * num_ids // num_shards, (shard_id + 1) * num_ids // num_shards


def read_shard_ids(ids_path: str | os.PathLike, shard_id: int, num_shards: int) -> pa.Array:
    """This shard's slice of ``embed_ids.parquet``, checked to be sorted and unique."""
    try:
        table = pq.read_table(ids_path, columns=["paper_id"])
    except (OSError, pa.ArrowInvalid, KeyError) as error:
        raise InputDataError(f"cannot read paper ids ({error})", path=str(ids_path)) from error
    begin, end = shard_bounds(table.num_rows, shard_id, num_shards)
    ids = table.column("paper_id").slice(begin, end - begin).combine_chunks()
    if ids.type != pa.string():
        ids = ids.cast(pa.string())
    if ids.null_count:
        raise InputDataError("null paper_id", path=str(ids_path), field="paper_id")
    values = ids.to_pylist()
    for row, (previous, current) in enumerate(itertools.pairwise(values)):
        if not previous < current:
            raise InputDataError(
                f"paper ids must be sorted and unique; row {begin + row + 1} ({current!r}) "
                f"follows {previous!r}",
                path=str(ids_path),
                field="paper_id",
            )
    return ids


def iter_paper_chunks(
    papers: str | os.PathLike,
    ids: pa.Array,
    chunk_size: int,
    *,
    memory_limit: str,
    threads: int = 2,
    temp_directory: str | os.PathLike | None = None,
    scan_batch: int = SCAN_BATCH,
) -> Iterator[pa.Table]:
    """Yield (paper_id, title, abstract) for ``ids`` (sorted), ``chunk_size`` rows at a time.

    The corpus parts are sorted by paper_id (docs/contracts.md), so a range scan in file
    order already yields the shard's papers in id order: DuckDB guarantees the row order
    of a single-table scan with a WHERE clause (a join or ORDER BY would not, or would
    hold the whole shard's text to sort it). The BETWEEN bounds skip row groups outside
    the shard by their min/max statistics; the semi-join itself is a hash lookup on each
    scanned batch. Memory: one scan batch plus one chunk. Each chunk is checked against
    the expected ids, so a paper missing from the corpus (or an unsorted corpus) is
    reported instead of shifting every later vector.
    """
    import duckdb

    if len(ids) == 0:
        return
    papers_path = Path(papers)
    files = sorted(papers_path.glob("*.parquet")) if papers_path.is_dir() else [papers_path]
    if not files:
        raise InputDataError("no parquet files in the papers directory", path=str(papers))
    connection = duckdb.connect(
        config={
            "memory_limit": memory_limit,
            "threads": threads,
            "preserve_insertion_order": True,
        }
    )
    try:
        if temp_directory is not None:
            connection.execute("SET temp_directory = ?", [str(temp_directory)])
        # A relation streams its result; a DB-API cursor's Arrow output would copy it all.
        reader = connection.sql(
            """
            SELECT paper_id, title, abstract
            FROM read_parquet($files)
            WHERE paper_id BETWEEN $first AND $last
            """,
            params={
                "files": [str(file) for file in files],
                "first": ids[0].as_py(),
                "last": ids[-1].as_py(),
            },
        ).to_arrow_reader(batch_size=scan_batch)
        expected = 0
        pending: list[pa.Table] = []
        pending_rows = 0

        def emit(table: pa.Table) -> pa.Table:
            nonlocal expected
            want = ids.slice(expected, table.num_rows)
            got = table.column("paper_id").combine_chunks().cast(pa.string())
            if not got.equals(want):
                _raise_mismatch(papers, want, got)
            expected += table.num_rows
            return table

        for batch in reader:
            wanted = batch.filter(pc.is_in(batch.column("paper_id"), value_set=ids))
            if wanted.num_rows == 0:
                continue
            pending.append(pa.Table.from_batches([wanted]))
            pending_rows += wanted.num_rows
            while pending_rows >= chunk_size:
                table = pa.concat_tables(pending).combine_chunks()
                yield emit(table.slice(0, chunk_size))
                rest = table.slice(chunk_size)
                pending = [rest] if rest.num_rows else []
                pending_rows = rest.num_rows
        if pending_rows:
            yield emit(pa.concat_tables(pending).combine_chunks())
        if expected != len(ids):
            _raise_mismatch(papers, ids.slice(expected), pa.array([], pa.string()))
    finally:
        connection.close()


def _raise_mismatch(papers: str | os.PathLike, want: pa.Array, got: pa.Array) -> None:
    got_ids = got.to_pylist()
    found = set(got_ids)
    missing = [paper_id for paper_id in want.to_pylist() if paper_id not in found]
    if missing:
        raise InputDataError(
            f"{len(missing)} paper id(s) to embed are not in the corpus, e.g. {missing[:5]}",
            path=str(papers),
        )
    if len(found) < len(got_ids):
        raise InputDataError(
            "duplicate paper ids in the corpus", path=str(papers), field="paper_id"
        )
    raise InputDataError(
        "the corpus parts are not sorted by paper_id (docs/contracts.md)",
        path=str(papers),
        field="paper_id",
    )


def iter_encoded(
    encoder: Encoder, chunks: Iterator[pa.Table], progress: Any | None = None
) -> Iterator[tuple[pa.Table, Encoded]]:
    """Encode chunks, fetching and tokenising the next one in a thread meanwhile.

    DuckDB and the Rust tokenizer release the GIL, so the CPU side overlaps the model's
    forward passes (the GPU path needs it to stay busy).
    """

    def fetch_and_prepare() -> tuple[pa.Table, Any] | None:
        chunk = next(chunks, None)
        if chunk is None:
            return None
        titles = chunk.column("title").to_pylist()
        abstracts = chunk.column("abstract").to_pylist()
        return chunk, encoder.prepare(titles, abstracts)

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(fetch_and_prepare)
        while True:
            item = future.result()
            if item is None:
                return
            future = pool.submit(fetch_and_prepare)
            chunk, prepared = item
            yield chunk, encoder.run(prepared, progress)


def _ids_table(chunk: pa.Table, encoded: Encoded, multi_vector: bool) -> pa.Table:
    paper_ids = chunk.column("paper_id").combine_chunks().take(pa.array(encoded.paper_index))
    columns: dict[str, pa.Array] = {"paper_id": paper_ids.cast(pa.string())}
    if multi_vector:
        columns["sentence"] = pa.array(encoded.sentence, pa.int32())
    return pa.Table.from_pydict(columns, schema=ids_schema(multi_vector))


def _to_float16(vectors: np.ndarray, spec: ModelSpec) -> np.ndarray:
    half = vectors.astype(np.float16)
    if not np.isfinite(half).all():
        # Raw (ip/l2) vectors beyond float16's range would silently become inf.
        raise CitevalError(
            f"model {spec.name!r}: vectors overflow float16 (max |x| = "
            f"{float(np.abs(vectors).max()):.3g}); use similarity: cosine or a smaller-norm model"
        )
    return half


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
) -> bool:
    """Embed one shard; return False (and do nothing) when its output already exists.

    ``encoder`` may be passed to reuse a loaded model across shards; otherwise the model
    is loaded only when there is work to do.
    """
    if chunk_size < 1:
        raise CitevalError(f"--chunk-size must be at least 1, got {chunk_size}")
    output = Path(output)
    ids_path_for(output)  # rejects an --output that is not a .npy before any work
    if output.exists() and not force:
        log.info("%s exists; shard %d is already done", output, shard_id)
        return False
    started = time.perf_counter()
    ids = read_shard_ids(ids_path, shard_id, num_shards)
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
        for k, (chunk, encoded) in enumerate(iter_encoded(encoder, chunks, bar), start=done):
            write_parquet(
                _ids_table(chunk, encoded, spec.multi_vector),
                partial / f"chunk-{k:05d}{IDS_SUFFIX}",
            )
            with atomic_path(partial / f"chunk-{k:05d}.npy") as tmp:
                np.save(tmp, _to_float16(encoded.vectors, spec))
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
