"""MDCR construction as pure functions: the graph walk by hand, Jaccard, and every invariant."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from citeval.errors import ConfigError
from citeval.mdcr.construct import Inputs, Settings, build_benchmark
from citeval.mdcr.negatives import (
    draw,
    graph_negatives,
    graph_order,
    least_alike_models,
    mean_jaccard,
    random_negatives,
    top_non_cited,
)

PAPER_SETTINGS = {
    "positives": 5,
    "negatives_per_type": 10,
    "model_depth": 200,
    "most_cited_depth": 200,
    "max_candidate_year": "query_year",
    "shortfall": "fill_from_random",
}


def settings_of(**values: object) -> Settings:
    """The paper's construction settings, with ``values`` (seed, split, types) given."""
    return Settings(**{**PAPER_SETTINGS, **values})


# A hand-built citation graph around query q, which cites ca, cb, cc, cd.
# N(c) = OC_c ∪ IC_c; q is in IC_c of every c it cites.
CITED = frozenset({"ca", "cb", "cc", "cd"})
NEIGHBOURS = {
    "ca": frozenset({"q", "cb", "cc", "n1", "n2"}),  # overlap {cb, cc} = 2
    "cb": frozenset({"q", "ca", "cc", "n3", "n4"}),  # overlap {ca, cc} = 2 (tie with ca)
    "cc": frozenset({"q", "ca", "n5", "n6", "n7", "n8"}),  # overlap {ca} = 1
    "cd": frozenset({"q", "n9"}),  # overlap 0
}


def plain_allowed(extra_blocked=()):
    blocked = {"q", *CITED, *extra_blocked}
    return lambda paper_id: paper_id not in blocked


def test_graph_order_by_overlap_then_paper_id() -> None:
    # O(q,c) = overlap / |OC_q| = 2/4, 2/4, 1/4, 0/4; the tie ca–cb goes to the smaller id.
    assert graph_order(CITED, NEIGHBOURS) == [("ca", 2), ("cb", 2), ("cc", 1), ("cd", 0)]
    # A cited paper absent from the neighbour map has overlap 0 and is walked last by id.
    assert graph_order(CITED | {"c0"}, NEIGHBOURS)[-2:] == [("c0", 0), ("cd", 0)]


def test_graph_walk_worked_out_by_hand() -> None:
    # count 3: ca gives n1, n2 (both fit); cb holds n3, n4 for the 1 place left: one drawn
    # with the generator, whose first call is choice(2, 1). cc and cd are never reached.
    expected_pick = ["n3", "n4"][int(np.random.default_rng(7).choice(2, size=1, replace=False)[0])]
    got = graph_negatives(np.random.default_rng(7), CITED, NEIGHBOURS, plain_allowed(), 3)
    assert got == ["n1", "n2", expected_pick]

    # count 5, n2 disallowed (say, no abstract): ca -> n1; cb -> n3, n4 (fit); cc holds
    # n5..n8 for 2 places: the generator's first call is choice(4, 2) (no earlier draw).
    picks = np.sort(np.random.default_rng(11).choice(4, size=2, replace=False))
    expected = ["n1", "n3", "n4", *(["n5", "n6", "n7", "n8"][i] for i in picks)]
    got = graph_negatives(np.random.default_rng(11), CITED, NEIGHBOURS, plain_allowed(["n2"]), 5)
    assert got == expected

    # count 20: every allowed neighbour, in walking order, and no more (shortfall).
    got = graph_negatives(np.random.default_rng(0), CITED, NEIGHBOURS, plain_allowed(), 20)
    assert got == ["n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9"]


def test_graph_tie_break_is_by_paper_id_not_by_input_order() -> None:
    # Renaming ca to cz puts it after cb in the tie: cb's n3, n4 come first.
    def rename(paper_id: str) -> str:
        return "cz" if paper_id == "ca" else paper_id

    renamed = {rename(k): frozenset(map(rename, v)) for k, v in NEIGHBOURS.items()}
    assert graph_order(frozenset(map(rename, CITED)), renamed)[:2] == [("cb", 2), ("cz", 2)]
    cited = frozenset({"cz", "cb", "cc", "cd"})
    got = graph_negatives(
        np.random.default_rng(3), cited, renamed, lambda p: p not in cited and p != "q", 2
    )
    assert got == ["n3", "n4"]


def test_draw_and_random_negatives() -> None:
    ids = [f"p{i:03d}" for i in range(100)]
    assert draw(np.random.default_rng(0), ids[:3], 5) == ids[:3]
    picked = draw(np.random.default_rng(0), ids, 10)
    assert len(set(picked)) == 10 and picked == sorted(picked)
    allowed = {"p005", "p050", "p077"}
    # Sparse population: the fall-back still finds every allowed paper.
    got = random_negatives(np.random.default_rng(1), ids, allowed.__contains__, 10)
    assert sorted(got) == sorted(allowed)
    got = random_negatives(np.random.default_rng(1), ids, lambda p: True, 10)
    assert len(set(got)) == 10


def test_top_non_cited_and_jaccard_by_hand() -> None:
    assert top_non_cited(["q", "c1", "a", "b", "c"], "q", {"c1"}, 2) == ["a", "b"]
    lists = {
        "m1": {"q1": ["a", "b"], "q2": ["x"]},
        "m2": {"q1": ["a", "c"], "q2": ["x"]},
        "m3": {"q1": ["d"], "q2": []},
    }
    pairs = mean_jaccard(lists)
    assert pairs["m1", "m2"] == pytest.approx((1 / 3 + 1) / 2)
    assert pairs["m1", "m3"] == pytest.approx((0 + 0) / 2)
    assert pairs["m2", "m3"] == 0.0
    # Means with others: m1 (2/3 + 0)/2, m2 the same, m3 0: m3 first, then m1 by name.
    assert least_alike_models(["m1", "m2", "m3"], pairs, 2) == ["m1", "m3"]
    assert math.isnan(mean_jaccard({"a": {"q": []}, "b": {"q": []}})["a", "b"])


def synthetic_inputs(seed: int = 0, n_papers: int = 400) -> Inputs:
    """A random corpus with text gaps, years after the query year and dense citations."""
    rnd = random.Random(seed)
    ids = [f"p{i:04d}" for i in range(n_papers)]
    papers = {}
    for pid in ids:
        if rnd.random() < 0.1:
            continue  # no title or abstract
        papers[pid] = (
            rnd.choice([None, *range(2010, 2022)])
            if rnd.random() < 0.1
            else rnd.randint(2010, 2021)
        )
    queries = {"Art": ids[:4], "Biology": ids[4:8]}
    for q in ids[:8]:
        papers[q] = 2019
    out: dict[str, set[str]] = {pid: set() for pid in ids}
    inc: dict[str, set[str]] = {pid: set() for pid in ids}
    for pid in ids:
        for other in rnd.sample(ids, 12):
            if other != pid:
                out[pid].add(other)
                inc[other].add(pid)
    cited = {q: frozenset(out[q]) for q in ids[:8]}
    neighbours = {c: frozenset(out[c] | inc[c]) for q in ids[:8] for c in cited[q]}
    prefiltered = sorted(rnd.sample(ids, 300))
    rankings = {
        model: {q: rnd.sample(ids, 250) for q in ids[:8]} for model in ("bm25", "minilm", "rrf")
    }
    most_cited = {name: sorted(rnd.sample(prefiltered, 40)) for name in queries}
    return Inputs(
        queries=queries,
        query_years={q: 2019 for q in ids[:8]},
        cited=cited,
        neighbours=neighbours,
        rankings=rankings,
        most_cited=most_cited,
        prefiltered=prefiltered,
        papers=papers,
    )


@pytest.mark.parametrize("shortfall", ["fill_from_random", "keep_fewer"])
@pytest.mark.parametrize("year_rule", ["query_year", None])
def test_invariants(shortfall: str, year_rule: str | None) -> None:
    inputs = synthetic_inputs()
    settings = settings_of(
        seed=5,
        split="test",
        model_types=("bm25", "minilm"),
        max_candidate_year=year_rule,
        shortfall=shortfall,
        model_depth=50,
    )
    benchmark, report = build_benchmark(inputs, settings)
    assert sorted(benchmark) == ["Art", "Biology"]
    for field_name, queries in benchmark.items():
        assert sorted(queries) == sorted(inputs.queries[field_name])
        for query_id, entry in queries.items():
            assert list(entry) == ["true", "bm25", "minilm", "graph", "most_cited", "random"]
            everything = [c for ids in entry.values() for c in ids]
            assert len(everything) == len(set(everything)), "candidates unique within a query"
            assert query_id not in everything
            assert len(entry["true"]) == 5
            assert set(entry["true"]) <= inputs.cited[query_id]
            for kind, ids in entry.items():
                assert ids == sorted(ids)
                for c in ids:
                    assert c in inputs.papers, "every candidate has a title and an abstract"
                    if year_rule == "query_year":
                        assert inputs.papers[c] is not None and inputs.papers[c] <= 2019
                if kind != "true":
                    assert not set(ids) & inputs.cited[query_id], "no cited paper is a negative"
                    if shortfall == "fill_from_random":
                        assert len(ids) == 10
            for model in ("bm25", "minilm"):
                top = top_non_cited(
                    inputs.rankings[model][query_id], query_id, inputs.cited[query_id], 50
                )
                assert set(entry[model]) <= set(top)
            assert (
                set(entry["most_cited"]) <= set(inputs.most_cited[field_name])
                or (report["fields"][field_name]["negatives"]["most_cited"]["filled_from_random"])
            )
            assert set(entry["random"]) <= set(inputs.prefiltered)
            graph_pool = set().union(*(inputs.neighbours[c] for c in inputs.cited[query_id]))
            if not report["fields"][field_name]["negatives"]["graph"]["filled_from_random"]:
                assert set(entry["graph"]) <= graph_pool
    assert report["model_types"] == ["bm25", "minilm"]
    assert report["fields"]["Art"]["queries"] == 4


def test_shortfall_is_counted_and_filled_or_kept() -> None:
    inputs = synthetic_inputs()
    inputs.most_cited = {"Art": inputs.most_cited["Art"][:3], "Biology": []}
    for rule in ("fill_from_random", "keep_fewer"):
        settings = settings_of(seed=1, split="test", model_types=(), shortfall=rule)
        benchmark, report = build_benchmark(inputs, settings)
        counts = report["fields"]["Biology"]["negatives"]["most_cited"]
        assert counts["queries_short"] == 4 and counts["missing"] == 40
        sizes = [len(e["most_cited"]) for e in benchmark["Biology"].values()]
        if rule == "keep_fewer":
            assert sizes == [0, 0, 0, 0]
            assert counts["filled_from_random"] == 0 and counts["still_missing"] == 40
        else:
            assert sizes == [10, 10, 10, 10]
            assert counts["filled_from_random"] == 40 and counts["still_missing"] == 0
        art = report["fields"]["Art"]["negatives"]["most_cited"]
        assert art["queries_short"] == 4 and art["missing"] >= 28


def test_query_without_usable_positive_is_dropped() -> None:
    inputs = synthetic_inputs()
    query = inputs.queries["Art"][0]
    inputs.papers = {k: v for k, v in inputs.papers.items() if k not in inputs.cited[query]}
    benchmark, report = build_benchmark(inputs, settings_of(seed=1, split="test", model_types=()))
    assert query not in benchmark["Art"]
    assert report["fields"]["Art"]["dropped_without_positives"] == [query]
    assert report["fields"]["Art"]["positives"]["missing"] == 5


def test_same_seed_same_benchmark_other_seed_differs() -> None:
    settings = settings_of(seed=5, split="test", model_types=("bm25", "rrf"))
    first = build_benchmark(synthetic_inputs(), settings)
    assert build_benchmark(synthetic_inputs(), settings) == first
    other = build_benchmark(
        synthetic_inputs(), settings_of(seed=6, split="test", model_types=("bm25", "rrf"))
    )
    assert other[0] != first[0]
    # The draws of one query do not depend on the other queries being there.
    inputs = synthetic_inputs()
    inputs.queries = {"Art": inputs.queries["Art"][1:2]}
    alone = build_benchmark(inputs, settings)[0]["Art"]
    q = inputs.queries["Art"][0]
    assert alone[q] == first[0]["Art"][q]


def test_each_query_and_type_has_its_own_stream() -> None:
    # Two queries with the same citations and rankings still get different draws.
    inputs = synthetic_inputs()
    first, second = inputs.queries["Art"][:2]
    inputs.cited = {**inputs.cited, second: inputs.cited[first]}
    inputs.rankings = {
        model: {**per_query, second: per_query[first]}
        for model, per_query in inputs.rankings.items()
    }
    settings = settings_of(seed=5, split="test", model_types=("bm25", "minilm"))
    benchmark = build_benchmark(inputs, settings)[0]["Art"]
    assert benchmark[first]["true"] != benchmark[second]["true"]
    assert benchmark[first]["bm25"] != benchmark[second]["bm25"]


def test_settings_are_checked() -> None:
    with pytest.raises(ConfigError, match="clash"):
        settings_of(seed=1, split="test", model_types=("graph",))
    with pytest.raises(ConfigError, match="max_candidate_year"):
        settings_of(seed=1, split="test", model_types=(), max_candidate_year="2019")
    with pytest.raises(ConfigError, match="shortfall"):
        settings_of(seed=1, split="test", model_types=(), shortfall="other")
    with pytest.raises(ConfigError, match="positives must be at least 1"):
        settings_of(seed=1, split="test", model_types=(), positives=0)
    with pytest.raises(ConfigError, match="no rankings"):
        build_benchmark(synthetic_inputs(), settings_of(seed=1, split="test", model_types=("x",)))
