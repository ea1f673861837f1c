"""The global tables' inputs: the test collections and their models' per-query metrics."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from statistics import fmean

from citeval.collection_list import CollectionInfo, pool_size_of, read_collections
from citeval.errors import InputDataError
from citeval.layout import Layout, run_name
from citeval.metrics import ALL_QUERIES, read_per_query_tsv


def collections_of_test_split(results: Path, setup: str) -> list[CollectionInfo]:
    """The rows of ``samples/<setup>-test/collections.tsv``."""
    return read_collections(Layout(str(results)).sample_dir(setup, "test"))


def groups_without_queries(results: Path, setup: str) -> set[str]:
    """The test split's groups that sampling left without queries."""
    return {c.group for c in collections_of_test_split(results, setup) if c.n_queries == 0}


def metrics_path(results: Path, setup: str, collection: CollectionInfo, model: str) -> Path:
    """A model's metrics on a test collection (``model``: its table label)."""
    return Path(Layout(str(results)).metrics(setup, "test", collection.name, run_name(model)))


def collection_values(
    results: Path, setup: str, models: Sequence[str], measures: Sequence[str]
) -> dict[tuple[str, int, str], dict[str, dict[str, float]]]:
    """(group, rep, model) -> query id (``all``: the mean) -> measure -> value."""
    values = {}
    for collection in collections_of_test_split(results, setup):
        for model in models:
            path = metrics_path(results, setup, collection, model)
            per_query = read_per_query_tsv(path)
            if ALL_QUERIES not in per_query:
                raise InputDataError("no 'all' row with the mean over queries", path=path)
            for qid, row in per_query.items():
                missing = [m for m in measures if m not in row]
                if missing:
                    raise InputDataError(f"measures {missing} are missing for {qid!r}", path=path)
            key = (collection.group, collection.rep, model)
            values[key] = {q: {m: row[m] for m in measures} for q, row in per_query.items()}
    return values


def collection_means(
    values: dict[tuple[str, int, str], dict[str, dict[str, float]]],
) -> dict[tuple[str, int, str], dict[str, float]]:
    """(group, rep, model) -> measure -> mean over the collection's queries."""
    return {key: per_query[ALL_QUERIES] for key, per_query in values.items()}


def query_values(
    values: dict[tuple[str, int, str], dict[str, dict[str, float]]],
    group: str,
    model: str,
    measure: str,
) -> dict[str, float]:
    """Query id -> 100 × its mean over the group's repetitions: the pairing unit."""
    per_rep: dict[str, list[float]] = defaultdict(list)
    for (g, _rep, m), per_query in sorted(values.items()):
        if g == group and m == model:
            for qid, row in per_query.items():
                if qid != ALL_QUERIES:
                    per_rep[qid].append(row[measure])
    return {qid: 100 * fmean(v) for qid, v in per_rep.items()}


def check_same_queries(
    values: dict[tuple[str, int, str], dict[str, dict[str, float]]], baseline: str
) -> None:
    """Every model of a collection has the baseline's queries (pairs are by query id)."""
    for (group, rep, model), per_query in sorted(values.items()):
        expected = values.get((group, rep, baseline))
        if expected is not None and set(per_query) != set(expected):
            differ = sorted(set(per_query) ^ set(expected))
            raise InputDataError(
                f"{group}.rep{rep}: model {model!r} and baseline {baseline!r} have different "
                f"queries ({len(differ)} differ, e.g. {differ[:5]}); cannot pair them"
            )


def pool_labels(results: Path) -> dict[str, str]:
    """Column label per dataset-level group: the pool size, or the actual size if capped."""
    actual: dict[str, int] = {}
    for collection in collections_of_test_split(results, "dataset"):
        size = collection.pool_size
        actual[collection.group] = max(size, actual.get(collection.group, 0))
    labels = {}
    for group, size in actual.items():
        requested = pool_size_of(group)
        labels[group] = str(requested) if size >= requested else f"{size} (capped)"
    return labels


def mean_over_reps(
    means: dict[tuple[str, int, str], dict[str, float]],
) -> dict[tuple[str, str], dict[str, float]]:
    """(group, model) -> measure -> mean over repetitions."""
    grouped: dict[tuple[str, str], list[dict[str, float]]] = defaultdict(list)
    for (group, _rep, model), values in sorted(means.items()):
        grouped[(group, model)].append(values)
    return {
        key: {measure: fmean(v[measure] for v in values) for measure in values[0]}
        for key, values in grouped.items()
    }
