"""Ingest: turn S2ORC / S2AG input shards into the canonical ``corpus/`` tables.

Two steps, so that Snakemake runs one ``parse`` job per input shard (resumable, bounded
memory) and one ``merge`` job over all of them (docs/ingest.md)::

    python -m citeval.ingest parse --format s2orc_v2020 --input s2orc-00000.jsonl.gz \\
        --output-dir results/demo/staging/s2orc-00000 --max-bad-fraction 0
    python -m citeval.ingest merge --staging results/demo/staging/s2orc-0000{0,1} \\
        --output-dir results/demo/corpus --on-duplicate error --rows-per-part 1000000 \\
        --memory-limit 2GB --threads 2

The modules, one job each:

- ``formats``: the input formats, their msgspec record types and the parquet columns;
- ``lines``: reading an input file as chunks of complete lines, gzip or not;
- ``decode``: decoding a chunk into records, at once or line by line;
- ``parse_json``, ``parse_parquet``: staging each format; ``parse``: one file's step;
- ``schemas``, ``parts``, ``staging``: the tables, their part files, a staging directory;
- ``merge``: the merge step; ``session``: its DuckDB session and the lookups beside it;
  ``edges`` and ``papers``: writing the two corpus tables; ``ranges`` and ``footprint``:
  fitting them in ``--memory-limit`` (whose budgets are :mod:`citeval.memory`'s);
- ``report``: the per-shard and corpus reports;
- ``cli``: the command line (``python -m citeval.ingest``).
"""

from __future__ import annotations

from citeval.ingest.formats import FORMATS
from citeval.ingest.merge import merge_staging
from citeval.ingest.parse import parse_shard
from citeval.ingest.schemas import CITATIONS_SCHEMA, PAPERS_SCHEMA

__all__ = [
    "CITATIONS_SCHEMA",
    "FORMATS",
    "PAPERS_SCHEMA",
    "merge_staging",
    "parse_shard",
]
