"""The collection list (collections.tsv) and the BM25 tuning policy, in citeval.collection_list."""

from __future__ import annotations

from pathlib import Path

import pytest

from citeval.collection_list import (
    COLUMNS,
    CollectionInfo,
    collection_name,
    pool_group,
    pool_size_of,
    read_collections,
    tuning_collections,
    write_collections,
)
from citeval.errors import ConfigError, InputDataError


def row(group: str, rep: int = 0, setup: str = "dataset", split: str = "valid") -> CollectionInfo:
    size = pool_size_of(group) if group.startswith("pool-") else 50
    return CollectionInfo(setup, split, group, rep, 10, size, size)


def test_written_list_reads_back_sorted_with_integer_columns(tmp_path: Path) -> None:
    rows = [row("pool-800", 1, split="test"), row("pool-1600", 0, split="test")]
    rows.append(row("pool-800", 0, split="test"))
    path = write_collections(rows, tmp_path)
    assert path == tmp_path / "collections.tsv"
    lines = path.read_text().splitlines()
    assert lines[0].split("\t") == list(COLUMNS)
    assert lines[1] == "dataset\ttest\tpool-1600\t0\t10\t1600\t1600"
    for source in (tmp_path, path):
        listing = read_collections(source)
        assert [(r.group, r.rep) for r in listing] == [
            ("pool-1600", 0),
            ("pool-800", 0),
            ("pool-800", 1),
        ]
        assert listing[2] == rows[0]
        assert listing[2].name == "pool-800.rep1" == collection_name("pool-800", 1)


def test_bad_lists_are_input_errors_that_name_the_place(tmp_path: Path) -> None:
    with pytest.raises(InputDataError, match="cannot read the collection list"):
        read_collections(tmp_path)
    path = tmp_path / "collections.tsv"
    path.write_text("setup\tsplit\tgroup\trep\ndataset\ttest\tpool-10\t0\n")
    with pytest.raises(InputDataError, match=r"collections.tsv:1: columns \['n_queries'"):
        read_collections(path)
    header = "\t".join(COLUMNS)
    path.write_text(
        f"{header}\ndataset\ttest\tpool-10\t0\t5\t10\t10\ndataset\ttest\tx\tr\t5\t10\t10\n"
    )
    with pytest.raises(InputDataError, match=r"collections.tsv:3 \(field 'rep'\): rep is not"):
        read_collections(path)


def test_pool_groups_name_their_requested_size() -> None:
    assert pool_group(200000) == "pool-200000"
    assert pool_size_of("pool-200000") == 200000
    for group in ("biology", "pool-", "pool-x1"):
        with pytest.raises(ValueError, match="not a dataset-level group"):
            pool_size_of(group)


def test_dataset_level_tunes_on_the_smallest_pool_by_size_not_by_name() -> None:
    valid = [row("pool-1600"), row("pool-800"), row("pool-10000")]
    assert tuning_collections("dataset", valid) == [row("pool-800")]


def test_field_level_tunes_on_every_field() -> None:
    valid = [row("art", setup="field"), row("biology", setup="field")]
    assert tuning_collections("field", valid) == valid


def test_an_empty_validation_split_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"field-level validation split is empty"):
        tuning_collections("field", [])
