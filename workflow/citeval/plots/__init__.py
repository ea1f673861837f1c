"""Figures of the paper's tables for the visual report (``snakemake --report``).

The command line is :mod:`citeval.plots.cli` (``python -m citeval.plots``). Each figure
is drawn from a table TSV (``model`` then one column per value):

* ``map_by_pool_size.png`` (Table 1): MAP against the pool size, one line per model, the
  pool size on a log axis (the paper's 200k to 2M);
* ``field_map.png`` (Table 2): MAP per field, one marker per model, fields as rows;
* ``mdcr_types.png`` (Table 4): a model × candidate-type heatmap of MAP, values printed.

PNGs are written atomically with fixed metadata, so the same tables give the same bytes.

The figures are drawn by :mod:`citeval.plots.figures`.
"""

from __future__ import annotations

from citeval.plots.figures import (
    PLOTS,
    Table,
    plot_field_map,
    plot_map_by_pool_size,
    plot_mdcr_types,
    pyplot,
    read_table,
    save_png,
)

__all__ = [
    "PLOTS",
    "Table",
    "plot_field_map",
    "plot_map_by_pool_size",
    "plot_mdcr_types",
    "pyplot",
    "read_table",
    "save_png",
]
