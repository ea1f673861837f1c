"""citeval.contexts: local citation contexts, extracted per file and merged on a corpus.

Expected windows are worked out by hand in the comments (offsets count from 0).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from citeval.config import schema_default
from citeval.contexts import CONTEXTS_SCHEMA, RAW_SCHEMA, extract_contexts, merge_contexts
from citeval.contexts.cli import main
from citeval.contexts.window import (
    Span,
    chars_window,
    group_spans,
    sentence_bounds,
    sentences_window,
)
from citeval.errors import InputDataError

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
EXAMPLE_PAPER = SHARED / "s2orc-sample" / "example_paper.json"
ACM_CR_CONTEXTS = SHARED / "acm-cr" / "contexts.jsonl"


# --------------------------------------------------------------------------------------
# Builders


def span(text: str, printed: str, ref_id: str | None, after: int = 0) -> dict:
    start = text.index(printed, after)
    return {"start": start, "end": start + len(printed), "text": printed, "ref_id": ref_id}


# Paragraph 0 of p1; offsets: "[1]" 0-3, "(Hare, 1980;" 32-44, "1990)" 45-50, "[3]" 72-75.
T0 = "[1] Cats purr loudly. Dogs bark (Hare, 1980; 1990) at night. Birds sing [3]"
# Paragraph 1 of p1; offsets: "[4]" 9-12, "[5," 29-32, "6]" 33-35; length 42.
T1 = "We use X [4] and the toolkit [5, 6] daily."


def paper_p1() -> dict:
    return {
        "paper_id": "p1",
        "body_text": [
            {
                "section": "Introduction",
                "text": T0,
                "cite_spans": [
                    span(T0, "[1]", "BIBREF0"),
                    span(T0, "(Hare, 1980;", "BIBREF1"),
                    span(T0, "1990)", "BIBREF2"),
                    span(T0, "[3]", "BIBREF3"),
                ],
                "ref_spans": [],
            },
            {
                "section": "Method",
                "text": T1,
                "cite_spans": [
                    span(T1, "[4]", None),
                    span(T1, "[5,", "BIBREF4"),
                    span(T1, "6]", "BIBREF5"),
                ],
                "ref_spans": [],
            },
        ],
        "bib_entries": {
            "BIBREF0": {"title": "a", "link": "c1"},
            "BIBREF1": {"title": "b", "link": "c2"},
            "BIBREF2": {"title": "c", "link": "c3"},
            "BIBREF3": {"title": "d", "link": None},
            "BIBREF4": {"title": "e", "link": "zz"},
            "BIBREF5": {"title": "f", "link": "c1"},
        },
    }


def small_paper(paper_id: str, link: str | None) -> dict:
    text = "See [1]."
    return {
        "paper_id": paper_id,
        "body_text": [
            {"section": None, "text": text, "cite_spans": [span(text, "[1]", "BIBREF0")]}
        ],
        "bib_entries": {"BIBREF0": {"title": "x", "link": link}},
    }


def write_jsonl(path: Path, records: list) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# The stage's settings as the schema defaults them (the library functions take them all).
SETTINGS = {
    "window_unit": schema_default("local.window.unit"),
    "window_chars": schema_default("local.window.chars"),
    "window_sentences": schema_default("local.window.sentences"),
    "marker_token": schema_default("local.marker_token"),
    "max_bad_fraction": schema_default("ingest.max_bad_fraction"),
}


def extract(tmp_path: Path, name: str, records: list, **settings) -> tuple[list[dict], dict]:
    source = write_jsonl(tmp_path / f"{name}.jsonl", records)
    settings = {**SETTINGS, "fmt": "s2orc_v2020", "window_chars": 40, **settings}
    report = extract_contexts(
        source, tmp_path / f"{name}.parquet", tmp_path / f"{name}.json", **settings
    )
    table = pq.read_table(tmp_path / f"{name}.parquet")
    assert table.schema.equals(RAW_SCHEMA)
    return table.to_pylist(), report


# --------------------------------------------------------------------------------------
# Windows

# "alpha beta gamma [1] delta epsilon zeta": "[1]" is 17-20, spaces at 5, 10, 16, 20, 26, 34.
LINE = "alpha beta gamma [1] delta epsilon zeta"


def test_chars_window_drops_words_cut_at_either_boundary():
    # 16 chars: before = LINE[9:17] "a gamma " ("beta" cut: drop "a"), after = LINE[20:28]
    # " delta e" ("epsilon" cut: drop "e").
    window = chars_window(LINE, 17, 20, 16, "CIT")
    assert (window.text, window.marker_start, window.marker_end) == ("gamma CIT delta", 6, 9)
    # 12 chars: LINE[11:17] "gamma " and LINE[20:26] " delta" end on spaces: nothing cut.
    assert chars_window(LINE, 17, 20, 12, "CIT").text == "gamma CIT delta"
    # 13 chars: 6 before as above, 7 after " delta " (LINE[27] is "e" but the window ends
    # in a space, so no word is cut).
    assert chars_window(LINE, 17, 20, 13, "CIT").text == "gamma CIT delta"


def test_chars_window_marker_at_paragraph_start_and_end():
    start = chars_window("[1] Cats purr.", 0, 3, 40, "CIT")
    assert (start.text, start.marker_start, start.marker_end) == ("CIT Cats purr.", 0, 3)
    end = chars_window("Dogs bark [2]", 10, 13, 40, "CIT")
    assert (end.text, end.marker_start, end.marker_end) == ("Dogs bark CIT", 10, 13)
    alone = chars_window("[2]", 0, 3, 40, "[REF]")
    assert (alone.text, alone.marker_start, alone.marker_end) == ("[REF]", 0, 5)


def test_group_spans_merges_adjacent_spans_only():
    text = "as shown (A, 1990; B, 1991) and [3] and [4][5]."
    spans = [
        Span(9, 18, ("a",)),  # "(A, 1990;"
        Span(19, 27, ("b", "a")),  # "B, 1991)"
        Span(32, 35, ()),  # "[3]"
        Span(43, 46, ("e",)),  # "[5]", given out of order
        Span(40, 43, ("d",)),  # "[4]"
    ]
    markers = [(m.start, m.end, m.cited_ids) for m in group_spans(text, spans)]
    assert markers == [(9, 27, ("a", "b")), (32, 35, ()), (40, 46, ("d", "e"))]


def test_sentence_splitter_and_window():
    text = "Smith et al. showed it. See Fig. 2 for J. Doe's data [1]. Third one! 4 is last."
    starts = sentence_bounds(text)
    assert [text[a:b].strip() for a, b in zip(starts, [*starts[1:], len(text)], strict=True)] == [
        "Smith et al. showed it.",
        "See Fig. 2 for J. Doe's data [1].",
        "Third one!",
        "4 is last.",
    ]
    marker = text.index("[1]")
    zero = sentences_window(text, marker, marker + 3, 0, "CIT", starts)
    assert (zero.text, zero.marker_start) == ("See Fig. 2 for J. Doe's data CIT .", 29)
    one = sentences_window(text, marker, marker + 3, 1, "CIT", starts)
    assert one.text == "Smith et al. showed it. See Fig. 2 for J. Doe's data CIT . Third one!"
    assert one.text[one.marker_start : one.marker_end] == "CIT"


# --------------------------------------------------------------------------------------
# extract: S2ORC v2020


def test_extract_v2020_markers_groups_and_drops(tmp_path):
    rows, report = extract(tmp_path, "v2020", [paper_p1()])
    assert [r["context_id"] for r in rows] == ["p1:0", "p1:1", "p1:4"]
    by_id = {r["context_id"]: r for r in rows}
    # "[1]" opens the paragraph: after = T0[3:23] " Cats purr loudly. D", "Dogs" cut.
    assert by_id["p1:0"] == {
        "context_id": "p1:0",
        "citing_id": "p1",
        "granularity": "chars-40",
        "section": "Introduction",
        "text": "CIT Cats purr loudly.",
        "marker_start": 0,
        "marker_end": 3,
        "cited_ids": ["c1"],
    }
    # Group 32-50: before T0[12:32] "r loudly. Dogs bark " ("purr" cut), after
    # T0[50:70] " at night. Birds sin" ("sing" cut).
    assert by_id["p1:1"]["text"] == "loudly. Dogs bark CIT at night. Birds"
    assert (by_id["p1:1"]["marker_start"], by_id["p1:1"]["marker_end"]) == (18, 21)
    assert by_id["p1:1"]["cited_ids"] == ["c2", "c3"]
    # "[3]" at the paragraph's end links nothing (p1:2), nor does "[4]" (ref_id null, p1:3);
    # "[5, 6]" (29-35): before T1[9:29] starts after a space, so "[4]" stays as printed.
    assert by_id["p1:4"]["text"] == "[4] and the toolkit CIT daily."
    assert by_id["p1:4"]["section"] == "Method"
    assert by_id["p1:4"]["cited_ids"] == ["c1", "zz"]
    assert report["papers_read"] == 1
    assert report["paragraphs"] == 2
    assert report["markers_found"] == 5
    assert report["markers_kept"] == 3
    assert report["markers_dropped"] == {"no_linked_reference": 2}
    assert report["contexts_written"] == 3
    assert report["settings"]["window_chars"] == 40
    assert json.loads((tmp_path / "v2020.json").read_text()) == report


def test_extract_sentences_window(tmp_path):
    text = "First one. Second has [1] here. Third one. Fourth."
    record = {
        "paper_id": "s1",
        "body_text": [{"section": "Intro", "text": text, "cite_spans": [span(text, "[1]", "B0")]}],
        "bib_entries": {"B0": {"link": "c9"}},
    }
    rows, _ = extract(tmp_path, "s0", [record], window_unit="sentences", window_sentences=0)
    assert rows[0]["text"] == "Second has CIT here."
    assert rows[0]["granularity"] == "sentences-0"
    rows, _ = extract(tmp_path, "s1", [record], window_unit="sentences", window_sentences=1)
    assert rows[0]["text"] == "First one. Second has CIT here. Third one."
    assert (rows[0]["marker_start"], rows[0]["marker_end"]) == (22, 25)


def bad_span_record() -> dict:
    record = small_paper("bad", "c1")
    record["body_text"][0]["cite_spans"].append(
        {"start": 100, "end": 103, "text": "[2]", "ref_id": "BIBREF0"}
    )
    return record


def test_malformed_span_is_an_error_without_allowance(tmp_path):
    with pytest.raises(InputDataError) as caught:
        extract(tmp_path, "bad", [small_paper("ok", "c1"), bad_span_record()])
    error = caught.value
    assert error.path == str(tmp_path / "bad.jsonl")
    assert (error.line, error.field) == (2, "body_text[0].cite_spans[1].start")
    assert not (tmp_path / "bad.parquet").exists()


def test_malformed_span_and_record_are_counted_with_allowance(tmp_path):
    unknown_ref = small_paper("ref", "c1")
    unknown_ref["body_text"][0]["cite_spans"][0]["ref_id"] = "BIBREF7"
    records = [small_paper("ok", "c1"), bad_span_record(), unknown_ref, "{not json", {"x": 1}]
    rows, report = extract(tmp_path, "lenient", records, max_bad_fraction=0.5)
    assert [r["context_id"] for r in rows] == ["bad:0", "ok:0"]
    skipped = report["skipped"]
    assert skipped["malformed_span"]["count"] == 2
    assert [(e["line"], e["field"]) for e in skipped["malformed_span"]["examples"]] == [
        (2, "body_text[0].cite_spans[1].start"),
        (3, "body_text[0].cite_spans[0].ref_id"),
    ]
    assert skipped["invalid_json"]["count"] == 1
    assert skipped["missing_field"]["examples"][0]["field"] == "paper_id"
    assert (report["records_read"], report["bad_records"]) == (5, 2)
    # 2 of 5 malformed records is above 0.3: the file fails.
    with pytest.raises(InputDataError, match="2 of 5 records are malformed"):
        extract(tmp_path, "strict", records, max_bad_fraction=0.3)


def test_missing_field_names_line_and_field(tmp_path):
    with pytest.raises(InputDataError) as caught:
        extract(tmp_path, "missing", [small_paper("ok", "c1"), {"paper_id": "x"}])
    assert (caught.value.line, caught.value.field) == (2, "body_text")


@pytest.mark.skipif(not EXAMPLE_PAPER.is_file(), reason="../shared/data is absent")
def test_extract_example_paper(tmp_path):
    report = extract_contexts(
        EXAMPLE_PAPER,
        tmp_path / "ex.parquet",
        tmp_path / "ex.json",
        fmt="s2orc_v2020",
        **SETTINGS,
    )
    rows = pq.read_table(tmp_path / "ex.parquet").to_pylist()
    # 49 cite spans in 26 markers; 18 spans have no reference and 9 bib entries no link,
    # so 17 markers link no paper.
    assert (report["papers_read"], report["paragraphs"]) == (1, 22)
    assert (report["markers_found"], report["markers_kept"]) == (26, 9)
    assert report["markers_dropped"] == {"no_linked_reference": 17}
    first = rows[0]
    # "(Schalk and Stoner, 1979; Hare, 1980; 1990; Puttler and Long, 1983" is one marker.
    assert first["context_id"] == "15772371:0"
    assert first["cited_ids"] == ["18723438", "84589835"]
    assert first["text"].startswith("an exceptionally destructive pest")
    assert "in Europe CIT ). Control of CPB" in first["text"]
    assert all(r["text"][r["marker_start"] : r["marker_end"]] == "CIT" for r in rows)


# --------------------------------------------------------------------------------------
# extract: S2AG and curated

S2AG_TEXT = "Intro\nCats purr [1]. Dogs bark [2][3].\nOrphan ref [4] here."


def s2ag_record() -> dict:
    text = S2AG_TEXT

    def at(printed: str, **attributes) -> dict:
        start = text.index(printed)
        out = {"start": start, "end": start + len(printed)}
        return {**out, "attributes": attributes} if attributes else out

    entries = [
        {"start": 60 + i, "end": 61 + i, "attributes": {"id": f"b{i}", "matched_paper_id": m}}
        for i, m in enumerate([101, 102, None, 103])
    ]
    del entries[2]["attributes"]["matched_paper_id"]
    text += " " * 10  # the bibentries live after the body
    return {
        "corpusid": 42,
        "content": {
            "text": text,
            "annotations": {
                "sectionheader": json.dumps([at("Intro")]),
                "paragraph": json.dumps([at("Cats purr [1]. Dogs bark [2][3].")]),
                "bibref": json.dumps(
                    [
                        at("[1]", ref_id="b0"),
                        at("[2]", ref_id="b1"),
                        at("[3]", ref_id="b2"),
                        at("[4]", ref_id="b3"),
                    ]
                ),
                "bibentry": json.dumps(entries),
                "figure": None,
            },
        },
    }


def test_extract_s2ag(tmp_path):
    rows, report = extract(tmp_path, "s2ag", [s2ag_record()], fmt="s2ag", window_chars=200)
    got = [
        (r["context_id"], r["section"], r["text"], r["marker_start"], r["cited_ids"]) for r in rows
    ]
    assert got == [
        ("42:0", "Intro", "Cats purr CIT . Dogs bark [2][3].", 10, ["101"]),
        # "[2][3]" touch: one marker; b2 has no matched paper.
        ("42:1", "Intro", "Cats purr [1]. Dogs bark CIT .", 25, ["102"]),
        # "[4]" lies outside every paragraph: read in the text after the paragraph.
        ("42:2", "Intro", "Orphan ref CIT here.", 11, ["103"]),
    ]
    assert (report["paragraphs"], report["markers_found"]) == (1, 3)


def test_s2ag_unknown_ref_is_a_malformed_span(tmp_path):
    record = s2ag_record()
    annotations = record["content"]["annotations"]
    refs = json.loads(annotations["bibref"])
    refs[0]["attributes"]["ref_id"] = "b9"
    annotations["bibref"] = json.dumps(refs)
    with pytest.raises(InputDataError) as caught:
        extract(tmp_path, "s2ag_bad", [record], fmt="s2ag")
    assert caught.value.field == "content.annotations.bibref[0].attributes.ref_id"
    rows, report = extract(tmp_path, "s2ag_ok", [record], fmt="s2ag", max_bad_fraction=0.1)
    assert [r["context_id"] for r in rows] == ["42:0", "42:1"]  # "[1]" skipped
    assert report["skipped"]["malformed_span"]["count"] == 1


def curated(context_id: str, citing: str, granularity: str, cited: list) -> dict:
    return {
        "context_id": context_id,
        "citing_paper_id": citing,
        "granularity": granularity,
        "section": "introduction",
        "text": f"As printed [1, 2] by {context_id}.",
        "cited": cited,
    }


def test_extract_curated(tmp_path):
    records = [
        curated("k2", "p1", "sentence", ["c3", "c1", "c1"]),
        curated("k1", "p1", "paragraph", ["c1"]),
        curated("k3", "p2", "sentence", []),
    ]
    rows, report = extract(tmp_path, "cur", records, fmt="curated")
    assert rows == [
        {
            "context_id": "k1",
            "citing_id": "p1",
            "granularity": "paragraph",
            "section": "introduction",
            "text": "As printed [1, 2] by k1.",
            "marker_start": None,
            "marker_end": None,
            "cited_ids": ["c1"],
        },
        {
            "context_id": "k2",
            "citing_id": "p1",
            "granularity": "sentence",
            "section": "introduction",
            "text": "As printed [1, 2] by k2.",
            "marker_start": None,
            "marker_end": None,
            "cited_ids": ["c1", "c3"],
        },
    ]
    assert report["markers_dropped"] == {"no_linked_reference": 1}
    assert report["papers_read"] == 2


@pytest.mark.skipif(not ACM_CR_CONTEXTS.is_file(), reason="../shared/data is absent")
def test_extract_acm_cr_contexts(tmp_path):
    report = extract_contexts(
        ACM_CR_CONTEXTS, tmp_path / "acm.parquet", tmp_path / "acm.json", fmt="curated", **SETTINGS
    )
    table = pq.read_table(tmp_path / "acm.parquet")
    assert report["records_read"] == 496
    assert report["contexts_written"] == table.num_rows == 496
    assert report["papers_read"] == 30
    counts = table.group_by("granularity").aggregate([("context_id", "count")]).to_pylist()
    assert {c["granularity"]: c["context_id_count"] for c in counts} == {
        "paragraph": 164,
        "sentence": 332,
    }


# --------------------------------------------------------------------------------------
# merge


def write_corpus(folder: Path) -> Path:
    folder.mkdir(parents=True)
    rows = [
        ("c1", "Cats", "About cats.", 2001, []),
        ("c2", "Dogs", "", 2002, []),  # empty abstract: not a candidate
        ("c3", "Birds", "About birds.", 2003, ["Biology"]),
        ("p1", "Pets", "About pets.", 2020, ["Biology", "Zoology"]),
        ("p2", "Tools", "About tools.", 2019, []),
    ]
    table = pa.table(
        {
            "paper_id": pa.array([r[0] for r in rows], pa.string()),
            "title": [r[1] for r in rows],
            "abstract": [r[2] for r in rows],
            "year": pa.array([r[3] for r in rows], pa.int32()),
            "fields": pa.array([r[4] for r in rows], pa.list_(pa.string())),
            "n_cited_by": pa.array([0] * len(rows), pa.int32()),
            "n_references": pa.array([0] * len(rows), pa.int32()),
        }
    )
    pq.write_table(table, folder / "part-00000.parquet")
    return folder


def staged(tmp_path: Path) -> tuple[list[Path], list[Path], Path]:
    # p2 cites only zz (outside the corpus); p3 is not in the corpus.
    extract(tmp_path, "a", [paper_p1(), small_paper("p2", "zz")])
    extract(tmp_path, "b", [small_paper("p3", "c1")])
    corpus = write_corpus(tmp_path / "corpus" / "papers")
    return (
        [tmp_path / "a.parquet", tmp_path / "b.parquet"],
        [
            tmp_path / "a.json",
            tmp_path / "b.json",
        ],
        corpus,
    )


def test_merge_filters_on_the_corpus_and_is_deterministic(tmp_path):
    staging, reports, corpus = staged(tmp_path)
    out = tmp_path / "local" / "contexts.parquet"
    report = merge_contexts(
        staging, reports, corpus, out, tmp_path / "report.json", memory_limit="1GB"
    )
    table = pq.read_table(out)
    assert table.schema.equals(CONTEXTS_SCHEMA)
    got = [
        (r["context_id"], r["year"], r["fields"], r["cited_ids"], r["marker_start"])
        for r in table.to_pylist()
    ]
    assert got == [
        ("p1:0", 2020, ["Biology", "Zoology"], ["c1"], 0),
        ("p1:1", 2020, ["Biology", "Zoology"], ["c3"], 18),  # c2 has no abstract
        ("p1:4", 2020, ["Biology", "Zoology"], ["c1"], 20),  # zz is outside the corpus
    ]
    merge = report["merge"]
    assert merge["contexts_read"] == 5
    assert merge["contexts_dropped"] == {
        "citing_not_in_corpus": 1,
        "no_cited_paper_in_corpus": 1,
    }
    assert merge["cited_ids_removed"] == {"cited_outside_corpus": 2, "cited_without_text": 1}
    assert (merge["cited_ids_read"], merge["cited_ids_kept"]) == (6, 3)
    assert (merge["contexts_kept"], merge["citing_papers_kept"]) == (3, 1)
    assert merge["per_granularity"] == {"chars-40": 3}
    assert report["extract"]["papers_read"] == 3
    assert report["extract"]["markers_found"] == 7
    assert report["extract"]["markers_dropped"] == {"no_linked_reference": 2}
    again = tmp_path / "again.parquet"
    merge_contexts(
        staging, reports, corpus, again, tmp_path / "again.json", memory_limit="1GB", threads=1
    )
    assert again.read_bytes() == out.read_bytes()


def test_merge_rejects_a_context_id_in_two_files(tmp_path):
    staging, reports, corpus = staged(tmp_path)
    copy = tmp_path / "copy.parquet"
    shutil.copy(staging[0], copy)
    with pytest.raises(InputDataError, match="more than one staging file") as caught:
        merge_contexts(
            [*staging, copy],
            reports,
            corpus,
            tmp_path / "out.parquet",
            tmp_path / "r.json",
            memory_limit="1GB",
        )
    assert str(staging[0]) in str(caught.value) and str(copy) in str(caught.value)


def test_cli_end_to_end(tmp_path, capsys):
    source = write_jsonl(tmp_path / "in.jsonl.txt", [paper_p1(), small_paper("p2", "zz")])
    corpus = write_corpus(tmp_path / "corpus" / "papers")
    rc = main(
        [
            "extract",
            "--input",
            str(source),
            "--output",
            str(tmp_path / "s.parquet"),
            "--report",
            str(tmp_path / "s.json"),
            "--format",
            "s2orc_v2020",
            "--window-chars",
            "40",
            "--marker-token",
            "[REF]",
            "--max-bad-fraction",
            "0",
        ]
    )
    assert rc == 0
    rc = main(
        [
            "merge",
            "--staging",
            str(tmp_path / "s.parquet"),
            "--reports",
            str(tmp_path / "s.json"),
            "--papers",
            str(corpus),
            "--output",
            str(tmp_path / "local" / "contexts.parquet"),
            "--report",
            str(tmp_path / "local" / "contexts_report.json"),
            "--threads",
            "1",
            "--memory-limit",
            "1GB",
        ]
    )
    assert rc == 0
    rows = pq.read_table(tmp_path / "local" / "contexts.parquet").to_pylist()
    assert rows[0]["text"] == "[REF] Cats purr loudly."
    report = json.loads((tmp_path / "local" / "contexts_report.json").read_text())
    assert report["merge"]["contexts_kept"] == 3
    # A malformed input is one clear error line and status 2.
    bad = write_jsonl(tmp_path / "bad.jsonl", ["{oops"])
    args = ["extract", "--input", str(bad), "--output", str(tmp_path / "x.parquet")]
    assert main([*args, "--report", str(tmp_path / "x.json"), "--format", "curated"]) == 2
    assert f"{bad}:1" in capsys.readouterr().err
