"""The BEIR folder: ``corpus.jsonl``, ``queries.jsonl``, ``qrels/test.tsv`` and the manifest.

BEIR's ``GenericDataLoader(folder).load(split="test")`` reads exactly these files: one JSON
object per line with ``_id``, ``title`` and ``text`` (corpus) or ``_id`` and ``text``
(queries), and a tab-separated qrels file whose first line is a header it skips. Its
qrels reader is Python's ``csv`` module, so an id holding a tab, a line break or a double
quote would be read back as another id; such ids are refused rather than quoted.

Every file is written in a fixed order (documents and queries by id, qrels by query id then
document id) with fixed JSON separators, inside a temporary folder renamed onto the output
only once everything is written (:func:`citeval.io.atomic_path`): the same inputs give the
same bytes, and an interrupted export never leaves a folder that looks finished.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from citeval.errors import InputDataError
from citeval.io import atomic_path, file_fingerprint

LOG = logging.getLogger(__name__)

CORPUS_FILE = "corpus.jsonl"
QUERIES_FILE = "queries.jsonl"
# BEIR names a qrels file by its split; the exported collection is one evaluation set.
SPLIT = "test"
QRELS_FILE = f"qrels/{SPLIT}.tsv"
QRELS_HEADER = ("query-id", "corpus-id", "score")
MANIFEST_FILE = "manifest.json"
FORMAT_VERSION = 1
# Characters that BEIR's csv-based qrels reader or a JSON-lines reader would split on.
FORBIDDEN_ID_CHARACTERS = ("\t", "\n", "\r", '"')


@dataclass(frozen=True)
class Document:
    """A corpus line: a paper's id, its title and its abstract (``text``)."""

    id: str
    title: str
    text: str


@dataclass(frozen=True)
class Query:
    """A queries line; ``metadata`` (a query's field, a context's citing paper) is written
    as BEIR's optional ``metadata`` object, which its loader ignores."""

    id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


def check_id(value: object, what: str, where: str) -> str:
    """An id BEIR reads back unchanged: a non-empty string without tab, line break or
    double quote."""
    if not isinstance(value, str) or not value:
        raise InputDataError(f"{what} is not a non-empty string: {value!r}", path=where)
    bad = [repr(char) for char in FORBIDDEN_ID_CHARACTERS if char in value]
    if bad:
        raise InputDataError(
            f"{what} {value!r} holds {', '.join(bad)}, which BEIR's files cannot carry",
            path=where,
        )
    return value


def json_line(record: Mapping[str, Any]) -> str:
    # Fixed separators and key order (the record's): the same record, the same bytes.
    return json.dumps(record, ensure_ascii=False, separators=(", ", ": ")) + "\n"


def document_line(document: Document) -> str:
    return json_line({"_id": document.id, "title": document.title, "text": document.text})


def query_line(query: Query) -> str:
    record: dict[str, Any] = {"_id": query.id, "text": query.text}
    if query.metadata:
        record["metadata"] = dict(sorted(query.metadata.items()))
    return json_line(record)


def qrels_lines(qrels: Mapping[str, Mapping[str, int]]) -> Iterable[str]:
    yield "\t".join(QRELS_HEADER) + "\n"
    for query_id in sorted(qrels):
        for doc_id in sorted(qrels[query_id]):
            yield f"{query_id}\t{doc_id}\t{int(qrels[query_id][doc_id])}\n"


def write_corpus(
    documents: Iterable[Document], path: Path, total: int | None, where: str
) -> tuple[set[str], int]:
    """Write the corpus lines; return the ids written and how many documents had no text.

    Documents must come in strictly increasing id order: that is the file's order, and it
    makes a repeated id (two lines BEIR would silently merge) an error.
    """
    ids: set[str] = set()
    previous: str | None = None
    empty = 0
    with (
        open(path, "w", encoding="utf-8", newline="\n") as handle,
        tqdm(total=total, desc="corpus", unit="doc", mininterval=2) as bar,
    ):
        for document in documents:
            check_id(document.id, "document id", where)
            if previous is not None and document.id <= previous:
                raise InputDataError(
                    f"document {document.id!r} comes after {previous!r}: documents must be "
                    "unique and in id order",
                    path=where,
                )
            previous = document.id
            ids.add(document.id)
            empty += not (document.title or document.text)
            handle.write(document_line(document))
            bar.update(1)
    return ids, empty


def check_qrels(
    qrels: Mapping[str, Mapping[str, int]],
    query_ids: set[str],
    document_ids: set[str],
    where: str,
) -> None:
    """Every judged query is a query and every judged document a corpus document: BEIR's
    loader looks each judged query up (a missing one is a KeyError there), and a judged
    document outside the corpus could never be retrieved."""
    for query_id in sorted(qrels):
        if query_id not in query_ids:
            raise InputDataError(f"qrels query {query_id!r} is not among the queries", path=where)
        outside = sorted(set(qrels[query_id]) - document_ids)
        if outside:
            raise InputDataError(
                f"{len(outside)} judged documents of query {query_id!r} are not in the corpus "
                f"(e.g. {', '.join(map(repr, outside[:5]))})",
                path=where,
            )


def write_beir_folder(
    output: str | os.PathLike,
    documents: Iterable[Document],
    queries: Sequence[Query],
    qrels: Mapping[str, Mapping[str, int]],
    manifest: Mapping[str, Any],
    *,
    n_documents: int | None = None,
    where: str = "",
) -> dict[str, Any]:
    """Write a BEIR folder at ``output`` (replacing an earlier export there) and return
    its manifest: ``manifest`` plus the counts and the SHA-256 of each data file.

    ``documents`` (streamed, in id order) become the corpus; ``queries`` (in id order) and
    ``qrels`` are checked against each other and the corpus before the folder is renamed
    into place. ``where`` names the input in errors.
    """
    if Path(output).exists() and not Path(output).is_dir():
        # An export replaces a folder of an earlier export, never a file of another kind.
        raise InputDataError(
            "the output is a file, not a folder: remove it or name another path", path=str(output)
        )
    query_ids = [check_id(query.id, "query id", where) for query in queries]
    if query_ids != sorted(set(query_ids)):
        raise InputDataError("query ids must be unique and in id order", path=where)
    for query_id, docs in qrels.items():
        check_id(query_id, "qrels query id", where)
        for doc_id in docs:
            check_id(doc_id, "qrels document id", where)
    with atomic_path(output) as folder:
        (folder / "qrels").mkdir(parents=True)
        document_ids, empty = write_corpus(documents, folder / CORPUS_FILE, n_documents, where)
        if not document_ids:
            raise InputDataError("the corpus is empty: no document to export", path=where)
        check_qrels(qrels, set(query_ids), document_ids, where)
        with open(folder / QUERIES_FILE, "w", encoding="utf-8", newline="\n") as handle:
            handle.writelines(query_line(query) for query in queries)
        with open(folder / QRELS_FILE, "w", encoding="utf-8", newline="\n") as handle:
            handle.writelines(qrels_lines(qrels))
        judged = [score for docs in qrels.values() for score in docs.values()]
        counts = {
            "documents": len(document_ids),
            "documents_without_text": empty,
            "queries": len(queries),
            "queries_without_text": sum(not query.text for query in queries),
            "judged_queries": sum(1 for docs in qrels.values() if docs),
            "queries_with_relevant": sum(
                1 for docs in qrels.values() if any(score > 0 for score in docs.values())
            ),
            "qrels": len(judged),
            "relevant": sum(score > 0 for score in judged),
        }
        files = {
            name: file_fingerprint(folder / name)
            for name in (CORPUS_FILE, QUERIES_FILE, QRELS_FILE)
        }
        record = {
            **manifest,
            "format": "beir",
            "format_version": FORMAT_VERSION,
            "split": SPLIT,
            "counts": counts,
            "files": files,
        }
        text = json.dumps(record, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        (folder / MANIFEST_FILE).write_text(text, encoding="utf-8", newline="\n")
    LOG.info(
        "wrote %s: %d documents, %d queries, %d judgements (%d relevant)",
        output,
        counts["documents"],
        counts["queries"],
        counts["qrels"],
        counts["relevant"],
    )
    return record
