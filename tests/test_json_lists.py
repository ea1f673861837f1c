"""Tests for citeval.ingest.json_lists against msgspec's own decoding of the same lists."""

from __future__ import annotations

import random

import msgspec
import pyarrow as pa
import pytest

from citeval.ingest.json_lists import plain_string_lists

STRING_LIST = pa.list_(pa.string())


def expected(raws: list[bytes]) -> pa.ListArray:
    decode = msgspec.json.Decoder(list[str] | None).decode
    return pa.array([decode(raw) if raw else None for raw in raws], STRING_LIST)


def random_plain_list(rng: random.Random) -> bytes:
    choice = rng.random()
    if choice < 0.05:
        return b""  # the field is absent
    if choice < 0.1:
        return b"null"
    alphabet = "0123456789abcdef-_:é中"
    ids = ["".join(rng.choices(alphabet, k=rng.randint(0, 12))) for _ in range(rng.randint(0, 9))]
    separator = rng.choice([",", ", ", " ,", ",\t"])
    inside = separator.join(f'"{i}"' for i in ids)
    return rng.choice(["[{}]", "[ {} ]", "[\n{}\n]"]).format(inside).encode()


def test_plain_lists_match_msgspec():
    rng = random.Random(3)
    for size in (0, 1, 7, 500):
        raws = [random_plain_list(rng) for _ in range(size)]
        lists = plain_string_lists(raws)
        assert lists is not None
        lists.validate(full=True)
        assert lists.equals(expected(raws)), raws


def test_all_null_and_all_empty():
    assert plain_string_lists([b"null", b""]).to_pylist() == [None, None]
    assert plain_string_lists([b"[]", b"[ ]"]).to_pylist() == [[], []]


@pytest.mark.parametrize(
    "raw",
    [
        rb'["a\"b"]',  # an escape
        rb'["a\u00e9"]',
        b'["a b"]',  # whitespace, a comma or a bracket inside an id
        b'["a,b"]',
        b'["a]"]',
        b"[1]",  # not a string
        b'["a", 2]',
        b"[null]",
        b'[["a"]]',
        b'"abc"',  # not a list
        b"{}",
        b"true",
        b'["\xff"]',  # invalid UTF-8
    ],
)
def test_anything_but_a_plain_list_is_refused(raw):
    assert plain_string_lists([b'["ok"]', raw]) is None
