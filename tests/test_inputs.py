"""citeval.inputs: a config's input files as staging shards; citeval.corpus_formats: the
one declaration of the corpus formats, which the schema, the config types, ingest and
contexts agree with."""

from __future__ import annotations

import typing
from pathlib import Path

import msgspec
import pytest

from citeval import config as config_module
from citeval import corpus_formats
from citeval.config import load_config
from citeval.contexts.sources import FORMATS as CONTEXTS_FORMATS
from citeval.contexts.sources import FULL_TEXT_READERS
from citeval.corpus_formats import CONTEXT_FORMATS, CORPUS_FORMATS, PARSE_FORMATS, PARSE_TABLE
from citeval.ingest.formats import FORMAT_KIND, FORMATS, RECORD_TYPES
from citeval.ingest.parse_json import STAGERS
from citeval.inputs import expand_patterns, input_shards, staging_name

TABLES = ("papers", "abstracts", "citations")


def config(corpus: dict) -> config_module.Config:
    return load_config({"dataset": "d", "seed": 1, "corpus": corpus})


def touch(directory: Path, *names: str) -> None:
    for name in names:
        (directory / name).write_bytes(b"")


# --- the declaration and what must agree with it -----------------------------------------


def _literal(kind: type, field: str) -> tuple[str, ...]:
    hints = typing.get_type_hints(kind)
    return typing.get_args(hints[field])


def test_the_schema_and_the_config_types_name_the_declared_corpus_formats():
    names = tuple(f.name for f in CORPUS_FORMATS)
    schema = config_module.schema()["properties"]
    assert tuple(schema["corpus"]["properties"]["format"]["enum"]) == names
    assert _literal(config_module.Corpus, "format") == names


def test_the_schema_and_the_config_types_name_the_declared_context_formats():
    local_input = config_module.schema()["properties"]["local"]["properties"]["input"]
    assert tuple(local_input["properties"]["format"]["enum"]) == CONTEXT_FORMATS
    assert _literal(config_module.LocalInput, "format") == CONTEXT_FORMATS
    assert CONTEXT_FORMATS == ("s2orc_v2020", "s2ag", "curated")


def test_the_stages_read_the_declared_formats():
    assert (
        FORMATS
        == PARSE_FORMATS
        == (
            "s2orc_v2020",
            "s2ag-papers",
            "s2ag-abstracts",
            "s2ag-citations",
            "parquet",
        )
    )
    assert FORMAT_KIND == PARSE_TABLE
    assert set(PARSE_TABLE.values()) == set(TABLES)
    # Every JSON parse format has its record type and its stager; parquet has neither.
    assert set(RECORD_TYPES) == set(STAGERS) == set(PARSE_FORMATS) - {"parquet"}
    assert CONTEXTS_FORMATS == CONTEXT_FORMATS
    full_text = {f.full_text for f in CORPUS_FORMATS} - {None}
    assert set(FULL_TEXT_READERS) == full_text
    assert corpus_formats.SYNTHETIC in PARSE_FORMATS and corpus_formats.SYNTHETIC in full_text


def test_a_mapping_of_paths_names_the_tables_of_its_format():
    """S2AG's paths are keyed by the table each kind of file stages (config.S2agPaths)."""
    (by_table,) = [f for f in CORPUS_FORMATS if f.paths_by_table]
    fields = [
        field.encode_name for field in msgspec.inspect.type_info(config_module.S2agPaths).fields
    ]
    assert fields == list(by_table.parse.values())


# --- staging names ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "prefix", "name"),
    [
        ("data/s2orc-00000.jsonl.gz", "", "s2orc-00000"),
        ("/x/pdf_parses_3.jsonl", "", "pdf_parses_3"),
        ("papers.parquet", "", "papers"),
        ("a/contexts.json", "", "contexts"),
        ("a/part 1 (copy).jsonl.gz", "", "part_1_copy_"),
        ("papers-0.jsonl.gz", "papers-", "papers-papers-0"),
        ("v1.2.tar", "", "v1.2.tar"),
    ],
)
def test_staging_names_keep_the_file_name_without_its_data_suffixes(path, prefix, name):
    assert staging_name(path, prefix) == name


def test_patterns_expand_in_order_each_sorted_and_a_plain_missing_path_stays(tmp_path):
    touch(tmp_path, "b-2.jsonl", "b-1.jsonl", "a-1.jsonl")
    patterns = [str(tmp_path / "b-*.jsonl"), str(tmp_path / "a-*.jsonl")]
    assert expand_patterns(patterns) == [
        str(tmp_path / "b-1.jsonl"),
        str(tmp_path / "b-2.jsonl"),
        str(tmp_path / "a-1.jsonl"),
    ]
    missing = str(tmp_path / "missing.jsonl")
    assert expand_patterns([missing, str(tmp_path / "none-*.jsonl")]) == [missing]


# --- input shards ----------------------------------------------------------------------


def test_a_synthetic_corpus_has_one_shard_per_generated_file():
    shards = input_shards(
        config(
            {
                "format": "s2orc_v2020",
                "paths": ["gen/s2orc-{shard}.jsonl.gz"],
                "synthetic": {"num_shards": 3},
            }
        )
    )
    assert shards == {
        f"0000{i}": (corpus_formats.SYNTHETIC, f"gen/s2orc-0000{i}.jsonl.gz") for i in range(3)
    }


@pytest.mark.parametrize("corpus_format", ["s2orc_v2020", "parquet"])
def test_a_list_of_paths_parses_each_file_with_the_corpus_format(tmp_path, corpus_format):
    touch(tmp_path, "x-1.jsonl.gz", "x-0.jsonl.gz")
    shards = input_shards(config({"format": corpus_format, "paths": [str(tmp_path / "x-*")]}))
    assert shards == {
        "x-0": (corpus_format, str(tmp_path / "x-0.jsonl.gz")),
        "x-1": (corpus_format, str(tmp_path / "x-1.jsonl.gz")),
    }


def test_s2ag_shards_are_named_and_parsed_by_the_table_they_stage(tmp_path):
    for table in TABLES:
        touch(tmp_path, f"{table}-0.jsonl.gz", f"{table}-1.jsonl.gz")
    paths = {table: [str(tmp_path / f"{table}-*.jsonl.gz")] for table in TABLES}
    shards = input_shards(config({"format": "s2ag", "paths": paths}))
    assert list(shards) == [f"{t}-{t}-{i}" for t in TABLES for i in (0, 1)]
    assert {name: fmt for name, (fmt, _) in shards.items()} == {
        f"{t}-{t}-{i}": f"s2ag-{t}" for t in TABLES for i in (0, 1)
    }
    assert shards["abstracts-abstracts-1"][1] == str(tmp_path / "abstracts-1.jsonl.gz")


def test_paths_of_the_wrong_shape_for_the_format_fail(tmp_path):
    mapping = {table: [str(tmp_path / f"{table}.jsonl")] for table in TABLES}
    with pytest.raises(ValueError, match="a mapping of kinds is for format s2ag only"):
        input_shards(config({"format": "s2orc_v2020", "paths": mapping}))
    with pytest.raises(ValueError, match="format s2ag takes a mapping of papers, abstracts"):
        input_shards(config({"format": "s2ag", "paths": [str(tmp_path / "x.jsonl")]}))


def test_two_inputs_with_one_staging_name_fail(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    touch(tmp_path / "a", "part.jsonl")
    touch(tmp_path / "b", "part.jsonl.gz")
    patterns = [str(tmp_path / "a" / "*"), str(tmp_path / "b" / "*")]
    with pytest.raises(ValueError, match="same shard name 'part'"):
        input_shards(config({"format": "s2orc_v2020", "paths": patterns}))
