import json

import pyarrow.parquet as pq
import pytest
from corpus_builder import write_corpus

from citeval.errors import InputDataError
from citeval.filter import PrefilterRules, main, prefilter


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
        corpus / "papers", tmp_path / "f.parquet", tmp_path / "r.json", PrefilterRules()
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
    rules = PrefilterRules(min_citations=2, citation_direction="cited_by", require_year=False)
    report = prefilter(corpus / "papers", tmp_path / "f.parquet", tmp_path / "r.json", rules)
    kept = set(pq.read_table(tmp_path / "f.parquet").column("paper_id").to_pylist())
    assert kept == {"ok1", "ok2", "no-year", "rarely-cited"}
    assert "year" not in report["failing_each_rule"]

    rules = PrefilterRules(citation_direction="references")
    prefilter(corpus / "papers", tmp_path / "g.parquet", tmp_path / "s.json", rules)
    kept = set(pq.read_table(tmp_path / "g.parquet").column("paper_id").to_pylist())
    assert kept == {"citer0", "citer1", "citer2"}


def test_output_is_byte_identical_across_runs(corpus, tmp_path):
    for name in ("a", "b"):
        prefilter(
            corpus / "papers",
            tmp_path / f"{name}.parquet",
            tmp_path / f"{name}.json",
            PrefilterRules(),
        )
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()


def test_missing_input_is_a_clear_error(tmp_path, capsys):
    with pytest.raises(InputDataError, match="no parquet parts"):
        prefilter(
            tmp_path / "nothing", tmp_path / "f.parquet", tmp_path / "r.json", PrefilterRules()
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
