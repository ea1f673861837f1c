"""Sample queries and candidate pools for the dataset-level and field-level setups.

Protocol (Medić & Šnajder 2022, see DESIGN.md §1), with the details this module settles:

* The *candidates* are the prefiltered papers published in or before the query year.
* A paper is an *eligible query* when it is prefiltered, published in the query year, not
  in the exclusion list, and cites at least ``min_query_references`` candidates. Its
  relevant papers (qrels) are exactly the candidates it cites.
* **Dataset-level:** one query set per split; for every pool size and repetition the pool
  holds every paper the split's queries cite, filled up to size with candidates drawn
  uniformly at random. Queries stay fixed across pool sizes and repetitions.
* **Field-level:** per field, queries labelled with the field; the pool holds every paper
  they cite plus random negatives from the field-cited set (the candidates cited by any
  corpus paper labelled with the field). Fields draw in the configured order, each from
  the eligible papers no earlier field drew, so a query belongs to one field only. When
  the field-cited set is no larger than the pool size, every repetition's pool is the
  whole set.
* **Every configured collection exists** (:func:`citeval.collection_list.planned_collections`):
  a pool size or field the corpus cannot fill gets capped sizes, or no queries at all
  (``sampling.on_too_small: cap``), and the split's report says so, so that the Snakefile
  knows every downstream job from the config before sampling runs.
* Query papers are never drawn as random negatives (they enter a pool only when another
  query cites them), and retrieval drops a query from its own ranking.
* **Validation** queries are drawn from the eligible queries left after the test draw
  (across all fields for field-level), so no validation query is a test query anywhere.
  Validation collections use one repetition: they only serve BM25 tuning.
* **Training** (``train``, for the reranker): queries published in the years
  ``[query_year - years_before, query_year - 1]``, so they are disjoint from every test and
  validation query by their year; one pool (rep 0) of the candidates published up to
  ``query_year - 1``, holding every paper they cite plus random candidates. The pool is
  shared, so a query's candidates may be newer than the query itself: negatives it could
  not have cited, which the reranker learns to rank low like any other negative.

Every draw uses its own generator seeded from (seed, setup, split, group, repetition), and
every id list is sorted before drawing, so the same inputs and seed give the same bytes.

    python -m citeval.sample dataset --filtered results/demo/filtered/papers.parquet \
        --corpus results/demo/corpus --output-dir results/demo/samples --seed 13 \
        --num-queries 150 --num-valid-queries 50 --pool-sizes 1000 2000 --repetitions 2
    python -m citeval.sample train --filtered results/demo/filtered/papers.parquet \
        --corpus results/demo/corpus --output-dir results/demo/samples \
        --seed 13 --query-year 2019 --years-before 3 --num-queries 200 --pool-size 5000

The modules, one job each:

- ``citations``: the candidates, eligible queries and references, as DuckDB views;
- ``collection``: a split's collections, the disjoint query draw, writing a split;
- ``dataset``, ``field``, ``train``: the three samplers;
- ``run``: the test and validation splits of a setup, with their report;
- ``embed_ids``: the union of every pool and query id, for the encoders;
- ``cli``: the command line (``python -m citeval.sample``).

The seeded generators, pool draws and size policy are :mod:`citeval.draws`, shared with
the local task, MDCR and the significance tests.
"""

from __future__ import annotations

from citeval.draws import POOL_SCHEMA, SizeGuard, build_pool, draw_sorted, seeded_rng
from citeval.sample.citations import CitationData, read_excluded_ids
from citeval.sample.collection import (
    SPLITS,
    Collection,
    draw_disjoint_queries,
    qrels_for,
    write_split,
)
from citeval.sample.dataset import sample_dataset_level
from citeval.sample.embed_ids import write_embed_ids
from citeval.sample.field import sample_field_level
from citeval.sample.run import run_sampling
from citeval.sample.train import run_training_sampling, sample_training

__all__ = [
    "POOL_SCHEMA",
    "SPLITS",
    "CitationData",
    "Collection",
    "SizeGuard",
    "build_pool",
    "draw_disjoint_queries",
    "draw_sorted",
    "qrels_for",
    "read_excluded_ids",
    "run_sampling",
    "run_training_sampling",
    "sample_dataset_level",
    "sample_field_level",
    "sample_training",
    "seeded_rng",
    "write_embed_ids",
    "write_split",
]
