"""MDCR's published file formats: the benchmark file, the data file and the scores file.

* **Benchmark file** (``mdcr_<split>.json``): ``{field: {query_id: {type: [candidate_id,
  ...]}}}``. The type ``true`` lists the positives (cited papers); every other type lists
  negatives of that candidate type (``bm25``, ``graph``, ``most_cited``, ``random``, ...).
* **Data file** (``mdcr_<split>_data.jsonl``): one JSON object per line with ``paper_id``,
  ``title`` and ``abstract``, for every query and every candidate.
* **Scores file**: one JSON object keyed ``"<query_id>_<candidate_id>"``, higher meaning
  more relevant.

In memory a benchmark is the same nested dict (:data:`Benchmark`), and the data file is
``{paper_id: Paper}``; construction produces exactly these, so an imported benchmark and a
built one go through the same scoring and evaluation code.

Written files are deterministic: keys sorted, candidate lists as given (construction sorts
them), one paper per line in ``paper_id`` order, and floats as Python's shortest
round-tripping ``repr``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from citeval.errors import InputDataError
from citeval.io import atomic_text, write_text

Benchmark = dict[str, dict[str, dict[str, list[str]]]]
Scores = dict[str, float]

POSITIVE_TYPE = "true"


@dataclass(frozen=True)
class Paper:
    """A paper's text as the data file holds it."""

    paper_id: str
    title: str
    abstract: str


def score_key(query_id: str, candidate_id: str) -> str:
    """The scores file's key of a query–candidate pair: ``"<query_id>_<candidate_id>"``."""
    return f"{query_id}_{candidate_id}"


def negative_types(benchmark: Benchmark) -> list[str]:
    """Every candidate type other than ``true`` that any query lists, sorted."""
    types = {
        kind
        for queries in benchmark.values()
        for candidates in queries.values()
        for kind in candidates
        if kind != POSITIVE_TYPE
    }
    return sorted(types)


def iter_pairs(benchmark: Benchmark) -> Iterator[tuple[str, str]]:
    """Every distinct (query_id, candidate_id) pair, in file order (each pair once)."""
    for queries in benchmark.values():
        for query_id, candidates in queries.items():
            seen: set[str] = set()
            for ids in candidates.values():
                for candidate_id in ids:
                    if candidate_id not in seen:
                        seen.add(candidate_id)
                        yield query_id, candidate_id


def _load_json(path: str | os.PathLike, what: str) -> Any:
    where = str(path)
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except OSError as error:
        raise InputDataError(f"cannot read the {what}: {error.strerror}", path=where) from None
    except UnicodeDecodeError as error:
        raise InputDataError(f"{what} is not UTF-8 text: {error}", path=where) from None
    except json.JSONDecodeError as error:
        raise InputDataError(
            f"{what} is not valid JSON: {error.msg} (column {error.colno})",
            path=where,
            line=error.lineno,
        ) from None


def validate_benchmark(data: Any, path: str | os.PathLike | None = None) -> Benchmark:
    """Check the benchmark structure and return it; :class:`InputDataError` names the key.

    Required: a non-empty object of fields, each a non-empty object of queries, each an
    object of candidate types holding a ``true`` list; every list holds non-empty string
    ids without repeats; a query is never its own candidate; a query id appears in only one
    field. A candidate listed under several negative types is accepted (the published
    evaluator gives it relevance 0 either way); one listed both as ``true`` and as a
    negative is refused, since its relevance would depend on the order of the types.
    """
    where = None if path is None else str(path)

    def fail(message: str, key: str | None = None) -> InputDataError:
        return InputDataError(message, path=where, field=key)

    if not isinstance(data, dict) or not data:
        raise fail("benchmark must be a non-empty JSON object {field: {query_id: {type: [...]}}}")
    field_of_query: dict[str, str] = {}
    for field_name, queries in data.items():
        if not isinstance(queries, dict) or not queries:
            raise fail("a field must be a non-empty object {query_id: {type: [...]}}", field_name)
        for query_id, candidates in queries.items():
            key = f"{field_name}/{query_id}"
            if not query_id:
                raise fail("empty query id", field_name)
            if query_id in field_of_query:
                raise fail(f"query also listed under field {field_of_query[query_id]!r}", key)
            field_of_query[query_id] = field_name
            if not isinstance(candidates, dict):
                raise fail("a query must be an object {type: [candidate_id, ...]}", key)
            if POSITIVE_TYPE not in candidates:
                raise fail(f"query has no {POSITIVE_TYPE!r} list of positives", key)
            positives = set()
            negatives = set()
            for kind, ids in candidates.items():
                kind_key = f"{key}/{kind}"
                if not isinstance(ids, list):
                    raise fail("a candidate type must be a list of paper ids", kind_key)
                for candidate_id in ids:
                    if not isinstance(candidate_id, str) or not candidate_id:
                        raise fail(
                            f"candidate id is not a non-empty string: {candidate_id!r}", kind_key
                        )
                if len(set(ids)) != len(ids):
                    repeated = sorted({c for c in ids if ids.count(c) > 1})
                    raise fail(f"repeated candidate ids {repeated[:5]}", kind_key)
                if query_id in ids:
                    raise fail("the query is listed as its own candidate", kind_key)
                (positives if kind == POSITIVE_TYPE else negatives).update(ids)
            both = sorted(positives & negatives)
            if both:
                raise fail(
                    f"candidates listed both as {POSITIVE_TYPE!r} and as negatives: {both[:5]}", key
                )
    return data


def read_benchmark(path: str | os.PathLike) -> Benchmark:
    """Read and validate a benchmark file (see :func:`validate_benchmark`)."""
    return validate_benchmark(_load_json(path, "benchmark file"), path)


def write_benchmark(benchmark: Benchmark, path: str | os.PathLike) -> None:
    """Write a benchmark file atomically: keys sorted, lists as given, indented."""
    validate_benchmark(benchmark)
    text = json.dumps(benchmark, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    write_text(text, path)


def read_data(path: str | os.PathLike) -> dict[str, Paper]:
    """Read a data file into ``{paper_id: Paper}``.

    Each non-blank line must be a JSON object with a non-empty string ``paper_id``;
    ``title`` and ``abstract`` must be strings or null (null reads as ``""``). A repeated
    ``paper_id`` is an error. Errors name ``file:line``.
    """
    where = str(path)
    papers: dict[str, Paper] = {}
    try:
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as error:
                    raise InputDataError(
                        f"not a JSON object: {error.msg}", path=where, line=number
                    ) from None
                if not isinstance(record, dict):
                    raise InputDataError("not a JSON object", path=where, line=number)
                paper_id = record.get("paper_id")
                if not isinstance(paper_id, str) or not paper_id:
                    raise InputDataError(
                        f"paper_id is not a non-empty string: {paper_id!r}",
                        path=where,
                        line=number,
                        field="paper_id",
                    )
                texts = []
                for name in ("title", "abstract"):
                    value = record.get(name)
                    if value is not None and not isinstance(value, str):
                        raise InputDataError(
                            f"{name} is not a string: {value!r}",
                            path=where,
                            line=number,
                            field=name,
                        )
                    texts.append(value or "")
                if paper_id in papers:
                    raise InputDataError(
                        f"paper {paper_id!r} is listed twice", path=where, line=number
                    )
                papers[paper_id] = Paper(paper_id, *texts)
    except OSError as error:
        raise InputDataError(f"cannot read the data file: {error.strerror}", path=where) from None
    except UnicodeDecodeError as error:
        raise InputDataError(f"data file is not UTF-8 text: {error}", path=where) from None
    return papers


def write_data(papers: Iterable[Paper], path: str | os.PathLike) -> None:
    """Write a data file atomically: one line per paper, sorted by ``paper_id``."""
    ordered = sorted(papers, key=lambda paper: paper.paper_id)
    with atomic_text(path) as handle:
        for paper in ordered:
            record = {"paper_id": paper.paper_id, "title": paper.title, "abstract": paper.abstract}
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def check_data_covers(
    benchmark: Benchmark, papers: Mapping[str, Paper], data_path: str | os.PathLike | None = None
) -> None:
    """Raise :class:`InputDataError` unless every query and candidate has a data line."""
    missing: list[str] = []
    for field_name, queries in benchmark.items():
        for query_id, candidates in queries.items():
            for kind, ids in [("query", [query_id]), *candidates.items()]:
                missing += [
                    f"{pid} ({field_name}/{query_id}/{kind})" for pid in ids if pid not in papers
                ]
    if missing:
        raise InputDataError(
            f"{len(missing)} papers of the benchmark have no line in the data file, "
            f"first: {', '.join(missing[:5])}",
            path=None if data_path is None else str(data_path),
        )


def load_benchmark(
    benchmark_path: str | os.PathLike, data_path: str | os.PathLike
) -> tuple[Benchmark, dict[str, Paper]]:
    """Import a (published or exported) benchmark file and its data file, checked together."""
    benchmark = read_benchmark(benchmark_path)
    papers = read_data(data_path)
    check_data_covers(benchmark, papers, data_path)
    return benchmark, papers


def summarize(benchmark: Benchmark) -> dict:
    """Counts per field: queries, distinct pairs, and candidates per type (for reports)."""
    summary = {}
    for field_name in sorted(benchmark):
        queries = benchmark[field_name]
        per_type: dict[str, int] = {}
        for candidates in queries.values():
            for kind, ids in candidates.items():
                per_type[kind] = per_type.get(kind, 0) + len(ids)
        summary[field_name] = {
            "queries": len(queries),
            "pairs": sum(1 for _ in iter_pairs({field_name: queries})),
            "candidates_per_type": dict(sorted(per_type.items())),
        }
    return summary


def read_scores(path: str | os.PathLike) -> Scores:
    """Read a scores file; every value must be a finite number (not a boolean)."""
    data = _load_json(path, "scores file")
    if not isinstance(data, dict):
        raise InputDataError(
            'scores file must be a JSON object {"<query_id>_<candidate_id>": score}',
            path=str(path),
        )
    for key, value in data.items():
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise InputDataError(
                f"score is not a finite number: {value!r}", path=str(path), field=key
            )
    return {key: float(value) for key, value in data.items()}


def write_scores(scores: Mapping[str, float], path: str | os.PathLike) -> None:
    """Write a scores file atomically: keys sorted, one pair per line, exact floats."""
    for key, value in scores.items():
        if not math.isfinite(float(value)):
            raise ValueError(f"score of {key!r} is not finite: {value!r}")
    body = ",\n".join(
        f" {json.dumps(key, ensure_ascii=False)}: {float(scores[key])!r}" for key in sorted(scores)
    )
    text = "{\n" + body + "\n}\n" if scores else "{}\n"
    write_text(text, path)


def check_scores_cover(
    benchmark: Benchmark, scores: Mapping[str, float], scores_path: str | os.PathLike | None = None
) -> None:
    """Raise :class:`InputDataError` naming the first pairs the scores file lacks.

    Also refuses a benchmark in which two different pairs share a key (query ``a_b`` with
    candidate ``c`` and query ``a`` with candidate ``b_c``): the scores file could not
    tell them apart.
    """
    owner: dict[str, tuple[str, str]] = {}
    missing = []
    for pair in iter_pairs(benchmark):
        key = score_key(*pair)
        if owner.setdefault(key, pair) != pair:
            raise InputDataError(
                f"pairs {owner[key]} and {pair} share the scores key {key!r}",
                path=None if scores_path is None else str(scores_path),
            )
        if key not in scores:
            missing.append(key)
    if missing:
        raise InputDataError(
            f"no score for {len(missing)} query–candidate pairs, first: "
            + ", ".join(repr(key) for key in missing[:5]),
            path=None if scores_path is None else str(scores_path),
        )
