"""The measure declarations: names, labels, pytrec_eval keys, F1, and the tables' cutoffs."""

from __future__ import annotations

import pytest

from citeval import measures
from citeval.measures import (
    F1,
    KINDS,
    MAP,
    MDCR_MEASURES,
    MRR,
    NDCG,
    NDCG_CUT,
    PRECISION,
    RECALL,
    TRADEOFF_MEASURES,
    Kind,
    Measure,
    cutoffs_for,
    evaluated_measures,
    field_table_measures,
    global_metric_cutoffs,
    global_table_measures,
    local_metric_cutoffs,
    local_table_measures,
    parse_measure,
    rerank_table_measures,
    table1_measures,
    table_cutoff,
)

SUPPORTED = "map, ndcg, recip_rank, ndcg_cut_<k>, recall_<k>, P_<k>, f1_<k>"


@pytest.mark.parametrize(
    ("measure", "name", "label", "trec_eval"),
    [
        (MAP, "map", "MAP", {"map"}),
        (NDCG, "ndcg", "NDCG", {"ndcg"}),
        (MRR, "recip_rank", "MRR", {"recip_rank"}),
        (RECALL @ 30, "recall_30", "R@30", {"recall.30"}),
        (PRECISION @ 5, "P_5", "P@5", {"P.5"}),
        (NDCG_CUT @ 10, "ndcg_cut_10", "NDCG@10", {"ndcg_cut.10"}),
        (F1 @ 20, "f1_20", "F1@20", {"P.20", "recall.20"}),
    ],
)
def test_names_labels_and_what_pytrec_eval_is_asked(measure, name, label, trec_eval) -> None:
    assert (measure.name, str(measure), measure.label) == (name, name, label)
    assert measure.trec_eval == trec_eval
    assert parse_measure(name) == measure


def test_values_come_from_pytrec_evals_keys_and_f1_is_derived() -> None:
    computed = {"map": 0.25, "recall_20": 0.5, "P_20": 0.25, "P_5": 0.0, "recall_5": 0.0}
    assert MAP.value(computed) == 0.25
    assert (RECALL @ 20).value(computed) == 0.5
    assert (F1 @ 20).value(computed) == pytest.approx(2 * 0.25 * 0.5 / 0.75)
    assert (F1 @ 5).value(computed) == 0.0  # P and R both 0
    with pytest.raises(KeyError):
        (RECALL @ 30).value(computed)


def test_parse_errors_keep_their_message() -> None:
    for bad in ("P_0", "P_05", "p_5", "mrr", "recall", "ndcg_cut_x", "map_5", "f1_", "P_5\n"):
        with pytest.raises(ValueError) as error:
            parse_measure(bad)
        assert str(error.value) == f"unknown measure {bad!r}; supported: {SUPPORTED}"
    assert ", ".join(kind.pattern for kind in KINDS) == SUPPORTED


def test_cutoffs_are_checked() -> None:
    with pytest.raises(TypeError, match="MAP takes no cutoff"):
        MAP.kind @ 5
    with pytest.raises(ValueError, match="cutoffs must be >= 1, got 0"):
        RECALL @ 0
    with pytest.raises(ValueError, match="needs a cutoff"):
        Measure(RECALL)
    with pytest.raises(TypeError):
        RECALL @ 2.0
    # Equal measures are one measure (a set, a dict key).
    assert len({RECALL @ 10, RECALL @ 10, parse_measure("recall_10")}) == 1
    assert RECALL @ 10 != PRECISION @ 10


def test_a_kind_is_computed_one_way() -> None:
    with pytest.raises(ValueError, match="either trec_eval or parts"):
        Kind("x", "X")
    with pytest.raises(ValueError, match="either trec_eval or parts"):
        Kind("x", "X", trec_eval="x", parts=(MAP.kind,), combine=max)
    with pytest.raises(ValueError, match="take a cutoff"):
        Kind("x", "X", cutoff=True, parts=(MAP.kind,), combine=max)


def test_a_metrics_file_holds_every_kind_at_every_cutoff() -> None:
    assert measures.names(evaluated_measures([30, 10, 30])) == [
        "map", "ndcg", "recip_rank",
        "recall_10", "P_10", "f1_10", "ndcg_cut_10",
        "recall_30", "P_30", "f1_30", "ndcg_cut_30",
    ]  # fmt: skip
    with pytest.raises(ValueError, match="cutoffs must be >= 1, got 0"):
        evaluated_measures([0, 5])


def labels(ms) -> list[str]:
    return [m.label for m in ms]


def test_the_tables_columns() -> None:
    assert labels(table1_measures(30)) == ["MAP", "NDCG", "R@30"]
    assert labels(rerank_table_measures(30)) == ["MAP", "NDCG", "R@30", "R@10", "MRR", "F1@20"]
    assert labels(field_table_measures(15)) == ["MAP", "NDCG", "R@15"]
    assert labels(local_table_measures([20, 1, 5, 1])) == [
        "MRR", "R@1", "R@5", "R@20", "NDCG@10", "MAP",
    ]  # fmt: skip
    assert measures.names(MDCR_MEASURES) == ["map", "ndcg", "recall_5"]
    assert labels(MDCR_MEASURES) == ["MAP", "NDCG", "R@5"]
    assert labels(TRADEOFF_MEASURES) == ["R@10", "MAP"]
    assert table_cutoff([30, 10]) == 30
    with pytest.raises(ValueError, match="no cutoff"):
        table_cutoff([])


def test_cutoffs_follow_the_tables_in_order() -> None:
    assert cutoffs_for(rerank_table_measures(30)) == [30, 10, 20]
    assert cutoffs_for([MAP, RECALL @ 5, F1 @ 2, PRECISION @ 5]) == [5, 2]
    assert cutoffs_for([MAP, NDCG, MRR]) == []
    assert measures.names(global_table_measures([30], rerank=False)) == ["map", "ndcg", "recall_30"]
    assert measures.names(global_table_measures([30], rerank=True)) == [
        "map", "ndcg", "recall_30", "recall_10", "recip_rank", "f1_20",
    ]  # fmt: skip


def _plan_metric_cutoffs(config_cutoffs: list[int], reranker: bool) -> list[int]:
    """What Plan.metric_cutoffs computed before the measures were declared."""
    return list(dict.fromkeys([*config_cutoffs, *((10, 20) if reranker else ())]))


def _plan_local_cutoffs(local_cutoffs: list[int]) -> list[int]:
    """What Plan.local_cutoffs computed before the measures were declared."""
    return sorted({*local_cutoffs, 10})


@pytest.mark.parametrize(
    "config_cutoffs",
    [[30], [10], [20], [30, 10], [20, 5, 10], [5, 30, 5], [100, 20, 10, 1], [1000]],
)
@pytest.mark.parametrize("rerank", [False, True])
def test_global_cutoffs_are_the_plans_in_its_order(config_cutoffs, rerank) -> None:
    assert global_metric_cutoffs(config_cutoffs, rerank) == _plan_metric_cutoffs(
        config_cutoffs, rerank
    )


def test_global_cutoffs_examples() -> None:
    assert global_metric_cutoffs([30], rerank=False) == [30]
    assert global_metric_cutoffs([30], rerank=True) == [30, 10, 20]
    assert global_metric_cutoffs([20, 5], rerank=True) == [20, 5, 10]


@pytest.mark.parametrize(
    "local_cutoffs",
    [
        [1, 5, 10, 20, 50, 100, 200, 500, 1000, 2000],  # the schema's default
        [1],
        [10],
        [2000, 1, 50],
        [5, 5, 20],
    ],
)
@pytest.mark.parametrize("rerank", [False, True])
def test_local_cutoffs_are_the_plans_ascending(local_cutoffs, rerank) -> None:
    assert local_metric_cutoffs(local_cutoffs, rerank) == _plan_local_cutoffs(local_cutoffs)


def test_local_cutoffs_examples() -> None:
    assert local_metric_cutoffs([2000, 1, 50]) == [1, 10, 50, 2000]
    assert local_metric_cutoffs([5]) == [5, 10]


def test_the_metrics_package_still_offers_the_parser() -> None:
    from citeval import metrics

    assert metrics.parse_measure is parse_measure
    assert metrics.measures_for([5]) == measures.names(evaluated_measures([5]))
