"""The prefilter's rules and their application to the corpus, with the report."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from pathlib import Path

import duckdb

from citeval.errors import InputDataError
from citeval.io import parquet_glob, write_json, write_parquet_stream
from citeval.memory import duckdb_memory_setting

log = logging.getLogger(__name__)

CITATION_COLUMNS = {
    "cited_by": "n_cited_by",
    "references": "n_references",
    "both": "n_cited_by + n_references",
}


@dataclass(frozen=True)
class PrefilterRules:
    """The ``prefilter`` section of the config (its defaults live in the schema only)."""

    require_year: bool
    require_title: bool
    min_abstract_chars: int
    min_citations: int
    citation_direction: str

    def predicates(self) -> dict[str, str]:
        """SQL predicate per rule, true when a paper *passes* it, in application order."""
        rules = {}
        if self.require_year:
            rules["year"] = "year IS NOT NULL"
        if self.require_title:
            rules["title"] = "coalesce(length(trim(title)), 0) > 0"
        if self.min_abstract_chars > 0:
            rules["abstract"] = (
                f"coalesce(length(trim(abstract)), 0) >= {int(self.min_abstract_chars)}"
            )
        if self.min_citations > 0:
            count = CITATION_COLUMNS[self.citation_direction]
            rules["citations"] = f"({count}) >= {int(self.min_citations)}"
        return rules


def prefilter(
    papers_dir: str | Path,
    output: str | Path,
    report_path: str | Path,
    rules: PrefilterRules,
    *,
    memory_limit: str,
    threads: int = 2,
) -> dict:
    """Apply ``rules`` to the corpus in ``papers_dir``; write the kept papers and a report."""
    papers_dir = Path(papers_dir)
    if not any(papers_dir.glob("*.parquet")):
        raise InputDataError("no parquet parts found (run the ingest stage first)", path=papers_dir)
    if rules.citation_direction not in CITATION_COLUMNS:
        raise InputDataError(
            f"unknown citation_direction {rules.citation_direction!r}; "
            f"expected one of {sorted(CITATION_COLUMNS)}",
            field="prefilter.citation_direction",
        )
    # DuckDB gets the share merge gives it: the rest is the process and the Arrow batches
    # on their way to the output.
    con = duckdb.connect(
        config={"memory_limit": duckdb_memory_setting(memory_limit), "threads": threads}
    )
    con.execute(f"CREATE VIEW papers AS SELECT * FROM read_parquet('{parquet_glob(papers_dir)}')")
    predicates = rules.predicates()

    fail_alone = {
        name: f"count(*) FILTER (WHERE NOT ({predicate}))" for name, predicate in predicates.items()
    }
    removed_in_order = {}
    passed_so_far: list[str] = []
    for name, predicate in predicates.items():
        previous = " AND ".join(passed_so_far) or "TRUE"
        removed_in_order[name] = f"count(*) FILTER (WHERE ({previous}) AND NOT ({predicate}))"
        passed_so_far.append(f"({predicate})")
    keep = " AND ".join(passed_so_far) or "TRUE"

    selects = ["count(*) AS total", f"count(*) FILTER (WHERE {keep}) AS kept"]
    selects += [f"{sql} AS fail_{name}" for name, sql in fail_alone.items()]
    selects += [f"{sql} AS removed_{name}" for name, sql in removed_in_order.items()]
    relation = con.sql(f"SELECT {', '.join(selects)} FROM papers")
    counts = dict(zip(relation.columns, relation.fetchall()[0], strict=True))

    reader = con.sql(
        "SELECT paper_id, year, fields, n_cited_by, n_references FROM papers "
        f"WHERE {keep} ORDER BY paper_id"
    ).to_arrow_reader(1 << 17)
    written = write_parquet_stream(reader, output)

    report = {
        "input": str(papers_dir),
        "rules": asdict(rules),
        "papers_read": counts["total"],
        "papers_kept": written,
        "failing_each_rule": {name: counts[f"fail_{name}"] for name in predicates},
        "removed_by_rule_in_order": {name: counts[f"removed_{name}"] for name in predicates},
    }
    write_json(report, report_path)
    log.info(
        "prefilter kept %d of %d papers; removed in order: %s",
        written,
        counts["total"],
        report["removed_by_rule_in_order"],
    )
    return report
