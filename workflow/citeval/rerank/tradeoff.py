"""Effectiveness against cost of reranking the top K of each first stage (HAtten, Fig. 4).

    python -m citeval.rerank tradeoff \
        --first-stage bm25 timings/bm25.tsv \
        --first-stage rrf timings/bm25.tsv timings/minilm.tsv timings/rrf.tsv \
        --entry bm25 0 metrics/bm25.tsv \
        --entry bm25 100 metrics/bm25.ce100.tsv timing/bm25.json \
        --entry bm25 200 metrics/bm25.ce200.tsv timing/bm25.json \
        --entry rrf 0 metrics/rrf.tsv ... \
        --output-dir results/demo/tables/rerank [--title "..."]

``--first-stage NAME BENCHMARK_TSV...`` names a first stage and the Snakemake benchmark
files of the jobs that produced its run: column ``s`` is wall seconds (a file with several
rows, from ``repeat``, counts its mean); a fusion lists every job it needs (each retriever
and the fusion itself) and their seconds are summed. ``--entry NAME K METRICS_TSV
[TIMING_JSON]`` is one row: the per-query metrics TSV of the first stage alone (K = 0, no
timing file) or of its run reranked at K (with the timing JSON of ``citeval.rerank
rerank``).

Each row holds R@10 and MAP (:data:`citeval.measures.TRADEOFF_MEASURES`) in percent, as
every other table (means over the queries of the metrics TSV, read with
:func:`citeval.metrics.read_per_query_tsv`), the first stage's seconds per query (its
summed benchmark seconds over the number of queries in the metrics TSV), the rerank's
seconds per query at K (``per_k[K].seconds_per_query`` of the timing JSON, pro-rated from
the measured throughput), their total, and the reranker's pairs per second.

Writes ``tradeoff.tsv``, ``tradeoff.md`` and ``tradeoff.png`` (left: R@10 against K on a
log axis, one line per first stage, its K = 0 value as a dashed level; right: R@10 against
total seconds per query, log axis).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from citeval.errors import CitevalError, InputDataError
from citeval.io import write_text
from citeval.measures import TRADEOFF_MEASURES
from citeval.metrics import ALL_QUERIES, read_per_query_tsv

# The plotted measure (R@10), then MAP: the table's columns ``recall`` and ``map``.
RECALL, MAP = TRADEOFF_MEASURES
COLUMNS = (
    "first_stage",
    "k",
    "queries",
    RECALL.label,
    MAP.label,
    "first_stage_s_per_query",
    "rerank_s_per_query",
    "total_s_per_query",
    "pairs_per_second",
)


@dataclass(frozen=True)
class Entry:
    first_stage: str
    k: int
    metrics: Path
    timing: Path | None = None


@dataclass(frozen=True)
class Row:
    first_stage: str
    k: int
    queries: int
    recall: float
    map: float
    first_stage_seconds: float
    rerank_seconds: float
    pairs_per_second: float | None

    @property
    def total_seconds(self) -> float:
        return self.first_stage_seconds + self.rerank_seconds


def benchmark_seconds(path: str | os.PathLike) -> float:
    """Mean of column ``s`` of a Snakemake benchmark TSV."""
    where = str(path)
    try:
        lines = [line for line in Path(path).read_text(encoding="utf-8").splitlines() if line]
    except OSError as error:
        raise InputDataError(f"cannot read: {error.strerror}", path=where) from error
    if not lines:
        raise InputDataError("empty benchmark file", path=where)
    header = lines[0].split("\t")
    if "s" not in header:
        raise InputDataError("no column 's' (wall seconds) in the header", path=where, line=1)
    column = header.index("s")
    values = []
    for number, line in enumerate(lines[1:], start=2):
        fields = line.split("\t")
        try:
            values.append(float(fields[column]))
        except (IndexError, ValueError):
            raise InputDataError("no number in column 's'", path=where, line=number) from None
    if not values:
        raise InputDataError("no benchmark rows", path=where)
    return math.fsum(values) / len(values)


def metric_means(path: str | os.PathLike) -> tuple[int, float, float]:
    """``(queries, mean R@10, mean MAP)`` over the per-query rows of a metrics TSV; the
    means in percent."""
    table = read_per_query_tsv(path)
    rows = {qid: values for qid, values in table.items() if qid != ALL_QUERIES}
    if not rows:
        raise InputDataError("no per-query rows", path=str(path))
    means = []
    for measure in (RECALL.name, MAP.name):
        missing = sorted(q for q, values in rows.items() if measure not in values)
        if missing:
            raise InputDataError(
                f"query {missing[0]!r} has no {measure!r}", path=str(path), field="measure"
            )
        means.append(100 * math.fsum(values[measure] for values in rows.values()) / len(rows))
    return len(rows), means[0], means[1]


def rerank_timing(path: str | os.PathLike, k: int) -> tuple[float, float]:
    """``(rerank seconds per query at K, pairs per second)`` from a timing JSON."""
    try:
        timing = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise InputDataError(f"cannot read the timing JSON: {error}", path=str(path)) from error
    per_k = timing.get("per_k", {})
    if str(k) not in per_k:
        raise InputDataError(
            f"no timing for K={k} (it has K {sorted(per_k, key=int)})",
            path=str(path),
            field="per_k",
        )
    return float(per_k[str(k)]["seconds_per_query"]), float(timing["pairs_per_second"])


def build_rows(
    first_stages: dict[str, Sequence[str | os.PathLike]], entries: Sequence[Entry]
) -> list[Row]:
    """One row per entry, ordered by first stage (as given), then K."""
    order = {name: i for i, name in enumerate(first_stages)}
    seconds = {
        name: math.fsum(map(benchmark_seconds, paths)) for name, paths in first_stages.items()
    }
    rows = []
    seen = set()
    for entry in entries:
        if entry.first_stage not in first_stages:
            raise CitevalError(
                f"entry {entry.first_stage} K={entry.k}: no --first-stage {entry.first_stage}"
            )
        if (entry.first_stage, entry.k) in seen:
            raise CitevalError(f"two entries for {entry.first_stage} K={entry.k}")
        seen.add((entry.first_stage, entry.k))
        queries, recall, mean_ap = metric_means(entry.metrics)
        if entry.k == 0:
            rerank_seconds, throughput = 0.0, None
        else:
            if entry.timing is None:
                raise CitevalError(f"entry {entry.first_stage} K={entry.k} needs a timing JSON")
            rerank_seconds, throughput = rerank_timing(entry.timing, entry.k)
        rows.append(
            Row(
                entry.first_stage,
                entry.k,
                queries,
                recall,
                mean_ap,
                seconds[entry.first_stage] / queries,
                rerank_seconds,
                throughput,
            )
        )
    return sorted(rows, key=lambda r: (order[r.first_stage], r.k))


def _cells(row: Row) -> list[str]:
    return [
        row.first_stage,
        str(row.k),
        str(row.queries),
        f"{row.recall:.2f}",
        f"{row.map:.2f}",
        f"{row.first_stage_seconds:.6f}",
        f"{row.rerank_seconds:.6f}",
        f"{row.total_seconds:.6f}",
        "" if row.pairs_per_second is None else f"{row.pairs_per_second:.1f}",
    ]


def format_tsv(rows: Sequence[Row]) -> str:
    return "".join("\t".join(cells) + "\n" for cells in [list(COLUMNS), *map(_cells, rows)])


def format_markdown(rows: Sequence[Row]) -> str:
    header = [
        "First stage",
        "K",
        "Queries",
        RECALL.label,
        MAP.label,
        "First stage (s/query)",
        "Rerank (s/query)",
        "Total (s/query)",
        "Pairs/s",
    ]
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---"] * 2 + ["---:"] * (len(header) - 2)) + "|",
    ]
    for row in rows:
        cells = _cells(row)
        if row.k == 0:
            cells[1] = "0 (no rerank)"
        lines.append("| " + " | ".join(cells) + " |")
    note = (
        "\nK = 0 is the first stage alone. Rerank seconds are pro-rated from the measured "
        "pairs/s of one scoring pass over the top max(K) (see docs/rerank.md).\n"
    )
    return "\n".join(lines) + "\n" + note


def plot(rows: Sequence[Row], path: str | os.PathLike, title: str) -> None:
    """The two-panel figure (see the module docstring), written atomically as PNG."""
    from citeval.plots import pyplot, save_png

    plt = pyplot()
    stages = list(dict.fromkeys(r.first_stage for r in rows))
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5), constrained_layout=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, stage in enumerate(stages):
        color = colors[i % len(colors)]
        mine = [r for r in rows if r.first_stage == stage]
        reranked = [r for r in mine if r.k > 0]
        base = [r for r in mine if r.k == 0]
        if reranked:
            left.plot(
                [r.k for r in reranked],
                [r.recall for r in reranked],
                marker="o",
                color=color,
                label=f"{stage} + rerank",
            )
            for r in reranked:
                right.annotate(
                    f"K={r.k}",
                    (r.total_seconds, r.recall),
                    textcoords="offset points",
                    xytext=(4, 4),
                    fontsize=7,
                    color=color,
                )
        if base:
            left.axhline(
                base[0].recall, color=color, linestyle="--", linewidth=1, label=f"{stage} alone"
            )
        right.plot(
            [r.total_seconds for r in mine],
            [r.recall for r in mine],
            marker="o",
            color=color,
            label=stage,
        )
        if base:
            right.plot(
                [base[0].total_seconds], [base[0].recall], marker="s", color=color, markersize=8
            )
    left.set_xscale("log")
    ks = sorted({r.k for r in rows if r.k > 0})
    if ks:
        from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter

        left.xaxis.set_major_locator(FixedLocator(ks))
        left.xaxis.set_major_formatter(ScalarFormatter())
        left.xaxis.set_minor_locator(NullLocator())
    left.set_xlabel("K (candidates reranked, log scale)")
    left.set_ylabel(f"{RECALL.label} (%)")
    left.set_title(f"{RECALL.label} against rerank depth K (dashed: first stage alone)")
    left.grid(True, which="both", alpha=0.3)
    left.legend(fontsize=8)
    right.set_xscale("log")
    right.margins(x=0.12)
    right.set_xlabel("total time per query (s, first stage + rerank; log scale)")
    right.set_ylabel(f"{RECALL.label} (%)")
    right.set_title(f"{RECALL.label} against time (square: first stage alone)")
    right.grid(True, which="both", alpha=0.3)
    right.legend(fontsize=8)
    fig.suptitle(title)
    save_png(fig, path)


def write_tradeoff(
    first_stages: dict[str, Sequence[str | os.PathLike]],
    entries: Sequence[Entry],
    output_dir: str | os.PathLike,
    title: str = "Cross-encoder reranking: effectiveness against cost",
    name: str = "tradeoff",
) -> list[Row]:
    """Write ``<name>.tsv``, ``<name>.md`` and ``<name>.png`` to ``output_dir``."""
    rows = build_rows(first_stages, entries)
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_text(format_tsv(rows), out / f"{name}.tsv")
    write_text(format_markdown(rows), out / f"{name}.md")
    plot(rows, out / f"{name}.png", title)
    return rows
