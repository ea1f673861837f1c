"""TREC run and qrels files: reading, writing and trec_eval's ranking order.

In memory a run is ``{query_id: {doc_id: score}}`` and qrels are
``{query_id: {doc_id: relevance}}``. On disk:

* run lines are ``qid Q0 docid rank score tag``: queries in sorted (string) order, each
  query's documents in :func:`rank_documents` order, ``rank`` counting from 1;
* qrels lines are ``qid 0 docid rel``, sorted by (qid, docid).

A query with no documents writes no lines, so it is absent when the file is read back;
evaluate such runs with ``missing_as_zero`` (see :mod:`citeval.metrics`) to count it as 0.

Scores are written with ``repr(float(score))``, Python's shortest string that parses back
to the same float64. A float32 score widens to float64 exactly, so writing and reading a
run gives back the very same scores, hence the same ranking, and the same input always
gives the same bytes. A fixed ``%.Ng`` format would either lose float64 digits or print
noise digits for float32 values.
"""

from __future__ import annotations

import heapq
import math
import os
from collections.abc import Iterable, Iterator, Mapping

from citeval.errors import InputDataError
from citeval.io import atomic_text, write_text

Run = dict[str, dict[str, float]]
Qrels = dict[str, dict[str, int]]

RUN_FIELDS = 6
QRELS_FIELDS = 4


def rank_documents(scores: Mapping[str, float], k: int | None = None) -> list[tuple[str, float]]:
    """Return ``(doc_id, score)`` pairs in trec_eval's order, keeping the top ``k``.

    trec_eval sorts by score descending and breaks ties by document id descending, as
    strings (``"9"`` comes before ``"10"``). Python's ``str`` order is code-point order,
    which is the same as trec_eval's ``strcmp`` on UTF-8 bytes.

    Raises ``ValueError`` on a NaN score, which has no place in any order.
    """
    if k is not None and k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    # (score, doc_id) tuples compare natively, which sorts far faster than a key function;
    # doc ids are unique, so the order is total and needs no stability guarantee.
    values = list(map(float, scores.values()))
    # One C-level sum flags any NaN (it also flags inf + -inf, which the exact check clears).
    if math.isnan(sum(values)) and any(math.isnan(v) for v in values):
        bad = sorted(doc_id for doc_id, v in zip(scores, values, strict=True) if math.isnan(v))
        raise ValueError(f"NaN score for document(s) {bad[:5]}")
    keyed = list(zip(values, scores, strict=True))
    # A heap pays off only when k is a small part of the input; a search run keeps k of
    # k + 1 hits, where one C sort is several times faster.
    if k is not None and 2 * k < len(keyed):
        top = heapq.nlargest(k, keyed)
    else:
        top = sorted(keyed, reverse=True)[:k]
    return [(doc_id, score) for score, doc_id in top]


def check_token(value: str, what: str) -> None:
    # Exactly the splitting that reading applies, so what passes here reads back intact.
    if value.split() != [value]:
        raise ValueError(f"{what} must be non-empty and contain no whitespace: {value!r}")


def _check_tokens(values: Iterable[str], what: str) -> None:
    values = list(values)
    # A separator-free join splits into one piece only if no value holds whitespace;
    # checking one joined string per query is much cheaper than one check per value.
    joined = "".join(values)
    if "" in values or joined.split() != [joined]:
        for value in values:
            check_token(value, what)


def format_run(run: Mapping[str, Mapping[str, float]], tag: str, k: int | None = None) -> str:
    """Return the TREC text of ``run`` (see the module docstring for the layout).

    Scores are written as ``repr(float(score))``; see the module docstring.
    """
    check_token(tag, "run tag")
    lines: list[str] = []
    for qid in sorted(run):
        check_token(qid, "query id")
        docs = run[qid]
        _check_tokens(docs, "document id")
        # rank_documents hands back Python floats, so !r is the round-tripping repr.
        lines += [
            f"{qid} Q0 {doc_id} {rank} {score!r} {tag}\n"
            for rank, (doc_id, score) in enumerate(rank_documents(docs, k), start=1)
        ]
    return "".join(lines)


def write_run(
    run: Mapping[str, Mapping[str, float]],
    path: str | os.PathLike,
    tag: str,
    k: int | None = None,
) -> None:
    """Write ``run`` atomically as a TREC run file, at most ``k`` lines per query."""
    text = format_run(run, tag, k)
    write_text(text, path)


def _lines(path: str | os.PathLike) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line_number, fields)`` for the non-blank lines of ``path``."""
    try:
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                fields = line.split()
                if fields:
                    yield number, fields
    except UnicodeDecodeError as error:
        raise InputDataError(f"not UTF-8 text: {error}", path=str(path)) from error
    except OSError as error:
        raise InputDataError(f"cannot read: {error.strerror}", path=str(path)) from error


def first_line(
    path: str | os.PathLike, qid: str, doc_id: str | None = None, doc_field: int = 2
) -> int | None:
    """Line number of the first line of ``path`` holding ``qid`` (and ``doc_id`` in field
    ``doc_field``, when given); None when there is none.

    Only used to word an error, so re-reading the file is cheaper overall than tracking
    the line of every pair while reading.
    """
    for number, fields in _lines(path):
        if len(fields) > doc_field and fields[0] == qid and doc_id in (None, fields[doc_field]):
            return number
    return None


def read_run(path: str | os.PathLike) -> Run:
    """Read a TREC run file into ``{qid: {docid: score}}``.

    The ``Q0``, rank and tag columns are checked for presence (rank must be an integer)
    but otherwise ignored, as trec_eval ignores them: the score alone decides the order.
    Raises :class:`InputDataError` naming ``file:line`` on a line without six fields, a
    non-integer rank, a score that does not parse as a number (or is NaN), or a repeated
    (qid, docid) pair.
    """
    where = str(path)
    run: Run = {}
    # Run files hold each query's lines together, so keep the current query's dict at
    # hand rather than looking it up on every line.
    qid_now: str | None = None
    docs: dict[str, float] = {}
    for number, fields in _lines(path):
        if len(fields) != RUN_FIELDS:
            raise InputDataError(
                f"expected {RUN_FIELDS} fields 'qid Q0 docid rank score tag', got {len(fields)}",
                path=where,
                line=number,
            )
        qid, _, doc_id, rank_text, score_text, _ = fields
        try:
            int(rank_text)
        except ValueError:
            raise InputDataError(
                f"rank is not an integer: {rank_text!r}", path=where, line=number, field="rank"
            ) from None
        try:
            score = float(score_text)
        except ValueError:
            score = math.nan
        if score != score:
            raise InputDataError(
                f"score is not a number: {score_text!r}", path=where, line=number, field="score"
            )
        if qid != qid_now:
            docs = run.setdefault(qid, {})
            qid_now = qid
        if doc_id in docs:
            raise InputDataError(
                f"duplicate document {doc_id!r} for query {qid!r} "
                f"(first at line {first_line(path, qid, doc_id)})",
                path=where,
                line=number,
            )
        docs[doc_id] = score
    return run


def format_qrels(qrels: Mapping[str, Mapping[str, int]]) -> str:
    """Return the TREC text of ``qrels``: ``qid 0 docid rel`` sorted by (qid, docid)."""
    lines: list[str] = []
    for qid in sorted(qrels):
        check_token(qid, "query id")
        for doc_id in sorted(qrels[qid]):
            check_token(doc_id, "document id")
            lines.append(f"{qid} 0 {doc_id} {int(qrels[qid][doc_id])}\n")
    return "".join(lines)


def write_qrels(qrels: Mapping[str, Mapping[str, int]], path: str | os.PathLike) -> None:
    """Write ``qrels`` atomically as a TREC qrels file."""
    write_qrels_chunks([qrels], path)


def write_qrels_chunks(
    chunks: Iterable[Mapping[str, Mapping[str, int]]], path: str | os.PathLike
) -> None:
    """Write qrels that arrive in chunks atomically, one chunk in memory at a time.

    Each chunk is formatted as :func:`format_qrels` does; the file is sorted as a whole
    when every query id of a chunk sorts after those of the chunks before it.
    """
    with atomic_text(path) as handle:
        for chunk in chunks:
            handle.write(format_qrels(chunk))


def read_qrels(path: str | os.PathLike) -> Qrels:
    """Read a TREC qrels file into ``{qid: {docid: rel}}``.

    Raises :class:`InputDataError` naming ``file:line`` on a line without four fields, a
    non-integer relevance, or a repeated (qid, docid) pair.
    """
    where = str(path)
    qrels: Qrels = {}
    for number, fields in _lines(path):
        if len(fields) != QRELS_FIELDS:
            raise InputDataError(
                f"expected {QRELS_FIELDS} fields 'qid iter docid rel', got {len(fields)}",
                path=where,
                line=number,
            )
        qid, _, doc_id, rel_text = fields
        try:
            rel = int(rel_text)
        except ValueError:
            raise InputDataError(
                f"relevance is not an integer: {rel_text!r}", path=where, line=number, field="rel"
            ) from None
        docs = qrels.setdefault(qid, {})
        if doc_id in docs:
            raise InputDataError(
                f"duplicate judgement of {doc_id!r} for query {qid!r} "
                f"(first at line {first_line(path, qid, doc_id)})",
                path=where,
                line=number,
            )
        docs[doc_id] = rel
    return qrels
