"""BM25's analyzed corpus: every paper analyzed once, for all the pools that hold it.

A split's pools overlap heavily: the dataset level's largest pools hold most of the
prefiltered corpus, once per repetition, and each smaller pool holds the same papers
again. Analyzing each pool's papers anew repeats most of the work, so ``python -m
citeval.bm25 analyze`` runs Anserini's analyzer (:class:`citeval.impacts.Analyzer`) once
over the corpus, and a pool's impact matrix (:mod:`citeval.impacts`) is cut from the
result: its rows are the pool's papers, its columns the terms they hold. Document
frequencies, lengths and norms follow from those rows exactly as Lucene computes them for
an index of the same papers (``tests/test_bm25.py`` compares the searchers run for run).

Layout (written atomically as one folder)::

    meta.json       format version, analyzer, n_papers, n_rows, n_terms, n_postings
    papers.parquet  paper_id, row (int32; null for a paper with neither title nor abstract)
    terms.parquet   term: the analyzed term of each term number
    indptr.npy      int64, n_rows + 1: row r's postings are [indptr[r], indptr[r + 1])
    terms.bin       int32 (raw), term numbers, ascending within a row
    freqs.bin       int32 (raw), term frequencies
    lengths.npy     int32, analyzed tokens per row (stop words removed)
    norms.npy       uint8, Lucene's one-byte norm of each row's length

Memory: analyzing holds the vocabulary, 12 bytes per paper and one batch of postings; the
postings go to disk as they come. Cutting a pool reads only its rows' postings and holds
them twice (doc-major, then term-major), 16 bytes per posting.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numba
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from citeval import impacts
from citeval.errors import InputDataError
from citeval.io import atomic_path

FORMAT_VERSION = 1
META = "meta.json"
PAPERS = "papers.parquet"
PAPERS_SCHEMA = pa.schema([("paper_id", pa.string()), ("row", pa.int32())])


def write_analyzed_corpus(
    papers: Iterable[tuple[str, str]],
    output_dir: str | os.PathLike,
    n_papers: int | None = None,
    threads: int = 1,
) -> dict[str, Any]:
    """Analyze ``(paper_id, text)`` pairs into ``output_dir``; return its metadata.

    Papers with an empty text get no row (nothing could match them); ``papers.parquet``
    lists them with a null row, so that a pool holding one can say so.
    """
    vocabulary: dict[str, int] = {}
    row_ends: list[np.ndarray] = []
    lengths: list[np.ndarray] = []
    without_text: list[str] = []
    n_postings = 0

    def with_text() -> Iterator[tuple[str, str]]:
        for paper_id, text in papers:
            if text:
                yield paper_id, text
            else:
                without_text.append(paper_id)

    with atomic_path(output_dir) as tmp:
        tmp.mkdir()
        with (
            pq.ParquetWriter(tmp / PAPERS, PAPERS_SCHEMA) as paper_rows,
            open(tmp / "terms.bin", "wb") as terms_out,
            open(tmp / "freqs.bin", "wb") as freqs_out,
            tqdm(total=n_papers, desc="analyze", unit="paper", mininterval=2) as bar,
        ):
            n_rows = 0
            for batch in impacts.analyzed_postings(with_text(), vocabulary, threads):
                rows = np.arange(n_rows, n_rows + len(batch.ids), dtype=np.int32)
                paper_rows.write_table(
                    pa.table({"paper_id": batch.ids, "row": rows}, PAPERS_SCHEMA)
                )
                batch.terms.tofile(terms_out)
                batch.freqs.tofile(freqs_out)
                row_ends.append(batch.indptr[1:] + n_postings)
                lengths.append(batch.lengths.astype(np.int32))
                n_rows += len(batch.ids)
                n_postings += int(batch.indptr[-1])
                bar.update(n_rows + len(without_text) - bar.n)
            if without_text:
                paper_rows.write_table(
                    pa.table(
                        {"paper_id": without_text, "row": pa.nulls(len(without_text), pa.int32())},
                        PAPERS_SCHEMA,
                    )
                )
        indptr = np.concatenate([np.zeros(1, np.int64), *row_ends])
        all_lengths = np.concatenate([np.zeros(0, np.int32), *lengths])
        np.save(tmp / "indptr.npy", indptr)
        np.save(tmp / "lengths.npy", all_lengths)
        np.save(tmp / "norms.npy", impacts.lucene_norm_codes(all_lengths))
        pq.write_table(pa.table({"term": list(vocabulary)}), tmp / "terms.parquet")
        meta = {
            "format_version": FORMAT_VERSION,
            "analyzer": impacts.ANALYZER_NAME,
            "n_papers": n_rows + len(without_text),
            "n_rows": n_rows,
            "n_without_text": len(without_text),
            "n_terms": len(vocabulary),
            "n_postings": n_postings,
        }
        (tmp / META).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return meta


@numba.njit(cache=True)
def _gather_rows(indptr, terms, freqs, rows, out_indptr, out_terms, out_freqs):
    """Copy the postings of ``rows``, in that order, into the ``out_`` arrays."""
    position = 0
    for i in range(rows.size):
        start, end = indptr[rows[i]], indptr[rows[i] + 1]
        out_terms[position : position + end - start] = terms[start:end]
        out_freqs[position : position + end - start] = freqs[start:end]
        position += end - start
        out_indptr[i + 1] = position


class AnalyzedCorpus:
    """An analyzed corpus written by :func:`write_analyzed_corpus`, read lazily."""

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder)
        try:
            self.meta = json.loads((self.folder / META).read_text())
        except FileNotFoundError:
            raise InputDataError(
                "not an analyzed corpus (no meta.json); build it with "
                "`python -m citeval.bm25 analyze`",
                path=str(self.folder),
            ) from None
        if self.meta.get("format_version") != FORMAT_VERSION:
            raise InputDataError(
                f"analyzed corpus format {self.meta.get('format_version')}, this citeval reads "
                f"{FORMAT_VERSION}; analyze the corpus again",
                path=str(self.folder),
            )
        self.papers_path = self.folder / PAPERS

    def pool_matrix(self, rows: np.ndarray) -> tuple[Any, np.ndarray, np.ndarray]:
        """The CSR term-frequency matrix of ``rows`` (row ``i`` is ``rows[i]``), with their
        lengths and norms."""
        indptr = np.load(self.folder / "indptr.npy", mmap_mode="r")
        terms = np.memmap(self.folder / "terms.bin", dtype=np.int32, mode="r")
        freqs = np.memmap(self.folder / "freqs.bin", dtype=np.int32, mode="r")
        if terms.size != indptr[-1] or freqs.size != indptr[-1]:
            raise InputDataError("analyzed corpus is truncated", path=str(self.folder))
        rows = np.asarray(rows, dtype=np.int64)
        sizes = indptr[rows + 1] - indptr[rows]
        out_indptr = np.zeros(rows.size + 1, dtype=np.int64)
        n_postings = int(sizes.sum())
        out_terms = np.empty(n_postings, dtype=np.int32)
        out_freqs = np.empty(n_postings, dtype=np.int32)
        _gather_rows(np.asarray(indptr), terms, freqs, rows, out_indptr, out_terms, out_freqs)
        lengths = np.load(self.folder / "lengths.npy", mmap_mode="r")[rows]
        norms = np.load(self.folder / "norms.npy", mmap_mode="r")[rows]
        matrix = impacts.doc_matrix(out_indptr, out_terms, out_freqs, int(self.meta["n_terms"]))
        return matrix, lengths, norms

    def term_names(self, numbers: np.ndarray) -> list[str]:
        """The analyzed terms of the given term numbers."""
        column = pq.read_table(self.folder / "terms.parquet", columns=["term"]).column("term")
        return column.take(pa.array(numbers, pa.int64())).to_pylist()
