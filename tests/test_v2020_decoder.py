"""The compiled v2020 decoder against msgspec's decoding of the same lines.

Its contract: for any chunk it either refuses (None) or returns exactly the columns the
exact path stages. The tests check both halves: valid records of every shape are accepted
and match, and random mutations of them are never accepted with a different result.
"""

from __future__ import annotations

import json
import random
import shutil
import sysconfig
from pathlib import Path
from typing import Any

import msgspec
import pyarrow.parquet as pq
import pytest

from citeval import ingest, v2020_decoder
from citeval.ingest import V2020Paper, parse_shard

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO.parent / "shared" / "data" / "s2orc-sample" / "sample.jsonl"
COLUMNS = ("paper_id", "title", "abstract", "year", "fields", "outbound", "inbound")

needs_extension = pytest.mark.skipif(
    v2020_decoder._v2020 is None,
    reason="citeval._v2020 is not built (no C compiler at install time?)",
)


def test_the_extension_is_built_where_a_compiler_is():
    # The skips below must not hide a broken build on the machines the project targets.
    compiler = sysconfig.get_config_var("CC")
    if not compiler or shutil.which(compiler.split()[0]) is None:
        pytest.skip("no C compiler here, so pip installed citeval without its extension")
    assert v2020_decoder._v2020 is not None, "reinstall with: pip install --no-deps -e ."


def count_lines(text: bytes) -> int:
    """Lines in ``text``, the last one with or without its newline."""
    return text.count(b"\n") + (not text.endswith(b"\n"))


def exact_rows(text: bytes) -> list[tuple] | None:
    """What the exact path stages for each line, or None if any line fails to decode."""
    decode = msgspec.json.Decoder(V2020Paper).decode
    rows = []
    for line in text.split(b"\n")[: count_lines(text)]:
        try:
            r = decode(line)
        except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError):
            return None
        fields = r.mag_field_of_study or []
        rows.append(
            (r.paper_id, r.title, r.abstract, r.year, fields, r.outbound_citations,
             r.inbound_citations)
        )  # fmt: skip
    return rows


def native_rows(text: bytes, n_lines: int | None = None) -> list[tuple] | None:
    if n_lines is None:
        n_lines = count_lines(text)
    columns = v2020_decoder.decode_columns(text, n_lines)
    if columns is None:
        return None
    for column in columns:
        column.validate(full=True)
    return list(zip(*(c.to_pylist() for c in columns), strict=True))


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
        maybe(name, [str(rng.randrange(10**9)) for _ in range(rng.randint(0, 40))])
    for k in range(rng.randint(0, 4)):
        record[f"extra_{k}"] = random_value(rng)
    items = list(record.items())
    rng.shuffle(items)
    return dict(items)


def dump(record: dict[str, Any], rng: random.Random) -> str:
    spaced = rng.random() < 0.3
    text = json.dumps(
        record,
        ensure_ascii=rng.random() < 0.5,
        separators=(" , ", " : ") if spaced else (",", ":"),
    )
    return (" \t" + text + " \r") if spaced else text


def random_chunk(rng: random.Random, n: int) -> bytes:
    lines = [dump(random_record(rng, i), rng) for i in range(n)]
    return ("\n".join(lines) + rng.choice(["\n", ""])).encode()


@needs_extension
def test_valid_records_are_accepted_and_match_msgspec():
    rng = random.Random(1)
    for n in (1, 2, 17, 300):
        text = random_chunk(rng, n)
        expected = exact_rows(text)
        assert expected is not None
        assert native_rows(text) == expected


@needs_extension
def test_real_sample_is_accepted_and_matches_msgspec():
    if not SAMPLE.exists():
        pytest.skip(f"needs {SAMPLE} (../shared/data)")
    text = SAMPLE.read_bytes()
    assert native_rows(text) == exact_rows(text)


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


@needs_extension
def test_mutated_records_are_refused_or_match_msgspec():
    rng = random.Random(2)
    accepted = 0
    for trial in range(4000):
        record = random_record(rng, trial)
        text = mutate(dump(record, rng).encode(), rng)
        got = native_rows(text)
        if got is not None:
            accepted += 1
            assert got == exact_rows(text), text
    # Most mutations break the syntax, but not all: both outcomes must have been tested.
    assert 100 < accepted < 3900


@needs_extension
@pytest.mark.parametrize(
    "line",
    [
        b'{"paper_id": "a", "year": 2019.0}',  # a float for the int field
        b'{"paper_id": "a", "year": 2e3}',
        b'{"paper_id": "a", "year": "2019"}',
        b'{"paper_id": "a", "year": 2147483648}',
        b'{"paper_id": "a", "year": 012}',
        b'{"paper_id": ""}',  # paper_id must not be empty
        b'{"paper_id": null}',
        b'{"title": "t"}',  # no paper_id
        b'{"paper_id": "a", "paper_id": "b"}',  # a key twice
        b'{"paper\\u005fid": "a"}',  # an escaped key
        b'{"paper_id": "a\\udc00"}',  # a lone surrogate
        b'{"paper_id": "a", "x": "\\ud800"}',
        b'{"paper_id": "a\xff"}',  # invalid UTF-8
        b'{"paper_id": "a", "x": "\xed\xa0\x80"}',  # an encoded surrogate
        b'{"paper_id": "a", "x": ' + b"[" * 70 + b"]" * 70 + b"}",  # nested too deeply
        b'{"paper_id": "a"} {"paper_id": "b"}',  # two values on one line
        b'{"paper_id": "a"},',
        b'["a"]',
        b"",
        b'{"paper_id": "a", "outbound_citations": ["b", null]}',
        b'{"paper_id": "a", "mag_field_of_study": "Biology"}',
        b'{"paper_id": "a", "title": 5}',
        b'{"paper_id": "a", "x": 01}',
        b'{"paper_id": "a", "x": "tab\there"}',  # a raw control character
        b'{"paper_id": "a",}',
    ],
)
def test_lines_the_decoder_is_not_sure_of_are_refused(line):
    assert native_rows(line, 1) is None


@needs_extension
def test_line_count_must_match():
    text = b'{"paper_id": "a"}\n{"paper_id": "b"}\n'
    assert native_rows(text, 2) == [
        ("a", None, None, None, [], None, None),
        ("b", None, None, None, [], None, None),
    ]
    assert native_rows(text, 1) is None
    assert native_rows(text, 3) is None
    assert native_rows(b'{"paper_id": "a"}\n\n{"paper_id": "b"}\n', 3) is None  # blank line
    # A count no chunk of this size can hold is refused before anything is sized by it.
    assert v2020_decoder.decode_columns(b'{"paper_id": "a"}', 2**62) is None
    assert v2020_decoder.decode_columns(b"", 1) is None


@needs_extension
def test_parse_stages_the_same_files_with_and_without_the_decoder(tmp_path, monkeypatch):
    rng = random.Random(5)
    path = tmp_path / "p.jsonl"
    path.write_bytes(random_chunk(rng, 2000))
    monkeypatch.setattr(ingest, "CHUNK_BYTES", 64 << 10)  # many chunks, one refused
    text = bytearray(path.read_bytes())
    at = text.index(b"\n", len(text) // 2) + 1
    text[at:at] = b'{"paper_id": "z", "year": 1.5}\n'
    path.write_bytes(bytes(text))
    decoded = []
    native = ingest.stage_v2020_native
    monkeypatch.setattr(
        ingest, "stage_v2020_native", lambda *args: decoded.append(native(*args)) or decoded[-1]
    )
    fast = parse_shard(path, "s2orc_v2020", tmp_path / "fast", max_bad_fraction=0.01)
    assert decoded.count(True) > 5 and decoded.count(False) == 1
    monkeypatch.setattr(v2020_decoder, "AVAILABLE", False)
    exact = parse_shard(path, "s2orc_v2020", tmp_path / "exact", max_bad_fraction=0.01)
    assert fast["skipped"]["wrong_type"]["count"] == 1
    assert {k: v for k, v in fast.items() if k != "input"} == {
        k: v for k, v in exact.items() if k != "input"
    }
    parts = sorted(p.name for p in (tmp_path / "exact" / "papers").iterdir())
    assert parts == sorted(p.name for p in (tmp_path / "fast" / "papers").iterdir())
    for name in parts:
        assert (tmp_path / "fast" / "papers" / name).read_bytes() == (
            tmp_path / "exact" / "papers" / name
        ).read_bytes()
    assert pq.read_table(tmp_path / "fast" / "papers").num_rows == 2000


@needs_extension
def test_scan_lines_matches_numpy(monkeypatch):
    rng = random.Random(6)
    texts = [bytes(rng.choices(b"ab \n\t\r", k=rng.randint(0, 12))) for _ in range(5000)]
    compiled = [ingest.scan_lines(t) for t in texts]
    monkeypatch.setattr(v2020_decoder, "AVAILABLE", False)
    assert compiled == [ingest.scan_lines(t) for t in texts]


def test_parse_says_when_it_decodes_with_msgspec_alone(tmp_path, monkeypatch, caplog):
    path = tmp_path / "p.jsonl"
    path.write_text('{"paper_id": "a"}\n')
    monkeypatch.setattr(v2020_decoder, "AVAILABLE", False)
    monkeypatch.setattr(v2020_decoder, "BUILT", False)
    with caplog.at_level("INFO", logger="citeval.ingest"):
        parse_shard(path, "s2orc_v2020", tmp_path / "staging")
    warnings = [r for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "citeval._v2020 is not built" in warnings[0].getMessage()
