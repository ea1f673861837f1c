"""Export: the benchmarks citeval builds, in a format other tools read.

``python -m citeval.export beir`` (also ``citeval export beir``) writes one collection of
the global or the local task, or MDCR's pairs, as a BEIR folder: ``corpus.jsonl``,
``queries.jsonl``, ``qrels/test.tsv`` and ``manifest.json`` (config hash, seed, the
collection, its inputs, counts). BEIR's ``GenericDataLoader`` and MTEB's retrieval tasks
load it (docs/export.md); the format is in docs/contracts.md.

* :mod:`citeval.export.beir` — the folder: its files, their order, the manifest;
* :mod:`citeval.export.sources` — what an export holds, read from the samples, the corpus
  and MDCR's files, with the texts the pipeline's systems see;
* :mod:`citeval.export.cli` — the command line.
"""

from citeval.export.beir import (
    CORPUS_FILE,
    MANIFEST_FILE,
    QRELS_FILE,
    QRELS_HEADER,
    QUERIES_FILE,
    Document,
    Query,
    write_beir_folder,
)
from citeval.export.sources import Source, collection_source, mdcr_source

__all__ = [
    "CORPUS_FILE",
    "MANIFEST_FILE",
    "QRELS_FILE",
    "QRELS_HEADER",
    "QUERIES_FILE",
    "Document",
    "Query",
    "Source",
    "collection_source",
    "mdcr_source",
    "write_beir_folder",
]
