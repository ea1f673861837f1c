"""The collection list of a sample (``collections.tsv``) and the BM25 tuning policy.

A *collection* is one (group, repetition) of a sample split: one candidate pool, the
split's queries of that group, and their qrels. ``python -m citeval.sample`` writes the
list of a split's collections to ``samples/<setup>-<split>/collections.tsv``, a TSV with
the header :data:`COLUMNS`, one row per collection, sorted by (group, rep)::

    setup    split  group      rep  n_queries  pool_size  requested_pool_size
    dataset  test   pool-1600  0    40         1600       1600

Dataset-level groups are named ``pool-<requested size>`` (:func:`pool_group`), field-level
groups by the field's slug (``computer-science``). A collection's files are named
``<group>.rep<rep>`` (:func:`collection_name`): its qrels, index, runs and metrics.

Which collections a split has follows from the config alone (:func:`planned_collections`):
every configured pool size or field, times the repetitions, whether or not sampling finds
enough queries for it. A collection the corpus cannot fill still exists, with fewer (or no)
queries, so the Snakefile knows every job before sampling has run.

This module is the one place that writes and reads that file, for the sampler, the
Snakefile's input functions, ``bm25 tune`` and the report; and the one place that says
which collections a config plans (:func:`planned_collections`) and which validation
collections tune BM25 (:func:`tuning_collections`).
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import NamedTuple, TypeVar

import pyarrow.parquet as pq

from citeval.errors import ConfigError, InputDataError
from citeval.io import write_text

FILENAME = "collections.tsv"
COLUMNS = ("setup", "split", "group", "rep", "n_queries", "pool_size", "requested_pool_size")
POOL_PREFIX = "pool-"
_INTEGER_COLUMNS = ("rep", "n_queries", "pool_size", "requested_pool_size")


@dataclass(frozen=True)
class CollectionInfo:
    """One row of ``collections.tsv``."""

    setup: str
    split: str
    group: str
    rep: int
    n_queries: int
    pool_size: int
    requested_pool_size: int

    @property
    def name(self) -> str:
        """``<group>.rep<rep>``, the name of the collection's files."""
        return collection_name(self.group, self.rep)


def collection_name(group: str, rep: int) -> str:
    """``<group>.rep<rep>``, the name used by qrels files, indexes, runs and metrics."""
    return f"{group}.rep{rep}"


class PlannedCollection(NamedTuple):
    """A collection the config asks for: known before sampling, so before any job runs."""

    setup: str
    split: str
    group: str
    rep: int

    @property
    def name(self) -> str:
        return collection_name(self.group, self.rep)


def field_slug(name: str) -> str:
    """``"Computer Science"`` -> ``"computer-science"`` (used in file names and tables)."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def field_slugs(fields: Sequence[str], setting: str) -> dict[str, str]:
    """``{slug: field name}`` in the order of ``fields``; ConfigError when two share a slug.

    ``setting`` names where the fields came from, for the error message.
    """
    slugs = {field_slug(name): name for name in fields}
    if len(slugs) != len(fields):
        raise ConfigError(f"{setting}: two fields share a file name: {list(fields)}")
    return slugs


def planned_collections(
    setup: str, split: str, sampling: Mapping[str, object]
) -> list[PlannedCollection]:
    """The collections of one test or validation split, from the ``sampling`` config.

    Test: every pool size (dataset-level) or field (field-level) times
    ``repetitions``. Validation: each of them once, or none when the validation query
    count is 0. Sorted by (group, rep), the order of ``collections.tsv``.
    """
    if setup == "dataset":
        level = sampling["dataset_level"]
        groups = sorted({pool_group(size) for size in level["pool_sizes"]})
        valid_queries = sampling["validation"]["num_queries"]
    elif setup == "field":
        level = sampling["field_level"]
        groups = sorted(field_slugs(level["fields"], "sampling.field_level.fields"))
        valid_queries = sampling["validation"]["queries_per_field"]
    else:
        raise ValueError(f"unknown setup {setup!r} (dataset or field)")
    if split == "test":
        repetitions = level["repetitions"]
    elif split == "valid":
        repetitions = 1 if valid_queries > 0 else 0
    else:
        raise ValueError(f"unknown split {split!r} (test or valid)")
    return [
        PlannedCollection(setup, split, group, rep)
        for group in groups
        for rep in range(repetitions)
    ]


AnyCollection = TypeVar("AnyCollection", CollectionInfo, PlannedCollection)


def pool_group(size: int) -> str:
    """The dataset-level group of a requested pool size: ``pool-<size>``."""
    return f"{POOL_PREFIX}{int(size)}"


def pool_size_of(group: str) -> int:
    """The requested pool size of a dataset-level group (``pool-1600`` -> 1600)."""
    digits = group.removeprefix(POOL_PREFIX)
    if digits == group or not digits.isdigit():
        raise ValueError(f"{group!r} is not a dataset-level group ({POOL_PREFIX}<size>)")
    return int(digits)


def listing_path(sample_dir: str | os.PathLike) -> Path:
    """``<sample_dir>/collections.tsv``."""
    return Path(sample_dir) / FILENAME


def write_collections(rows: Iterable[CollectionInfo], sample_dir: str | os.PathLike) -> Path:
    """Write the collection list of one sample split, sorted by (group, rep); atomic."""
    lines = ["\t".join(COLUMNS)]
    for row in sorted(rows, key=lambda row: (row.group, row.rep)):
        lines.append("\t".join(str(value) for value in astuple(row)))
    path = listing_path(sample_dir)
    write_text("\n".join(lines) + "\n", path)
    return path


def read_collections(path: str | os.PathLike) -> list[CollectionInfo]:
    """The rows of a ``collections.tsv``, given the file or its sample folder.

    Every column of :data:`COLUMNS` must be present; an error names the file, line and
    field of a bad value.
    """
    path = Path(path)
    if path.is_dir():
        path = listing_path(path)
    where = str(path)
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle, delimiter="\t")
            header = reader.fieldnames or []
            records = list(reader)
    except OSError as error:
        raise InputDataError(
            f"cannot read the collection list: {error.strerror}", path=where
        ) from None
    missing = [column for column in COLUMNS if column not in header]
    if missing:
        raise InputDataError(f"columns {missing} are missing", path=where, line=1)
    rows = []
    for number, record in enumerate(records, start=2):
        values: dict[str, str | int] = {column: record[column] for column in COLUMNS}
        for column in _INTEGER_COLUMNS:
            try:
                values[column] = int(record[column])
            except (TypeError, ValueError):
                raise InputDataError(
                    f"{column} is not an integer: {record[column]!r}",
                    path=where,
                    line=number,
                    field=column,
                ) from None
        rows.append(CollectionInfo(**values))  # type: ignore[arg-type]
    return rows


def group_query_count(sample_dir: str | os.PathLike, group: str) -> int:
    """How many queries ``group`` holds in a sample folder's ``collections.tsv`` (the same
    in every repetition: the queries are fixed across pools).

    A stage handed a collection reads it to tell a collection that sampling left without
    queries (0: it writes an empty output) from a wrong group name (an error naming the
    groups present).
    """
    rows = read_collections(sample_dir)
    counts = {row.n_queries for row in rows if row.group == group}
    if not counts:
        present = ", ".join(sorted({row.group for row in rows})[:10]) or "none"
        raise InputDataError(
            f"no collection of group {group!r} (groups present: {present})",
            path=str(listing_path(sample_dir)),
        )
    return max(counts)


def tuning_collections(setup: str, valid: Sequence[AnyCollection]) -> list[AnyCollection]:
    """The validation collections that tune BM25's k1 and b for ``setup``.

    Dataset-level: the smallest pool (its first repetition; validation samples one).
    Field-level: every field. An empty validation split is a config error, since tuning
    is switched on. (``bm25 tune`` leaves out a chosen collection that sampling left
    without queries.)
    """
    if not valid:
        raise ConfigError(
            f"bm25.tune.enabled is true but the {setup}-level validation split is empty: "
            "raise sampling.validation sizes or set bm25.tune.enabled: false"
        )
    if setup == "dataset":
        return [min(valid, key=lambda row: (pool_size_of(row.group), row.rep))]
    if setup == "field":
        return list(valid)
    raise ValueError(f"unknown setup {setup!r} (dataset or field)")


def read_collection(
    queries_path: str | Path, pools_path: str | Path, group: str, rep: int
) -> tuple[list[str], list[str]]:
    """Sorted query ids of ``group`` and sorted pool paper ids of ``(group, rep)``."""
    reads = {
        "queries": (queries_path, ["group", "query_id"], [("group", "==", group)]),
        "pool": (
            pools_path,
            ["group", "rep", "paper_id"],
            [("group", "==", group), ("rep", "==", rep)],
        ),
    }
    tables = {}
    for name, (path, columns, filters) in reads.items():
        try:
            tables[name] = pq.read_table(path, columns=columns, filters=filters)
        except (OSError, ValueError, KeyError) as error:
            first_line = str(error).splitlines()[0]  # pyarrow then lists the file's columns
            raise InputDataError(
                f"cannot read the {name} (columns {columns}): {first_line}", path=str(path)
            ) from error
    queries, pool = tables["queries"], tables["pool"]
    query_ids = sorted(set(queries.column("query_id").to_pylist()))
    pool_ids = sorted(set(pool.column("paper_id").to_pylist()))
    if not query_ids and group_query_count(Path(queries_path).parent, group) > 0:
        raise InputDataError(f"no queries for group {group!r}", path=str(queries_path))
    if not pool_ids:
        raise InputDataError(f"no pool for group {group!r} rep {rep}", path=str(pools_path))
    return query_ids, pool_ids
