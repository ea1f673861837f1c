"""Tests for citeval.ingest: parse (per shard) and merge, on small hand-written inputs."""

from __future__ import annotations

import gzip
import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from citeval import ingest
from citeval import memory as budgets
from citeval.config import load_config
from citeval.errors import InputDataError
from citeval.ingest import decode, footprint, formats, merge_staging, parse_shard
from citeval.ingest.cli import build_parser, main
from citeval.ingest.ranges import pid_ranges, range_index, runs_by_range
from citeval.stages import INGEST_MERGE, INGEST_PARSE

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO.parent / "shared" / "data" / "s2orc-sample" / "sample.jsonl"


def paper(pid: str, **fields: Any) -> dict[str, Any]:
    """A v2020 record with every field the parser reads; ``fields`` override."""
    record = {
        "paper_id": pid,
        "title": f"Title {pid}",
        "abstract": f"Abstract of {pid}",
        "year": 2010,
        "mag_field_of_study": ["Biology"],
        "outbound_citations": [],
        "inbound_citations": [],
        "authors": [{"first": "A", "last": "B"}],  # ignored key
    }
    record.update(fields)
    return record


def write_jsonl(path: Path, rows: list[Any], *, compress: bool = False) -> Path:
    """One JSON value per line; a ``str`` row is written verbatim (for malformed lines)."""
    text = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)
    if compress:
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


# The merge's settings as the schema's defaults give them.
MERGE_SETTINGS: dict[str, Any] = {
    "on_duplicate": "error",
    "rows_per_part": 1_000_000,
    "memory_limit": "2GB",
}


def ingest_files(
    tmp_path: Path,
    files: list[tuple[str, Path]],
    *,
    name: str = "corpus",
    max_bad_fraction: float = 0.0,
    **merge_args: Any,
) -> tuple[Path, dict[str, Any]]:
    """Parse each (format, file) and merge them; return the corpus dir and its report."""
    staging = []
    for index, (fmt, path) in enumerate(files):
        out = tmp_path / f"{name}-staging" / f"{index:03d}"
        parse_shard(path, fmt, out, max_bad_fraction=max_bad_fraction)
        staging.append(out)
    corpus = tmp_path / name
    report = merge_staging(staging, corpus, **{**MERGE_SETTINGS, **merge_args})
    assert json.loads((corpus / "ingest_report.json").read_text()) == report
    return corpus, report


def papers_of(corpus: Path) -> dict[str, dict[str, Any]]:
    rows = pq.read_table(corpus / "papers").to_pylist()
    return {r["paper_id"]: r for r in rows}


def edges_of(corpus: Path) -> list[tuple[str, str]]:
    table = pq.read_table(corpus / "citations")
    return list(zip(table["citing_id"].to_pylist(), table["cited_id"].to_pylist(), strict=True))


# --------------------------------------------------------------------------------------


@pytest.mark.shared_data
def test_real_s2orc_sample(tmp_path):
    if not SAMPLE.is_file():
        pytest.skip(f"real S2ORC sample not found at {SAMPLE} (needs ../shared/data)")
    records = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    corpus, report = ingest_files(tmp_path, [("s2orc_v2020", SAMPLE)])
    totals = report["totals"]
    assert totals["records_read"] == totals["papers_written"] == len(records) == 1000
    null_abstracts = sum(r["abstract"] is None for r in records)
    assert totals["missing_abstract"] == null_abstracts
    assert 400 < null_abstracts < 600
    assert totals["missing_year"] == sum(r["year"] is None for r in records)
    mentions = sum(len(r["outbound_citations"]) + len(r["inbound_citations"]) for r in records)
    assert totals["citation_edges_read"] == mentions
    # A random draw of papers: almost no citation resolves inside the sample.
    assert totals["dangling_edges"] > 0.95 * totals["citation_edges_distinct"]
    assert (
        totals["citation_edges_distinct"]
        == totals["self_citations"] + totals["dangling_edges"] + totals["citation_edges_written"]
    )
    papers = pq.read_table(corpus / "papers")
    assert papers.schema == ingest.PAPERS_SCHEMA
    ids = papers["paper_id"].to_pylist()
    assert ids == sorted(ids)
    assert set(ids) == {r["paper_id"] for r in records}
    assert pq.read_table(corpus / "citations").schema == ingest.CITATIONS_SCHEMA


def test_small_corpus_counts_and_tables(tmp_path):
    rows = [
        paper("b", outbound_citations=["a", "c", "zz"], mag_field_of_study=None),
        paper("a", inbound_citations=["b", "c"]),
        paper("c", outbound_citations=["a", "c"]),  # "c" -> "c" is a self-citation
    ]
    corpus, report = ingest_files(
        tmp_path, [("s2orc_v2020", write_jsonl(tmp_path / "p.jsonl", rows))]
    )
    # b->a and c->a arrive twice (outbound of the citer, inbound of the cited): one edge each.
    assert edges_of(corpus) == [("b", "a"), ("b", "c"), ("c", "a")]
    totals = report["totals"]
    assert totals["citation_edges_read"] == 7
    assert totals["citation_edges_distinct"] == 5
    assert totals["self_citations"] == 1
    assert totals["dangling_edges"] == 1  # b -> zz
    assert report["examples"]["dangling_edges"] == [["b", "zz"]]
    papers = papers_of(corpus)
    assert list(papers) == ["a", "b", "c"]
    assert papers["a"]["n_cited_by"] == 2 and papers["a"]["n_references"] == 0
    assert papers["b"]["n_references"] == 2 and papers["b"]["fields"] == []
    assert papers["c"]["n_cited_by"] == 1 and papers["c"]["n_references"] == 1


def test_missing_title_abstract_year_are_null_and_counted(tmp_path):
    rows = [
        {"paper_id": "p1"},
        paper("p2", title=None, abstract=None, year=None),
        paper("p3", title=""),
        paper("p4"),
    ]
    corpus, report = ingest_files(
        tmp_path, [("s2orc_v2020", write_jsonl(tmp_path / "p.jsonl", rows))]
    )
    shard = report["shards"][0]
    assert (shard["missing_title"], shard["missing_abstract"], shard["missing_year"]) == (2, 2, 2)
    totals = report["totals"]
    assert (totals["missing_title"], totals["missing_abstract"], totals["missing_year"]) == (
        2,
        2,
        2,
    )
    assert totals["records_skipped"] == 0
    papers = papers_of(corpus)
    assert papers["p1"] == {
        "paper_id": "p1",
        "title": None,
        "abstract": None,
        "year": None,
        "fields": [],
        "n_cited_by": 0,
        "n_references": 0,
    }
    assert papers["p3"]["title"] == ""  # kept; the prefilter treats it as missing


def test_truncated_gzip_names_the_file(tmp_path):
    rows = [paper(f"p{i}", abstract="x" * 200) for i in range(2000)]
    good = write_jsonl(tmp_path / "good.jsonl.gz", rows, compress=True)
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(InputDataError, match="truncated or corrupt") as info:
        parse_shard(cut, "s2orc_v2020", tmp_path / "staging", max_bad_fraction=0.5)
    assert info.value.path == str(cut)
    assert "last complete line" in str(info.value)
    assert not (tmp_path / "staging").exists()  # nothing half-written


def test_malformed_line_fails_with_file_and_line(tmp_path):
    path = write_jsonl(tmp_path / "p.jsonl", [paper("a"), '{"paper_id": "b", ', paper("c")])
    with pytest.raises(InputDataError) as info:
        parse_shard(path, "s2orc_v2020", tmp_path / "staging", max_bad_fraction=0.0)
    assert (info.value.path, info.value.line) == (str(path), 2)
    assert f"{path}:2" in str(info.value)


def test_malformed_line_is_skipped_within_max_bad_fraction(tmp_path):
    path = write_jsonl(tmp_path / "p.jsonl", [paper("a"), "not json", paper("c"), "[1, 2]"])
    corpus, report = ingest_files(tmp_path, [("s2orc_v2020", path)], max_bad_fraction=0.5)
    skipped = report["shards"][0]["skipped"]
    assert skipped["malformed_json"]["count"] == 1
    assert skipped["malformed_json"]["examples"][0]["line"] == 2
    assert skipped["not_object"]["examples"][0]["line"] == 4
    assert report["totals"]["bad_records"] == 2
    assert report["totals"]["skipped"] == {"malformed_json": 1, "not_object": 1}
    assert sorted(papers_of(corpus)) == ["a", "c"]


def test_invalid_utf8_is_located_or_skipped(tmp_path):
    path = tmp_path / "p.jsonl"
    lines = [json.dumps(paper("a")), json.dumps(paper("b", title="\udcff"), ensure_ascii=False)]
    path.write_bytes("\n".join(lines).encode("utf-8", "surrogateescape") + b"\n")
    with pytest.raises(InputDataError, match="invalid_utf8") as info:
        parse_shard(path, "s2orc_v2020", tmp_path / "staging", max_bad_fraction=0.0)
    assert (info.value.path, info.value.line) == (str(path), 2)
    report = parse_shard(path, "s2orc_v2020", tmp_path / "staging", max_bad_fraction=0.5)
    assert report["skipped"]["invalid_utf8"]["count"] == 1
    assert report["records_written"] == 1


def test_invalid_utf8_in_a_citation_list_is_located(tmp_path):
    # A bad id inside a list is located like a bad value of any other field.
    path = tmp_path / "p.jsonl"
    bad = json.dumps(paper("b", outbound_citations=["a\udcff"]), ensure_ascii=False)
    path.write_bytes(
        (json.dumps(paper("a")) + "\n" + bad + "\n").encode("utf-8", "surrogateescape")
    )
    with pytest.raises(InputDataError, match="invalid_utf8") as info:
        parse_shard(path, "s2orc_v2020", tmp_path / "staging", max_bad_fraction=0.0)
    assert info.value.line == 2


def test_whole_chunk_path_is_taken_and_stages_what_line_by_line_stages(tmp_path, monkeypatch):
    # The whole-chunk path against the line-by-line path on the same records.
    rows = [
        paper(f"p{i}", outbound_citations=[f"p{j}" for j in range(i)], inbound_citations=None)
        for i in range(30)
    ]
    rows[3] = paper("p3", outbound_citations=None, mag_field_of_study=None, abstract=None)
    path = write_jsonl(tmp_path / "p.jsonl", rows)
    taken = []
    whole = decode.decode_whole_chunk
    monkeypatch.setattr(
        decode, "decode_whole_chunk", lambda *args: taken.append(whole(*args)) or taken[-1]
    )
    fast_report = parse_shard(path, "s2orc_v2020", tmp_path / "fast", max_bad_fraction=0.0)
    assert len(taken) == 1 and len(taken[0]) == 30
    monkeypatch.setattr(decode, "decode_whole_chunk", lambda *args: None)
    exact_report = parse_shard(path, "s2orc_v2020", tmp_path / "exact", max_bad_fraction=0.0)
    staged = pq.read_table(tmp_path / "fast" / "papers")
    assert staged.equals(pq.read_table(tmp_path / "exact" / "papers"))
    assert staged.column("outbound_citations")[3].as_py() is None
    assert {k: v for k, v in fast_report.items() if k != "input"} == {
        k: v for k, v in exact_report.items() if k != "input"
    }


def test_ids_with_escapes_spaces_and_commas_are_kept(tmp_path):
    odd = ['q"1', "q 2", "q,3", "q\\4"]
    rows = [paper("p", outbound_citations=odd, inbound_citations=None)]
    rows += [paper(pid, inbound_citations=["p"]) for pid in odd]
    corpus, report = ingest_files(
        tmp_path, [("s2orc_v2020", write_jsonl(tmp_path / "p.jsonl", rows))]
    )
    assert sorted(edges_of(corpus)) == sorted(("p", pid) for pid in odd)
    assert report["shards"][0]["edges_written"] == 8  # each edge is listed at both ends


def test_too_many_bad_records_fail_the_file(tmp_path):
    path = write_jsonl(tmp_path / "p.jsonl", [paper("a"), "oops", "{", paper("d")])
    with pytest.raises(InputDataError, match=r"2 of 4 records are bad") as info:
        parse_shard(path, "s2orc_v2020", tmp_path / "staging", max_bad_fraction=0.25)
    assert info.value.path == str(path)


def test_blank_lines_are_counted_and_keep_line_numbers(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps(paper("a")) + "\n\n   \n" + json.dumps(paper("b", year="x")) + "\n")
    with pytest.raises(InputDataError) as info:
        parse_shard(path, "s2orc_v2020", tmp_path / "staging", max_bad_fraction=0.0)
    assert info.value.line == 4
    path.write_text(json.dumps(paper("a")) + "\n\n" + json.dumps(paper("b")) + "\n\n")
    report = parse_shard(path, "s2orc_v2020", tmp_path / "staging", max_bad_fraction=0.0)
    assert (report["blank_lines"], report["records_read"], report["records_written"]) == (2, 2, 2)


def test_missing_paper_id_names_the_field(tmp_path):
    path = write_jsonl(tmp_path / "p.jsonl", [paper("a"), {"title": "no id"}])
    with pytest.raises(InputDataError, match="missing_paper_id") as info:
        parse_shard(path, "s2orc_v2020", tmp_path / "staging", max_bad_fraction=0.0)
    assert (info.value.line, info.value.field) == (2, "paper_id")


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ({"year": "2019"}, "year"),
        ({"year": "2019x"}, "year"),
        ({"year": 2019.5}, "year"),
        ({"title": 5}, "title"),
        ({"outbound_citations": "abc"}, "outbound_citations"),
        ({"inbound_citations": [1]}, "inbound_citations[0]"),
        ({"paper_id": 12}, "paper_id"),
        ({"paper_id": ""}, "paper_id"),
        ({"year": 2**40}, "year"),
    ],
)
def test_wrong_types_name_the_field(tmp_path, override, field):
    path = write_jsonl(tmp_path / "p.jsonl", [paper("a"), paper("b", **override)])
    with pytest.raises(InputDataError) as info:
        parse_shard(path, "s2orc_v2020", tmp_path / "staging", max_bad_fraction=0.0)
    assert (info.value.path, info.value.line, info.value.field) == (str(path), 2, field)


def test_duplicate_paper_id_names_both_locations(tmp_path):
    one = write_jsonl(tmp_path / "one.jsonl", [paper("a"), paper("dup", title="first")])
    two = write_jsonl(
        tmp_path / "two.jsonl",
        [paper("b"), paper("c"), paper("dup", title="second", outbound_citations=["a"])],
    )
    files = [("s2orc_v2020", one), ("s2orc_v2020", two)]
    with pytest.raises(InputDataError, match="duplicate") as info:
        ingest_files(tmp_path, files)
    assert (info.value.path, info.value.line, info.value.field) == (str(one), 2, "paper_id")
    assert f"{two}:3" in str(info.value)
    assert not (tmp_path / "corpus").exists()

    corpus, report = ingest_files(tmp_path, files, name="kept", on_duplicate="keep_first")
    assert report["totals"]["duplicate_papers"] == 1
    assert report["totals"]["papers_written"] == 4
    assert report["examples"]["duplicate_papers"] == [
        {"paper_id": "dup", "locations": [f"{one}:2", f"{two}:3"]}
    ]
    assert papers_of(corpus)["dup"]["title"] == "first"
    # The copies describe one paper: the dropped copy's citations still count.
    assert edges_of(corpus) == [("dup", "a")]


def test_duplicates_across_staging_parts_keep_input_order(tmp_path, monkeypatch):
    # Staging parts of two rows: merge reads the parts of every shard in one scan, and the
    # first copy must still be the first by (shard, line), wherever the parts fall.
    monkeypatch.setattr("citeval.ingest.lines.CHUNK_BYTES", 97)  # a line per chunk, so per batch
    one = write_jsonl(
        tmp_path / "one.jsonl",
        [paper("a"), paper("x", title="first"), paper("b"), paper("c"), paper("x", title="2nd")],
    )
    two = write_jsonl(tmp_path / "two.jsonl", [paper("x", title="3rd"), paper("d")])
    staging = []
    for index, path in enumerate((one, two)):
        staging.append(tmp_path / "staging" / str(index))
        parse_shard(path, "s2orc_v2020", staging[-1], rows_per_part=2, max_bad_fraction=0.0)
    assert len(list((staging[0] / "papers").glob("part-*.parquet"))) == 3
    keep_first = {**MERGE_SETTINGS, "on_duplicate": "keep_first"}
    report = merge_staging(staging, tmp_path / "corpus", **keep_first)
    assert report["examples"]["duplicate_papers"] == [
        {"paper_id": "x", "locations": [f"{one}:2", f"{one}:5", f"{two}:1"]}
    ]
    assert papers_of(tmp_path / "corpus")["x"]["title"] == "first"
    with pytest.raises(InputDataError, match=f"again at {one}:2") as info:
        merge_staging(staging[::-1], tmp_path / "reversed", **MERGE_SETTINGS)  # order decides
    assert (info.value.path, info.value.line) == (str(two), 1)


def test_chunk_boundaries_do_not_change_the_result(tmp_path, monkeypatch):
    rows = [
        paper(f"p{i:03d}", outbound_citations=[f"p{j:03d}" for j in range(i)]) for i in range(40)
    ]
    path = write_jsonl(tmp_path / "p.jsonl.gz", [*rows[:20], "", *rows[20:]], compress=True)
    reference, _ = ingest_files(tmp_path, [("s2orc_v2020", path)], name="big")
    monkeypatch.setattr("citeval.ingest.lines.CHUNK_BYTES", 97)  # splits lines across reads
    small, report = ingest_files(tmp_path, [("s2orc_v2020", path)], name="small")
    assert report["totals"]["blank_lines"] == 1
    assert report["totals"]["citation_edges_written"] == 40 * 39 // 2
    for table in ("papers", "citations"):
        assert pq.read_table(small / table).equals(pq.read_table(reference / table))


def test_output_is_byte_identical_and_split_into_parts(tmp_path):
    rows = [paper(f"p{i}", outbound_citations=[f"p{(i * 7) % 10}"]) for i in range(10)]
    path = write_jsonl(tmp_path / "p.jsonl", rows)
    first, report = ingest_files(tmp_path, [("s2orc_v2020", path)], name="one", rows_per_part=3)
    second, _ = ingest_files(tmp_path, [("s2orc_v2020", path)], name="two", rows_per_part=3)
    assert report["parts"] == {"papers": 4, "citations": 3}
    names = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert names == sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
    assert len(names) == 8
    for name in names:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    assert [
        pq.read_metadata(first / "papers" / f"part-0000{i}.parquet").num_rows for i in range(4)
    ] == [3, 3, 3, 1]


# One pid per range (tens of ranges): papers read from the staging range by range, or,
# past MAX_RANGES, written out once by range first.
RANGE_PATHS = pytest.mark.parametrize(
    ("max_ranges", "partitioned"), [(64, False), (4, True)], ids=["rescans", "partitioned"]
)


@RANGE_PATHS
def test_pid_ranges_do_not_change_the_output(
    tmp_path, monkeypatch, caplog, max_ranges, partitioned
):
    rows = [
        paper(f"p{i:02d}", outbound_citations=[f"p{(i * 7) % 30:02d}", f"p{(i * 11) % 30:02d}"])
        for i in range(30)
    ]
    rows[17]["outbound_citations"] = []  # a citing range without edge rows
    files = [("s2orc_v2020", write_jsonl(tmp_path / "p.jsonl", [*rows, rows[3]]))]
    whole, _ = ingest_files(tmp_path, files, name="whole", on_duplicate="keep_first")
    monkeypatch.setattr("citeval.ingest.ranges.RANGE_MEMORY_SHARE", 1e-9)  # one pid per range
    monkeypatch.setattr("citeval.ingest.papers.MAX_RANGES", max_ranges)
    with caplog.at_level(logging.INFO, logger="citeval.ingest"):
        ranged, report = ingest_files(tmp_path, files, name="ranged", on_duplicate="keep_first")
    assert ("wrote the papers out in 30 pid ranges" in caplog.text) == partitioned
    assert "30 citing pid ranges" in caplog.text
    assert report["totals"]["duplicate_papers"] == 1
    names = sorted(p.relative_to(whole) for p in whole.rglob("*.parquet"))
    assert names == sorted(p.relative_to(ranged) for p in ranged.rglob("*.parquet"))
    for name in names:
        assert (whole / name).read_bytes() == (ranged / name).read_bytes(), name


@RANGE_PATHS
def test_threads_and_pid_ranges_do_not_change_s2ag_output(
    tmp_path, monkeypatch, caplog, max_ranges, partitioned
):
    """One or two DuckDB threads, over one or many pid ranges, give the same bytes;
    S2AG abstracts are attached inside each range."""
    papers = [
        {"corpusid": i, "title": f"T{i}", "year": 2000 + i % 20, "fieldsofstudy": ["Physics"]}
        for i in range(40)
    ]
    files = [
        ("s2ag-papers", write_jsonl(tmp_path / "papers.jsonl", papers)),
        (
            "s2ag-abstracts",
            write_jsonl(
                tmp_path / "abstracts.jsonl",
                [{"corpusid": i, "abstract": f"A{i}"} for i in range(0, 45, 3)],
            ),
        ),
        (
            "s2ag-citations",
            write_jsonl(
                tmp_path / "citations.jsonl",
                [
                    {"citingcorpusid": i, "citedcorpusid": (i * 7 + 3) % 40}
                    for i in range(40)
                    for _ in range(2)
                ],
            ),
        ),
    ]
    whole, _ = ingest_files(tmp_path, files, name="whole", rows_per_part=7)
    monkeypatch.setattr("citeval.ingest.ranges.RANGE_MEMORY_SHARE", 1e-9)  # one pid per range
    monkeypatch.setattr("citeval.ingest.papers.MAX_RANGES", max_ranges)
    one, _ = ingest_files(tmp_path, files, name="one", rows_per_part=7, threads=1)
    with caplog.at_level(logging.INFO, logger="citeval.ingest"):
        two, report = ingest_files(tmp_path, files, name="two", rows_per_part=7, threads=2)
    assert ("wrote the papers out in 40 pid ranges" in caplog.text) == partitioned
    assert "40 citing pid ranges" in caplog.text
    assert report["parts"]["papers"] == 6
    names = sorted(p.relative_to(one) for p in one.rglob("*.parquet"))
    for other in (two, whole):
        assert names == sorted(p.relative_to(other) for p in other.rglob("*.parquet"))
        for name in names:
            assert (one / name).read_bytes() == (other / name).read_bytes(), name
    rows = papers_of(two)
    assert [rows[str(i)]["abstract"] for i in (0, 1, 39)] == ["A0", None, "A39"]
    # Counted range by range while the citations are written: check against the table.
    edges = edges_of(two)
    assert len(edges) == len(set(edges)) == report["totals"]["citation_edges_written"] == 40
    for paper_id, row in rows.items():
        assert row["n_references"] == sum(citing == paper_id for citing, _ in edges)
        assert row["n_cited_by"] == sum(cited == paper_id for _, cited in edges)
    assert report["totals"]["citation_edges_read"] == 80
    assert report["totals"]["abstract_for_unknown_paper"] == 1  # corpus id 42


def test_pid_ranges_cover_every_pid_once():
    assert pid_ranges(0, 10**9, 100) == [(0, 0)]
    assert pid_ranges(10, 1, 100) == [(0, 10)]
    ranges = pid_ranges(10, 100, 100)  # 25 of the 100 bytes per range
    assert ranges == [(0, 3), (3, 6), (6, 9), (9, 10)]
    assert len(pid_ranges(100, 10**9, 100)) == 100
    assert [lo for lo, _ in ranges[1:]] == [hi for _, hi in ranges[:-1]]
    assert (ranges[0][0], ranges[-1][1]) == (0, 10)


def write_v2020_parquet(path: Path, rows: list[dict[str, Any]], drop: str | None = None) -> Path:
    columns = list(formats.PARQUET_COLUMNS)
    table = pa.table(
        {
            "paper_id": pa.array([r["paper_id"] for r in rows], pa.string()),
            "title": pa.array([r["title"] for r in rows], pa.large_string()),
            "abstract": pa.array([r["abstract"] for r in rows], pa.string()),
            "year": pa.array([r["year"] for r in rows], pa.int64()),
            **{
                c: pa.array([r[c] for r in rows], pa.list_(pa.string()))
                for c in columns
                if c.endswith(("_study", "_citations"))
            },
        }
    )
    if drop:
        table = table.drop_columns([drop])
    pq.write_table(table, path)
    return path


def test_parquet_input(tmp_path):
    rows = [
        paper("a", outbound_citations=["b"]),
        paper("b", mag_field_of_study=None, year=None),
        paper("c", inbound_citations=["a"]),
    ]
    path = write_v2020_parquet(tmp_path / "p.parquet", rows)
    corpus, report = ingest_files(tmp_path, [("parquet", path)])
    assert edges_of(corpus) == [("a", "b"), ("a", "c")]
    papers = papers_of(corpus)
    assert papers["b"]["fields"] == [] and papers["b"]["year"] is None
    assert report["totals"]["missing_year"] == 1


def test_parquet_missing_or_mistyped_column(tmp_path):
    rows = [paper("a")]
    path = write_v2020_parquet(tmp_path / "p.parquet", rows, drop="inbound_citations")
    with pytest.raises(InputDataError, match="lacks the column 'inbound_citations'") as info:
        parse_shard(path, "parquet", tmp_path / "staging", max_bad_fraction=0.0)
    assert (info.value.path, info.value.field) == (str(path), "inbound_citations")
    table = pq.read_table(write_v2020_parquet(tmp_path / "q.parquet", rows))
    table = table.set_column(3, "year", pa.array(["2010"]))
    pq.write_table(table, tmp_path / "q.parquet")
    with pytest.raises(InputDataError, match="'year' has type string") as info:
        parse_shard(tmp_path / "q.parquet", "parquet", tmp_path / "staging", max_bad_fraction=0.0)
    assert info.value.field == "year"


def test_parquet_bad_rows_are_located(tmp_path):
    rows = [paper("a"), paper(None), paper("c", outbound_citations=["a", None])]
    path = write_v2020_parquet(tmp_path / "p.parquet", rows)
    with pytest.raises(InputDataError) as info:
        parse_shard(path, "parquet", tmp_path / "staging", max_bad_fraction=0.0)
    assert (info.value.line, info.value.field) == (2, "paper_id")
    report = parse_shard(path, "parquet", tmp_path / "staging", max_bad_fraction=0.7)
    assert report["records_written"] == 1
    assert report["skipped"]["wrong_type"]["examples"][0]["line"] == 3


def test_s2ag_three_kinds_end_to_end(tmp_path):
    papers_file = write_jsonl(
        tmp_path / "papers.jsonl",
        [
            {
                "corpusid": 1,
                "title": "One",
                "year": 2019,
                "externalids": {"DOI": "x"},
                "s2fieldsofstudy": [
                    {"category": "Medicine", "source": "external"},
                    {"category": "Biology", "source": "s2-fos-model"},
                    {"category": "Medicine", "source": "s2-fos-model"},
                ],
            },
            {"corpusid": 2, "title": "Two", "year": None, "fieldsofstudy": ["Physics"]},
            {"corpusid": 10, "title": "Ten", "year": 2001, "s2fieldsofstudy": None},
        ],
    )
    abstracts_file = write_jsonl(
        tmp_path / "abstracts.jsonl",
        [
            {"corpusid": 1, "abstract": "Abstract one", "openaccessinfo": {}},
            {"corpusid": 2, "abstract": None},
            {"corpusid": 99, "abstract": "nobody's"},
        ],
    )
    citations_file = write_jsonl(
        tmp_path / "citations.jsonl",
        [
            {"citationid": 1, "citingcorpusid": 1, "citedcorpusid": 2, "isinfluential": False},
            {"citationid": 2, "citingcorpusid": 1, "citedcorpusid": None},
            {"citationid": 3, "citingcorpusid": 10, "citedcorpusid": 1},
            {"citationid": 4, "citingcorpusid": 10, "citedcorpusid": 77},
            {"citationid": 5, "citingcorpusid": 1, "citedcorpusid": 2},
        ],
    )
    corpus, report = ingest_files(
        tmp_path,
        [
            ("s2ag-papers", papers_file),
            ("s2ag-abstracts", abstracts_file),
            ("s2ag-citations", citations_file),
        ],
    )
    papers = papers_of(corpus)
    assert list(papers) == ["1", "10", "2"]  # string order
    assert papers["1"]["fields"] == ["Medicine", "Biology"]
    assert papers["2"]["fields"] == ["Physics"]
    assert papers["10"]["fields"] == []
    assert papers["1"]["abstract"] == "Abstract one"
    assert papers["2"]["abstract"] is None
    assert papers["1"]["n_cited_by"] == 1 and papers["1"]["n_references"] == 1
    assert edges_of(corpus) == [("1", "2"), ("10", "1")]
    totals = report["totals"]
    assert totals["abstract_for_unknown_paper"] == 1
    assert totals["skipped"] == {"null_cited": 1}
    assert totals["bad_records"] == 0
    assert totals["dangling_edges"] == 1
    assert totals["citation_edges_read"] == 4
    assert totals["missing_abstract"] == 2  # papers 2 and 10, after attaching abstracts


@pytest.mark.parametrize(
    ("row", "field"),
    [
        ({"citingcorpusid": "1", "citedcorpusid": 2}, "citingcorpusid"),
        ({"citingcorpusid": 1, "citedcorpusid": 2**63}, "citedcorpusid"),  # past int64
        ({"citingcorpusid": -1, "citedcorpusid": 2}, "citingcorpusid"),
    ],
)
def test_s2ag_bad_corpusid(tmp_path, row, field):
    path = write_jsonl(tmp_path / "c.jsonl", [{"citingcorpusid": 5, "citedcorpusid": 6}, row])
    with pytest.raises(InputDataError) as info:
        parse_shard(path, "s2ag-citations", tmp_path / "staging", max_bad_fraction=0.0)
    assert (info.value.line, info.value.field) == (2, field)


def test_s2ag_null_cited_rows_are_counted_across_chunks(tmp_path, monkeypatch):
    rows = [
        {"citingcorpusid": i, "citedcorpusid": None if i % 3 == 0 else i + 1} for i in range(60)
    ]
    path = write_jsonl(tmp_path / "c.jsonl", rows)
    monkeypatch.setattr("citeval.ingest.lines.CHUNK_BYTES", 200)  # a few lines per chunk
    report = parse_shard(path, "s2ag-citations", tmp_path / "staging", max_bad_fraction=0.0)
    skipped = report["skipped"]["null_cited"]
    assert skipped["count"] == 20
    assert [e["line"] for e in skipped["examples"]] == [1, 4, 7, 10, 13]
    assert report["bad_records"] == 0
    edges = pq.read_table(tmp_path / "staging" / "edges")
    assert edges.num_rows == report["records_written"] == 40
    assert edges.slice(0, 2).to_pylist() == [
        {"citing_id": "1", "cited_id": "2"},
        {"citing_id": "2", "cited_id": "3"},
    ]


def test_merge_cli_rejects_a_count_below_one(tmp_path, capsys):
    argv = ["merge", "--staging", str(tmp_path), "--output-dir", str(tmp_path / "c")]
    with pytest.raises(SystemExit) as info:
        main([*argv, "--threads", "0"])
    assert info.value.code == 2
    assert "argument --threads: must be >= 1, got 0" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:  # the schema's minimum, checked by argparse
        main([*argv, "--rows-per-part", "0"])
    assert info.value.code == 2
    assert "argument --rows-per-part: must be >= 1000, got 0" in capsys.readouterr().err


def test_cli_defaults_are_the_schemas_and_the_config_flags_parse():
    wiring = {
        "parse": ["parse", "--format", "s2orc_v2020", "--input", "i", "--output-dir", "o"],
        "merge": ["merge", "--staging", "s1", "s2", "--output-dir", "o"],
    }
    defaults = build_parser().parse_args(wiring["merge"])
    assert {key: getattr(defaults, key) for key in MERGE_SETTINGS} == MERGE_SETTINGS
    assert build_parser().parse_args(wiring["parse"]).max_bad_fraction == 0.0
    config = load_config(
        {
            "dataset": "t",
            "seed": 1,
            "corpus": {"format": "s2orc_v2020", "paths": ["s2orc-*.jsonl.gz"]},
            "ingest": {"max_bad_fraction": 0.1, "on_duplicate": "keep_first"},
        }
    )
    parse = build_parser().parse_args([*wiring["parse"], *INGEST_PARSE.argv(config)])
    assert parse.max_bad_fraction == 0.1
    merge = build_parser().parse_args([*wiring["merge"], *INGEST_MERGE.argv(config)])
    assert (merge.on_duplicate, merge.rows_per_part, merge.memory_limit) == (
        "keep_first",
        1_000_000,
        "2GB",
    )


def test_cli_reports_errors_in_one_line(tmp_path, capsys):
    path = write_jsonl(tmp_path / "p.jsonl", [paper("a", year="2019")])
    code = main(
        [
            "parse",
            "--format",
            "s2orc_v2020",
            "--input",
            str(path),
            "--output-dir",
            str(tmp_path / "s"),
        ]
    )
    assert code == 2
    assert f"{path}:1 (field 'year')" in capsys.readouterr().err
    path = write_jsonl(tmp_path / "p.jsonl", [paper("a")])
    staging = tmp_path / "s"
    assert (
        main(
            ["parse", "--format", "s2orc_v2020", "--input", str(path), "--output-dir", str(staging)]
        )
        == 0
    )
    assert (
        main(
            [
                "merge",
                "--staging",
                str(staging),
                "--output-dir",
                str(tmp_path / "c"),
                "--memory-limit",
                "500MB",
                "--threads",
                "1",
            ]
        )
        == 0
    )
    assert (tmp_path / "c" / "papers" / "part-00000.parquet").is_file()
    assert (
        main(["merge", "--staging", str(tmp_path / "nope"), "--output-dir", str(tmp_path / "d")])
        == 2
    )


def test_merge_refuses_staging_of_another_format(tmp_path):
    path = write_jsonl(tmp_path / "p.jsonl", [paper("a")])
    staging = tmp_path / "staging"
    parse_shard(path, "s2orc_v2020", staging, max_bad_fraction=0.0)
    report = json.loads((staging / "shard.json").read_text())
    del report["staging_version"]  # as written before the version existed
    (staging / "shard.json").write_text(json.dumps(report))
    with pytest.raises(InputDataError, match=r"staging format 1 .* parse this shard again"):
        merge_staging([staging], tmp_path / "corpus", **MERGE_SETTINGS)
    assert not (tmp_path / "corpus").exists()


def test_memory_limit_leaves_headroom_for_arrow():
    assert budgets.duckdb_memory_bytes("2GB") == int(2e9 * 0.75 / 2**20) * 2**20
    assert budgets.duckdb_memory_bytes("1 GiB") == 768 * 2**20
    with pytest.raises(ValueError, match="not like"):
        budgets.duckdb_memory_bytes("lots")
    with pytest.raises(SystemExit):
        main(["merge", "--staging", "x", "--output-dir", "y", "--memory-limit", "2 bananas"])


def test_running_out_of_memory_says_which_limit_to_raise(tmp_path, monkeypatch, capsys):
    rows = [paper(f"p{i:04d}", outbound_citations=[f"p{(i * 7) % 3000:04d}"]) for i in range(3000)]
    path = write_jsonl(tmp_path / "p.jsonl", rows)
    staging = tmp_path / "staging"
    parse_shard(path, "s2orc_v2020", staging, max_bad_fraction=0.0)
    monkeypatch.setattr(budgets, "DUCKDB_MIN_MEMORY", 2**20)  # lets DuckDB have 1 MiB
    argv = ["merge", "--staging", str(staging), "--output-dir", str(tmp_path / "corpus")]
    assert main([*argv, "--memory-limit", "1.4MB"]) == 2
    error = capsys.readouterr().err
    assert "merge ran out of memory under --memory-limit 1.4MB" in error
    assert "jobs.memory_limit in the config" in error
    assert "Traceback" not in error
    assert not (tmp_path / "corpus").exists()
    # The suggestion grows with the papers and always exceeds the limit that failed.
    assert footprint.out_of_memory_message("2GB", 5_000_000).endswith("to about 2.5GB")
    assert footprint.out_of_memory_message("1GB", 80_000_000).endswith("to about 4.5GB")


def test_a_limit_below_what_merge_holds_is_warned_about(tmp_path, caplog):
    rows = [paper(f"p{i}") for i in range(20)]
    files = [("s2orc_v2020", write_jsonl(tmp_path / "p.jsonl", rows))]
    with caplog.at_level(logging.WARNING, logger="citeval.ingest"):
        ingest_files(tmp_path, files, name="small", memory_limit="100MB")
    assert "20 papers need about 0.60 GB whatever the limit" in caplog.text
    assert "exceed --memory-limit 100MB" in caplog.text
    assert "jobs.memory_limit to about 1GB" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="citeval.ingest"):
        ingest_files(tmp_path, files, name="enough", memory_limit="1GB")
    assert "exceed" not in caplog.text
    assert footprint.merge_memory_bytes(10_000_000) > 1e9  # 10M papers peaked at 1.10 GB


def test_empty_input_gives_an_empty_corpus(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    corpus, report = ingest_files(tmp_path, [("s2orc_v2020", path)])
    assert report["totals"]["papers_written"] == 0
    assert pq.read_table(corpus / "papers").schema == ingest.PAPERS_SCHEMA
    assert pq.read_table(corpus / "citations").num_rows == 0


def test_range_index_finds_the_range_of_each_id():
    firsts = pa.array(["b", "d", "d2", "x"])
    ids = pa.array(["b", "c", "d", "d1", "d2", "e", "x", "zz", "d10"])
    assert range_index(ids, firsts).tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 1]
    assert range_index(pa.array(["b"]), pa.array(["b"])).tolist() == [0]


def test_runs_by_range_groups_rows_in_input_order():
    order, runs = runs_by_range(np.array([3, 1, 3, 0, 1], dtype=np.int32))
    assert order.tolist() == [3, 1, 4, 0, 2]
    assert runs == [(0, 0, 1), (1, 1, 3), (3, 3, 5)]
    assert runs_by_range(np.array([], dtype=np.int32))[1] == []
