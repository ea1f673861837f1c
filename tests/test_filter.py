import json
from dataclasses import replace

import pyarrow.parquet as pq
import pytest
from corpus_builder import write_corpus

from citeval.config import load_config
from citeval.errors import InputDataError
from citeval.filter import PrefilterRules, prefilter
from citeval.filter.cli import build_parser, main
from citeval.stages import PREFILTER

# The paper's rules (Medić & Šnajder 2022), as the schema's defaults give them.
PAPER_RULES = PrefilterRules(
    require_year=True,
    require_title=True,
    min_abstract_chars=30,
    min_citations=3,
    citation_direction="cited_by",
)


@pytest.fixture
def corpus(tmp_path):
    papers = [
        {"paper_id": "ok1"},
        {"paper_id": "ok2"},
        {"paper_id": "no-year", "year": None},
        {"paper_id": "no-title", "title": None},
        {"paper_id": "blank-title", "title": "   "},
        {"paper_id": "short-abstract", "abstract": "too short"},
        {"paper_id": "no-abstract", "abstract": None},
        {"paper_id": "rarely-cited"},
        {"paper_id": "year-and-title-missing", "year": None, "title": None},
    ] + [{"paper_id": f"citer{i}"} for i in range(3)]
    cited_three_times = [
        "ok1",
        "ok2",
        "no-year",
        "no-title",
        "blank-title",
        "short-abstract",
        "no-abstract",
        "year-and-title-missing",
    ]
    citations = [(f"citer{i}", target) for i in range(3) for target in cited_three_times]
    citations += [("citer0", "rarely-cited"), ("citer1", "rarely-cited")]
    return write_corpus(tmp_path / "corpus", papers, citations)


def test_prefilter_keeps_only_papers_passing_every_rule(corpus, tmp_path):
    report = prefilter(
        corpus / "papers",
        tmp_path / "f.parquet",
        tmp_path / "r.json",
        PAPER_RULES,
        memory_limit="1GB",
    )
    kept = pq.read_table(tmp_path / "f.parquet")
    assert kept.column("paper_id").to_pylist() == ["ok1", "ok2"]
    assert kept.column_names == ["paper_id", "year", "fields", "n_cited_by", "n_references"]
    assert report["papers_read"] == 12
    assert report["papers_kept"] == 2
    assert report["failing_each_rule"] == {
        "year": 2,
        "title": 3,
        "abstract": 2,
        "citations": 4,  # rarely-cited and the three citers
    }
    # Applied in order, a paper is removed by the first rule it fails.
    assert report["removed_by_rule_in_order"] == {
        "year": 2,
        "title": 2,
        "abstract": 2,
        "citations": 4,
    }
    assert json.loads((tmp_path / "r.json").read_text()) == report


def test_thresholds_and_direction_come_from_arguments(corpus, tmp_path):
    rules = replace(PAPER_RULES, min_citations=2, require_year=False)
    report = prefilter(
        corpus / "papers", tmp_path / "f.parquet", tmp_path / "r.json", rules, memory_limit="1GB"
    )
    kept = set(pq.read_table(tmp_path / "f.parquet").column("paper_id").to_pylist())
    assert kept == {"ok1", "ok2", "no-year", "rarely-cited"}
    assert "year" not in report["failing_each_rule"]

    rules = replace(PAPER_RULES, citation_direction="references")
    prefilter(
        corpus / "papers", tmp_path / "g.parquet", tmp_path / "s.json", rules, memory_limit="1GB"
    )
    kept = set(pq.read_table(tmp_path / "g.parquet").column("paper_id").to_pylist())
    assert kept == {"citer0", "citer1", "citer2"}


def test_output_is_byte_identical_across_runs(corpus, tmp_path):
    for name in ("a", "b"):
        prefilter(
            corpus / "papers",
            tmp_path / f"{name}.parquet",
            tmp_path / f"{name}.json",
            PAPER_RULES,
            memory_limit="1GB",
        )
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()


def test_missing_input_is_a_clear_error(tmp_path, capsys):
    with pytest.raises(InputDataError, match="no parquet parts"):
        prefilter(
            tmp_path / "nothing",
            tmp_path / "f.parquet",
            tmp_path / "r.json",
            PAPER_RULES,
            memory_limit="1GB",
        )
    status = main(
        [
            "--papers",
            str(tmp_path / "nothing"),
            "--output",
            str(tmp_path / "f"),
            "--report",
            str(tmp_path / "r"),
        ]
    )
    assert status == 2
    assert "no parquet parts" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--threads", "0", "argument --threads: must be >= 1, got 0"),
        ("--memory-limit", "lots", "memory limit 'lots' is not like '2GB'"),
    ],
)
def test_cli_rejects_bad_resource_options(tmp_path, capsys, option, value, message):
    argv = ["--papers", str(tmp_path), "--output", str(tmp_path / "f.parquet")]
    with pytest.raises(SystemExit) as info:
        main([*argv, "--report", str(tmp_path / "r.json"), option, value])
    assert info.value.code == 2
    assert message in capsys.readouterr().err


def test_cli_defaults_are_the_schemas_and_the_config_flags_parse(corpus, tmp_path):
    wiring = ["--papers", "p", "--output", "o", "--report", "r"]
    args = build_parser().parse_args(wiring)
    assert (
        PrefilterRules(
            require_year=args.require_year,
            require_title=args.require_title,
            min_abstract_chars=args.min_abstract_chars,
            min_citations=args.min_citations,
            citation_direction=args.citation_direction,
        )
        == PAPER_RULES
    )
    assert args.memory_limit == "2GB"
    corpus_section = {"format": "s2orc_v2020", "paths": ["s2orc-*.jsonl.gz"]}
    prefilter_section = {"require_year": False, "min_citations": 2}
    config = load_config(
        {"dataset": "t", "seed": 1, "corpus": corpus_section, "prefilter": prefilter_section}
    )
    argv = PREFILTER.argv(config)
    assert "--no-require-year" in argv
    args = build_parser().parse_args([*wiring, *argv])
    assert (args.require_year, args.require_title, args.min_citations) == (False, True, 2)


def test_cli_applies_the_rules_it_is_given(corpus, tmp_path):
    argv = ["--papers", str(corpus / "papers"), "--output", str(tmp_path / "f.parquet")]
    argv += ["--report", str(tmp_path / "r.json"), "--min-citations", "2", "--no-require-year"]
    assert main(argv) == 0
    kept = set(pq.read_table(tmp_path / "f.parquet").column("paper_id").to_pylist())
    assert kept == {"ok1", "ok2", "no-year", "rarely-cited"}
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["rules"]["require_year"] is False
