"""The Arrow schemas and parquet settings of the staged and the corpus tables.

Staging holds what ``parse`` read from one input file, ``corpus/`` what ``merge`` made of
all of them (docs/contracts.md).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from citeval.io import PARQUET_OPTIONS

STRING_LIST = pa.list_(pa.string())

# Staged papers keep their citation lists as lists, and merge unnests them: converting
# them in one nested pass is cheaper than exploding them into (citing_id, cited_id) rows
# that repeat the paper's own id, and the staging is smaller. ``_line`` is the 1-based
# line (JSON) or row (parquet) of the source record, for error messages and for "first"
# among duplicates.
STAGE_PAPERS_SCHEMA = pa.schema(
    [
        ("paper_id", pa.string()),
        ("title", pa.string()),
        ("abstract", pa.string()),
        ("year", pa.int32()),
        ("fields", STRING_LIST),
        ("outbound_citations", STRING_LIST),
        ("inbound_citations", STRING_LIST),
        ("_line", pa.int64()),
    ]
)
# S2AG citation rows; they carry no _line: no error ever points at one.
STAGE_EDGES_SCHEMA = pa.schema([("citing_id", pa.string()), ("cited_id", pa.string())])
STAGE_ABSTRACTS_SCHEMA = pa.schema(
    [("paper_id", pa.string()), ("abstract", pa.string()), ("_line", pa.int64())]
)

# Staging files are temporary and read once by merge: compressing them costs parse more
# CPU than the smaller files save merge.
STAGING_PARQUET_OPTIONS: dict[str, Any] = {
    "compression": "none",
    "use_dictionary": False,
    "write_statistics": False,
}

PAPERS_SCHEMA = pa.schema(
    [
        ("paper_id", pa.string()),
        ("title", pa.string()),
        ("abstract", pa.string()),
        ("year", pa.int32()),
        ("fields", STRING_LIST),
        ("n_cited_by", pa.int32()),
        ("n_references", pa.int32()),
    ]
)
CITATIONS_SCHEMA = pa.schema([("citing_id", pa.string()), ("cited_id", pa.string())])

PAPERS_ROW_GROUP = 65_536
CITATIONS_ROW_GROUP = 1 << 20

# The corpus tables: the package's settings at zstd level 1 (higher levels cost much more
# CPU for slightly smaller files), no dictionary for the columns that are unique per row
# (building one and discarding it at the size limit only costs time), and no min/max
# statistics for title and abstract, which no reader can prune on.
CORPUS_PARQUET_OPTIONS: dict[str, dict[str, Any]] = {
    "papers": {
        **PARQUET_OPTIONS,
        "compression_level": 1,
        "use_dictionary": ["year", "fields.list.element", "n_cited_by", "n_references"],
        "write_statistics": [
            "paper_id",
            "year",
            "fields.list.element",
            "n_cited_by",
            "n_references",
        ],
    },
    "citations": {**PARQUET_OPTIONS, "compression_level": 1, "use_dictionary": False},
}
