"""The embedding store: one model's shards of vectors and their paper ids.

A store is one ``embeddings/<model>/`` directory (see ``docs/contracts.md``) of
``shard-NNNNN.npy`` float16 arrays and their ``shard-NNNNN.ids.parquet`` id tables (plus a
``sentence`` column for multi-vector models). :func:`write_shard` writes a shard, the id
table first and the ``.npy`` last, so that the ``.npy`` marks a finished shard.

:class:`EmbeddingStore` opens a store read-only, with the vectors memory-mapped.
:meth:`EmbeddingStore.locate` turns a set of paper ids (a pool, or the queries) into a
:class:`Selection`, the rows that hold their vectors, ordered by ``(paper_id, sentence)`` so
that the order never depends on how the corpus was sharded. :meth:`EmbeddingStore.gather`
copies those rows, shard by shard and in chunks, into one preallocated float32 array.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from citeval.errors import CitevalError, InputDataError
from citeval.io import PARQUET_OPTIONS, atomic_path

log = logging.getLogger(__name__)

DEFAULT_CHUNK_ROWS = 16384
SHARD_PATTERN = re.compile(r"^shard-(\d+)\.npy$")
IDS_SUFFIX = ".ids.parquet"


# --------------------------------------------------------------------------- format


def shard_name(shard_id: int) -> str:
    """``3`` -> ``shard-00003``."""
    return f"shard-{shard_id:05d}"


def ids_path_for(output: str | os.PathLike) -> Path:
    """``shard-00003.npy`` -> ``shard-00003.ids.parquet``."""
    output = Path(output)
    if output.suffix != ".npy":
        raise CitevalError(f"--output must end with .npy, got {str(output)!r}")
    return output.with_name(output.name.removesuffix(".npy") + IDS_SUFFIX)


def to_float16(vectors: np.ndarray, model: str) -> np.ndarray:
    """``vectors`` as the store keeps them, float16; a value beyond float16's range (raw
    ``ip``/``l2`` vectors would silently become inf) is an error naming ``model``."""
    half = vectors.astype(np.float16)
    if not np.isfinite(half).all():
        raise CitevalError(
            f"model {model!r}: vectors overflow float16 (max |x| = "
            f"{float(np.abs(vectors).max()):.3g}); use similarity: cosine or a smaller-norm model"
        )
    return half


def ids_schema(multi_vector: bool) -> pa.Schema:
    fields = [pa.field("paper_id", pa.string(), nullable=False)]
    if multi_vector:
        fields.append(pa.field("sentence", pa.int32(), nullable=False))
    return pa.schema(fields)


def write_shard(
    output: str | os.PathLike,
    parts: Sequence[tuple[Path, Path]],
    dim: int,
    multi_vector: bool,
) -> int:
    """Concatenate ``parts`` into shard ``output`` and its id table; return the rows written.

    Each part is a ``(float16 .npy, id table)`` pair, written in order, one part in memory
    at a time. The .npy is written as a header plus appended part bytes rather than through
    a memory map, whose dirty pages would count towards the job's resident memory.
    """
    output = Path(output)
    ids_path = ids_path_for(output)
    rows = [np.load(vectors, mmap_mode="r").shape[0] for vectors, _ in parts]
    total = sum(rows)
    with (
        atomic_path(ids_path) as tmp,
        pq.ParquetWriter(tmp, ids_schema(multi_vector), **PARQUET_OPTIONS) as writer,
    ):
        for _, ids in parts:
            writer.write_table(pq.read_table(ids))
    # The .npy goes last: its existence is what marks the shard finished.
    with atomic_path(output) as tmp, open(tmp, "wb") as handle:
        header = {
            "descr": np.lib.format.dtype_to_descr(np.dtype(np.float16)),
            "fortran_order": False,
            "shape": (total, dim),
        }
        np.lib.format.write_array_header_1_0(handle, header)
        for vectors, _ in parts:
            array = np.load(vectors)
            if array.dtype != np.float16 or array.ndim != 2 or array.shape[1] != dim:
                raise CitevalError(f"{vectors}: unexpected checkpoint {array.dtype} {array.shape}")
            handle.write(np.ascontiguousarray(array).tobytes())
    return total


# --------------------------------------------------------------------------- store


@dataclass(frozen=True)
class Shard:
    """One ``shard-NNNNN.npy`` file and its id table."""

    number: int
    vectors_path: Path
    ids_path: Path
    n_rows: int


@dataclass
class Selection:
    """Rows of an :class:`EmbeddingStore` that hold the vectors of a set of papers.

    Rows are ordered by ``(paper_id, sentence)``; paper ``i`` owns rows
    ``offsets[i]:offsets[i + 1]`` (exactly one row for single-vector models).
    """

    paper_ids: np.ndarray  # object array of str, sorted and unique, one per paper
    offsets: np.ndarray  # int64, len(paper_ids) + 1
    shard: np.ndarray  # int32 per row: index into EmbeddingStore.shards
    row: np.ndarray  # int64 per row: row inside that shard
    sentences: np.ndarray | None = None  # int32 per row for multi-vector stores

    def __len__(self) -> int:
        return len(self.row)

    @property
    def n_papers(self) -> int:
        return len(self.paper_ids)

    def row_paper(self) -> np.ndarray:
        """Paper index (into :attr:`paper_ids`) of every row."""
        counts = np.diff(self.offsets)
        return np.repeat(np.arange(self.n_papers, dtype=np.int64), counts)

    def index_of(self, paper_ids: Iterable[str]) -> np.ndarray:
        """Paper index of each id, or -1 where the paper is not in the selection."""
        wanted = np.asarray(list(paper_ids), dtype=object)
        if len(self.paper_ids) == 0 or len(wanted) == 0:
            return np.full(len(wanted), -1, dtype=np.int64)
        pos = np.searchsorted(self.paper_ids, wanted)
        pos = np.minimum(pos, len(self.paper_ids) - 1)
        found = self.paper_ids[pos] == wanted
        return np.where(found, pos, -1).astype(np.int64)


class EmbeddingStore:
    """Read-only view of one model's embedding shards.

    Vectors are memory-mapped (``np.load(mmap_mode="r")``) one shard at a time, so opening a
    store costs almost nothing and reading only touches the rows asked for.
    """

    def __init__(self, directory: str | os.PathLike) -> None:
        self.directory = Path(directory)
        if not self.directory.is_dir():
            raise InputDataError("embedding directory does not exist", path=str(self.directory))
        shards: list[Shard] = []
        dims: set[int] = set()
        dtypes: set[str] = set()
        sentence_flags: set[bool] = set()
        for path in sorted(self.directory.iterdir()):
            match = SHARD_PATTERN.match(path.name)
            if match is None:
                continue
            ids_path = ids_path_for(path)
            if not ids_path.is_file():
                raise InputDataError("shard has no id table " + ids_path.name, path=str(path))
            array = np.load(path, mmap_mode="r")
            if array.ndim != 2:
                raise InputDataError(
                    f"expected a 2-d array, got shape {array.shape}", path=str(path)
                )
            if array.dtype not in (np.float16, np.float32):
                raise InputDataError(
                    f"expected float16 or float32, got {array.dtype}", path=str(path)
                )
            meta = pq.ParquetFile(ids_path)
            n_ids = meta.metadata.num_rows
            if n_ids != array.shape[0]:
                raise InputDataError(
                    f"{array.shape[0]} vectors but {n_ids} ids in {ids_path.name}", path=str(path)
                )
            names = set(meta.schema_arrow.names)
            if "paper_id" not in names:
                raise InputDataError("no paper_id column", path=str(ids_path), field="paper_id")
            sentence_flags.add("sentence" in names)
            dims.add(int(array.shape[1]))
            dtypes.add(str(array.dtype))
            shards.append(Shard(int(match.group(1)), path, ids_path, int(array.shape[0])))
            del array
        if not shards:
            raise InputDataError("no shard-NNNNN.npy files", path=str(self.directory))
        if len(dims) > 1:
            raise InputDataError(
                f"shards disagree on the dimension: {sorted(dims)}", path=str(self.directory)
            )
        if len(sentence_flags) > 1:
            raise InputDataError(
                "some id tables have a sentence column and some do not", path=str(self.directory)
            )
        self.shards = shards
        self.dim = dims.pop()
        self.dtypes = sorted(dtypes)
        self.multi_vector = sentence_flags.pop()
        self.n_rows = sum(shard.n_rows for shard in shards)
        log.info(
            "embedding store %s: %d shards, %d rows, dim %d, %s%s",
            self.directory,
            len(shards),
            self.n_rows,
            self.dim,
            "/".join(self.dtypes),
            ", multi-vector" if self.multi_vector else "",
        )

    def vectors(self, shard: int) -> np.ndarray:
        """Memory-mapped array of shard ``shard`` (an index into :attr:`shards`)."""
        return np.load(self.shards[shard].vectors_path, mmap_mode="r")

    # ----------------------------------------------------------------------- locate

    def locate(self, paper_ids: Iterable[str], *, what: str = "papers") -> Selection:
        """Rows of the store that hold the vectors of ``paper_ids`` (duplicates ignored).

        Raises :class:`InputDataError` when a paper has no vector, or when the store holds
        a paper (single-vector) or a (paper, sentence) pair twice.
        """
        import polars as pl

        wanted = pl.DataFrame({"paper_id": pl.Series(list(paper_ids), dtype=pl.String)}).unique()
        columns = ["paper_id", "sentence"] if self.multi_vector else ["paper_id"]
        parts: list[pl.DataFrame] = []
        # One shard's id table at a time: a multi-vector store can hold tens of millions of
        # rows, of which a pool needs a fraction.
        for number, shard in enumerate(self.shards):
            ids = pl.read_parquet(shard.ids_path, columns=columns)
            ids = ids.with_columns(pl.col("paper_id").cast(pl.String))
            found = (
                ids.with_row_index("row")
                .join(wanted, on="paper_id", how="semi")
                .with_columns(pl.lit(number, dtype=pl.Int32).alias("shard"))
            )
            parts.append(found)
        found = pl.concat(parts, how="vertical") if parts else pl.DataFrame()
        keys = columns
        if found.height and found.select(pl.struct(keys).is_duplicated().any()).item():
            dup = found.filter(pl.struct(keys).is_duplicated()).sort(keys).row(0, named=True)
            raise InputDataError(
                f"the store holds {', '.join(f'{k}={dup[k]!r}' for k in keys)} more than once",
                path=str(self.directory),
            )
        missing = wanted.join(found.select("paper_id").unique(), on="paper_id", how="anti")
        if missing.height:
            examples = sorted(missing["paper_id"].to_list())[:5]
            raise InputDataError(
                f"{missing.height} of {wanted.height} {what} have no vector in the store, "
                f"e.g. {examples}; re-run the encode stage",
                path=str(self.directory),
            )
        found = found.sort(keys)
        counts = found.group_by("paper_id", maintain_order=True).len()
        offsets = np.zeros(counts.height + 1, dtype=np.int64)
        np.cumsum(counts["len"].to_numpy(), out=offsets[1:])
        return Selection(
            paper_ids=np.asarray(counts["paper_id"].to_list(), dtype=object),
            offsets=offsets,
            shard=found["shard"].to_numpy().astype(np.int32),
            row=found["row"].to_numpy().astype(np.int64),
            sentences=found["sentence"].to_numpy().astype(np.int32) if self.multi_vector else None,
        )

    # ----------------------------------------------------------------------- read

    def read_into(
        self,
        selection: Selection,
        start: int,
        stop: int,
        dest: np.ndarray,
        *,
        normalize: bool = False,
        cache: dict[int, np.ndarray] | None = None,
    ) -> None:
        """Copy selection rows ``[start, stop)`` into ``dest``, float32 ``(stop - start, d)``.

        ``cache`` keeps the last opened memory map between calls of one pass.
        """
        shards = selection.shard[start:stop]
        rows = selection.row[start:stop]
        cache = {} if cache is None else cache
        present = np.unique(shards)
        for shard in present:
            shard = int(shard)
            if shard not in cache:
                cache.clear()  # at most one shard mapped: its pages leave RSS when unmapped
                cache[shard] = self.vectors(shard)
            array = cache[shard]
            mask: slice | np.ndarray
            if len(present) == 1:
                mask = slice(None)
                shard_rows = rows
            else:
                mask = shards == shard
                shard_rows = rows[mask]
            # The usual case (store sorted like the selection) is a plain slice of the map;
            # fancy indexing would first copy the rows into a temporary.
            if len(shard_rows) and np.all(np.diff(shard_rows) == 1):
                source = array[shard_rows[0] : shard_rows[-1] + 1]
            else:
                source = array[shard_rows]
            if isinstance(mask, slice):
                np.copyto(dest, source, casting="same_kind")
            else:
                dest[mask] = source
        if normalize:
            import faiss

            faiss.normalize_L2(dest)

    def iter_chunks(
        self,
        selection: Selection,
        *,
        chunk_rows: int = DEFAULT_CHUNK_ROWS,
        normalize: bool = False,
        progress: bool = True,
        desc: str = "read vectors",
    ) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(start, float32 chunk)`` over the selection rows in order.

        The chunk buffer is reused: consume (or copy) it before asking for the next one.
        """
        first, last = 0, len(selection)
        buffer = np.empty((min(chunk_rows, max(last, 1)), self.dim), dtype=np.float32)
        cache: dict[int, np.ndarray] = {}
        with tqdm(
            total=last - first, desc=desc, unit="vec", disable=not progress, mininterval=5
        ) as bar:
            for start in range(first, last, chunk_rows):
                stop = min(start + chunk_rows, last)
                chunk = buffer[: stop - start]
                self.read_into(selection, start, stop, chunk, normalize=normalize, cache=cache)
                yield start, chunk
                bar.update(stop - start)

    def gather(
        self,
        selection: Selection,
        *,
        out: np.ndarray | None = None,
        normalize: bool = False,
        chunk_rows: int = DEFAULT_CHUNK_ROWS,
        progress: bool = True,
        desc: str = "gather vectors",
    ) -> np.ndarray:
        """Copy the selection's vectors into one float32 ``(len(selection), d)`` array.

        ``out`` (C-contiguous float32 of that shape) is filled in place when given, e.g.
        an index's own storage; otherwise one array is allocated up front. Rows are read
        shard by shard in chunks, so besides ``out`` only one chunk is ever in memory.
        """
        shape = (len(selection), self.dim)
        if out is None:
            out = np.empty(shape, dtype=np.float32)
        elif out.shape != shape or out.dtype != np.float32 or not out.flags.c_contiguous:
            raise ValueError(f"out must be a C-contiguous float32 array of shape {shape}")
        cache: dict[int, np.ndarray] = {}
        with tqdm(
            total=shape[0], desc=desc, unit="vec", disable=not progress, mininterval=5
        ) as bar:
            for start in range(0, shape[0], chunk_rows):
                stop = min(start + chunk_rows, shape[0])
                self.read_into(
                    selection, start, stop, out[start:stop], normalize=normalize, cache=cache
                )
                self._check_finite(selection, start, out[start:stop])
                bar.update(stop - start)
        return out

    def _check_finite(self, selection: Selection, start: int, chunk: np.ndarray) -> None:
        """A NaN or infinite vector would silently drop its paper from every ranking."""
        bad = np.flatnonzero(~np.isfinite(chunk).all(axis=1))
        if not len(bad):
            return
        row = start + int(bad[0])
        paper = ""
        if len(selection.paper_ids):
            index = int(np.searchsorted(selection.offsets, row, side="right")) - 1
            paper = f" (paper {selection.paper_ids[index]})"
        raise InputDataError(
            f"row {int(selection.row[row])}{paper}: the vector has NaN or infinite values "
            f"({len(bad)} such rows in this chunk); embed the model again",
            path=str(self.shards[int(selection.shard[row])].vectors_path),
        )


def selection_rows(selection: Selection, rows: np.ndarray) -> Selection:
    """Rows ``rows`` of ``selection``, for reading only (without the paper bookkeeping)."""
    return Selection(
        paper_ids=np.empty(0, dtype=object),
        offsets=np.zeros(1, dtype=np.int64),
        shard=selection.shard[rows],
        row=selection.row[rows],
    )
