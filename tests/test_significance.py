"""citeval.significance: textbook p-values, exact enumeration, pairing, Holm, determinism."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from citeval.errors import InputDataError
from citeval.significance import (
    Settings,
    compare_column,
    holm,
    paired_test,
    stratum_weights,
)

# Student's sleep data (Cushny & Peebles; Student 1908; R's `sleep`): extra hours of sleep
# of 10 patients under two drugs. R: t.test(extra ~ group, data = sleep, paired = TRUE)
# gives t = -4.0621, df = 9, p-value = 0.002833.
DRUG1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
DRUG2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]


def by_patient(values):
    return {f"p{i}": v for i, v in enumerate(values)}


def rng(seed=0):
    return np.random.default_rng(seed)


def enumerated_p(differences):
    """Exact two-sided sign-flip p-value, every one of the 2**n flips written out."""
    observed = abs(sum(differences))
    flips = list(itertools.product((1, -1), repeat=len(differences)))
    extreme = sum(
        abs(sum(s * d for s, d in zip(signs, differences, strict=True))) >= observed - 1e-9
        for signs in flips
    )
    return extreme / len(flips)


def test_paired_t_test_gives_the_textbook_p_value():
    result = paired_test(by_patient(DRUG1), by_patient(DRUG2), 10000, rng())
    assert result.p_t == pytest.approx(0.002833, abs=5e-7)
    assert result.mean_diff == pytest.approx(-1.58)
    assert result.n_units == 10


def test_randomization_test_is_exact_when_every_flip_fits():
    # 2**10 = 1024 sign flips <= 10000 permutations: scipy enumerates them all.
    result = paired_test(by_patient(DRUG1), by_patient(DRUG2), 10000, rng())
    differences = [a - b for a, b in zip(DRUG1, DRUG2, strict=True)]
    assert result.p_perm == pytest.approx(enumerated_p(differences))
    assert result.p_perm == pytest.approx(4 / 1024)  # by the enumeration: 4 flips as extreme


def test_randomization_test_by_hand():
    # Differences 1, 2, 3: the sums over the 8 sign flips are ±6, ±4, ±2, 0, 0; two of them
    # are at least as far from 0 as the observed 6, so p = 2/8.
    result = paired_test({"a": 1.0, "b": 2.0, "c": 3.0}, {"a": 0.0, "b": 0.0, "c": 0.0}, 100, rng())
    assert result.p_perm == 0.25
    assert result.mean_diff == 2.0


def test_sampled_randomization_test_is_seeded_and_close_to_exact():
    generator = np.random.default_rng(5)
    a = {f"q{i}": v for i, v in enumerate(generator.normal(0.3, 1, 18))}
    b = {f"q{i}": v for i, v in enumerate(generator.normal(0.0, 1, 18))}
    first = paired_test(a, b, 2000, rng(1))
    assert paired_test(a, b, 2000, rng(1)) == first
    exact = paired_test(a, b, 2**18, rng(1)).p_perm
    assert first.p_perm == pytest.approx(exact, abs=0.03)


def test_units_are_paired_by_key_not_by_order():
    a, b = by_patient(DRUG1), by_patient(DRUG2)
    reordered = dict(reversed(list(a.items())))
    assert paired_test(reordered, b, 10000, rng()) == paired_test(a, b, 10000, rng())


def test_misaligned_units_are_an_error():
    a, b = by_patient(DRUG1), by_patient(DRUG2)
    del b["p3"]
    with pytest.raises(InputDataError, match=r"only in the model \['p3'\]"):
        paired_test(a, b, 100, rng())


def test_no_or_constant_differences():
    same = paired_test({"a": 1.0, "b": 2.0}, {"a": 1.0, "b": 2.0}, 100, rng())
    assert (same.p_perm, same.p_t, same.mean_diff) == (1.0, 1.0, 0.0)
    shifted = paired_test(
        {"a": 1.5, "b": 2.5, "c": 0.5}, {"a": 1.0, "b": 2.0, "c": 0.0}, 100, rng()
    )
    assert math.isnan(shifted.p_t)  # zero variance: the t statistic is undefined
    assert shifted.p_perm == 0.25  # the two all-same-sign flips of 8
    single = paired_test({"a": 0.9}, {"a": 0.4}, 100, rng())  # a field with one query
    assert (single.n_units, single.mean_diff, single.p_perm) == (1, 0.5, 1.0)
    assert math.isnan(single.p_t)


def test_holm_matches_the_textbook_adjustment():
    # R: p.adjust(c(0.01, 0.04, 0.03, 0.005), "holm") = 0.03 0.06 0.06 0.02
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.2, 0.9]) == pytest.approx([0.4, 0.9])
    assert holm([0.6, 0.7]) == pytest.approx([1.0, 1.0])
    adjusted = holm([0.01, math.nan])
    assert adjusted[0] == pytest.approx(0.02) and math.isnan(adjusted[1])


def test_stratum_weights_test_the_mean_of_stratum_means():
    keys = [("art", "q1"), ("art", "q2"), ("art", "q3"), ("bio", "q4")]
    weights = stratum_weights(keys)
    assert weights == pytest.approx(
        {("art", "q1"): 2 / 3, ("art", "q2"): 2 / 3, ("art", "q3"): 2 / 3, ("bio", "q4"): 2.0}
    )
    a = dict(zip(keys, [1.0, 2.0, 3.0, 10.0], strict=True))
    b = dict.fromkeys(keys, 0.0)
    # Mean over fields of the field means: (2 + 10) / 2.
    assert paired_test(a, b, 100, rng(), weights).mean_diff == pytest.approx(6.0)


def test_compare_column_leaves_out_the_baseline_and_holm_corrects_over_models():
    base = by_patient(DRUG1)
    per_model = {
        "bm25": base,
        "better": by_patient(DRUG2),
        "same": {k: v + (0.01 if i % 2 else -0.01) for i, (k, v) in enumerate(base.items())},
    }
    settings = Settings("bm25", 10000, 0.05, 13)
    comparisons = compare_column("t", "MAP", per_model, settings)
    assert list(comparisons) == ["better", "same"]
    better, same = comparisons["better"], comparisons["same"]
    assert better.p_perm_holm == pytest.approx(min(1, 2 * better.result.p_perm))
    assert better.significant and not same.significant
    assert same.p_perm_holm == pytest.approx(max(better.p_perm_holm, same.result.p_perm))
    # A model's p-value depends on (seed, table, column, model), not on the other models.
    alone = compare_column("t", "MAP", {"bm25": base, "better": per_model["better"]}, settings)
    assert alone["better"].result == better.result
