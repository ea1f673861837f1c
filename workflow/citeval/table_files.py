"""The result tables' files: one table as TSV (full precision) and Markdown (rounded).

Every table of the paper, global (:mod:`citeval.tables`), MDCR (:mod:`citeval.mdcr.tables`)
and local (:mod:`citeval.local.tables`), is written by :func:`write_table` or rendered by
:func:`render`, so that they share one format: TSV with six decimals, Markdown with
``digits`` decimals, a dash for a collection without queries, :data:`MARKER` on the cells
that differ significantly from the baseline, and the footnotes explaining both.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path

from citeval.io import write_text
from citeval.significance import MARKER, TableTests, footnote, format_pvalues_tsv
from citeval.systems import systems_in_label

# The Markdown cell of a collection that sampling left without queries (its mean is NaN).
NO_QUERIES = "—"


def render(
    header: Sequence[str],
    rows: Sequence[Sequence[object]],
    digits: int,
    marked: AbstractSet[tuple[str, str]] = frozenset(),
) -> tuple[str, str]:
    """The same table as TSV (6 decimals) and Markdown (``digits`` decimals).

    Markdown cells whose (row label, column) is in ``marked`` get :data:`MARKER`.
    """

    def cell(value: object, places: int) -> str:
        return f"{value:.{places}f}" if isinstance(value, float) else str(value)

    def markdown_cell(value: object, column: str, label: object) -> str:
        if isinstance(value, float) and math.isnan(value):
            return NO_QUERIES
        return cell(value, digits) + (MARKER if (label, column) in marked else "")

    def markdown_row(row: Sequence[object]) -> str:
        cells = [cell(row[0], digits)] + [
            markdown_cell(v, column, row[0]) for column, v in zip(header[1:], row[1:], strict=True)
        ]
        return "| " + " | ".join(cells) + " |"

    tsv = ["\t".join(header)] + ["\t".join(cell(v, 6) for v in row) for row in rows]
    markdown = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|",
    ] + [markdown_row(row) for row in rows]
    return "\n".join(tsv) + "\n", "\n".join(markdown) + "\n"


def not_learned_notes(
    rows: Sequence[Sequence[object]], not_learned: Mapping[str, str]
) -> list[str]:
    """A note for each model that did not learn and that a row's label names."""
    named = {part for row in rows for part in systems_in_label(str(row[0]))}
    return [f"**Not learned:** {not_learned[name]}" for name in not_learned if name in named]


def write_table(
    output_dir: Path,
    name: str,
    title: str,
    header: list[str],
    rows: list[list[object]],
    tests: TableTests | None = None,
    empty: Sequence[str] = (),
    not_learned: Mapping[str, str] | None = None,
) -> None:
    """``<name>.tsv`` and ``<name>.md``; with ``tests`` also ``<name>_pvalues.tsv``.

    ``empty`` names the groups that sampling left without queries (NaN cells, a dash in
    the Markdown, explained under it). ``not_learned`` maps each trained model that did
    not learn to its verdict (:mod:`citeval.learning`); a table with rows of such a model
    says so under it. Without ``tests`` a ``<name>_pvalues.tsv`` left by an earlier run is
    removed.
    """
    pvalues = output_dir / f"{name}_pvalues.tsv"
    marked = tests.marked() if tests is not None else set()
    tsv, markdown = render(header, rows, digits=1, marked=marked)
    write_text(tsv, output_dir / f"{name}.tsv")
    notes = []
    if empty:
        notes.append(
            f"{NO_QUERIES} no queries: sampling found none for {', '.join(empty)} "
            "(the sample report, samples/<setup>-report.json, says why); AVG leaves them out."
        )
    notes += not_learned_notes(rows, not_learned or {})
    if tests is None:
        pvalues.unlink(missing_ok=True)
    else:
        write_text(format_pvalues_tsv(tests.comparisons, tests.settings.baseline), pvalues)
        notes.append(footnote(tests.settings, tests.unit, pvalues.name))
    text = f"### {title}\n\n{markdown}" + "".join(f"\n{note}\n" for note in notes)
    write_text(text, output_dir / f"{name}.md")
