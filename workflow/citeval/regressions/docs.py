"""``docs/reproductions.md``: every regression file's config, command and expected tables."""

from __future__ import annotations

from citeval.drift import DRIFTS
from citeval.regressions.expected import FOLDER, Expected
from citeval.regressions.pinned import PINNED
from citeval.table_files import render

OUTPUT = "docs/reproductions.md"
DIGITS = 2

INTRO = f"""\
# Reproductions: the expected numbers of each pinned config

Generated from `{FOLDER}/*.yaml` by `citeval regressions docs`; do not edit by hand
(`tests/test_regressions.py` checks that it is up to date).

Each file in `{FOLDER}/` pins one config's main numbers, from the run's
`results/<dataset>/tables/*.tsv`:

{{pinned}}

Values are the tables' (x100), shown here with {DIGITS} decimals; the files hold the TSVs'
six, each with a tolerance (absolute, in the same units). A cell's tolerance follows what
computes it: the *drift* of the systems its row names (`bm25>ce@10`: BM25's and the
reranker's), the loosest of them, as each system kind declares it (`citeval.drift`):

{{drifts}}

A file gives the exact cells' tolerance (`tolerance`) and one per drift that may move,
measured for its config (`drift: {{{{trained: {{{{tolerance: 1.5, measured: "..."}}}}}}}}`);
`update` writes which drift each system has (`systems`) from the run's provenance. A
value's own tolerance (`column: {{{{value: 12.3, tolerance: 0.5}}}}`) beats both.

```bash
citeval regressions check {FOLDER}/<name>.yaml [--results DIR]   # or the config's path
citeval regressions update <name> [--results DIR]   # a deliberate change: rewrite the values
citeval regressions docs                             # then regenerate this page
```

`check` prints expected, got and the difference of every cell (`--misses`: only those
outside their tolerance) and a summary line; it exits 1 when a cell misses, and 2 with one
line when the run lacks a pinned table, row or column. `update` keeps each value's own
tolerance, so its diff in review shows only the numbers that moved.

When a change moves the numbers on purpose (a new system in a config, a new default), rerun
the config's command below, then `citeval regressions update <name>` (new rows and columns
are added, gone ones dropped) and `citeval regressions docs`, and commit the three diffs
together. A new pinned config: `citeval regressions update <name> --results DIR --config
PATH --command CMD [--tolerance T] [--description TEXT]`.

Every config here is merged onto `config/config.yaml`, the Snakefile's default configfile:
a setting that file gives (`bm25.k1`, say) is what the other configs read where they do not
set it, so changing its default in the schema moves none of these numbers; changing it in
`config/config.yaml` moves every config's that reads it.
"""


def _section(expected: Expected) -> str:
    lines = [f"## {expected.name}", ""]
    if expected.description:
        lines += [expected.description, ""]
    lines += [
        f"- config: `{expected.config}`",
        f"- run: `{expected.command}`",
        f"- results: `{expected.results}`",
        f"- check: `citeval regressions check {FOLDER}/{expected.name}.yaml`",
        f"- tolerance: {expected.tolerance:g} (per value where the file says so)",
    ]
    for name, drift in expected.drift.items():
        systems = [system for system, its in expected.systems.items() if its == name]
        lines.append(
            f"- {name} ({', '.join(systems) or 'no system'}): {drift.tolerance:g}"
            + (f"; measured: {drift.measured}" if drift.measured else "")
        )
    lines.append("")
    described = {p.table: p.description for p in PINNED}
    for table, rows in expected.tables.items():
        columns = list(dict.fromkeys(c for values in rows.values() for c in values))
        body = [[row, *(values[c].value for c in columns)] for row, values in rows.items()]
        _, markdown = render(["row", *columns], body, digits=DIGITS)
        lines += [f"**`{table}`**: {described.get(table, table)}", "", markdown]
    return "\n".join(lines)


def render_docs(files: list[Expected]) -> str:
    pinned = "\n".join(f"- `{p.table}`: {p.description}" for p in PINNED)
    drifts = "\n".join(f"- `{d.name}`: {d.why}" for d in DRIFTS.values())
    sections = [_section(expected) for expected in files]
    intro = INTRO.format(pinned=pinned, drifts=drifts)
    return "\n".join([intro, *sections]).rstrip("\n") + "\n"
