"""Tests for the synthetic S2ORC v2020 corpus generator (citeval.synth)."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from citeval import synth
from citeval.config import load_config
from citeval.errors import ConfigError
from citeval.stages import SYNTH
from citeval.synth.cli import build_parser, main

N_PAPERS = 2000
SEED = 7
FIRST_YEAR, LAST_YEAR = 1990, 2019


def _generate(
    directory: Path,
    *,
    seed: int = SEED,
    shards: int = 2,
    n: int = N_PAPERS,
    density: synth.Density = synth.DENSITIES["default"],
) -> list[Path]:
    return synth.generate_corpus(
        n,
        shards,
        seed,
        FIRST_YEAR,
        LAST_YEAR,
        str(directory / "s2orc-{shard}.jsonl.gz"),
        density=density,
        progress=False,
    )


def _read_lines(paths: list[Path]) -> list[str]:
    lines: list[str] = []
    for path in paths:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            lines.extend(handle)
    return lines


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], list[dict[str, Any]]]:
    paths = _generate(tmp_path_factory.mktemp("synth"))
    return paths, [json.loads(line) for line in _read_lines(paths)]


@pytest.fixture(scope="module")
def records(corpus: tuple[list[Path], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    return corpus[1]


@pytest.fixture(scope="module")
def by_id(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["paper_id"]: r for r in records}


def _edges(records: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(r["paper_id"], c) for r in records for c in r["outbound_citations"]]


def _words(record: dict[str, Any]) -> set[str]:
    text = f"{record['title'] or ''} {record['abstract'] or ''}".lower()
    return set(re.findall(r"[a-z]+", text))


# ---- determinism and files ----


def test_shard_files_and_names(corpus: tuple[list[Path], list[dict[str, Any]]]) -> None:
    paths, records = corpus
    assert [p.name for p in paths] == ["s2orc-00000.jsonl.gz", "s2orc-00001.jsonl.gz"]
    assert len(records) == N_PAPERS
    ids = [r["paper_id"] for r in records]
    assert ids == sorted(ids) and len(set(ids)) == N_PAPERS
    assert ids[0] == synth.paper_id(0, 8) == "s2-00000000"
    # Contiguous id ranges, half per shard.
    assert len(_read_lines(paths[:1])) == N_PAPERS // 2
    # gzip header: mtime 0, so the bytes do not depend on when the file was written.
    assert paths[0].read_bytes()[4:8] == b"\0\0\0\0"
    assert not list(paths[0].parent.glob("*.tmp"))


def test_same_seed_gives_identical_bytes(
    tmp_path: Path, corpus: tuple[list[Path], list[dict[str, Any]]]
) -> None:
    again = _generate(tmp_path / "again")
    assert [p.read_bytes() for p in again] == [p.read_bytes() for p in corpus[0]]


def test_other_seed_gives_other_corpus(
    tmp_path: Path, corpus: tuple[list[Path], list[dict[str, Any]]]
) -> None:
    other = _generate(tmp_path / "other", seed=SEED + 1)
    assert _read_lines(other) != _read_lines(corpus[0])


def test_records_do_not_depend_on_shard_count(
    tmp_path: Path, corpus: tuple[list[Path], list[dict[str, Any]]]
) -> None:
    three = _generate(tmp_path / "three", shards=3)
    assert _read_lines(three) == _read_lines(corpus[0])


def test_more_shards_than_papers_gives_empty_shards(tmp_path: Path) -> None:
    paths = _generate(tmp_path, shards=4, n=3)
    assert len(paths) == 4
    assert [len(_read_lines([p])) for p in paths] == [0, 1, 1, 1]


# ---- record format ----


def test_records_have_the_v2020_keys_and_types(records: list[dict[str, Any]]) -> None:
    optional_strings = ("arxiv_id", "acl_id", "pmc_id", "pubmed_id", "doi", "venue", "journal")
    for r in records:
        assert tuple(r) == synth.V2020_KEYS
        assert isinstance(r["paper_id"], str)
        assert r["title"] is None or isinstance(r["title"], str)
        assert r["abstract"] is None or isinstance(r["abstract"], str)
        assert r["year"] is None or isinstance(r["year"], int)
        for author in r["authors"]:
            assert set(author) == {"first", "middle", "last", "suffix"}
            assert isinstance(author["first"], str) and isinstance(author["last"], str)
            assert isinstance(author["middle"], list) and author["suffix"] == ""
        for key in optional_strings:
            assert r[key] is None or isinstance(r[key], str), key
        assert isinstance(r["mag_id"], str) and r["mag_id"].isdigit()
        fields = r["mag_field_of_study"]
        assert fields is None or (1 <= len(fields) <= 2 and set(fields) <= set(synth.FIELDS))
        assert all(isinstance(c, str) for c in r["outbound_citations"] + r["inbound_citations"])
        assert r["has_outbound_citations"] is bool(r["outbound_citations"])
        assert r["has_inbound_citations"] is bool(r["inbound_citations"])
        assert isinstance(r["has_pdf_parse"], bool)
        assert r["s2_url"].startswith("https://api.semanticscholar.org/CorpusID:")


def test_identifiers_look_like_s2orc(records: list[dict[str, Any]]) -> None:
    assert any(r["doi"] for r in records)
    assert any(r["pubmed_id"] for r in records)
    assert all(r["pmc_id"].startswith("PMC") for r in records if r["pmc_id"])
    assert any(r["arxiv_id"] for r in records)
    assert any(r["journal"] for r in records)
    n_authors = Counter(len(r["authors"]) for r in records)
    assert n_authors[1] > 0 and max(n_authors) >= 5


def test_writer_block_matches_file(records: list[dict[str, Any]]) -> None:
    structure = synth.build_structure(N_PAPERS, SEED, FIRST_YEAR, LAST_YEAR)
    graph = synth.build_citations(structure, SEED, progress=False)
    vocab = synth.build_vocabulary(structure, SEED)
    writer = synth.RecordWriter(structure, graph, vocab, SEED)
    assert writer.block(1) == records[synth.TEXT_BLOCK : 2 * synth.TEXT_BLOCK]


# ---- citation graph ----


def test_inbound_is_exactly_the_reverse_of_outbound(
    records: list[dict[str, Any]], by_id: dict[str, dict[str, Any]]
) -> None:
    out_edges = _edges(records)
    in_edges = [(c, r["paper_id"]) for r in records for c in r["inbound_citations"]]
    assert sorted(out_edges) == sorted(in_edges)
    assert len(set(out_edges)) == len(out_edges)  # no repeated references
    assert all(a != b for a, b in out_edges)  # no self-citations
    assert all(b in by_id for _, b in out_edges)
    for r in records:
        assert r["outbound_citations"] == sorted(r["outbound_citations"])
        assert r["inbound_citations"] == sorted(r["inbound_citations"])


def test_citations_point_back_in_time(
    records: list[dict[str, Any]], by_id: dict[str, dict[str, Any]]
) -> None:
    deltas = [
        by_id[a]["year"] - by_id[b]["year"]
        for a, b in _edges(records)
        if by_id[a]["year"] is not None and by_id[b]["year"] is not None
    ]
    deltas_arr = np.array(deltas)
    assert (deltas_arr >= 0).mean() > 0.95
    assert (deltas_arr > 0).mean() > 0.7


def test_citations_stay_mostly_within_the_field(
    records: list[dict[str, Any]], by_id: dict[str, dict[str, Any]]
) -> None:
    same = cross = 0
    for a, b in _edges(records):
        fa, fb = by_id[a]["mag_field_of_study"], by_id[b]["mag_field_of_study"]
        if fa and fb:
            if set(fa) & set(fb):
                same += 1
            else:
                cross += 1
    assert same / (same + cross) > 0.8
    assert cross > 0


def test_in_degree_is_heavy_tailed(records: list[dict[str, Any]]) -> None:
    indeg = np.array([len(r["inbound_citations"]) for r in records])
    assert indeg.max() >= 5 * max(1.0, float(np.median(indeg)))
    top = np.sort(indeg)[::-1][: len(indeg) // 100]
    assert top.sum() / indeg.sum() > 0.04  # the top 1% get well over 1% of citations


def test_reference_counts_grow_over_time(records: list[dict[str, Any]]) -> None:
    def mean_refs(years: range) -> float:
        return float(np.mean([len(r["outbound_citations"]) for r in records if r["year"] in years]))

    assert mean_refs(range(2015, 2020)) > 2 * mean_refs(range(1990, 2000))


# ---- protocol structure ----


def test_all_19_fields_with_uneven_sizes(records: list[dict[str, Any]]) -> None:
    counts = Counter(f for r in records for f in r["mag_field_of_study"] or [])
    assert set(counts) == set(synth.FIELDS)
    assert len(synth.FIELDS) == 19
    assert counts["Medicine"] > 5 * counts["Art"]
    assert counts["Biology"] > 3 * counts["Philosophy"]
    assert counts["Computer Science"] > 3 * counts["History"]
    two = sum(1 for r in records if r["mag_field_of_study"] and len(r["mag_field_of_study"]) == 2)
    assert 0.05 < two / len(records) < 0.25


def test_years_grow_and_last_year_can_serve_as_queries(records: list[dict[str, Any]]) -> None:
    years = Counter(r["year"] for r in records)
    assert min(y for y in years if y is not None) >= FIRST_YEAR
    assert max(y for y in years if y is not None) == LAST_YEAR
    assert 0.06 < years[LAST_YEAR] / len(records) < 0.12
    assert years[LAST_YEAR] > 3 * years[FIRST_YEAR]
    queries = [r for r in records if r["year"] == LAST_YEAR]
    assert np.mean([r["has_outbound_citations"] for r in queries]) > 0.85
    # Enough of them pass the "cited at least 3 times" prefilter.
    assert np.mean([len(r["inbound_citations"]) >= 3 for r in queries]) > 0.35


def test_some_records_fail_each_prefilter_rule(records: list[dict[str, Any]]) -> None:
    n = len(records)
    no_year = sum(r["year"] is None for r in records) / n
    no_title = sum(not r["title"] for r in records) / n
    short_abstract = sum(r["abstract"] is None or len(r["abstract"]) < 30 for r in records) / n
    few_citations = sum(len(r["inbound_citations"]) < 3 for r in records) / n
    assert 0.005 < no_year < 0.05
    assert 0.005 < no_title < 0.05
    assert any(r["title"] == "" for r in records) and any(r["title"] is None for r in records)
    assert 0.08 < short_abstract < 0.25
    assert any(r["abstract"] is not None and len(r["abstract"]) < 30 for r in records)
    assert 0.1 < few_citations < 0.6


# ---- text ----


def test_titles_and_abstracts_have_realistic_lengths(records: list[dict[str, Any]]) -> None:
    titles = [len(r["title"].split()) for r in records if r["title"]]
    abstracts = [
        len(r["abstract"].split()) for r in records if r["abstract"] and len(r["abstract"]) >= 30
    ]
    assert min(titles) >= 6 and max(titles) <= 14
    assert 80 <= np.median(abstracts) <= 200
    assert np.percentile(abstracts, 5) >= 60 and max(abstracts) <= 260
    sample = next(r for r in records if r["title"] and r["abstract"] and len(r["abstract"]) > 30)
    assert sample["title"][0].isupper()
    assert sample["abstract"][0].isupper() and sample["abstract"].endswith(".")
    assert "  " not in sample["abstract"] and " ." not in sample["abstract"]


def test_s2orc_density_matches_s2orc_per_paper(tmp_path: Path) -> None:
    def generate(density: str) -> list[dict[str, Any]]:
        paths = _generate(tmp_path / density, n=20_000, density=synth.DENSITIES[density])
        return [json.loads(line) for line in _read_lines(paths)]

    sparse, dense = generate("s2orc-v2020"), generate("default")
    # S2ORC v2020: 380.5M citations among 81.1M papers, about half the abstracts missing.
    per_paper = np.mean([len(r["outbound_citations"]) for r in sparse])
    assert 4.0 < per_paper < 5.2
    assert np.mean([len(r["outbound_citations"]) for r in dense]) > 2.5 * per_paper
    assert 0.47 < np.mean([r["abstract"] is None for r in sparse]) < 0.55
    assert np.mean([r["abstract"] is None for r in dense]) < 0.2


@pytest.mark.parametrize(
    "kwargs", [{"references": 0.0}, {"null_abstract_rate": -0.1}, {"null_abstract_rate": 1.0}]
)
def test_density_out_of_range_is_a_config_error(kwargs: dict[str, float]) -> None:
    with pytest.raises(ConfigError, match="Density"):
        synth.Density(**kwargs)


def test_cited_papers_share_more_vocabulary_than_random_ones(
    records: list[dict[str, Any]], by_id: dict[str, dict[str, Any]]
) -> None:
    rng = np.random.default_rng(0)
    with_text = [r for r in records if r["abstract"] and len(r["abstract"]) >= 30]
    # Words in more than 5% of the papers are template and generic words, which carry no
    # signal (BM25 gives them a low idf); compare what is left.
    df = Counter(w for r in with_text for w in _words(r))
    common = {w for w, k in df.items() if k > 0.05 * len(with_text)}

    def overlap(a: dict[str, Any], b: dict[str, Any]) -> float:
        wa, wb = _words(a) - common, _words(b) - common
        return len(wa & wb) / max(1, len(wa | wb))

    cited, random = [], []
    for r in with_text[:400]:
        for c in r["outbound_citations"]:
            if by_id[c]["abstract"] and len(by_id[c]["abstract"]) >= 30:
                cited.append(overlap(r, by_id[c]))
                random.append(overlap(r, with_text[int(rng.integers(len(with_text)))]))
    assert len(cited) > 500
    assert np.mean(cited) > 3 * np.mean(random)


# ---- arguments ----


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_papers": 0}, "num_papers"),
        ({"num_shards": 0}, "num_shards"),
        ({"seed": -1}, "seed"),
        ({"first_year": 2020}, "first_year"),
        ({"output_pattern": "out.jsonl.gz"}, "{shard}"),
    ],
)
def test_bad_arguments_raise_config_error(
    tmp_path: Path, kwargs: dict[str, Any], message: str
) -> None:
    args: dict[str, Any] = {
        "num_papers": 10,
        "num_shards": 2,
        "seed": 1,
        "first_year": 1990,
        "last_year": 2019,
        "output_pattern": str(tmp_path / "s-{shard}.jsonl.gz"),
    }
    with pytest.raises(ConfigError, match=re.escape(message)):
        synth.generate_corpus(**{**args, **kwargs}, progress=False)


def test_cli_writes_shards_and_reports_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pattern = str(tmp_path / "demo" / "s2orc-{shard}.jsonl.gz")
    argv = ["--num-papers", "300", "--num-shards", "2", "--seed", "3", "--no-progress"]
    assert main([*argv, "--output-pattern", pattern]) == 0
    assert sorted(p.name for p in (tmp_path / "demo").iterdir()) == [
        "s2orc-00000.jsonl.gz",
        "s2orc-00001.jsonl.gz",
    ]
    bad = [*argv, "--first-year", "2030", "--output-pattern", pattern]
    assert main(bad) == 2
    assert "first_year" in capsys.readouterr().err


def test_cli_takes_the_configs_flags_and_needs_a_seed(capsys: pytest.CaptureFixture[str]) -> None:
    config = load_config(
        {
            "dataset": "t",
            "seed": 5,
            "corpus": {
                "format": "s2orc_v2020",
                "paths": ["s2orc-{shard}.jsonl.gz"],
                "synthetic": {"num_papers": 500, "num_shards": 3},
            },
        }
    )
    args = build_parser().parse_args([*SYNTH.argv(config), "--output-pattern", "x-{shard}"])
    assert (args.num_papers, args.num_shards, args.seed) == (500, 3, 5)
    assert (args.first_year, args.last_year) == (1990, 2019)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--output-pattern", "x-{shard}"])
    assert "--seed" in capsys.readouterr().err
