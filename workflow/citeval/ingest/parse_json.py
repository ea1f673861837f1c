"""Stage JSON lines (S2ORC v2020, S2AG papers, abstracts and citations).

Every format takes the one decode path of ``citeval.ingest.decode``: each chunk of lines
is decoded at once into msgspec records, or line by line where that fails, and the
records of a chunk become one staged batch.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from citeval.ingest.decode import decode_chunk
from citeval.ingest.formats import (
    RECORD_TYPES,
    S2agAbstract,
    S2agCitation,
    S2agPaper,
    V2020Paper,
)
from citeval.ingest.lines import iter_line_chunks
from citeval.ingest.schemas import (
    STAGE_ABSTRACTS_SCHEMA,
    STAGE_EDGES_SCHEMA,
    STAGE_PAPERS_SCHEMA,
    STRING_LIST,
)
from citeval.ingest.staging import StagingWriters, n_items


def papers_batch(
    ids: pa.Array,
    titles: list[str | None],
    abstracts: list[str | None] | None,
    years: list[int | None],
    fields: list[list[str]] | pa.ListArray,
    lines: pa.Array,
    citations: tuple[pa.ListArray, pa.ListArray] | None = None,
) -> pa.RecordBatch:
    """One staged papers batch; ``citations`` is (outbound, inbound), null lists if None."""
    n = len(ids)
    outbound, inbound = citations or (pa.nulls(n, STRING_LIST), pa.nulls(n, STRING_LIST))
    return pa.RecordBatch.from_arrays(
        [
            ids,
            pa.array(titles, pa.string()),
            pa.array(abstracts, pa.string()) if abstracts is not None else pa.nulls(n, pa.string()),
            pa.array(years, pa.int32()),
            fields if isinstance(fields, pa.Array) else pa.array(fields, STRING_LIST),
            outbound,
            inbound,
            lines,
        ],
        schema=STAGE_PAPERS_SCHEMA,
    )


def _lists_or_empty(lists: list[list[str] | None]) -> pa.ListArray:
    """``list<string>`` with None as [] (the fields of study: no field is not unknown)."""
    array = pa.array(lists, STRING_LIST)
    if array.null_count:  # a null list has no items, so its offsets already say []
        array = pa.ListArray.from_arrays(array.offsets, array.values)
    return array


# --------------------------------------------------------------------------------------
# S2ORC v2020


def stage_v2020(records: list[V2020Paper], lines: np.ndarray, out: StagingWriters) -> None:
    ids = pa.array([r.paper_id for r in records], pa.string())
    titles = [r.title for r in records]
    abstracts = [r.abstract for r in records]
    years = [r.year for r in records]
    fields = _lists_or_empty([r.mag_field_of_study for r in records])
    out.count_missing(titles, abstracts, years)
    outbound = pa.array([r.outbound_citations for r in records], STRING_LIST)
    inbound = pa.array([r.inbound_citations for r in records], STRING_LIST)
    out.report.edges_written += n_items(outbound) + n_items(inbound)
    out.papers.write(
        papers_batch(
            ids, titles, abstracts, years, fields, pa.array(lines), citations=(outbound, inbound)
        )
    )


# --------------------------------------------------------------------------------------
# S2AG


def _corpus_ids(values: list[int]) -> pa.Array:
    """S2AG corpus ids as the decimal strings that are their paper ids (nulls stay null).

    Cast in Arrow rather than by ``str()`` per record: the citations dataset has billions
    of rows.
    """
    return pc.cast(pa.array(values, pa.int64()), pa.string())


def _s2ag_fields(record: S2agPaper) -> list[str]:
    if record.s2fieldsofstudy is not None:
        categories = (f.category for f in record.s2fieldsofstudy if f.category is not None)
    else:
        categories = iter(record.fieldsofstudy or ())
    return list(dict.fromkeys(categories))


def stage_s2ag_papers(records: list[S2agPaper], lines: np.ndarray, out: StagingWriters) -> None:
    ids = _corpus_ids([r.corpusid for r in records])
    titles = [r.title for r in records]
    years = [r.year for r in records]
    # Abstracts come from their own dataset and are counted after merge attaches them.
    out.count_missing(titles, None, years)
    fields = [_s2ag_fields(r) for r in records]
    out.papers.write(papers_batch(ids, titles, None, years, fields, pa.array(lines)))


def stage_s2ag_abstracts(
    records: list[S2agAbstract], lines: np.ndarray, out: StagingWriters
) -> None:
    keep = [i for i, r in enumerate(records) if r.abstract is not None]
    out.report.missing_abstract += len(records) - len(keep)
    if len(keep) != len(records):
        records = [records[i] for i in keep]
        lines = lines[keep]
    batch = pa.RecordBatch.from_arrays(
        [
            _corpus_ids([r.corpusid for r in records]),
            pa.array([r.abstract for r in records], pa.string()),
            pa.array(lines, pa.int64()),
        ],
        schema=STAGE_ABSTRACTS_SCHEMA,
    )
    out.abstracts.write(batch)
    out.report.records_written += batch.num_rows


def stage_s2ag_citations(
    records: list[S2agCitation], lines: np.ndarray, out: StagingWriters
) -> None:
    citing = _corpus_ids([r.citingcorpusid for r in records])
    cited = _corpus_ids([r.citedcorpusid for r in records])
    if cited.null_count:
        null = cited.is_null()
        out.report.skip_many(
            lines[null.to_numpy(zero_copy_only=False)],
            "null_cited",
            "citedcorpusid",
            "cited work not in S2AG",
            bad=False,
        )
        known = pc.invert(null)
        citing, cited = citing.filter(known), cited.filter(known)
    batch = pa.RecordBatch.from_arrays([citing, cited], schema=STAGE_EDGES_SCHEMA)
    out.write_edges(batch)
    out.report.records_written += batch.num_rows


STAGERS: dict[str, Callable[[list[Any], np.ndarray, StagingWriters], None]] = {
    "s2orc_v2020": stage_v2020,
    "s2ag-papers": stage_s2ag_papers,
    "s2ag-abstracts": stage_s2ag_abstracts,
    "s2ag-citations": stage_s2ag_citations,
}


def parse_json(path: str | os.PathLike, fmt: str, out: StagingWriters) -> None:
    """Stage every line of ``path`` (JSONL, gzip or not) in format ``fmt``."""
    decoder = msgspec.json.Decoder(RECORD_TYPES[fmt])
    stage = STAGERS[fmt]
    for chunk in iter_line_chunks(path):
        records, lines = decode_chunk(decoder, chunk, out.report)
        if records:
            stage(records, lines, out)
