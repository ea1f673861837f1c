"""Lucene's BM25, scored in bulk from an impact matrix stored in the index folder.

Lucene answers a disjunctive query of a whole abstract's terms by walking every posting
list through its scorer tree, one document at a time; at k = 500 its dynamic pruning skips
little, so it is slower than bm25s's sparse-matrix arithmetic (docs/benchmarks.md). This
module does bm25s's arithmetic on Lucene's numbers, so that a run is the run Lucene would
give, score for score:

* **The same terms.** Documents and queries go through the analyzer that built the index
  (Anserini's ``DefaultEnglishAnalyzer``, called in the JVM); a query is Anserini's bag
  of words, one clause per distinct term boosted by its count.
* **The same statistics.** ``docCount`` (documents with at least one term),
  ``sumTotalTermFreq``, document frequencies and the one-byte length norms are computed
  from those tokens. A pool's matrix is cut from the corpus analyzed once
  (:mod:`citeval.analyzed`); where a Lucene index is built beside it, or the matrix is
  built for an existing one (:func:`build_impacts`), every collection statistic and a
  seeded sample of terms and of norms are checked against Lucene's, and any difference
  is an error.
* **The same arithmetic.** Lucene's ``BM25Similarity`` in float32: ``idf`` as
  ``(float) log(1 + (N - n + 0.5) / (n + 0.5))``, the 256-entry table
  ``1 / (k1 * (1 - b + b * length / avgdl))`` indexed by the norm byte, and per posting
  ``w - w / (1 + tf * table[norm])`` with ``w = boost * idf``; a document's clause scores
  are summed in float64 and rounded to float32, as Lucene's disjunction scorers do. On the
  test and benchmark pools every score equals Lucene's bit for bit.
* **The same order.** Hits come score descending, ties by Lucene doc number ascending,
  and carry the index's paper ids, so :func:`citeval.bm25.search.search_queries` (self
  exclusion, trec_eval's tie order at the cut) treats both searchers alike.

Layout (inside the index folder, written atomically as one sub-folder)::

    citeval-impacts/
        meta.json     n_docs, doc_count, n_terms, n_postings, sum_total_term_freq, analyzer,
                      format version
        terms.txt     one analyzed term per line (analyzed terms hold no whitespace)
        indptr.npy    int64, n_terms + 1: term t's postings are [indptr[t], indptr[t+1])
        docs.npy      int32, doc numbers (Lucene's, where there is a Lucene index), ascending
                      within each term
        freqs.npy     int32, term frequencies
        norms.npy     uint8, Lucene's length norm of each document

Memory: writing a matrix holds its postings twice (doc-major, then term-major, 8 bytes
per posting each) plus the vocabulary; searching holds 12 bytes per posting (float32
impacts and divisors, int32 doc numbers) plus one float64 score per document per
searching thread.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import numba
import numpy as np
from tqdm import tqdm

from citeval import lucene
from citeval.io import atomic_path

LOG = logging.getLogger(__name__)

IMPACTS_DIR = "citeval-impacts"
FORMAT_VERSION = 1
ANALYZER_NAME = "io.anserini.analysis.DefaultEnglishAnalyzer (default instance)"

# Texts analyzed per JNI call, joined by a break token: one call per text cost ~4x more.
ANALYZE_BATCH = 2000
# Survives the analyzer unchanged (lower case, no stop word, no Porter suffix); a batch
# whose text holds it anyway is analyzed again one text at a time.
TEXT_BREAK = "qqcitevaltextbreakqq"
# Terms and documents whose statistics are compared with the Lucene index at build time.
VERIFY_SAMPLE = 256

F32 = np.float32


class ImpactsError(lucene.LuceneError):
    """The impact matrix is missing, unreadable, or disagrees with its Lucene index."""


# --- analysis ----------------------------------------------------------------------------


class Analyzer:
    """Anserini's default analyzer, called on many texts per JNI round trip."""

    def __init__(self) -> None:
        self._analyzer = lucene.autoclass(
            "io.anserini.analysis.DefaultEnglishAnalyzer"
        ).newDefaultInstance()
        self._utils = lucene.autoclass("io.anserini.analysis.AnalyzerUtils")
        self._objects = lucene.autoclass("java.util.Objects")

    def _tokens(self, text: str) -> list[str]:
        # A list's toString() is "[a, b]": one string across JNI instead of one per token,
        # and analyzed terms never hold whitespace, so ", " separates them unambiguously.
        # Only static methods are called: pyjnius binds an instance method to its object
        # through state that all objects of the class share, which races across threads.
        tokens = self._utils.analyze(self._analyzer, text)
        joined = self._objects.toString(tokens)[1:-1]
        return joined.split(", ") if joined else []

    def analyze(self, texts: Sequence[str]) -> list[list[str]]:
        """The analyzed terms of each text, in order."""
        with lucene.java_errors("analyzing text"):
            tokens = self._tokens(f" {TEXT_BREAK} ".join(texts)) if texts else []
            per_text: list[list[str]] = [[]]
            for token in tokens:
                if token == TEXT_BREAK:
                    per_text.append([])
                else:
                    per_text[-1].append(token)
            if len(per_text) == len(texts):
                return per_text
            return [self._tokens(text) for text in texts]


def _analyzed_batches(texts: Iterable[Sequence[str]], threads: int) -> Iterator[list[list[str]]]:
    """Analyze batches of texts on ``threads`` threads, yielding results in input order."""
    analyzer = Analyzer()

    def work(batch: Sequence[str]) -> list[list[str]]:
        import jnius

        try:
            return analyzer.analyze(batch)
        finally:
            if threading.current_thread() is not threading.main_thread():
                jnius.detach()

    if threads <= 1:
        yield from map(analyzer.analyze, texts)
        return
    with ThreadPoolExecutor(threads) as pool:
        # A bounded window of batches in flight keeps memory flat on large pools.
        pending: list[Any] = []
        for batch in texts:
            pending.append(pool.submit(work, batch))
            if len(pending) > 2 * threads:
                yield pending.pop(0).result()
        for future in pending:
            yield future.result()


# --- building ----------------------------------------------------------------------------


def lucene_norm_codes(lengths: np.ndarray) -> np.ndarray:
    """Lucene's one-byte norm (``SmallFloat.intToByte4``) of each document length."""
    small_float = lucene.autoclass("org.apache.lucene.util.SmallFloat")
    distinct, inverse = np.unique(lengths, return_inverse=True)
    codes = np.array([small_float.intToByte4(int(n)) & 0xFF for n in distinct], dtype=np.uint8)
    return codes[inverse]


def _length_table() -> np.ndarray:
    """The document length each norm byte stands for (Lucene's ``LENGTH_TABLE``)."""
    small_float = lucene.autoclass("org.apache.lucene.util.SmallFloat")
    return np.array(
        [small_float.byte4ToInt(code - 256 if code > 127 else code) for code in range(256)],
        dtype=F32,
    )


def _batches(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


class PostingsBatch(NamedTuple):
    """Doc-major postings of a batch of documents: document ``i`` holds the terms
    ``terms[indptr[i]:indptr[i + 1]]`` (ascending term numbers) with their frequencies."""

    ids: list[str]
    lengths: np.ndarray  # int64: analyzed tokens per document, stop words removed
    indptr: np.ndarray  # int64, len(ids) + 1
    terms: np.ndarray  # int32
    freqs: np.ndarray  # int32


def analyzed_postings(
    documents: Iterable[tuple[str, str]], vocabulary: dict[str, int], threads: int = 1
) -> Iterator[PostingsBatch]:
    """Analyze ``(doc_id, text)`` pairs into doc-major postings, in input order.

    Terms are numbered in ``vocabulary`` (term -> number), which new terms are added to.
    """
    id_batches: list[list[str]] = []

    def texts() -> Iterator[list[str]]:
        for batch in _batches(documents, ANALYZE_BATCH):
            id_batches.append([doc_id for doc_id, _ in batch])
            yield [text for _, text in batch]

    for batch_tokens in _analyzed_batches(texts(), threads):
        ids = id_batches.pop(0)
        lengths = np.fromiter(map(len, batch_tokens), np.int64, len(batch_tokens))
        term_ids = np.fromiter(
            (vocabulary.setdefault(t, len(vocabulary)) for tokens in batch_tokens for t in tokens),
            np.int64,
            int(lengths.sum()),
        )
        # One sort per batch turns tokens into (document, term, frequency) postings.
        keys, freqs = np.unique(
            (np.repeat(np.arange(len(ids), dtype=np.int64), lengths) << 32) | term_ids,
            return_counts=True,
        )
        indptr = np.zeros(len(ids) + 1, dtype=np.int64)
        np.cumsum(np.bincount(keys >> 32, minlength=len(ids)), out=indptr[1:])
        yield PostingsBatch(
            ids, lengths, indptr, (keys & 0xFFFFFFFF).astype(np.int32), freqs.astype(np.int32)
        )


def doc_matrix(indptr: np.ndarray, terms: np.ndarray, freqs: np.ndarray, n_terms: int) -> Any:
    """Doc-major postings as a SciPy CSR matrix (documents x terms) of term frequencies."""
    from scipy import sparse

    # SciPy casts the term numbers to the index type of indptr: int32 while it fits keeps
    # them uncopied.
    if indptr[-1] <= np.iinfo(np.int32).max and n_terms <= np.iinfo(np.int32).max:
        indptr = indptr.astype(np.int32)
    return sparse.csr_matrix((freqs, terms, indptr), shape=(indptr.size - 1, n_terms), copy=False)


def write_impacts(
    index_dir: str | os.PathLike,
    matrix: Any,
    term_names: Callable[[np.ndarray], list[str]],
    lengths: np.ndarray,
    norms: np.ndarray,
    verify: bool,
) -> dict[str, Any]:
    """Write the impact matrix of ``matrix`` (CSR, row ``i`` = doc number ``i``) into
    ``index_dir``; return its metadata.

    ``term_names`` gives the names of the given term numbers; terms of no document are
    left out. ``lengths`` and ``norms`` are per document. With ``verify``, ``index_dir``
    is a Lucene index whose statistics the matrix must match (:func:`verify_against_lucene`).
    """
    index_path = Path(index_dir)
    # Term-major postings, each list in ascending doc number (Lucene's order).
    by_term = matrix.tocsc()
    used = np.flatnonzero(np.diff(by_term.indptr))
    indptr = np.zeros(used.size + 1, dtype=np.int64)
    indptr[1:] = by_term.indptr[used + 1]
    docs = by_term.indices.astype(np.int32, copy=False)
    freqs = by_term.data.astype(np.int32, copy=False)
    del by_term
    terms = term_names(used)
    meta = {
        "format_version": FORMAT_VERSION,
        "analyzer": ANALYZER_NAME,
        "n_docs": int(lengths.size),
        # Documents with at least one term: Lucene's docCount, which idf and avgdl use (a
        # text of stop words only is indexed without terms).
        "doc_count": int(np.count_nonzero(lengths)),
        "n_terms": len(terms),
        "n_postings": int(docs.size),
        "sum_total_term_freq": int(lengths.sum()),
    }
    if verify:
        verify_against_lucene(index_path, meta, terms, indptr, norms)
    with atomic_path(index_path / IMPACTS_DIR) as tmp:
        tmp.mkdir()
        (tmp / "terms.txt").write_text("".join(f"{t}\n" for t in terms), encoding="utf-8")
        for name, array in (("indptr", indptr), ("docs", docs), ("freqs", freqs), ("norms", norms)):
            np.save(tmp / f"{name}.npy", array)
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    LOG.info(
        "impact matrix: %d documents, %d terms, %d postings", lengths.size, len(terms), docs.size
    )
    return meta


def build_impacts(
    index_dir: str | os.PathLike,
    documents: Iterable[tuple[str, str]],
    n_documents: int | None = None,
    threads: int = 1,
) -> dict[str, Any]:
    """Build and verify the impact matrix of the Lucene index at ``index_dir``.

    ``documents`` yields ``(paper_id, text)`` for exactly the documents indexed, with the
    texts given to Lucene. Returns the matrix's metadata.
    """
    index_path = Path(index_dir)
    docids = _docids(index_path)
    doc_numbers = {doc_id: number for number, doc_id in enumerate(docids)}
    vocabulary: dict[str, int] = {}
    batches: list[PostingsBatch] = []
    with tqdm(total=n_documents, desc="impacts", unit="doc", mininterval=2) as bar:
        for batch in analyzed_postings(documents, vocabulary, threads):
            batches.append(batch)
            bar.update(len(batch.ids))
    ids = [doc_id for batch in batches for doc_id in batch.ids]
    try:
        numbers = np.array([doc_numbers[doc_id] for doc_id in ids], dtype=np.int64)
    except KeyError as error:
        raise ImpactsError(
            f"document {error.args[0]!r} is not in the Lucene index {index_path}"
        ) from None
    distinct, first = np.unique(numbers, return_index=True)
    if distinct.size < numbers.size:
        twice = np.setdiff1d(np.arange(numbers.size), first)[0]
        raise ImpactsError(f"document {ids[int(twice)]!r} was given twice")
    if distinct.size < len(docids):
        missing = np.setdiff1d(np.arange(len(docids)), distinct)
        raise ImpactsError(
            f"{missing.size} of {len(docids)} documents of the Lucene index {index_path} were "
            f"not given (e.g. Lucene doc {int(missing[0])})"
        )
    offsets = np.cumsum([0] + [int(batch.indptr[-1]) for batch in batches])[:-1]
    indptr = np.concatenate(
        [[0]] + [batch.indptr[1:] + offset for batch, offset in zip(batches, offsets, strict=True)]
    ).astype(np.int64)
    matrix = doc_matrix(
        indptr,
        np.concatenate([b.terms for b in batches] or [np.zeros(0, np.int32)]),
        np.concatenate([b.freqs for b in batches] or [np.zeros(0, np.int32)]),
        len(vocabulary),
    )
    lengths = np.concatenate([b.lengths for b in batches] or [np.zeros(0, np.int64)])
    del batches
    # Rows into Lucene's doc number order (a multi-threaded index numbers documents in
    # another order than the collection's).
    order = np.argsort(numbers)
    names = np.array(list(vocabulary), dtype=object)
    return write_impacts(
        index_path,
        matrix[order],
        lambda used: names[used].tolist(),
        lengths[order],
        lucene_norm_codes(lengths[order]),
        verify=True,
    )


def _docids(index_path: Path) -> list[str]:
    docids = lucene.read_docids(index_path)
    if docids is None:
        raise ImpactsError(f"{index_path} has no {lucene.DOCIDS_FILE}; rebuild the index")
    return docids


def verify_against_lucene(
    index_path: Path,
    meta: dict[str, Any],
    terms: Sequence[str],
    indptr: np.ndarray,
    norms: np.ndarray,
) -> None:
    """Fail unless the matrix's statistics are the Lucene index's own.

    Checks the document counts and the total term frequency, and, for a seeded sample of
    terms and documents, document frequencies and length norms.
    """
    reader = lucene.open_reader(index_path)
    field = lucene.CONTENTS_FIELD
    problems: list[str] = []
    try:
        with lucene.java_errors(f"reading statistics of {index_path}"):
            expected = {
                "n_docs": int(reader.maxDoc()),
                "doc_count": int(reader.getDocCount(field)),
                "sum_total_term_freq": int(reader.getSumTotalTermFreq(field)),
            }
            for key, value in expected.items():
                if meta[key] != value:
                    problems.append(f"{key}: Lucene {value}, matrix {meta[key]}")
            rng = np.random.default_rng(0)
            term_class = lucene.autoclass("org.apache.lucene.index.Term")
            for t in rng.choice(len(terms), min(VERIFY_SAMPLE, len(terms)), replace=False):
                lucene_df = int(reader.docFreq(term_class(field, terms[t])))
                if lucene_df != indptr[t + 1] - indptr[t]:
                    problems.append(
                        f"docFreq({terms[t]!r}): Lucene {lucene_df}, matrix "
                        f"{indptr[t + 1] - indptr[t]}"
                    )
            lucene_norms = lucene.autoclass("org.apache.lucene.index.MultiDocValues").getNormValues(
                reader, field
            )
            for doc in np.sort(
                rng.choice(norms.size, min(VERIFY_SAMPLE, norms.size), replace=False)
            ):
                if not lucene_norms.advanceExact(int(doc)):
                    problems.append(f"Lucene doc {doc} has no norm")
                elif int(lucene_norms.longValue()) & 0xFF != norms[doc]:
                    problems.append(
                        f"norm of Lucene doc {doc}: Lucene "
                        f"{int(lucene_norms.longValue()) & 0xFF}, matrix {norms[doc]}"
                    )
    finally:
        reader.close()
    if problems:
        shown = "; ".join(problems[:5])
        raise ImpactsError(f"impact matrix disagrees with the Lucene index {index_path}: {shown}")


# --- searching ---------------------------------------------------------------------------


def has_impacts(index_dir: str | os.PathLike) -> bool:
    """Whether the index at ``index_dir`` carries an impact matrix."""
    return (Path(index_dir) / IMPACTS_DIR / "meta.json").is_file()


@numba.njit(nogil=True, cache=True)
def _accumulate(indptr, docs, impacts, divisors, idf, terms, boosts, totals):
    """Add each query term's BM25 score to ``totals`` (float64), as Lucene computes it.

    A term of boost 1 adds its stored impact; a repeated term's weight is
    ``boost * idf`` in float32, so its score is recomputed from the divisor.
    """
    for i in range(terms.size):
        term = terms[i]
        if boosts[i] == 1:
            for posting in range(indptr[term], indptr[term + 1]):
                totals[docs[posting]] += impacts[posting]
        else:
            weight = np.float32(boosts[i]) * idf[term]
            for posting in range(indptr[term], indptr[term + 1]):
                totals[docs[posting]] += weight - weight / divisors[posting]


@numba.njit(nogil=True, cache=True)
def _sift_down(scores, docs, size, root):
    """Restore the min-heap (lowest score on top) below ``root``."""
    while True:
        child = 2 * root + 1
        if child >= size:
            return
        if child + 1 < size and scores[child + 1] < scores[child]:
            child += 1
        if scores[child] >= scores[root]:
            return
        scores[root], scores[child] = scores[child], scores[root]
        docs[root], docs[child] = docs[child], docs[root]
        root = child


@numba.njit(nogil=True, cache=True)
def _top_k(totals, k):
    """Doc numbers and float32 scores of the ``k`` best matches in Lucene's order: score
    descending, ties by doc number ascending.

    One pass in doc-number order with a k-entry min-heap: a document enters only with a
    strictly higher score than the heap's lowest, so among equal scores the lowest doc
    numbers stay, as in Lucene's collector.
    """
    scores = np.empty(k, np.float32)
    docs = np.empty(k, np.int64)
    size = 0
    for doc in range(totals.size):
        if totals[doc] == 0:
            continue
        score = np.float32(totals[doc])
        if size < k:
            scores[size] = score
            docs[size] = doc
            size += 1
            if size == k:
                for root in range(k // 2 - 1, -1, -1):
                    _sift_down(scores, docs, k, root)
        elif score > scores[0]:
            scores[0] = score
            docs[0] = doc
            _sift_down(scores, docs, k, 0)
    scores, docs = scores[:size], docs[:size]
    by_doc = np.argsort(docs)
    scores, docs = scores[by_doc], docs[by_doc]
    order = np.argsort(-scores, kind="mergesort")  # stable: ties keep doc number order
    return docs[order], scores[order]


class ImpactSearcher:
    """BM25 over an index's impact matrix, with :class:`citeval.lucene.Bm25Searcher`'s
    interface and results (see the module docstring)."""

    def __init__(self, index_dir: str | os.PathLike, *, k1: float, b: float) -> None:
        lucene.start_jvm()
        path = Path(index_dir)
        folder = path / IMPACTS_DIR
        if not has_impacts(path):
            raise ImpactsError(
                f"{path} has no impact matrix ({IMPACTS_DIR}/); rebuild the index with "
                "`python -m citeval.bm25 index`, or search it with the Lucene searcher"
            )
        try:
            meta = json.loads((folder / "meta.json").read_text())
            terms = (folder / "terms.txt").read_text(encoding="utf-8").split("\n")[:-1]
            self._indptr = np.load(folder / "indptr.npy")
            self._docs = np.load(folder / "docs.npy")
            # Read once per (k1, b) only: left on disk.
            self._freqs = np.load(folder / "freqs.npy", mmap_mode="r")
            self._norms = np.load(folder / "norms.npy")
        except (OSError, ValueError) as error:
            raise ImpactsError(f"{folder}: unreadable impact matrix: {error}") from error
        if meta.get("format_version") != FORMAT_VERSION:
            raise ImpactsError(
                f"{folder} has format {meta.get('format_version')}, this citeval reads "
                f"{FORMAT_VERSION}; rebuild the index"
            )
        self.index_dir = path
        self.num_docs = int(meta["n_docs"])
        self._docids = _docids(path)
        if len(self._docids) != self.num_docs or len(terms) != meta["n_terms"]:
            raise ImpactsError(f"{folder} does not match its index; rebuild the index")
        self._vocabulary = {term: number for number, term in enumerate(terms)}
        self._doc_numbers: dict[str, int] | None = None  # built by score_documents
        doc_freqs = np.diff(self._indptr)
        # Lucene: (float) Math.log(1 + (docCount - docFreq + 0.5D) / (docFreq + 0.5D)).
        doc_count = meta["doc_count"]
        self._idf = np.log1p((doc_count - doc_freqs + 0.5) / (doc_freqs + 0.5)).astype(F32)
        self._avgdl = F32(meta["sum_total_term_freq"] / doc_count)
        self._length_table = _length_table()
        self._analyzer = Analyzer()
        self.set_bm25(k1, b)

    def set_bm25(self, k1: float, b: float) -> None:
        """Score with Lucene's ``BM25Similarity(k1, b)``."""
        lucene.check_bm25_parameters(k1, b)
        self.k1, self.b = float(k1), float(b)
        k1_32, b_32 = F32(k1), F32(b)
        # With b = 1 the entry for length 0 divides by zero, as in Lucene; no document
        # has that norm (empty documents are not indexed).
        with np.errstate(divide="ignore"):
            norm_factor = F32(1) / (
                k1_32 * ((F32(1) - b_32) + b_32 * self._length_table / self._avgdl)
            )
        # Per posting: the divisor of Lucene's BM25, 1 + tf * normFactor[norm], and the
        # score at query boost 1, idf - idf / divisor, all in float32 as in Lucene.
        self._divisors = F32(1) + self._freqs.astype(F32) * norm_factor[self._norms[self._docs]]
        idf = np.repeat(self._idf, np.diff(self._indptr))
        self._impacts = idf - idf / self._divisors

    def _query_terms(self, tokens: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Anserini's bag of words: the known distinct terms and their counts (boosts)."""
        pairs = [
            (self._vocabulary[term], count)
            for term, count in Counter(tokens).items()
            if term in self._vocabulary
        ]
        terms = np.array([term for term, _ in pairs], dtype=np.int64)
        return terms, np.array([count for _, count in pairs], dtype=np.int64)

    def _totals(self, tokens: Sequence[str]) -> np.ndarray:
        """Every document's score for one analyzed query, in float64 (not yet rounded)."""
        terms, boosts = self._query_terms(tokens)
        # Clause scores summed in float64 and rounded to float32 by the callers, as Lucene's
        # scorers do.
        totals = np.zeros(self.num_docs)
        _accumulate(
            self._indptr,
            self._docs,
            self._impacts,
            self._divisors,
            self._idf,
            terms,
            boosts,
            totals,
        )
        return totals

    def _search_tokens(self, tokens: Sequence[str], k: int) -> lucene.Hits:
        docs, scores = _top_k(self._totals(tokens), k)
        docids = self._docids
        return [
            (docids[doc], score) for doc, score in zip(docs.tolist(), scores.tolist(), strict=True)
        ]

    def search(self, query: str, k: int) -> lucene.Hits:
        """Top ``k`` documents for one query."""
        return self._search_tokens(self._analyzer.analyze([query])[0], int(k))

    def score_documents(
        self, queries: Sequence[str], doc_ids: Sequence[Sequence[str]]
    ) -> list[list[float]]:
        """The BM25 score of each listed document for its query, as :meth:`search` gives it.

        ``doc_ids[i]`` lists the documents of ``queries[i]``. A document that matches no
        query term, or is not in the index, scores 0 (Lucene would not return it). The
        whole index is scored per query, so the cost is that of a search without the top-k.
        """
        if len(queries) != len(doc_ids):
            raise ValueError(f"{len(queries)} queries but {len(doc_ids)} document lists")
        if self._doc_numbers is None:
            self._doc_numbers = {doc_id: number for number, doc_id in enumerate(self._docids)}
        numbers = self._doc_numbers
        scores = []
        for tokens, wanted in zip(self._analyzer.analyze(queries), doc_ids, strict=True):
            totals = self._totals(tokens)
            # Rounded to float32 as _top_k rounds a hit's score.
            found = [numbers.get(doc_id, -1) for doc_id in wanted]
            scores.append([float(F32(totals[number])) if number >= 0 else 0.0 for number in found])
        return scores

    def batch_search(
        self, queries: Sequence[str], qids: Sequence[str], k: int, threads: int = 1
    ) -> dict[str, lucene.Hits]:
        """Top ``k`` documents for each query, scored by ``threads`` threads."""
        lucene.check_query_ids(queries, qids)
        analyzed = self._analyzer.analyze(queries)

        def work(tokens: list[str]) -> lucene.Hits:
            return self._search_tokens(tokens, int(k))

        if threads <= 1 or len(queries) <= 1:
            results = list(map(work, analyzed))
        else:
            with ThreadPoolExecutor(min(threads, len(queries))) as pool:
                results = list(pool.map(work, analyzed))
        return dict(zip(qids, results, strict=True))

    def close(self) -> None:
        """Nothing to release: the arrays go with the object."""

    def __enter__(self) -> ImpactSearcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


SEARCHERS = ("impacts", "lucene")
Searcher = ImpactSearcher | lucene.Bm25Searcher


def open_searcher(index_dir: str | os.PathLike, *, k1: float, b: float, searcher: str) -> Searcher:
    """A BM25(k1, b) searcher on ``index_dir``: ``impacts`` (this module's) or ``lucene``
    (Lucene's own)."""
    if searcher == "impacts":
        return ImpactSearcher(index_dir, k1=k1, b=b)
    if searcher == "lucene":
        return lucene.lucene_searcher(index_dir, k1=k1, b=b)
    raise ValueError(f"unknown searcher {searcher!r}; expected one of {SEARCHERS}")
