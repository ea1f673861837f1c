"""``python -m citeval.bm25 analyze|index|search|tune``: the BM25 stage's command line."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from pathlib import Path

from citeval import impacts, lucene
from citeval.bm25.index import analyze_corpus, build_pool_index
from citeval.bm25.papers import connect, load_queries
from citeval.bm25.search import check_index_group, check_searcher, resolve_params, search_queries
from citeval.bm25.tune import tune
from citeval.cli import positive_int, run_cli, run_tag
from citeval.io import write_json
from citeval.memory import duckdb_memory_setting
from citeval.stages import BM25_ANALYZE, BM25_SEARCH, BM25_TUNE
from citeval.trec import write_run

LOG = logging.getLogger(__name__)


def _start(args: argparse.Namespace) -> None:
    lucene.start_jvm(heap=args.java_heap, processors=args.threads)
    lucene.set_java_log_level("INFO" if args.log_level == "DEBUG" else "WARN")


def _analyze_command(args: argparse.Namespace) -> None:
    _start(args)
    memory = duckdb_memory_setting(args.memory_limit)
    analyze_corpus(args.papers, args.output, args.ids, args.threads, memory)


def _index_command(args: argparse.Namespace) -> None:
    _start(args)
    build_pool_index(
        args.analyzed,
        args.pools,
        args.group,
        args.rep,
        args.index_dir,
        threads=args.threads,
        memory_limit=args.duckdb_memory,
        lucene_papers_dir=args.lucene_papers,
    )


def _search_command(args: argparse.Namespace) -> None:
    k1, b = resolve_params(args.k1, args.b, args.params_json)
    _start(args)
    check_index_group(args.index_dir, args.group, args.rep)
    check_searcher(args.index_dir, args.searcher)
    con = connect(args.threads, args.duckdb_memory)
    queries = load_queries(con, args.papers, args.queries, args.group)
    with impacts.open_searcher(args.index_dir, k1=k1, b=b, searcher=args.searcher) as searcher:
        LOG.info(
            "BM25(k1=%s, b=%s), %s searcher: %d queries of %s on %d documents, k=%d",
            k1,
            b,
            args.searcher,
            len(queries),
            args.group,
            searcher.num_docs,
            args.k,
        )
        run = search_queries(searcher, queries, args.k, args.batch_size, threads=args.threads)
    no_hits = sum(1 for docs in run.values() if not docs)
    if no_hits:
        LOG.warning("%d queries retrieved nothing", no_hits)
    write_run(run, args.output, args.tag, args.k)
    LOG.info("wrote %s", args.output)


def _tune_command(args: argparse.Namespace) -> None:
    _start(args)
    result = tune(
        args.papers,
        args.analyzed,
        args.sample_dir,
        args.k1_grid,
        args.b_grid,
        metric=args.metric,
        k=args.k,
        searcher_kind=args.searcher,
        index_root=args.index_root,
        collections=args.collection,
        threads=args.threads,
        batch_size=args.batch_size,
        memory_limit=args.duckdb_memory,
        tmp_dir=args.tmp_dir or Path(args.output).parent,
    )
    write_json(result, args.output)
    LOG.info("wrote %s", args.output)


def _add_runtime_arguments(parser: argparse.ArgumentParser, duckdb_memory: bool = True) -> None:
    parser.add_argument(
        "--threads",
        type=positive_int,
        default=1,
        help="CPU threads for DuckDB, the impact matrix and search; Lucene writes an index "
        "with one thread, so the index does not depend on this (default: 1)",
    )
    parser.add_argument(
        "--java-heap",
        default=None,
        help=f"JVM maximum heap, e.g. 4g (default: ${lucene.HEAP_ENV}, else the JVM's default)",
    )
    if duckdb_memory:
        parser.add_argument(
            "--duckdb-memory",
            default=None,
            help="DuckDB memory_limit, e.g. 4GB (default: DuckDB's)",
        )


def _add_batch_size(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--batch-size",
        type=positive_int,
        default=256,
        help="queries per batch (progress is reported per batch; default: 256)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m citeval.bm25",
        description="BM25 with Lucene (pyserini/Anserini): index pools, search, tune k1/b.",
    )
    sub = parser.add_subparsers(dest="subcommand", required=True)

    analyze = sub.add_parser(
        "analyze", help="analyze the corpus papers once, for every pool index cut from them"
    )
    analyze.add_argument("--papers", required=True, help="corpus/papers folder of parquet parts")
    analyze.add_argument(
        "--ids",
        default=None,
        help="parquet file whose paper_id column lists the papers to analyze, e.g. "
        "filtered/papers.parquet (default: every corpus paper)",
    )
    analyze.add_argument("--output", required=True, help="analyzed corpus folder to write")
    BM25_ANALYZE.add_to(analyze)
    _add_runtime_arguments(analyze, duckdb_memory=False)
    analyze.set_defaults(handler=_analyze_command)

    index = sub.add_parser("index", help="build the BM25 index of one collection's pool")
    index.add_argument("--analyzed", required=True, help="analyzed corpus folder (`analyze`)")
    index.add_argument(
        "--lucene-papers",
        default=None,
        metavar="PAPERS",
        help="also build Lucene's own index from this corpus/papers folder and check the "
        "impact matrix against it (the lucene searcher needs it)",
    )
    index.add_argument("--pools", required=True, help="samples/<setup>-<split>/pools.parquet")
    index.add_argument("--group", required=True, help="pool group, e.g. pool-200000 or biology")
    index.add_argument("--rep", type=int, required=True, help="repetition, from 0")
    index.add_argument("--index-dir", required=True, help="output index folder")
    _add_runtime_arguments(index)
    index.set_defaults(handler=_index_command)

    search = sub.add_parser(
        "search",
        help="BM25 run of one collection's queries",
        description="BM25 run of one collection's queries. It searches with --k1 and --b, "
        "unless --params-json is given: then the tuned k1 and b in that file take precedence.",
    )
    search.add_argument("--index-dir", required=True, help="index built by `index`")
    search.add_argument("--papers", required=True, help="corpus/papers folder of parquet parts")
    search.add_argument("--queries", required=True, help="samples/<setup>-<split>/queries.parquet")
    search.add_argument("--group", required=True, help="query group (the pool's group)")
    search.add_argument(
        "--rep", type=int, default=None, help="repetition; checked against the index if given"
    )
    search.add_argument(
        "--params-json",
        default=None,
        help="a `tune` output: its tuned k1 and b take precedence over --k1 and --b",
    )
    search.add_argument("--output", required=True, help="TREC run file to write")
    search.add_argument("--tag", default="bm25", type=run_tag, help="run tag (default: bm25)")
    _add_batch_size(search)
    BM25_SEARCH.add_to(search)
    _add_runtime_arguments(search)
    search.set_defaults(handler=_search_command)

    tune_parser = sub.add_parser("tune", help="grid-search k1 and b on validation collections")
    tune_parser.add_argument(
        "--papers", required=True, help="corpus/papers folder of parquet parts"
    )
    tune_parser.add_argument("--analyzed", required=True, help="analyzed corpus folder (`analyze`)")
    tune_parser.add_argument(
        "--sample-dir",
        required=True,
        help="samples/<setup>-<split>/: collections.tsv, queries.parquet, pools.parquet, qrels/",
    )
    tune_parser.add_argument(
        "--index-root",
        default=None,
        help="folder with one index per collection, <group>.rep<rep> "
        "(default: build each in a temporary folder)",
    )
    tune_parser.add_argument(
        "--collection",
        action="append",
        default=None,
        metavar="GROUP.repN",
        help="tune only on this collection (repeatable; default: all in collections.tsv)",
    )
    tune_parser.add_argument("--output", required=True, help="tuning JSON to write")
    tune_parser.add_argument(
        "--tmp-dir",
        default=None,
        help="where indexes built on the fly go (default: the folder of --output)",
    )
    _add_batch_size(tune_parser)
    BM25_TUNE.add_to(tune_parser)
    _add_runtime_arguments(tune_parser)
    tune_parser.set_defaults(handler=_tune_command)
    return parser


def command(args: argparse.Namespace) -> None:
    """Run the chosen subcommand."""
    args.handler(args)


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(build_parser, command, argv)
