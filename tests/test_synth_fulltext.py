"""Tests for the synthetic corpus's full text (citeval.synth.fulltext)."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from citeval import synth
from citeval.errors import ConfigError
from citeval.synth.cli import build_parser, main
from citeval.synth.fulltext import SECTIONS
from citeval.synth.lexicon import SHORT_ABSTRACTS

N_PAPERS = 2000
SEED = 7
FIRST_YEAR, LAST_YEAR = 1990, 2019
STOP = {"in", "of", "the", "and", "a", "for", "on", "to", "with", "as", "by", "we", "our"}


def _generate(directory: Path, *, shards: int = 2, fulltext: bool = True) -> list[Path]:
    return synth.generate_corpus(
        N_PAPERS,
        shards,
        SEED,
        FIRST_YEAR,
        LAST_YEAR,
        str(directory / "s2orc-{shard}.jsonl.gz"),
        progress=False,
        fulltext_pattern=str(directory / "pdf-{shard}.jsonl.gz") if fulltext else None,
    )


def _fulltext_paths(directory: Path) -> list[Path]:
    return sorted(directory.glob("pdf-*.jsonl.gz"))


def _lines(paths: list[Path]) -> list[str]:
    out: list[str] = []
    for path in paths:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            out.extend(handle)
    return out


def _digest(paths: list[Path]) -> list[str]:
    return [hashlib.sha256(p.read_bytes()).hexdigest() for p in paths]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("fulltext")
    _generate(directory)
    return directory


@pytest.fixture(scope="module")
def meta(corpus: Path) -> dict[str, dict[str, Any]]:
    lines = _lines(sorted(corpus.glob("s2orc-*.jsonl.gz")))
    return {r["paper_id"]: r for r in map(json.loads, lines)}


@pytest.fixture(scope="module")
def records(corpus: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in _lines(_fulltext_paths(corpus))]


def _words(text: str | None) -> set[str]:
    return set(re.findall(r"[a-z]+", (text or "").lower())) - STOP


# ---- which papers, and the layout ----


def test_one_record_per_paper_with_abstract_and_citations(
    records: list[dict[str, Any]], meta: dict[str, dict[str, Any]]
) -> None:
    expected = [
        pid
        for pid, r in meta.items()
        if r["abstract"] is not None
        and r["abstract"] not in SHORT_ABSTRACTS
        and r["outbound_citations"]
    ]
    assert [r["paper_id"] for r in records] == expected
    assert len(expected) > N_PAPERS // 2
    for r in records:
        assert list(r) == [
            "paper_id",
            "_pdf_hash",
            "abstract",
            "body_text",
            "bib_entries",
            "ref_entries",
        ]
        assert re.fullmatch(r"[0-9a-f]{40}", r["_pdf_hash"])
        assert r["abstract"] == [
            {
                "section": "Abstract",
                "text": meta[r["paper_id"]]["abstract"],
                "cite_spans": [],
                "ref_spans": [],
            }
        ]
        assert r["ref_entries"] == {}
        assert r["body_text"][0]["section"] == "Introduction"
        for para in r["body_text"]:
            assert list(para) == ["section", "text", "cite_spans", "ref_spans"]
            assert para["section"] in SECTIONS
            assert para["ref_spans"] == []
            assert para["text"] and para["text"] == para["text"].strip()


def test_cite_spans_and_bib_entries(
    records: list[dict[str, Any]], meta: dict[str, dict[str, Any]]
) -> None:
    entries = unresolved = markers = doubles = at_start = at_end = 0
    for r in records:
        bib = r["bib_entries"]
        assert list(bib) == [f"BIBREF{i}" for i in range(len(bib))]
        cited: set[str] = set()
        for para in r["body_text"]:
            text, spans = para["text"], para["cite_spans"]
            for span in spans:
                assert list(span) == ["start", "end", "text", "ref_id"]
                assert text[span["start"] : span["end"]] == span["text"]
                assert span["ref_id"] in bib
                number = int(span["ref_id"][len("BIBREF") :]) + 1
                assert span["text"].strip("[]") == str(number)
                cited.add(span["ref_id"])
            assert [s["start"] for s in spans] == sorted(s["start"] for s in spans)
            # A marker is "[n]" or "[a, b]" (two adjacent spans with ", " between).
            k = 0
            while k < len(spans):
                markers += 1
                span = spans[k]
                if span["text"].endswith("]"):
                    assert span["text"].startswith("[")
                    k += 1
                else:
                    nxt = spans[k + 1]
                    assert text[span["end"] : nxt["start"]] == ", "
                    assert nxt["text"].endswith("]") and not nxt["text"].startswith("[")
                    assert span["ref_id"] != nxt["ref_id"]
                    doubles += 1
                    k += 2
            at_start += bool(spans) and spans[0]["start"] == 0
            at_end += bool(spans) and spans[-1]["end"] == len(text)
        assert cited == set(bib), "every bib entry is cited"
        links = [e["link"] for e in bib.values() if e["link"] is not None]
        outbound = meta[r["paper_id"]]["outbound_citations"]
        assert sorted(links) == sorted(outbound), "each outbound citation linked once"
        for key, entry in bib.items():
            assert entry["ref_id"] == "b" + key[len("BIBREF") :]
            assert entry["title"] and isinstance(entry["year"], int)
            assert entry["authors"] == [] and entry["other_ids"] == {}
            title = meta[entry["link"]]["title"] if entry["link"] else None
            if title:
                assert entry["title"] == title
        entries += len(bib)
        unresolved += sum(e["link"] is None for e in bib.values())
    assert 0.06 < unresolved / entries < 0.14
    assert 0.12 < doubles / markers < 0.28
    assert at_start > 0 and at_end > 0


def test_citing_sentences_carry_words_of_the_cited_paper(
    records: list[dict[str, Any]], meta: dict[str, dict[str, Any]]
) -> None:
    """Single-paper markers of linked papers: the sentence shares more words with the cited
    paper's title and abstract than with a random other paper's."""
    shared = random_shared = total = 0
    ids = list(meta)
    for n, r in enumerate(records):
        bib = r["bib_entries"]
        for para in r["body_text"]:
            text = para["text"]
            for span in para["cite_spans"]:
                link = bib[span["ref_id"]]["link"]
                if span["text"][-1:] != "]" or span["text"][:1] != "[" or link is None:
                    continue
                lo = text.rfind(". ", 0, span["start"]) + 1
                hi = text.find(". ", span["end"])
                sentence = _words(text[lo : hi if hi >= 0 else len(text)])
                cited = meta[link]
                other = meta[ids[(n * 7919 + total) % len(ids)]]
                total += 1
                shared += len(sentence & _words(f"{cited['title']} {cited['abstract']}"))
                random_shared += len(sentence & _words(f"{other['title']} {other['abstract']}"))
    assert total > 1000
    assert shared > 2 * random_shared, (shared / total, random_shared / total)


# ---- determinism, shards, metadata ----


def test_byte_identical_and_independent_of_the_shard_count(corpus: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    again.mkdir()
    _generate(again)
    assert _digest(_fulltext_paths(again)) == _digest(_fulltext_paths(corpus))
    three = tmp_path / "three"
    three.mkdir()
    _generate(three, shards=3)
    paths = _fulltext_paths(three)
    assert len(paths) == 3
    assert _lines(paths) == _lines(_fulltext_paths(corpus))
    # Full-text shards hold the papers of their metadata shard.
    for meta_path, pdf_path in zip(sorted(three.glob("s2orc-*")), paths, strict=True):
        meta_ids = {json.loads(line)["paper_id"] for line in _lines([meta_path])}
        assert {json.loads(line)["paper_id"] for line in _lines([pdf_path])} <= meta_ids


def test_metadata_unchanged_by_the_full_text(corpus: Path, tmp_path: Path) -> None:
    paths = _generate(tmp_path, fulltext=False)
    assert not _fulltext_paths(tmp_path)
    assert _digest(paths) == _digest(sorted(corpus.glob("s2orc-*.jsonl.gz")))


def test_fulltext_pattern_is_validated(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="fulltext_pattern"):
        synth.generate_corpus(
            100,
            2,
            SEED,
            FIRST_YEAR,
            LAST_YEAR,
            str(tmp_path / "m-{shard}.jsonl.gz"),
            fulltext_pattern=str(tmp_path / "pdf.jsonl.gz"),
        )
    with pytest.raises(ConfigError, match="fulltext_pattern"):
        synth.generate_corpus(
            100,
            1,
            SEED,
            FIRST_YEAR,
            LAST_YEAR,
            str(tmp_path / "m-{shard}.jsonl.gz"),
            fulltext_pattern=str(tmp_path / "m-{shard}.jsonl.gz"),
        )
    assert not list(tmp_path.iterdir())


def test_cli_fulltext_pattern(tmp_path: Path) -> None:
    assert (
        build_parser().parse_args(["--seed", "1", "--output-pattern", "x"]).fulltext_pattern is None
    )
    argv = ["--seed", "3", "--num-papers", "300", "--num-shards", "2", "--no-progress"]
    meta = str(tmp_path / "m-{shard}.jsonl.gz")
    pdf = str(tmp_path / "pdf-{shard}.jsonl.gz")
    assert main([*argv, "--output-pattern", meta, "--fulltext-pattern", pdf]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "m-00000.jsonl.gz",
        "m-00001.jsonl.gz",
        "pdf-00000.jsonl.gz",
        "pdf-00001.jsonl.gz",
    ]
    records = [json.loads(line) for line in _lines(_fulltext_paths(tmp_path))]
    assert records and all(r["body_text"] for r in records)
