"""Sampling: protocol invariants on a small random citation graph."""

import json
import random

import pyarrow.parquet as pq
import pytest
from corpus_builder import write_corpus

from citeval.collection_list import field_slug, field_slugs, planned_collections, read_collections
from citeval.config import load_config
from citeval.errors import ConfigError
from citeval.filter import PrefilterRules, prefilter
from citeval.sample.cli import build_parser, main
from citeval.stages import SAMPLE_DATASET, SAMPLE_FIELD, SAMPLE_TRAIN
from citeval.trec import read_qrels

FIELDS = ["Biology", "Computer Science", "Art"]
PAPER_RULES = PrefilterRules(
    require_year=True,
    require_title=True,
    min_abstract_chars=30,
    min_citations=3,
    citation_direction="cited_by",
)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """600 papers, 2000-2019; 2019 papers cite older papers mostly of their own field."""
    rng = random.Random(7)
    root = tmp_path_factory.mktemp("sample")
    papers, citations = [], []
    by_field = {name: [] for name in FIELDS}
    for index in range(600):
        year = 2000 + index * 20 // 600
        name = FIELDS[0] if index % 10 < 6 else FIELDS[1] if index % 10 < 9 else FIELDS[2]
        paper = {"paper_id": f"p{index:04d}", "year": year, "fields": [name]}
        papers.append(paper)
        older = [p for p in by_field[name] if p["year"] < year] or by_field[name]
        if older:
            for cited in rng.sample(older, min(len(older), rng.randint(3, 12))):
                citations.append((paper["paper_id"], cited["paper_id"]))
        by_field[name].append(paper)
    # Everything is cited at least three times by a citer outside the prefilter window.
    papers += [{"paper_id": f"z{i}", "year": None, "fields": []} for i in range(3)]
    citations += [(f"z{i}", p["paper_id"]) for i in range(3) for p in papers[:600]]
    write_corpus(root / "corpus", papers, citations)
    prefilter(
        root / "corpus" / "papers",
        root / "filtered.parquet",
        root / "f.json",
        PAPER_RULES,
        memory_limit="1GB",
    )
    return root


def run_sample(corpus, out, *extra, setup="dataset"):
    args = [
        setup,
        "--filtered",
        str(corpus / "filtered.parquet"),
        "--corpus",
        str(corpus / "corpus"),
        "--output-dir",
        str(out),
        "--seed",
        "5",
        *extra,
    ]
    return main(args)


def pools(directory):
    table = pq.read_table(directory / "pools.parquet").to_pylist()
    result = {}
    for row in table:
        result.setdefault((row["group"], row["rep"]), set()).add(row["paper_id"])
    return result


def references(corpus):
    table = pq.read_table(corpus / "corpus" / "citations").to_pylist()
    refs = {}
    for row in table:
        refs.setdefault(row["citing_id"], set()).add(row["cited_id"])
    return refs


def test_dataset_level_protocol(corpus, tmp_path):
    assert (
        run_sample(
            corpus,
            tmp_path,
            "--num-queries",
            "12",
            "--num-valid-queries",
            "6",
            "--pool-sizes",
            "150",
            "300",
            "--repetitions",
            "2",
        )
        == 0
    )
    test_dir, valid_dir = tmp_path / "dataset-test", tmp_path / "dataset-valid"
    queries = pq.read_table(test_dir / "queries.parquet").to_pylist()
    test_queries = {row["query_id"] for row in queries}
    valid_queries = {
        r["query_id"] for r in pq.read_table(valid_dir / "queries.parquet").to_pylist()
    }
    assert len(test_queries) == 12 and len(valid_queries) == 6
    assert not test_queries & valid_queries
    years = {
        r["paper_id"]: r["year"] for r in pq.read_table(corpus / "filtered.parquet").to_pylist()
    }
    assert all(years[q] == 2019 for q in test_queries | valid_queries)

    listing = read_collections(test_dir)
    assert [(r.group, r.rep) for r in listing] == [
        ("pool-150", 0),
        ("pool-150", 1),
        ("pool-300", 0),
        ("pool-300", 1),
    ]
    assert [(r.group, r.rep) for r in read_collections(valid_dir)] == [
        ("pool-150", 0),
        ("pool-300", 0),
    ]
    # The Snakefile plans the same collections from the config, before sampling runs.
    sampling = {
        "dataset_level": {"pool_sizes": [300, 150], "repetitions": 2},
        "validation": {"num_queries": 6},
    }
    for split, directory in (("test", test_dir), ("valid", valid_dir)):
        planned = planned_collections("dataset", split, sampling)
        assert [(c.group, c.rep) for c in planned] == [
            (r.group, r.rep) for r in read_collections(directory)
        ]
    refs = references(corpus)
    test_pools = pools(test_dir)
    for r in listing:
        assert (r.setup, r.split, r.n_queries) == ("dataset", "test", 12)
        assert r.pool_size == r.requested_pool_size == len(test_pools[(r.group, r.rep)])
    for (group, rep), pool in test_pools.items():
        assert len(pool) == int(group.removeprefix("pool-"))
        assert all(years[p] <= 2019 for p in pool)
        qrels = read_qrels(test_dir / "qrels" / f"{group}.rep{rep}.qrels")
        assert set(qrels) == test_queries
        for query, relevant in qrels.items():
            assert set(relevant) == refs[query] & set(years)
            assert set(relevant) <= pool
        cited = {doc for relevant in qrels.values() for doc in relevant}
        # Query papers enter a pool only when another query cites them.
        assert (pool & test_queries) <= cited
    assert test_pools[("pool-150", 0)] != test_pools[("pool-150", 1)]


def test_same_seed_same_bytes_and_other_seed_differs(corpus, tmp_path):
    args = ("--num-queries", "10", "--num-valid-queries", "0", "--pool-sizes", "200")
    args += ("--repetitions", "2")
    run_sample(corpus, tmp_path / "a", *args)
    run_sample(corpus, tmp_path / "b", *args)
    for name in (
        "queries.parquet",
        "pools.parquet",
        "collections.tsv",
        "qrels/pool-200.rep1.qrels",
    ):
        first = (tmp_path / "a" / "dataset-test" / name).read_bytes()
        assert first == (tmp_path / "b" / "dataset-test" / name).read_bytes()
    main(
        [
            "dataset",
            "--filtered",
            str(corpus / "filtered.parquet"),
            "--corpus",
            str(corpus / "corpus"),
            "--output-dir",
            str(tmp_path / "c"),
            "--seed",
            "6",
            *args,
        ]
    )
    assert pools(tmp_path / "a" / "dataset-test") != pools(tmp_path / "c" / "dataset-test")


def test_excluded_ids_are_never_queries(corpus, tmp_path):
    run_sample(
        corpus,
        tmp_path / "a",
        "--num-queries",
        "1000",
        "--num-valid-queries",
        "0",
        "--pool-sizes",
        "200",
        "--on-too-small",
        "cap",
    )
    eligible = {
        r["query_id"]
        for r in pq.read_table(tmp_path / "a/dataset-test/queries.parquet").to_pylist()
    }
    excluded = sorted(eligible)[:5]
    (tmp_path / "exclude.txt").write_text("\n".join(excluded) + "\n")
    run_sample(
        corpus,
        tmp_path / "b",
        "--num-queries",
        "1000",
        "--num-valid-queries",
        "0",
        "--pool-sizes",
        "200",
        "--on-too-small",
        "cap",
        "--exclude-query-ids",
        str(tmp_path / "exclude.txt"),
    )
    queries = {
        r["query_id"]
        for r in pq.read_table(tmp_path / "b/dataset-test/queries.parquet").to_pylist()
    }
    assert queries == eligible - set(excluded)
    report = json.loads((tmp_path / "b" / "dataset-report.json").read_text())
    assert report["excluded_query_ids"] == 5
    assert report["warnings"]


def test_too_small_fails_or_caps(corpus, tmp_path, capsys):
    args = ("--num-queries", "5", "--num-valid-queries", "0", "--pool-sizes", "100000")
    args += ("--repetitions", "1")
    assert run_sample(corpus, tmp_path / "a", *args, "--on-too-small", "fail") == 2
    assert "requested 100000, but only" in capsys.readouterr().err
    assert run_sample(corpus, tmp_path / "b", *args, "--on-too-small", "cap") == 0
    (pool,) = pools(tmp_path / "b" / "dataset-test").values()
    queries = {
        r["query_id"]
        for r in pq.read_table(tmp_path / "b/dataset-test/queries.parquet").to_pylist()
    }
    qrels = read_qrels(tmp_path / "b" / "dataset-test" / "qrels" / "pool-100000.rep0.qrels")
    cited = {doc for relevant in qrels.values() for doc in relevant}
    assert len(pool) == 600 - len(queries - cited)
    report = json.loads((tmp_path / "b" / "dataset-report.json").read_text())
    assert any("requested 100000" in warning for warning in report["warnings"])


def test_field_level_pools_come_from_the_field_cited_set(corpus, tmp_path):
    assert (
        run_sample(
            corpus,
            tmp_path,
            "--num-queries",
            "3",
            "--num-valid-queries",
            "1",
            "--pool-size",
            "80",
            "--repetitions",
            "3",
            "--fields",
            *FIELDS,
            "--on-too-small",
            "cap",
            setup="field",
        )
        == 0
    )
    test_dir = tmp_path / "field-test"
    refs = references(corpus)
    fields = {
        r["paper_id"]: r["fields"] for r in pq.read_table(corpus / "filtered.parquet").to_pylist()
    }
    listing = read_collections(test_dir)
    reps = {}
    for row in listing:
        reps.setdefault(row.group, []).append(row.rep)
    # Every field has its three repetitions, as the config plans them; Art's field-cited
    # set (cited by Art papers) is smaller than the pool, so its pools are the whole set.
    assert reps == {field_slug(name): [0, 1, 2] for name in FIELDS}
    art_pools = [pool for (group, _), pool in pools(test_dir).items() if group == "art"]
    assert len(art_pools) == 3 and art_pools[0] == art_pools[1] == art_pools[2]
    # Art has 3 eligible queries, all drawn for the test split: its validation collection
    # exists, without queries, and the report says why.
    valid_listing = {row.group: row for row in read_collections(tmp_path / "field-valid")}
    assert sorted(valid_listing) == sorted(field_slugs(FIELDS, "test"))
    assert valid_listing["art"].n_queries == 0 and valid_listing["art"].pool_size > 0
    assert read_qrels(tmp_path / "field-valid" / "qrels" / "art.rep0.qrels") == {}
    report = json.loads((tmp_path / "field-report.json").read_text())
    assert any("'Art' valid queries" in warning for warning in report["warnings"])
    sampling = {
        "field_level": {"fields": FIELDS, "repetitions": 3},
        "validation": {"queries_per_field": 1},
    }
    for split, directory in (("test", test_dir), ("valid", tmp_path / "field-valid")):
        planned = [(c.group, c.rep) for c in planned_collections("field", split, sampling)]
        assert [(c.group, c.rep) for c in read_collections(directory)] == planned
    queries = pq.read_table(test_dir / "queries.parquet").to_pylist()
    for (group, _rep), pool in pools(test_dir).items():
        name = next(n for n in FIELDS if field_slug(n) == group)
        group_queries = {r["query_id"] for r in queries if r["group"] == group}
        assert all(name in fields[q] for q in group_queries)
        field_cited = {
            c
            for citing, cited in refs.items()
            for c in cited
            if citing in fields and name in fields[citing]
        }
        assert pool <= field_cited
        assert len(pool) == min(80, len(field_cited))
    valid = {
        r["query_id"]
        for r in pq.read_table(tmp_path / "field-valid" / "queries.parquet").to_pylist()
    }
    assert not valid & {r["query_id"] for r in queries}


@pytest.mark.parametrize("policy", ["fail", "cap"])
def test_unknown_field_fails_with_clear_message(corpus, tmp_path, capsys, policy):
    status = run_sample(
        corpus,
        tmp_path,
        "--num-queries",
        "4",
        "--num-valid-queries",
        "0",
        "--pool-size",
        "50",
        "--fields",
        "Alchemy",
        "--on-too-small",
        policy,
        setup="field",
    )
    assert status == 2
    assert "Alchemy" in capsys.readouterr().err


def test_config_error_type():
    assert issubclass(ConfigError, Exception)


def test_field_slugs_in_field_order_and_refuses_a_shared_slug():
    assert list(field_slugs(["Computer Science", "Art"], "fields").items()) == [
        ("computer-science", "Computer Science"),
        ("art", "Art"),
    ]
    with pytest.raises(ConfigError, match="fields: two fields share a file name"):
        field_slugs(["Computer Science", "computer science"], "fields")
    with pytest.raises(ConfigError, match="share a file name"):
        field_slugs(["Art", "Art"], "fields")


def test_training_split_predates_the_test_queries(corpus, tmp_path):
    """Training queries come from the years before the query year, so no test or validation
    query is one; the pool holds their cited papers and nothing newer than the last
    training year; the same seed gives the same bytes."""
    common = ("--query-year", "2019", "--pool-size", "300", "--num-queries", "25")
    assert run_sample(corpus, tmp_path / "a", *common, "--years-before", "3", setup="train") == 0
    split = tmp_path / "a" / "dataset-train"
    (collection,) = read_collections(split)
    assert (collection.split, collection.group, collection.rep) == ("train", "pool-300", 0)
    queries = pq.read_table(split / "queries.parquet")["query_id"].to_pylist()
    assert len(queries) == collection.n_queries == 25
    year_of = {
        row["paper_id"]: row["year"]
        for row in pq.read_table(corpus / "filtered.parquet").to_pylist()
    }
    assert {year_of[q] for q in queries} <= {2016, 2017, 2018}
    test_args = ("--query-year", "2019", "--pool-sizes", "300", "--num-queries", "10")
    assert run_sample(corpus, tmp_path / "t", *test_args, "--num-valid-queries", "5") == 0
    evaluated = set()
    for name in ("dataset-test", "dataset-valid"):
        evaluated |= set(pq.read_table(tmp_path / "t" / name / "queries.parquet")["query_id"])
    assert evaluated and not evaluated & set(queries)

    pool = set(pools(split)[("pool-300", 0)])
    assert len(pool) == 300 and all(year_of[p] <= 2018 for p in pool)
    qrels = read_qrels(split / "qrels" / "pool-300.rep0.qrels")
    cited = references(corpus)
    for query in queries:
        assert set(qrels[query]) == {c for c in cited[query] if year_of.get(c, 9999) <= 2018}
        assert set(qrels[query]) <= pool
    report = json.loads((tmp_path / "a" / "train-report.json").read_text())
    assert report["query_years"] == [2016, 2018] and report["queries"] == 25

    assert run_sample(corpus, tmp_path / "b", *common, "--years-before", "3", setup="train") == 0
    for name in ("queries.parquet", "pools.parquet", "qrels/pool-300.rep0.qrels"):
        assert (split / name).read_bytes() == (tmp_path / "b" / "dataset-train" / name).read_bytes()


def test_training_split_needs_earlier_years(corpus, tmp_path, capsys):
    args = ("--query-year", "2019", "--pool-size", "50", "--num-queries", "5")
    with pytest.raises(SystemExit) as info:  # the schema's minimum, checked by argparse
        run_sample(corpus, tmp_path, *args, "--years-before", "0", setup="train")
    assert info.value.code == 2
    assert "argument --years-before: must be >= 1, got 0" in capsys.readouterr().err


def test_field_level_queries_belong_to_one_field(tmp_path):
    """Every paper carries both fields, so each field could draw any query: the test and
    validation draws never give a paper to two fields, and the first field draws first."""
    rng = random.Random(3)
    papers = [
        {"paper_id": f"p{i:03d}", "year": 2010 + i * 10 // 120, "fields": ["Art", "Biology"]}
        for i in range(120)
    ]
    older = [p["paper_id"] for p in papers if p["year"] < 2019]
    citations = [
        (p["paper_id"], cited)
        for p in papers
        if p["year"] == 2019
        for cited in rng.sample(older, 4)
    ]
    citations += [(f"z{i}", p["paper_id"]) for i in range(3) for p in papers]
    papers += [{"paper_id": f"z{i}", "year": None, "fields": []} for i in range(3)]
    write_corpus(tmp_path / "corpus", papers, citations)
    prefilter(
        tmp_path / "corpus" / "papers", tmp_path / "filtered.parquet", tmp_path / "f.json",
        PAPER_RULES, memory_limit="1GB",
    )  # fmt: skip
    args = ("--num-queries", "4", "--num-valid-queries", "2", "--pool-size", "30")
    assert run_sample(tmp_path, tmp_path / "out", *args, "--fields", "Art", "Biology",
                      setup="field") == 0  # fmt: skip
    seen: dict[str, str] = {}
    for split in ("test", "valid"):
        rows = pq.read_table(tmp_path / "out" / f"field-{split}" / "queries.parquet").to_pylist()
        per_field = {}
        for row in rows:
            assert row["query_id"] not in seen, (row, seen.get(row["query_id"]))
            seen[row["query_id"]] = f"{split}/{row['group']}"
            per_field[row["group"]] = per_field.get(row["group"], 0) + 1
        assert per_field == (
            {"art": 4, "biology": 4} if split == "test" else {"art": 2, "biology": 2}
        )


def test_exclude_query_ids_none_is_no_list(corpus, tmp_path):
    args = ("--num-queries", "5", "--num-valid-queries", "0", "--pool-sizes", "200")
    assert run_sample(corpus, tmp_path, *args, "--exclude-query-ids", "none") == 0
    report = json.loads((tmp_path / "dataset-report.json").read_text())
    assert report["excluded_query_ids"] == 0


def test_training_query_year_defaults_from_the_schema(corpus, tmp_path):
    args = ("--pool-size", "300", "--num-queries", "5", "--years-before", "3")
    assert run_sample(corpus, tmp_path, *args, setup="train") == 0
    report = json.loads((tmp_path / "train-report.json").read_text())
    assert report["query_years"] == [2016, 2018]  # sampling.query_year: 2019


@pytest.mark.parametrize(
    ("setup", "settings"),
    [("dataset", SAMPLE_DATASET), ("field", SAMPLE_FIELD), ("train", SAMPLE_TRAIN)],
)
def test_the_configs_flags_parse(setup, settings):
    config = load_config(
        {
            "dataset": "t",
            "seed": 4,
            "corpus": {"format": "s2orc_v2020", "paths": ["s2orc-*.jsonl.gz"]},
            "sampling": {"query_year": 2018, "exclude_query_ids": None},
        }
    )
    wiring = ["--filtered", "f", "--corpus", "c", "--output-dir", "o"]
    args = build_parser().parse_args([setup, *wiring, *settings.argv(config)])
    assert (args.seed, args.query_year, args.exclude_query_ids) == (4, 2018, None)
    if setup == "field":
        assert args.fields == config.sampling.field_level.fields
        assert args.num_queries == config.sampling.field_level.queries_per_field
    elif setup == "dataset":
        assert args.pool_sizes == config.sampling.dataset_level.pool_sizes
        assert args.num_valid_queries == config.sampling.validation.num_queries
    else:
        assert args.years_before == config.rerank.train.years_before
