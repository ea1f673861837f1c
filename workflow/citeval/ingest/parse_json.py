"""Stage JSON lines (S2ORC v2020, S2AG papers, abstracts and citations) as staged batches.

S2ORC v2020 has one decode path with an exact fallback. A chunk is decoded at once with
its citation lists left as raw JSON, which ``json_lists`` turns into Arrow lists without
making a Python string per id (the lists are most of every record). A chunk that path
refuses (a bad record, a blank line, or an id that is not plain) is decoded line by line
into ``V2020Paper`` records, which locates every problem. Both give the same staged rows
and counts. S2AG records are small: each chunk is decoded at once into records, or line
by line where that fails.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from citeval.ingest.decode import decode_chunk, decode_each_line, decode_whole_chunk
from citeval.ingest.formats import (
    RECORD_TYPES,
    S2agAbstract,
    S2agCitation,
    S2agPaper,
    V2020Paper,
    V2020PaperRawCitations,
)
from citeval.ingest.json_lists import plain_string_lists
from citeval.ingest.lines import LineChunk, iter_line_chunks
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


def stage_v2020(
    records: list[V2020Paper] | list[V2020PaperRawCitations],
    lines: np.ndarray,
    out: StagingWriters,
    citations: tuple[pa.ListArray, pa.ListArray] | None = None,
) -> None:
    """Stage decoded records; ``citations`` are their (outbound, inbound) lists when the
    records hold them raw (``stage_v2020_chunk``)."""
    ids = pa.array([r.paper_id for r in records], pa.string())
    titles = [r.title for r in records]
    abstracts = [r.abstract for r in records]
    years = [r.year for r in records]
    fields = _lists_or_empty([r.mag_field_of_study for r in records])
    out.count_missing(titles, abstracts, years)
    if citations is None:
        citations = (
            pa.array([r.outbound_citations for r in records], STRING_LIST),
            pa.array([r.inbound_citations for r in records], STRING_LIST),
        )
    outbound, inbound = citations
    out.report.edges_written += n_items(outbound) + n_items(inbound)
    out.papers.write(
        papers_batch(
            ids, titles, abstracts, years, fields, pa.array(lines), citations=(outbound, inbound)
        )
    )


def stage_v2020_chunk(decoder: msgspec.json.Decoder, chunk: LineChunk, out: StagingWriters) -> bool:
    """Stage a chunk of v2020 lines with their citation lists converted by ``json_lists``.

    ``decoder`` decodes ``V2020PaperRawCitations``. Returns False, having counted and
    staged nothing, when any line or list needs the exact path: a malformed or mistyped
    record, a blank line, or a list that is not plain.
    """
    records = decode_whole_chunk(decoder, chunk)
    if records is None:
        return False
    raw_outbound = [r.outbound_citations for r in records]
    raw_inbound = [r.inbound_citations for r in records]
    try:
        outbound = plain_string_lists(raw_outbound)
        inbound = None if outbound is None else plain_string_lists(raw_inbound)
        if inbound is None:
            return False
        out.report.lines_read += chunk.n_lines
        out.report.records_read += chunk.n_lines
        stage_v2020(records, chunk.line_numbers, out, citations=(outbound, inbound))
        return True
    finally:
        # Raw values are views of the chunk's buffer, which iter_line_chunks refills: none
        # may outlive this call, not even in the traceback of an error.
        records.clear()
        raw_outbound.clear()
        raw_inbound.clear()


def parse_v2020(path: str, out: StagingWriters) -> None:
    raw_lists = msgspec.json.Decoder(V2020PaperRawCitations)
    exact = msgspec.json.Decoder(V2020Paper)
    for chunk in iter_line_chunks(path):
        if not stage_v2020_chunk(raw_lists, chunk, out):
            records, lines = decode_each_line(exact, chunk, out.report)
            if records:
                stage_v2020(records, lines, out)


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


S2AG_STAGERS: dict[str, Callable[[list[Any], np.ndarray, StagingWriters], None]] = {
    "s2ag-papers": stage_s2ag_papers,
    "s2ag-abstracts": stage_s2ag_abstracts,
    "s2ag-citations": stage_s2ag_citations,
}


def parse_s2ag(path: str, fmt: str, out: StagingWriters) -> None:
    decoder = msgspec.json.Decoder(RECORD_TYPES[fmt])
    stage = S2AG_STAGERS[fmt]
    for chunk in iter_line_chunks(path):
        records, lines = decode_chunk(decoder, chunk, out.report)
        if records:
            stage(records, lines, out)


def parse_json(path: str | Path, fmt: str, out: StagingWriters) -> None:
    """Stage every line of ``path`` (JSONL, gzip or not) in format ``fmt``."""
    if fmt == "s2orc_v2020":
        parse_v2020(str(path), out)
    else:
        parse_s2ag(str(path), fmt, out)
