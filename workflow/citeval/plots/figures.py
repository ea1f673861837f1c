"""The figures: reading a table TSV, drawing each figure, writing it as a PNG."""

from __future__ import annotations

import csv
import logging
import os

from citeval.errors import InputDataError
from citeval.io import atomic_path

LOG = logging.getLogger(__name__)
Table = tuple[list[str], list[str], list[list[float]]]  # columns, models, values


def read_table(path: str | os.PathLike) -> Table:
    """A table TSV as (value columns, models, rows of floats)."""
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle, delimiter="\t"))
    if not rows or rows[0][:1] != ["model"]:
        raise InputDataError("expected a header starting with 'model'", path=str(path), line=1)
    values = []
    for number, row in enumerate(rows[1:], start=2):
        try:
            values.append([float(cell) for cell in row[1:]])
        except ValueError:
            raise InputDataError("a value is not a number", path=str(path), line=number) from None
    return rows[0][1:], [row[0] for row in rows[1:]], values


def pyplot():
    """matplotlib.pyplot on the Agg backend (no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_png(fig, path: str | os.PathLike) -> None:
    """Write ``fig`` as a 120-dpi PNG atomically, without the matplotlib version in its
    metadata (the same figure gives the same bytes), and close it."""
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120, metadata={"Software": None})
    pyplot().close(fig)


def plot_map_by_pool_size(table: Table, path: str | os.PathLike) -> None:
    """Table 1: MAP against pool size (columns ``<size>[ (capped)] MAP``)."""
    columns, models, values = table
    points = [(int(c.split()[0]), i) for i, c in enumerate(columns) if c.endswith(" MAP")]
    if not points:
        raise InputDataError(f"no '<pool size> MAP' columns in {columns}", path=str(path))
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    sizes = [size for size, _ in points]
    for model, row in zip(models, values, strict=True):
        ax.plot(sizes, [row[i] for _, i in points], marker="o", label=model)
    ax.set_xscale("log")
    ax.set_xticks(sizes, [f"{size:,}" for size in sizes])
    ax.minorticks_off()
    ax.set_xlabel("candidate pool size (papers)")
    ax.set_ylabel("MAP (%)")
    ax.set_title("Dataset-level MAP by pool size (Table 1)")
    ax.grid(alpha=0.3)
    # Outside the axes: inside, it covers a line whatever corner it picks.
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    save_png(fig, path)


def plot_field_map(table: Table, path: str | os.PathLike) -> None:
    """Table 2: MAP per field (rows) and model (markers); the AVG column comes last."""
    columns, models, values = table
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 1.2 + 0.38 * len(columns)))
    positions = list(range(len(columns)))[::-1]
    markers = "os^Dv<>pPX*h"
    for index, (model, row) in enumerate(zip(models, values, strict=True)):
        ax.scatter(row, positions, label=model, marker=markers[index % len(markers)], s=36)
    ax.set_yticks(positions, columns)
    ax.set_xlabel("MAP (%)")
    ax.set_title("Field-level MAP per field (Table 2)")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    save_png(fig, path)


def plot_mdcr_types(table: Table, path: str | os.PathLike) -> None:
    """Table 4: the models' MAP per candidate type (columns ``<type> MAP``) as a heatmap."""
    import numpy as np

    columns, models, values = table
    picked = [(c.removesuffix(" MAP"), i) for i, c in enumerate(columns) if c.endswith(" MAP")]
    grid = np.array([[row[i] for _, i in picked] for row in values])
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(1.6 + 0.95 * len(picked), 1.4 + 0.45 * len(models)))
    image = ax.imshow(grid, cmap="viridis", vmin=0, vmax=100, aspect="auto")
    ax.set_xticks(range(len(picked)), [name for name, _ in picked], rotation=30, ha="right")
    ax.set_yticks(range(len(models)), models)
    for r in range(grid.shape[0]):
        for c in range(grid.shape[1]):
            color = "black" if grid[r, c] > 55 else "white"
            ax.text(c, r, f"{grid[r, c]:.1f}", ha="center", va="center", color=color, fontsize=8)
    ax.set_xlabel("negative candidates of type")
    ax.set_title("MDCR MAP by candidate type (Table 4)")
    fig.colorbar(image, ax=ax, label="MAP (%)")
    fig.tight_layout()
    save_png(fig, path)


PLOTS = {
    "table1": ("map_by_pool_size.png", plot_map_by_pool_size),
    "table2": ("field_map.png", plot_field_map),
    "table4": ("mdcr_types.png", plot_mdcr_types),
}
