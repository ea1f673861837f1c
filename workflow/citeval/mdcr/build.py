"""A split's MDCR build (``python -m citeval.mdcr build``): read its inputs, pick the model
types, write its files.

Writes, for split ``s``: ``mdcr_s.json`` (benchmark), ``mdcr_s_data.jsonl`` (every query
and candidate with its title and abstract), ``mdcr_s_jaccard.tsv`` and
``mdcr_s_report.json``.

Jaccard table: for every pair of the ``--models``, the mean over the split's queries of
the Jaccard index between the two models' top ``--model-depth`` non-cited results
(queries where both lists are empty are left out). The TSV is a symmetric matrix with one
row per model, the diagonal left empty, then each model's mean with the others and
whether it was selected. ``--model-selection auto`` selects the ``--num-model-types``
models with the lowest mean (ties by name). ``--model-types-from REPORT`` takes the model
types another split's construction selected instead, so that the validation split has the
test split's types, as the published benchmark does.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from citeval.errors import ConfigError, InputDataError
from citeval.io import write_json, write_text
from citeval.mdcr.construct import Settings, build_benchmark
from citeval.mdcr.formats import check_data_covers, iter_pairs, write_benchmark, write_data
from citeval.mdcr.inputs import (
    Tables,
    output_paths,
    read_field_queries,
    read_inputs,
    read_rankings,
)
from citeval.mdcr.negatives import (
    least_alike_models,
    mean_jaccard,
    mean_jaccard_with_others,
    top_lists,
)

LOG = logging.getLogger(__name__)
AUTO = "auto"


def select_models(
    models: Sequence[str],
    pairs: Mapping[tuple[str, str], float],
    selection: Sequence[str],
    count: int,
) -> list[str]:
    """The model types: the ``count`` least alike (``auto``) or the models named."""
    if list(selection) == [AUTO]:
        if len(models) < count:
            LOG.warning(
                "only %d models to choose %d model types from: using all", len(models), count
            )
        return least_alike_models(models, pairs, count)
    unknown = sorted(set(selection) - set(models))
    if unknown:
        raise ConfigError(
            f"mdcr.model_selection names models without runs: {unknown} (have {list(models)})"
        )
    return sorted(set(selection))


def format_jaccard_tsv(
    models: Sequence[str], pairs: Mapping[tuple[str, str], float], selected: Sequence[str]
) -> str:
    ordered = sorted(models)
    means = mean_jaccard_with_others(ordered, pairs)

    def number(value: float) -> str:
        return "nan" if math.isnan(value) else f"{value:.6f}"

    lines = ["\t".join(["model", *ordered, "mean_with_others", "selected"])]
    for model in ordered:
        cells = [
            "" if other == model else number(pairs[tuple(sorted((model, other)))])
            for other in ordered
        ]
        flag = "yes" if model in selected else "no"
        lines.append("\t".join([model, *cells, number(means[model]), flag]))
    return "\n".join(lines) + "\n"


def model_types_of(report_path: Path) -> list[str]:
    """The model types a construction report lists."""
    try:
        types = json.loads(Path(report_path).read_text(encoding="utf-8"))["model_types"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise InputDataError(
            f"cannot read the model types of a construction report: {error!r}",
            path=str(report_path),
        ) from None
    if not types or not all(isinstance(name, str) for name in types):
        raise InputDataError("model_types is not a non-empty list of names", path=str(report_path))
    return types


def build_split(
    split: str,
    *,
    samples: Path,
    runs: Path,
    corpus: Path,
    filtered: Path,
    output_dir: Path,
    seed: int,
    fields: Sequence[str],
    models: Sequence[str],
    model_selection: str | Sequence[str],
    num_model_types: int,
    positives: int,
    negatives_per_type: int,
    model_depth: int,
    most_cited_depth: int,
    max_candidate_year: str | None,
    shortfall: str,
    memory_limit: str,
    model_types_from: Path | None = None,
    threads: int = 2,
) -> None:
    """Build split ``split`` (``test`` or ``valid``) and write its four files.

    ``models`` are the models whose runs are compared; ``model_selection`` is ``auto`` or
    model names; the construction settings are the config's ``mdcr`` keys.
    """
    if not models:
        raise ConfigError(
            "no models to compare: name the models whose field-level runs the Jaccard table "
            "compares (the pipeline passes mdcr.models, or every first stage when it is empty)"
        )
    paths = output_paths(output_dir, split)
    queries = read_field_queries(Path(samples), fields)
    if not queries:
        raise InputDataError("the sample split has no queries", path=str(samples))
    without = [name for name in fields if name not in queries]
    if without:
        LOG.warning("sampling found no queries for %s: the benchmark leaves them out", without)
    models = sorted(set(models))
    rankings = read_rankings(Path(runs), queries, models)
    tables = Tables(Path(corpus), Path(filtered), memory_limit=memory_limit, threads=threads)
    inputs = read_inputs(tables, queries, rankings, most_cited_depth)
    # The same lists serve the Jaccard table and the model types' candidates.
    top = top_lists(rankings, inputs.cited, model_depth)
    pairs = mean_jaccard(top)
    selection = [model_selection] if isinstance(model_selection, str) else list(model_selection)
    if model_types_from:
        selection = model_types_of(model_types_from)
    selected = select_models(models, pairs, selection, num_model_types)
    LOG.info("model types: %s", ", ".join(selected))
    settings = Settings(
        seed=seed,
        split=split,
        model_types=tuple(selected),
        positives=positives,
        negatives_per_type=negatives_per_type,
        model_depth=model_depth,
        most_cited_depth=most_cited_depth,
        max_candidate_year=max_candidate_year,
        shortfall=shortfall,
    )
    benchmark, report = build_benchmark(inputs, settings, top)
    if not benchmark:
        raise InputDataError("no query of the split has a positive with a title and an abstract")
    candidate_pairs = list(iter_pairs(benchmark))
    needed = {q for qs in benchmark.values() for q in qs} | {c for _, c in candidate_pairs}
    papers = tables.texts(needed)
    check_data_covers(benchmark, {p.paper_id: p for p in papers})
    report["model_selection"] = selection
    report["jaccard"] = {
        "models": models,
        "mean_with_others": {
            model: None if math.isnan(value) else value
            for model, value in mean_jaccard_with_others(models, pairs).items()
        },
    }
    report["pairs"] = len(candidate_pairs)
    write_benchmark(benchmark, paths["benchmark"])
    write_data(papers, paths["data"])
    write_text(format_jaccard_tsv(models, pairs, selected), paths["jaccard"])
    write_json(report, paths["report"])
    LOG.info(
        "MDCR %s: %d fields, %d queries, %d pairs",
        split,
        len(benchmark),
        sum(len(qs) for qs in benchmark.values()),
        report["pairs"],
    )
