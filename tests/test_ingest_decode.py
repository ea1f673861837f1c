"""The whole-chunk decode path against the line-by-line one, on random and mutated lines.

Parse decodes a chunk of lines at once and falls back to one line at a time, which
locates every problem. The contract: for any chunk the whole-chunk path either refuses
(None) or returns exactly the records the line-by-line path decodes, so the staged rows,
counts and errors never depend on which path ran.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import msgspec
import pyarrow.parquet as pq
import pytest

from citeval.ingest import decode, parse_shard
from citeval.ingest.formats import DECODE_ERRORS, V2020Paper
from citeval.ingest.lines import LineChunk, scan_lines

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO.parent / "shared" / "data" / "s2orc-sample" / "sample.jsonl"
DECODER = msgspec.json.Decoder(V2020Paper)


def chunk_of(text: bytes) -> LineChunk:
    """``text`` as one chunk of lines, the last one with or without its newline."""
    lines = text.split(b"\n")
    if len(lines) > 1 and lines[-1] == b"":
        lines.pop()
    may_hold_blank = any(line[:1] in (b"", b" ", b"\t", b"\r") for line in lines)
    return LineChunk(1, text, len(lines), may_hold_blank)


def whole_chunk_records(text: bytes) -> list[V2020Paper] | None:
    return decode.decode_whole_chunk(DECODER, chunk_of(text))


def line_by_line_records(text: bytes) -> list[V2020Paper] | None:
    """Every line's record, or None if any line is blank or fails to decode."""
    records = []
    for line in chunk_of(text).lines():
        if not line.strip():
            return None
        try:
            records.append(DECODER.decode(line))
        except DECODE_ERRORS:
            return None
    return records


WORDS = ["cell", "Ω-graph", "naïve", "中文", "😀", 'a "quote"', "back\\slash", "tab\tnew\nline"]
WORDS += ["\u0000", "\u2028", "/", "\x7f", "é" * 9, "x" * 40]


def random_text(rng: random.Random, max_words: int = 30) -> str:
    return " ".join(rng.choices(WORDS, k=rng.randint(0, max_words)))


def random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(8 if depth < 3 else 5)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.choice([0, -1, 7, 2**40, -(2**70), 0.5, -1.25e-7, 3e300])
    if kind in (2, 3, 4):
        return random_text(rng, 4)
    if kind in (5, 6):
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {random_text(rng, 2): random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def random_record(rng: random.Random, i: int) -> dict[str, Any]:
    """A record ingest accepts: any of the read fields may be null or absent."""
    record: dict[str, Any] = {"paper_id": f"{i}-{random_text(rng, 2)}"}

    def maybe(name: str, value: Any) -> None:
        choice = rng.random()
        if choice < 0.1:
            return  # absent
        record[name] = None if choice < 0.2 else value

    maybe("title", random_text(rng))
    maybe("abstract", random_text(rng, 200))
    maybe("year", rng.choice([2019, 0, -5, 2**31 - 1, -(2**31)]))
    maybe("mag_field_of_study", [random_text(rng, 2) for _ in range(rng.randint(0, 3))])
    for name in ("outbound_citations", "inbound_citations"):
        ids = [str(rng.randrange(10**9)) for _ in range(rng.randint(0, 40))]
        if ids and rng.random() < 0.05:
            ids[0] = random_text(rng, 2)  # ids with escapes, spaces or commas are legal
        maybe(name, ids)
    for k in range(rng.randint(0, 4)):
        record[f"extra_{k}"] = random_value(rng)
    items = list(record.items())
    rng.shuffle(items)
    return dict(items)


def dump(record: dict[str, Any], rng: random.Random, leading_space: bool = True) -> str:
    spaced = rng.random() < 0.3
    text = json.dumps(
        record,
        ensure_ascii=rng.random() < 0.5,
        separators=(" , ", " : ") if spaced else (",", ":"),
    )
    if not spaced:
        return text
    # A line that starts with whitespace sends its chunk line by line.
    return (" \t" if leading_space else "") + text + " \r"


def random_chunk(rng: random.Random, n: int, leading_space: bool = True) -> bytes:
    lines = [dump(random_record(rng, i), rng, leading_space) for i in range(n)]
    return ("\n".join(lines) + rng.choice(["\n", ""])).encode()


@pytest.mark.parametrize("n", [1, 2, 17, 300])
def test_valid_records_decode_the_same_either_way(n):
    rng = random.Random(n)
    text = random_chunk(rng, n, leading_space=False)
    expected = line_by_line_records(text)
    assert expected is not None and len(expected) == n
    assert whole_chunk_records(text) == expected
    text = random_chunk(rng, n)
    assert line_by_line_records(text) is not None
    assert whole_chunk_records(text) in (None, line_by_line_records(text))


@pytest.mark.shared_data
def test_real_sample_decodes_the_same_either_way():
    if not SAMPLE.exists():
        pytest.skip(f"needs {SAMPLE} (../shared/data)")
    text = SAMPLE.read_bytes()
    records = whole_chunk_records(text)
    assert records is not None and len(records) == 1000
    assert records == line_by_line_records(text)


MUTATION_BYTES = b'{}[]",:\\ \n0123456789-.eEnulltruefalse\x00\x1f\xc3\xa9\xff\xed\xa0\x80u'


def mutate(text: bytes, rng: random.Random) -> bytes:
    data = bytearray(text)
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(data) + 1)
        kind = rng.randrange(4)
        if kind == 0 and at < len(data):
            del data[at]
        elif kind == 1:
            data.insert(at, rng.choice(MUTATION_BYTES))
        elif kind == 2 and at < len(data):
            data[at] = rng.choice(MUTATION_BYTES)
        else:
            data[at:] = data[at : at + rng.randint(0, 3)]
    return bytes(data)


def test_mutated_lines_are_refused_or_decode_the_same():
    rng = random.Random(2)
    accepted = 0
    for trial in range(2000):
        text = mutate(dump(random_record(rng, trial), rng).encode(), rng)
        got = whole_chunk_records(text)
        if got is not None:
            accepted += 1
            assert got == line_by_line_records(text), text
    # Most mutations break the syntax, but not all: both outcomes must have been tested.
    assert 50 < accepted < 1950


@pytest.mark.parametrize(
    "text",
    [
        b'{"paper_id": "a"} {"paper_id": "b"}',  # two values on one line
        b'{"paper_id": "a"}\n\n{"paper_id": "b"}\n',  # a blank line
        b'{"paper_id": "a"}\n   \n{"paper_id": "b"}',
        b'{"paper_id": "a"}\n{"paper_id": "b", "year": "2019"}\n',  # one bad record
        b'{"paper_id": "a"},',
        b"",
    ],
)
def test_chunks_that_need_line_by_line_are_refused(text):
    assert whole_chunk_records(text) is None


def test_parse_stages_the_same_files_either_way(tmp_path, monkeypatch):
    rng = random.Random(5)
    text = bytearray(random_chunk(rng, 2000, leading_space=False))
    at = text.index(b"\n", len(text) // 2) + 1
    text[at:at] = b'{"paper_id": "z", "year": 1.5}\n'  # one chunk goes line by line
    path = tmp_path / "p.jsonl"
    path.write_bytes(bytes(text))
    monkeypatch.setattr("citeval.ingest.lines.CHUNK_BYTES", 64 << 10)  # many chunks
    taken = []
    whole = decode.decode_whole_chunk
    monkeypatch.setattr(
        decode, "decode_whole_chunk", lambda *args: taken.append(whole(*args)) or taken[-1]
    )
    fast = parse_shard(path, "s2orc_v2020", tmp_path / "fast", max_bad_fraction=0.01)
    assert sum(t is not None for t in taken) > 5 and sum(t is None for t in taken) >= 1
    monkeypatch.setattr(decode, "decode_whole_chunk", lambda *args: None)
    exact = parse_shard(path, "s2orc_v2020", tmp_path / "exact", max_bad_fraction=0.01)
    assert fast["skipped"]["wrong_type"]["count"] == 1
    assert fast["records_written"] == 2000
    assert {k: v for k, v in fast.items() if k != "input"} == {
        k: v for k, v in exact.items() if k != "input"
    }
    assert pq.read_table(tmp_path / "fast" / "papers").equals(
        pq.read_table(tmp_path / "exact" / "papers")
    )


def test_scan_lines_counts_newlines_and_leading_whitespace():
    rng = random.Random(6)
    for _ in range(5000):
        text = bytes(rng.choices(b"ab \n\t\r", k=rng.randint(0, 12)))
        starts = [0, *[i + 1 for i, c in enumerate(text) if c == ord("\n")][:-1]]
        newlines = text.count(b"\n")
        expected = (
            newlines,
            text.rfind(b"\n"),
            newlines > 0 and any(text[s : s + 1] in (b" ", b"\t", b"\r", b"\n") for s in starts),
        )
        assert scan_lines(text) == expected, text
