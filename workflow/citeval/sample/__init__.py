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
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from citeval.collection_list import (
    CollectionInfo,
    collection_name,
    field_slugs,
    pool_group,
    write_collections,
)
from citeval.errors import ConfigError, InputDataError
from citeval.io import parquet_glob, write_json, write_parquet
from citeval.layout import QUERY_PAPERS
from citeval.trec import write_qrels

log = logging.getLogger(__name__)

SPLITS = ("test", "valid")
POOL_SCHEMA = pa.schema([("group", pa.string()), ("rep", pa.int16()), ("paper_id", pa.string())])


def seeded_rng(seed: int, *keys: object) -> np.random.Generator:
    """A generator whose stream depends only on ``seed`` and ``keys``, never on call order."""
    words = [int(seed)]
    for key in keys:
        words.append(int.from_bytes(hashlib.sha256(str(key).encode()).digest()[:8], "little"))
    return np.random.default_rng(np.random.SeedSequence(words))


@dataclass
class SizeGuard:
    """Applies ``on_too_small``: fail with a clear message, or cap and remember a warning."""

    policy: str
    warnings: list[str] = field(default_factory=list)

    def check(self, what: str, requested: int, available: int) -> int:
        if requested <= available:
            return requested
        message = f"{what}: requested {requested}, but only {available} are available"
        if self.policy == "fail":
            raise ConfigError(
                message + " (lower the size in the config, or set sampling.on_too_small: cap)"
            )
        log.warning("%s; capping to %d", message, available)
        self.warnings.append(message)
        return available


@dataclass
class Collection:
    """One (group, repetition) of a split: its pool and the qrels of its queries."""

    group: str
    rep: int
    queries: list[str]
    pool: pa.Array
    qrels: dict[str, dict[str, int]]
    requested_pool_size: int


class CitationData:
    """DuckDB views over the prefiltered papers, the corpus and its citation graph."""

    def __init__(
        self,
        filtered: Path,
        corpus: Path,
        *,
        query_year: int,
        first_query_year: int | None = None,
        excluded_ids: set[str],
        min_query_references: int,
        memory_limit: str,
        threads: int,
    ) -> None:
        first_year = query_year if first_query_year is None else first_query_year
        self.con = duckdb.connect(config={"memory_limit": memory_limit, "threads": threads})
        self.con.execute(f"CREATE VIEW filtered AS SELECT * FROM read_parquet('{filtered}')")
        self.con.execute(
            "CREATE VIEW corpus_papers AS SELECT paper_id, fields FROM "
            f"read_parquet('{parquet_glob(corpus / 'papers')}')"
        )
        self.con.execute(
            "CREATE VIEW citations AS SELECT citing_id, cited_id FROM "
            f"read_parquet('{parquet_glob(corpus / 'citations')}')"
        )
        self.con.execute(
            "CREATE TABLE candidates AS SELECT paper_id FROM filtered "
            f"WHERE year <= {int(query_year)} ORDER BY paper_id"
        )
        self.con.register(
            "excluded_arrow", pa.table({"paper_id": pa.array(sorted(excluded_ids), pa.string())})
        )
        # References of every potential query that land among the candidates; queries
        # without enough of them cannot be evaluated and are not eligible.
        self.con.execute(
            f"""
            CREATE TABLE query_refs AS
            SELECT c.citing_id AS query_id, c.cited_id
            FROM citations c
            JOIN (SELECT paper_id FROM filtered
                  WHERE year BETWEEN {int(first_year)} AND {int(query_year)}
                  AND paper_id NOT IN (SELECT paper_id FROM excluded_arrow)) q
              ON c.citing_id = q.paper_id
            SEMI JOIN candidates cand ON c.cited_id = cand.paper_id
            """
        )
        self.con.execute(
            f"""
            CREATE TABLE eligible AS
            SELECT query_id FROM query_refs GROUP BY query_id
            HAVING count(*) >= {int(min_query_references)} ORDER BY query_id
            """
        )
        self.candidate_ids: pa.Array = self._ids("SELECT paper_id FROM candidates")

    def _ids(self, sql: str) -> pa.Array:
        table = self.con.sql(f"SELECT * FROM ({sql}) ORDER BY 1").to_arrow_table()
        return table.column(0).combine_chunks().cast(pa.string())

    def eligible_queries(self, field_name: str | None = None) -> pa.Array:
        if field_name is None:
            return self._ids("SELECT query_id FROM eligible")
        return self._ids(
            "SELECT e.query_id FROM eligible e JOIN filtered f ON e.query_id = f.paper_id "
            "WHERE list_contains(f.fields, $field)".replace("$field", _sql_string(field_name))
        )

    def references(self, query_ids: Sequence[str]) -> dict[str, list[str]]:
        self.con.register(
            "selected_queries", pa.table({"query_id": pa.array(query_ids, pa.string())})
        )
        rows = self.con.execute(
            "SELECT r.query_id, r.cited_id FROM query_refs r "
            "SEMI JOIN selected_queries s ON r.query_id = s.query_id "
            "ORDER BY r.query_id, r.cited_id"
        ).fetchall()
        self.con.unregister("selected_queries")
        references: dict[str, list[str]] = {query_id: [] for query_id in query_ids}
        for query_id, cited_id in rows:
            references[query_id].append(cited_id)
        return references

    def field_cited_set(self, field_name: str) -> pa.Array:
        return self._ids(
            f"""
            SELECT DISTINCT c.cited_id FROM citations c
            SEMI JOIN (SELECT paper_id FROM corpus_papers
                       WHERE list_contains(fields, {_sql_string(field_name)})) p
              ON c.citing_id = p.paper_id
            SEMI JOIN candidates cand ON c.cited_id = cand.paper_id
            """
        )


def _sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def draw_sorted(rng: np.random.Generator, ids: pa.Array, size: int) -> list[str]:
    """Draw ``size`` distinct ids uniformly from the sorted array ``ids``; return them sorted."""
    if size <= 0:
        return []
    chosen = np.sort(rng.choice(len(ids), size=size, replace=False))
    return ids.take(pa.array(chosen)).to_pylist()


def build_pool(
    rng: np.random.Generator,
    positives: set[str],
    negatives_from: pa.Array,
    never_negative: set[str],
    size: int,
) -> pa.Array:
    """All ``positives`` plus random negatives from ``negatives_from``, sorted."""
    blocked = pa.array(sorted(positives | never_negative), pa.string())
    available = negatives_from.filter(pc.invert(pc.is_in(negatives_from, value_set=blocked)))
    negatives = draw_sorted(rng, available, min(size - len(positives), len(available)))
    return pa.array(sorted(positives.union(negatives)), pa.string())


def qrels_for(queries: Sequence[str], references: dict[str, list[str]]) -> dict:
    return {query_id: dict.fromkeys(references[query_id], 1) for query_id in queries}


def draw_disjoint_queries(
    rng: np.random.Generator,
    eligible: pa.Array,
    counts: dict[str, int],
    guard: SizeGuard,
    what: str,
) -> dict[str, list[str]]:
    """Draw disjoint test and validation queries from ``eligible`` in one permutation."""
    available = len(eligible)
    sizes = {}
    for split in SPLITS:
        sizes[split] = guard.check(f"{what} {split} queries", counts[split], available)
        available -= sizes[split]
    order = rng.permutation(len(eligible))
    test_end = sizes["test"]
    picks = {
        "test": order[:test_end],
        "valid": order[test_end : test_end + sizes["valid"]],
    }
    return {split: sorted(eligible.take(pa.array(idx)).to_pylist()) for split, idx in picks.items()}


def sample_dataset_level(
    data: CitationData,
    *,
    seed: int,
    num_queries: dict[str, int],
    pool_sizes: Sequence[int],
    repetitions: int,
    guard: SizeGuard,
) -> dict[str, list[Collection]]:
    eligible = data.eligible_queries()
    queries = draw_disjoint_queries(
        seeded_rng(seed, "dataset", "queries"), eligible, num_queries, guard, "dataset-level"
    )
    collections: dict[str, list[Collection]] = {}
    for split in SPLITS:
        queries_of_split = queries[split]
        collections[split] = []
        # Every configured collection exists (citeval.collection_list.planned_collections),
        # even one sampling left without queries; only a split asked for none has none.
        if not num_queries[split]:
            continue
        references = data.references(queries_of_split)
        positives = {cited for cited_ids in references.values() for cited in cited_ids}
        query_set = set(queries_of_split)
        reps = repetitions if split == "test" else 1
        for requested in pool_sizes:
            group = pool_group(requested)
            # Uncited queries are never drawn, so they do not count as available.
            available = len(data.candidate_ids) - len(query_set - positives)
            size = guard.check(f"dataset-level {split} {group}", requested, available)
            if len(positives) > size:
                size = len(positives)
                message = (
                    f"dataset-level {split} {group}: the queries cite {len(positives)} papers, "
                    f"more than the pool size; the pool holds only the cited papers"
                )
                if guard.policy == "fail":
                    raise ConfigError(message + " (use fewer queries or a larger pool)")
                log.warning(message)
                guard.warnings.append(message)
            for rep in range(reps):
                rng = seeded_rng(seed, "dataset", split, group, rep)
                pool = build_pool(rng, positives, data.candidate_ids, query_set, size)
                collections[split].append(
                    Collection(
                        group,
                        rep,
                        queries_of_split,
                        pool,
                        qrels_for(queries_of_split, references),
                        requested,
                    )
                )
    return collections


def sample_field_level(
    data: CitationData,
    *,
    seed: int,
    fields: Sequence[str],
    queries_per_field: dict[str, int],
    pool_size: int,
    repetitions: int,
    guard: SizeGuard,
) -> dict[str, list[Collection]]:
    slugs = field_slugs(fields, "sampling.field_level.fields")
    eligible = {name: data.eligible_queries(name) for name in fields}
    drawn: set[str] = set()

    def draw(split: str, name: str) -> list[str]:
        """The field's queries of ``split``, none drawn before for any field or split."""
        taken = pa.array(sorted(drawn), pa.string())
        available = eligible[name].filter(pc.invert(pc.is_in(eligible[name], value_set=taken)))
        rng = seeded_rng(seed, "field", f"{split}-queries", name)
        counts = {other: 0 for other in SPLITS} | {split: queries_per_field[split]}
        queries = draw_disjoint_queries(rng, available, counts, guard, f"field-level '{name}'")[
            split
        ]
        drawn.update(queries)
        return queries

    # Test draws first, field by field in the configured order, then validation: a paper
    # labelled with two fields is a query of one of them only (MDCR lists a query under one
    # field), and no validation query is a test query anywhere.
    test_queries = {name: draw("test", name) for name in fields}
    valid_queries = {name: draw("valid", name) for name in fields}

    collections: dict[str, list[Collection]] = {split: [] for split in SPLITS}
    for slug, name in slugs.items():
        field_cited = data.field_cited_set(name)
        if len(field_cited) == 0:
            # Not a shortfall to cap: a field no corpus paper carries is most likely a typo.
            raise ConfigError(
                f"sampling.field_level.fields: no candidate is cited by a paper of field "
                f"{name!r}; is it spelled as in the corpus's fields?"
            )
        for split, per_split in (("test", test_queries), ("valid", valid_queries)):
            if not queries_per_field[split]:
                continue
            queries_of_split = per_split[name]
            references = data.references(queries_of_split)
            positives = {cited for cited_ids in references.values() for cited in cited_ids}
            size = max(pool_size, len(positives))
            reps = repetitions if split == "test" else 1
            if len(field_cited) <= pool_size:
                # Every repetition's pool is then the same whole set; the repetitions
                # still exist, so that the collections follow from the config alone.
                log.info(
                    "field '%s': the field-cited set holds %d papers (pool size %d): "
                    "every pool is the whole set",
                    name,
                    len(field_cited),
                    pool_size,
                )
            for rep in range(reps):
                rng = seeded_rng(seed, "field", split, slug, rep)
                pool = build_pool(rng, positives, field_cited, set(queries_of_split), size)
                collections[split].append(
                    Collection(
                        slug,
                        rep,
                        queries_of_split,
                        pool,
                        qrels_for(queries_of_split, references),
                        pool_size,
                    )
                )
    return collections


def sample_training(
    data: CitationData, *, seed: int, num_queries: int, pool_size: int, guard: SizeGuard
) -> Collection:
    """The reranker's training queries and their one pool (see the module docstring)."""
    eligible = data.eligible_queries()
    size = guard.check("training queries", num_queries, len(eligible))
    if size == 0:
        raise ConfigError("no paper of the training years is an eligible query")
    order = seeded_rng(seed, "dataset", "train", "queries").permutation(len(eligible))[:size]
    queries = sorted(eligible.take(pa.array(order)).to_pylist())
    references = data.references(queries)
    positives = {cited for cited_ids in references.values() for cited in cited_ids}
    requested = pool_size
    pool_size = guard.check("training pool", pool_size, len(data.candidate_ids))
    if len(positives) > pool_size:
        message = (
            f"training pool: the queries cite {len(positives)} papers, more than the pool "
            "size; the pool holds only the cited papers"
        )
        if guard.policy == "fail":
            raise ConfigError(message + " (use fewer queries or a larger pool)")
        log.warning(message)
        guard.warnings.append(message)
    pool = build_pool(
        seeded_rng(seed, "dataset", "train", pool_group(requested), 0),
        positives,
        data.candidate_ids,
        set(queries),
        max(pool_size, len(positives)),
    )
    return Collection(
        pool_group(requested), 0, queries, pool, qrels_for(queries, references), requested
    )


def run_training_sampling(
    filtered: str | Path,
    corpus: str | Path,
    output_dir: str | Path,
    *,
    seed: int,
    query_year: int,
    years_before: int,
    num_queries: int,
    pool_size: int,
    min_query_references: int,
    on_too_small: str,
    exclude_query_ids: str | None,
    memory_limit: str,
    threads: int = 2,
) -> dict:
    """Sample the reranker's training split into ``output_dir``; return its report.

    ``query_year`` is the test queries' year: training queries come from the
    ``years_before`` years before it.
    """
    if years_before < 1:
        raise ConfigError(
            "rerank.train.years_before (--years-before) must be at least 1: "
            "training queries predate the test"
        )
    guard = SizeGuard(on_too_small)
    data = CitationData(
        Path(filtered),
        Path(corpus),
        query_year=query_year - 1,
        first_query_year=query_year - years_before,
        excluded_ids=read_excluded_ids(exclude_query_ids),
        min_query_references=min_query_references,
        memory_limit=memory_limit,
        threads=threads,
    )
    collection = sample_training(
        data, seed=seed, num_queries=num_queries, pool_size=pool_size, guard=guard
    )
    output = Path(output_dir)
    write_split("dataset", "train", [collection], output / "dataset-train")
    report = {
        "setup": "dataset",
        "split": "train",
        "seed": seed,
        "query_years": [query_year - years_before, query_year - 1],
        "candidates": len(data.candidate_ids),
        "eligible_queries": len(data.eligible_queries()),
        "queries": len(collection.queries),
        "relevant": sum(len(r) for r in collection.qrels.values()),
        "pool_size": len(collection.pool),
        "requested_pool_size": collection.requested_pool_size,
        "warnings": guard.warnings,
    }
    write_json(report, output / "train-report.json")
    return report


def write_split(setup: str, split: str, collections: list[Collection], out_dir: Path) -> None:
    """Write one split's manifests, qrels and collection list (see docs/contracts.md)."""
    query_rows = sorted({(c.group, q) for c in collections for q in c.queries})
    write_parquet(
        pa.table(
            {
                "group": pa.array([g for g, _ in query_rows], pa.string()),
                "query_id": pa.array([q for _, q in query_rows], pa.string()),
            }
        ),
        out_dir / "queries.parquet",
    )
    ordered = sorted(collections, key=lambda c: (c.group, c.rep))
    pool_table = pa.Table.from_batches(
        [
            pa.record_batch(
                [
                    pa.array([c.group] * len(c.pool), pa.string()),
                    pa.array(np.full(len(c.pool), c.rep, dtype=np.int16)),
                    c.pool,
                ],
                schema=POOL_SCHEMA,
            )
            for c in ordered
        ],
        schema=POOL_SCHEMA,
    )
    write_parquet(pool_table, out_dir / "pools.parquet")
    for c in ordered:
        write_qrels(c.qrels, out_dir / "qrels" / f"{collection_name(c.group, c.rep)}.qrels")
    write_collections(
        (
            CollectionInfo(
                setup, split, c.group, c.rep, len(c.queries), len(c.pool), c.requested_pool_size
            )
            for c in ordered
        ),
        out_dir,
    )


def read_excluded_ids(path: str | None) -> set[str]:
    if not path:
        return set()
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise InputDataError(f"cannot read the query exclusion list: {error}", path=path) from None
    return {line.strip() for line in text.splitlines() if line.strip()}


def run_sampling(
    filtered: str | Path,
    corpus: str | Path,
    output_dir: str | Path,
    *,
    setup: str,
    seed: int,
    query_year: int,
    num_queries: int,
    num_valid_queries: int,
    repetitions: int,
    min_query_references: int,
    on_too_small: str,
    exclude_query_ids: str | None,
    memory_limit: str,
    threads: int = 2,
    pool_sizes: Sequence[int] | None = None,
    fields: Sequence[str] | None = None,
    pool_size: int | None = None,
) -> dict:
    """Sample the test and validation splits of ``setup`` into ``output_dir``; return the
    report.

    ``setup`` is ``dataset`` (which takes ``pool_sizes``) or ``field`` (which takes
    ``fields`` and ``pool_size``); ``num_queries`` and ``num_valid_queries`` count per field
    for field-level.
    """
    if setup not in ("dataset", "field"):
        raise ValueError(f"unknown setup {setup!r}; expected 'dataset' or 'field'")
    guard = SizeGuard(on_too_small)
    excluded = read_excluded_ids(exclude_query_ids)
    data = CitationData(
        Path(filtered),
        Path(corpus),
        query_year=query_year,
        excluded_ids=excluded,
        min_query_references=min_query_references,
        memory_limit=memory_limit,
        threads=threads,
    )
    counts = {"test": num_queries, "valid": num_valid_queries}
    if setup == "dataset":
        if pool_sizes is None:
            raise ValueError("dataset-level sampling needs pool_sizes")
        collections = sample_dataset_level(
            data,
            seed=seed,
            num_queries=counts,
            pool_sizes=pool_sizes,
            repetitions=repetitions,
            guard=guard,
        )
    else:
        if fields is None or pool_size is None:
            raise ValueError("field-level sampling needs fields and pool_size")
        collections = sample_field_level(
            data,
            seed=seed,
            fields=fields,
            queries_per_field=counts,
            pool_size=pool_size,
            repetitions=repetitions,
            guard=guard,
        )
    output = Path(output_dir)
    for split in SPLITS:
        write_split(setup, split, collections[split], output / f"{setup}-{split}")
    report = {
        "setup": setup,
        "seed": seed,
        "query_year": query_year,
        "excluded_query_ids": len(excluded),
        "candidates": len(data.candidate_ids),
        "eligible_queries": len(data.eligible_queries()),
        "warnings": guard.warnings,
        "collections": {
            split: [
                {
                    "group": c.group,
                    "rep": c.rep,
                    "queries": len(c.queries),
                    "relevant": sum(len(r) for r in c.qrels.values()),
                    "pool_size": len(c.pool),
                    "requested_pool_size": c.requested_pool_size,
                }
                for c in sorted(collections[split], key=lambda c: (c.group, c.rep))
            ]
            for split in SPLITS
        },
    }
    write_json(report, output / f"{setup}-report.json")
    return report


def write_embed_ids(sample_dirs: Sequence[str], output: str) -> int:
    """The union of every pool and query id: the papers an encoder has to embed once.

    A sample whose queries are not papers (the local task's contexts, which carry their own
    texts in ``query_papers/``) contributes its pools only.
    """
    con = duckdb.connect()
    parts = []
    for directory in map(Path, sample_dirs):
        parts.append(f"SELECT paper_id FROM read_parquet('{directory / 'pools.parquet'}')")
        if not (directory / QUERY_PAPERS).exists():
            parts.append(f"SELECT query_id FROM read_parquet('{directory / 'queries.parquet'}')")
    table = con.sql(
        f"SELECT DISTINCT paper_id FROM ({' UNION ALL '.join(parts)}) ORDER BY paper_id"
    ).to_arrow_table()
    write_parquet(table, output)
    return table.num_rows
