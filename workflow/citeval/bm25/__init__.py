"""BM25 stage: the analyzed corpus, one index per pool, TREC runs, and k1/b tuning.

``python -m citeval.bm25 analyze|index|search|tune`` (see ``--help`` of each). Lucene is
reached through pyserini's Anserini jar; :mod:`citeval.lucene` starts the JVM and explains
how.

* ``analyze`` runs Anserini's analyzer once over every prefiltered paper's document,
  ``title + "\\n" + abstract`` (:mod:`citeval.analyzed`). Papers are streamed from the
  parquet parts in paper id order with a DuckDB semi-join, so the corpus is never in
  memory.
* ``index`` writes one index per collection (setup, split, group, rep): the impact matrix
  of its pool's papers (:mod:`citeval.impacts`), cut from the analyzed corpus, so no
  paper is analyzed twice however many pools hold it. Papers with neither title nor
  abstract are left out (nothing could match them). ``citeval-index.json`` inside the
  index records what went in. With ``--lucene-papers`` the folder is also the pool's
  Lucene index (an Anserini JsonCollection indexed with ``IndexCollection``, written by
  one thread, :data:`citeval.lucene.WRITER_THREADS`, so documents keep paper id order),
  and the matrix is checked against Lucene's statistics before the index is committed.
* ``search`` runs one query per query paper, ``title + " " + abstract``, with Lucene's
  ``BM25Similarity(k1, b)``, scored either by the impact matrix (``--searcher impacts``,
  the default: the same scores and rankings as Lucene, bit for bit, several times faster
  on long queries) or by Lucene's ``IndexSearcher`` (``--searcher lucene``, the
  reference). The query paper itself is never a candidate: k+1 hits are
  fetched and its own id dropped. Scores are Lucene's raw float32 values; the run is
  written in trec_eval's order (score descending, ties by docid descending). Where a tie
  straddles the k-th place, the query is searched deeper until the tie group is complete,
  so the cut is the same one trec_eval's order makes, not Lucene's (docid ascending).
* ``tune`` grid-searches (k1, b) on validation collections and writes every grid point's
  score and the chosen pair; ``search --params-json`` reads that file.

Tokenization and scoring, compared with rank-bm25 and bm25s
-----------------------------------------------------------
Lucene analyzes documents and queries with Anserini's ``DefaultEnglishAnalyzer``: Lucene's
``StandardTokenizer`` (Unicode word boundaries: hyphens and apostrophes split words,
dotted abbreviations stay whole), lower-casing, removal of Lucene's 33 English stop words,
and Porter stemming. For example ``"The 2019's U.S.A. e.g. citation-recommendation
networks"`` becomes ``2019 s u.s.a e.g citat recommend network`` and ``"BM25-based
Retrieval of COVID-19 papers"`` becomes ``bm25 base retriev covid 19 paper``. rank-bm25
takes whatever tokens the caller gives it (often ``text.split()``: no lower-casing,
punctuation glued to words, no stemming, stop words kept), and bm25s uses its own regex
tokenizer (lower-cased ``\\w\\w+`` tokens, so one-character tokens are dropped) with an
optional stop-word list and an optional PyStemmer stemmer (not installed here). The same
text thus gives different terms, hence different document lengths, IDFs and rankings,
unless every library is fed the tokens of the Lucene analyzer
(:func:`citeval.lucene.analyze`), as the tests do.

Even on identical tokens the scores differ:

* IDF: Lucene uses ``log(1 + (N - n + 0.5) / (n + 0.5))``, always positive. rank-bm25's
  ``BM25Okapi`` uses ``log((N - n + 0.5) / (n + 0.5))``, which is negative for terms in
  more than half the documents; those are floored at ``epsilon * mean_idf``. (``BM25L``
  and ``BM25Plus`` are other variants again.)
* Document length: Lucene stores each length as a one-byte ``SmallFloat`` code (exact up
  to 40 tokens, then within a few percent) and uses that lossy length in the ``b``
  normalization; rank-bm25 and bm25s use exact lengths.
* Lucene drops the constant ``(k1 + 1)`` factor of the textbook formula (since Lucene 8),
  which scales every score and changes no ranking.
* Repeated query terms: Anserini builds one clause per distinct term, boosted by its
  count; rank-bm25 loops over the query tokens; both weigh a term linearly by its query
  frequency.
* Arithmetic: Lucene computes in float32, rank-bm25 in float64.

Rankings therefore agree closely but not exactly; the tests check the top 10 against
rank-bm25 and an exact re-implementation of Lucene's formula.

Modules:

* :mod:`citeval.bm25.papers` — corpus papers streamed from parquet as documents and queries;
* :mod:`citeval.bm25.index` — ``analyze`` and ``index``;
* :mod:`citeval.bm25.search` — ``search``: top-k without the query, trec_eval's tie order;
* :mod:`citeval.bm25.tune` — ``tune``;
* :mod:`citeval.bm25.cli` — the command line.
"""
