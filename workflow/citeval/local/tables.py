"""The local task's tables: one per split, a section per granularity, rows are models.

Columns are HAtten's measures, MRR and R@K for the configured cutoffs, plus NDCG@10 and
MAP (:func:`citeval.measures.local_table_measures`), each ×100 and averaged over the
split's contexts of that granularity (the metrics files hold every context of the split;
:func:`granularity_of` says which is which). With
a baseline, each cell is tested against it with the same paired randomization test as
the global tables (:mod:`citeval.significance`), the context as the pairing unit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from statistics import fmean

import pyarrow.parquet as pq

from citeval.errors import InputDataError
from citeval.io import write_text
from citeval.measures import local_table_measures
from citeval.metrics import ALL_QUERIES, read_per_query_tsv
from citeval.significance import (
    Settings,
    TableTests,
    baseline_missing,
    footnote,
    format_pvalues_tsv,
    table_tests,
)
from citeval.table_files import not_learned_notes, render

UNIT = "context"


def granularity_of(query_papers: str | Path) -> dict[str, str]:
    """Context id -> granularity, from a split's ``query_papers/`` folder."""
    table = pq.read_table(query_papers, columns=["paper_id", "granularity"])
    return dict(
        zip(
            table.column("paper_id").to_pylist(),
            table.column("granularity").to_pylist(),
            strict=True,
        )
    )


def local_table(
    metrics: Mapping[str, str | Path],
    query_papers: str | Path,
    cutoffs: Sequence[int],
    output: str | Path,
    title: str,
    settings: Settings | None = None,
    not_learned: Mapping[str, str] | None = None,
) -> None:
    """Write ``output`` (TSV: granularity, model, measures), its ``.md`` and, with
    ``settings``, its ``_pvalues.tsv``.

    ``metrics`` maps each model (in row order) to its per-query metrics TSV on the split;
    ``not_learned`` the trained models that did not learn to their verdicts (a note each
    under the table when a row names it).
    """
    output = Path(output)
    measures = {m.label: m.name for m in local_table_measures(cutoffs)}
    granularity = granularity_of(query_papers)
    per_model = {}
    for model, path in metrics.items():
        rows = read_per_query_tsv(path)
        queries = {qid: row for qid, row in rows.items() if qid != ALL_QUERIES}
        unknown = sorted(set(queries) - set(granularity))
        if unknown:
            raise InputDataError(f"queries {unknown[:3]} are not in {query_papers}", path=path)
        for qid, row in queries.items():
            missing = [m for m in measures.values() if m not in row]
            if missing:
                raise InputDataError(f"measures {missing} are missing for {qid!r}", path=path)
        per_model[model] = queries
    models = list(metrics)
    tsv_lines = ["\t".join(["granularity", "model", *measures])]
    sections, comparisons = [], []
    tested = settings is not None and not baseline_missing(models, settings, output.stem)
    for level in sorted(set(granularity.values())):
        ids = sorted(q for q, g in granularity.items() if g == level)
        values = {
            model: {
                column: {q: 100 * per_model[model][q][m] for q in ids if q in per_model[model]}
                for column, m in measures.items()
            }
            for model in models
        }
        rows = [
            [model] + [fmean(v.values()) if v else float("nan") for v in values[model].values()]
            for model in models
        ]
        tests: TableTests | None = None
        if tested and ids:
            assert settings is not None
            per_column = {
                column: {model: values[model][column] for model in models} for column in measures
            }
            tests = table_tests(f"{output.stem}:{level}", per_column, settings, UNIT)
            comparisons.append((level, tests))
        tsv, markdown = render(
            ["model", *measures], rows, digits=1, marked=tests.marked() if tests else set()
        )
        tsv_lines += [f"{level}\t{line}" for line in tsv.splitlines()[1:]]
        sections.append(f"#### {level} ({len(ids)} contexts)\n\n{markdown}")
    notes = not_learned_notes([[model] for model in models], not_learned or {})
    pvalues = output.with_name(f"{output.stem}_pvalues.tsv")
    if comparisons:
        assert settings is not None
        lines = ["granularity\t" + format_pvalues_tsv([], settings.baseline).rstrip("\n")]
        for level, tests in comparisons:
            body = format_pvalues_tsv(tests.comparisons, settings.baseline).splitlines()[1:]
            lines += [f"{level}\t{line}" for line in body]
        write_text("\n".join(lines) + "\n", pvalues)
        notes.append(footnote(settings, UNIT, pvalues.name))
    else:
        pvalues.unlink(missing_ok=True)
    write_text("\n".join(tsv_lines) + "\n", output)
    markdown = f"### {title}\n\n" + "\n".join(sections) + "".join(f"\n{n}\n" for n in notes)
    write_text(markdown, output.with_suffix(".md"))
