"""Paired significance tests of every model against a baseline, per table column.

For one column of a table, every model has a value per *unit* (a query, or a (field,
query) pair); the column's cell is the (weighted) mean of those values. Against the
baseline each other model gets

* a two-sided paired randomization test of the mean difference
  (:func:`scipy.stats.permutation_test` with ``permutation_type='samples'``: each unit's
  two values swap, i.e. the sign of its difference flips; exact when ``2**n`` does not
  exceed the number of permutations), and
* a paired t-test (:func:`scipy.stats.ttest_rel`).

Both p-values are also Holm-adjusted over the models of the column (the family is "which
models differ from the baseline on this column"); a cell is marked when its
Holm-adjusted randomization p-value is below ``alpha``. Units are paired by key: both
models must have exactly the same units, or the comparison is an error. Every test draws
from its own generator seeded from (seed, table, column, model), so a p-value never
depends on which other models or columns are in the table. See docs/significance.md.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from citeval.draws import seeded_rng
from citeval.errors import InputDataError

log = logging.getLogger(__name__)

MARKER = "†"
PVALUE_COLUMNS = (
    "column", "model", "baseline", "n_units", "mean_diff",
    "p_perm", "p_t", "p_perm_holm", "p_t_holm", "significant",
)  # fmt: skip
# Differences this small (in the table's units, values ×100) are rounding noise: the
# metric files carry ten decimals of fractions, i.e. 1e-8 in percent.
TOLERANCE = 1e-9
BATCH = 1000  # permutations evaluated at once: bounds memory on large columns


@dataclass(frozen=True)
class Settings:
    """What the tests need from the config: ``tables.baseline``, ``tables.significance``
    and ``seed``. No defaults here: the schema's are the only ones."""

    baseline: str
    permutations: int
    alpha: float
    seed: int


@dataclass(frozen=True)
class PairedResult:
    n_units: int
    mean_diff: float
    p_perm: float
    p_t: float


@dataclass(frozen=True)
class Comparison:
    """One model against the baseline on one column, with Holm-adjusted p-values."""

    column: str
    model: str
    result: PairedResult
    p_perm_holm: float
    p_t_holm: float
    significant: bool


def _mean_difference(x: np.ndarray, y: np.ndarray, axis: int) -> np.ndarray:
    return np.mean(x - y, axis=axis)


def paired_test(
    values: Mapping[Hashable, float],
    baseline: Mapping[Hashable, float],
    permutations: int,
    rng: np.random.Generator,
    weights: Mapping[Hashable, float] | None = None,
) -> PairedResult:
    """Both tests of ``values`` against ``baseline``, paired by unit key.

    ``weights`` scales each unit's pair (mean 1 over the units), so that the tested mean
    difference is a weighted mean: :func:`stratum_weights` makes it the unweighted mean
    over strata of the per-stratum means. The key sets must be equal.
    """
    if set(values) != set(baseline):
        only_model = sorted(map(str, set(values) - set(baseline)))
        only_baseline = sorted(map(str, set(baseline) - set(values)))
        raise InputDataError(
            "cannot pair per-query values: units only in the model "
            f"{only_model[:5]} ({len(only_model)}), only in the baseline "
            f"{only_baseline[:5]} ({len(only_baseline)})"
        )
    if not values:
        raise InputDataError("cannot test a column without any per-query value")
    keys = sorted(values, key=repr)
    scale = np.array([1.0 if weights is None else weights[k] for k in keys])
    x = scale * np.array([values[k] for k in keys], dtype=float)
    y = scale * np.array([baseline[k] for k in keys], dtype=float)
    diff = x - y
    mean_diff = float(np.mean(diff))
    if np.all(np.abs(diff) <= TOLERANCE):
        # No difference at all: nothing to test (scipy's t-test would give nan).
        return PairedResult(len(keys), 0.0, 1.0, 1.0)
    if len(keys) == 1:
        # One pair: its two sign flips give the same |mean difference|, so the exact
        # randomization p is 1 (scipy refuses a sample of one); the t-test is undefined.
        return PairedResult(1, mean_diff, 1.0, math.nan)
    perm = stats.permutation_test(
        (x, y),
        _mean_difference,
        permutation_type="samples",
        vectorized=True,
        n_resamples=permutations,
        alternative="two-sided",
        batch=BATCH,
        rng=rng,
    )
    if np.ptp(diff) <= TOLERANCE:
        p_t = math.nan  # constant differences: zero variance, the t statistic is undefined
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            p_t = float(stats.ttest_rel(x, y).pvalue)
    return PairedResult(len(keys), mean_diff, min(1.0, float(perm.pvalue)), p_t)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (same order; nan stays nan, counted in m)."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: (math.isnan(pvalues[i]), pvalues[i]))
    adjusted = [math.nan] * m
    running = 0.0
    for rank, i in enumerate(order):
        if math.isnan(pvalues[i]):
            continue
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def stratum_weights(keys: Iterable[tuple]) -> dict[tuple, float]:
    """Weights making the mean over ``(stratum, ...)`` keys the mean of stratum means.

    A unit of stratum ``s`` gets ``N / (S * n_s)`` (N units, S strata, n_s units in
    ``s``): all 1 when the strata are the same size.
    """
    keys = list(keys)
    sizes = Counter(key[0] for key in keys)
    return {key: len(keys) / (len(sizes) * sizes[key[0]]) for key in keys}


def compare_column(
    table: str,
    column: str,
    per_model: Mapping[str, Mapping[Hashable, float]],
    settings: Settings,
    weights: Mapping[Hashable, float] | None = None,
) -> dict[str, Comparison]:
    """Every model but the baseline against the baseline on one column, Holm over models."""
    base = per_model[settings.baseline]
    models = [model for model in per_model if model != settings.baseline]
    results = {
        model: paired_test(
            per_model[model],
            base,
            settings.permutations,
            seeded_rng(settings.seed, "significance", table, column, model),
            weights,
        )
        for model in models
    }
    p_perm_holm = holm([results[m].p_perm for m in models])
    p_t_holm = holm([results[m].p_t for m in models])
    return {
        model: Comparison(
            column,
            model,
            results[model],
            p_perm_holm[i],
            p_t_holm[i],
            p_perm_holm[i] < settings.alpha,
        )
        for i, model in enumerate(models)
    }


def baseline_missing(models: Sequence[str], settings: Settings, table: str) -> bool:
    """True (and logged) when the table cannot be tested against the baseline."""
    if settings.baseline in models:
        return False
    log.warning(
        "%s: baseline %r is not among the models %s; written without p-values",
        table, settings.baseline, list(models),
    )  # fmt: skip
    return True


def format_pvalues_tsv(comparisons: Sequence[Comparison], baseline: str) -> str:
    """The long-form companion TSV: one line per (column, model), in table order."""

    def number(value: float) -> str:
        return "nan" if math.isnan(value) else f"{value:.6g}"

    lines = ["\t".join(PVALUE_COLUMNS)]
    for c in comparisons:
        r = c.result
        lines.append(
            "\t".join(
                [
                    c.column,
                    c.model,
                    baseline,
                    str(r.n_units),
                    f"{r.mean_diff:.6f}",
                    number(r.p_perm),
                    number(r.p_t),
                    number(c.p_perm_holm),
                    number(c.p_t_holm),
                    str(int(c.significant)),
                ]
            )
        )
    return "\n".join(lines) + "\n"


def footnote(settings: Settings, unit: str, pvalues_file: str) -> str:
    """The Markdown line explaining the marker."""
    return (
        f"{MARKER} p < {settings.alpha:g} against `{settings.baseline}`: two-sided paired "
        f"randomization test of the mean difference (all 2^n sign flips of the n units when "
        f"2^n ≤ {settings.permutations}, else {settings.permutations} random ones; seed "
        f"{settings.seed}), Holm-corrected over the models of each column. Pairing unit: "
        f"{unit}. Uncorrected and paired t-test p-values: `{pvalues_file}`."
    )


@dataclass(frozen=True)
class TableTests:
    """The comparisons of one table, with what the Markdown footnote needs."""

    comparisons: list[Comparison]
    settings: Settings
    unit: str

    def marked(self) -> set[tuple[str, str]]:
        """(model, column) of the cells to mark."""
        return {(c.model, c.column) for c in self.comparisons if c.significant}


def table_tests(
    table: str,
    per_column: Mapping[str, Mapping[str, Mapping[Hashable, float]]],
    settings: Settings,
    unit: str,
    weights: Mapping[str, Mapping[Hashable, float]] | None = None,
) -> TableTests:
    """Every column's comparisons; ``per_column[column][model][unit] = value``."""
    comparisons = []
    for column, per_model in per_column.items():
        if not any(per_model.values()):
            continue  # a collection that sampling left without queries has nothing to pair
        column_weights = None if weights is None else weights.get(column)
        tested = compare_column(table, column, per_model, settings, column_weights)
        comparisons.extend(tested.values())
    return TableTests(comparisons, settings, unit)


def settings_for(
    baseline: str | None, *, permutations: int, alpha: float, seed: int
) -> Settings | None:
    """The tests' settings, or None (tables without p-values) when there is no baseline."""
    if baseline is None:
        log.info("no baseline: tables written without p-values")
        return None
    return Settings(baseline, permutations, alpha, seed)
