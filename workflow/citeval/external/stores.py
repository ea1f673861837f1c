"""A user's store of vectors, checked and imported as one shard of the embedding store.

Two forms are read (docs/contracts.md): a folder in the pipeline's own format
(``shard-NNNNN.npy``, float16 or float32, with ``shard-NNNNN.ids.parquet``), and one parquet
file of ``paper_id`` and ``vector`` (a list of floats, the same length in every row).
Either becomes ``shard-00000.npy`` and its id table in the pipeline's layout, streamed a
chunk at a time so memory stays bounded whatever the store's size; float16 stays float16,
anything else becomes float32, so an evaluation of the user's vectors outside the pipeline
ranks as the pipeline does.

Checked on the way: one vector per paper (a repeated id names both rows), every vector
finite and of one dimension, no zero vector under cosine similarity (it has no
direction), and a vector for every paper (or context) the collections need.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from citeval.embeddings import EmbeddingStore, ids_path_for, ids_schema
from citeval.errors import InputDataError
from citeval.io import PARQUET_OPTIONS, atomic_path

log = logging.getLogger(__name__)

CHUNK_ROWS = 65536
EXAMPLES = 5


def _folder_chunks(store: EmbeddingStore) -> Iterator[tuple[str, int, list[str], np.ndarray]]:
    """``(file, first row, ids, vectors)`` of a shard folder, a chunk at a time."""
    for number in range(len(store.shards)):
        shard = store.shards[number]
        ids = pq.read_table(shard.ids_path, columns=["paper_id"]).column("paper_id")
        ids = pc.cast(ids, pa.string()).to_pylist()
        vectors = store.vectors(number)
        for start in range(0, shard.n_rows, CHUNK_ROWS):
            stop = min(start + CHUNK_ROWS, shard.n_rows)
            yield shard.vectors_path.name, start, ids[start:stop], np.asarray(vectors[start:stop])


def _parquet_dim(path: Path) -> int:
    """The dimension of a ``paper_id`` + ``vector`` parquet file (its first vector's), after
    checking its columns; 0 when it has no row or its first vector is null (the rows'
    check names that row)."""
    schema = pq.ParquetFile(path).schema_arrow
    for column in ("paper_id", "vector"):
        if column not in schema.names:
            raise InputDataError(
                f"no {column} column (the file has {schema.names})", path=str(path), field=column
            )
    vector_type = schema.field("vector").type
    is_list = pa.types.is_list(vector_type) or pa.types.is_large_list(vector_type)
    if not (is_list or pa.types.is_fixed_size_list(vector_type)) or not (
        pa.types.is_floating(vector_type.value_type) or pa.types.is_integer(vector_type.value_type)
    ):
        raise InputDataError(
            f"vector must be a list of numbers, got {vector_type}", path=str(path), field="vector"
        )
    first = next(pq.ParquetFile(path).iter_batches(batch_size=1, columns=["vector"]), None)
    if first is None or first.num_rows == 0 or first.column(0).null_count:
        return 0
    return int(pc.list_value_length(first.column(0))[0].as_py())


def _parquet_chunks(path: Path) -> Iterator[tuple[str, int, list[str], np.ndarray]]:
    """``(file, first row, ids, vectors)`` of a ``paper_id`` + ``vector`` parquet file."""
    start = 0
    batches = pq.ParquetFile(path).iter_batches(
        batch_size=CHUNK_ROWS, columns=["paper_id", "vector"]
    )
    for batch in batches:
        ids_column, vectors_column = batch.column(0), batch.column(1)
        for name, column in (("paper_id", ids_column), ("vector", vectors_column)):
            if column.null_count:
                nulls = column.is_null().to_numpy(zero_copy_only=False)
                row = start + int(np.flatnonzero(nulls)[0])
                raise InputDataError(f"row {row + 1}: {name} is null", path=str(path), field=name)
        ids = pc.cast(ids_column, pa.string()).to_pylist()
        lengths = pc.list_value_length(vectors_column).to_numpy(zero_copy_only=False)
        if len(set(lengths.tolist())) > 1:
            row = int(np.flatnonzero(lengths != lengths[0])[0])
            raise InputDataError(
                f"row {start + row + 1} (paper {ids[row]!r}): a vector of {lengths[row]} "
                f"values where row {start + 1} has {lengths[0]}",
                path=str(path),
                field="vector",
            )
        values = pc.list_flatten(vectors_column).to_numpy(zero_copy_only=False)
        dim = int(lengths[0]) if len(lengths) else 0
        yield path.name, start, ids, values.astype(np.float64).reshape(len(ids), dim)
        start += len(ids)


def _open(source: Path) -> tuple[Iterator[tuple[str, int, list[str], np.ndarray]], int, int, str]:
    """The chunks of a store, its rows, its dimension and the dtype the import keeps."""
    if source.is_dir():
        store = EmbeddingStore(source)
        if store.multi_vector:
            raise InputDataError(
                "the id tables have a sentence column: an embeddings system holds one vector "
                "a paper",
                path=str(source),
            )
        dtype = "float16" if store.dtypes == ["float16"] else "float32"
        return _folder_chunks(store), store.n_rows, store.dim, dtype
    if source.is_file() and source.suffix == ".parquet":
        dim = _parquet_dim(source)
        rows = pq.ParquetFile(source).metadata.num_rows
        return _parquet_chunks(source), rows, dim, "float32"
    if not source.exists():
        raise InputDataError("no such file or folder", path=str(source))
    raise InputDataError(
        "a vector store is a folder of shard-NNNNN.npy files or one .parquet file",
        path=str(source),
    )


def _check_chunk(
    file: str, start: int, ids: list[str], vectors: np.ndarray, dim: int, similarity: str
) -> None:
    where = None
    if vectors.shape[1] != dim:
        raise InputDataError(
            f"vectors of {vectors.shape[1]} values where the store's first has {dim}", path=file
        )
    bad = np.flatnonzero(~np.isfinite(vectors).all(axis=1))
    if len(bad):
        where = int(bad[0])
        problem = "NaN or infinite values"
    elif similarity == "cosine":
        zero = np.flatnonzero(~vectors.any(axis=1))
        if len(zero):
            where = int(zero[0])
            problem = "a zero vector (cosine similarity has no direction to compare)"
    if where is not None:
        raise InputDataError(
            f"row {start + where + 1} (paper {ids[where]!r}): {problem}", path=file
        )


def _check_ids(ids_path: Path, source: Path, needed: Path | None, what: str) -> dict[str, Any]:
    """No id twice; every id of ``needed`` (a parquet of ``paper_id``) present."""
    ids = pl.read_parquet(ids_path).with_row_index("row")
    repeated = ids.filter(pl.col("paper_id").is_duplicated()).sort("paper_id", "row")
    if repeated.height:
        first = repeated.row(0, named=True)["paper_id"]
        rows = repeated.filter(pl.col("paper_id") == first)["row"].to_list()
        raise InputDataError(
            f"paper {first!r} has {len(rows)} vectors (rows {', '.join(str(r + 1) for r in rows)} "
            f"of the store, {repeated['paper_id'].n_unique()} ids repeated in all)",
            path=str(source),
        )
    if needed is None:
        return {}
    wanted = pl.read_parquet(needed, columns=["paper_id"])
    missing = wanted.join(ids, on="paper_id", how="anti").sort("paper_id")
    if missing.height:
        raise InputDataError(
            f"{missing.height} of the {wanted.height} {what} the collections need have no "
            f"vector, e.g. {missing['paper_id'].head(EXAMPLES).to_list()}",
            path=str(source),
        )
    return {"needed": wanted.height}


def import_store(
    source: str | os.PathLike,
    output: str | os.PathLike,
    *,
    similarity: str,
    needed: str | os.PathLike | None = None,
    what: str = "papers",
) -> dict[str, Any]:
    """Check the store at ``source`` and write it as the shard ``output`` (``.npy``, its id
    table beside it); ``needed`` is a parquet of the ``paper_id`` s that must have a
    vector. Returns a report of what was imported."""
    source = Path(source)
    chunks, rows, dim, dtype = _open(source)
    if rows == 0:
        raise InputDataError("the store holds no vector", path=str(source))
    output = Path(output)
    ids_path = ids_path_for(output)
    # The id table is renamed into place first (inner context): the .npy marks the shard
    # finished, as the encode stage's shards do.
    with atomic_path(output) as npy_tmp, atomic_path(ids_path) as ids_tmp:
        with (
            open(npy_tmp, "wb") as handle,
            pq.ParquetWriter(ids_tmp, ids_schema(False), **PARQUET_OPTIONS) as writer,
        ):
            header = {"descr": np.dtype(dtype).str, "fortran_order": False, "shape": (rows, dim)}
            np.lib.format.write_array_header_1_0(handle, header)
            written = 0
            for file, start, ids, vectors in chunks:
                _check_chunk(
                    str(source / file) if source.is_dir() else str(source),
                    start,
                    ids,
                    vectors,
                    dim,
                    similarity,
                )
                writer.write_table(
                    pa.table({"paper_id": pa.array(ids, pa.string())}, schema=ids_schema(False))
                )
                handle.write(np.ascontiguousarray(vectors, dtype=dtype).tobytes())
                written += len(ids)
        if written != rows:
            raise InputDataError(f"read {written} vectors of {rows}", path=str(source))
        report = _check_ids(ids_tmp, source, Path(needed) if needed else None, what)
    log.info("imported %s: %d vectors of dimension %d (%s)", source, rows, dim, dtype)
    return {"input": str(source), "vectors": rows, "dim": dim, "dtype": dtype, **report}
