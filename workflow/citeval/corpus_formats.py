"""The corpus formats, declared once: how each one's input files are staged, and which
full-text format goes with it.

A corpus format (``corpus.format``) names one or more kinds of input file. Each kind is
read by its own ``ingest parse --format`` and stages one table: papers (with their
citation lists), abstracts, or citation edges. A format of one kind takes a list of path
patterns (``corpus.paths``); S2AG, whose datasets come apart, takes a mapping from each
staged table to its patterns. Its *full text* is the ``local.input.format`` that reads
the same source's full text for local citation contexts (none for parquet);
``curated`` contexts are read whatever the corpus.

Everything else derives from :data:`CORPUS_FORMATS`: the formats ``ingest parse`` takes
(:data:`PARSE_FORMATS`, :data:`PARSE_TABLE`), the staging shards of a config
(:func:`citeval.inputs.input_shards`) and the formats ``contexts extract`` takes
(:data:`CONTEXT_FORMATS`). The config schema's enums and :mod:`citeval.config`'s
``Literal`` types repeat the names, as a schema and a type must; ``tests/test_inputs.py``
checks that they agree with this declaration.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class CorpusFormat:
    """One ``corpus.format``: its parse formats, each with the table it stages, and the
    ``local.input.format`` of its full text (None when there is none)."""

    name: str
    parse: Mapping[str, str]
    full_text: str | None

    @property
    def paths_by_table(self) -> bool:
        """Whether ``corpus.paths`` is a mapping from staged table to patterns (one list
        of patterns otherwise)."""
        return len(self.parse) > 1


CORPUS_FORMATS: tuple[CorpusFormat, ...] = (
    CorpusFormat(
        "s2orc_v2020", MappingProxyType({"s2orc_v2020": "papers"}), full_text="s2orc_v2020"
    ),
    CorpusFormat(
        "s2ag",
        MappingProxyType(
            {
                "s2ag-papers": "papers",
                "s2ag-abstracts": "abstracts",
                "s2ag-citations": "citations",
            }
        ),
        full_text="s2ag",
    ),
    CorpusFormat("parquet", MappingProxyType({"parquet": "papers"}), full_text=None),
)
BY_NAME: Mapping[str, CorpusFormat] = MappingProxyType({f.name: f for f in CORPUS_FORMATS})

# The format citeval.synth writes (metadata, and full text when asked).
SYNTHETIC = "s2orc_v2020"
# Contexts extracted by hand, one JSON object a line: local.input.format for any corpus.
CURATED = "curated"

# ingest parse --format: every kind of input file, and the table each stages.
PARSE_FORMATS: tuple[str, ...] = tuple(name for f in CORPUS_FORMATS for name in f.parse)
PARSE_TABLE: Mapping[str, str] = MappingProxyType(
    {name: table for f in CORPUS_FORMATS for name, table in f.parse.items()}
)
# local.input.format and contexts extract --format: the corpora's full text, and curated.
CONTEXT_FORMATS: tuple[str, ...] = (
    *(f.full_text for f in CORPUS_FORMATS if f.full_text is not None),
    CURATED,
)
