"""Deterministic generator of a synthetic S2ORC v2020 metadata (and full-text) corpus.

The corpus stands in for S2ORC wherever the real data cannot be shipped: the demo config,
tests and benchmarks. It has the structure the evaluation protocol relies on:

* all 19 MAG fields with uneven sizes, some papers labelled with two fields;
* publication years that grow over time, so the last year holds about 9% of the papers
  (the query year);
* a field -> topic -> subtopic hierarchy; every topic and subtopic has its own
  pseudo-word vocabulary and every field a set of English domain words, so titles and
  abstracts carry a lexical and a semantic signal;
* citations that mostly point to older papers of the same subtopic, topic and field, with
  a heavy-tailed in-degree (a Pareto "fitness" per paper) and about 10% cross-field links;
* papers that fail each prefilter rule (null year, empty title, missing or short
  abstract, few citations).

Memory stays small at millions of papers: only compact numpy arrays (per-paper attributes
and the int32 citation graph in CSR form, both directions) are held; records are built on
the fly, one block of :data:`TEXT_BLOCK` papers at a time, from a generator seeded by
``(seed, block)``. A record therefore does not depend on the shard count, and the
concatenated shards are identical for the same seed whatever ``num_shards`` is.

Modules, in the order a corpus is built:

* :mod:`~citeval.synth.shape` and :mod:`~citeval.synth.lexicon`: the fixed fields, rates,
  densities and word lists;
* :mod:`~citeval.synth.structure`: each paper's year, fields, topic, subtopic and fitness;
* :mod:`~citeval.synth.citations`: the citation graph;
* :mod:`~citeval.synth.text`: the vocabularies, titles and abstracts;
* :mod:`~citeval.synth.records`: the JSON lines;
* :mod:`~citeval.synth.fulltext`: optionally, the papers' full text as S2ORC v2020
  ``pdf_parses`` JSON lines, with numbered citation markers for the graph's citations
  (its word tables in :mod:`~citeval.synth.fulltext_words`, its JSON strings in
  :mod:`~citeval.synth.fulltext_render`);
* :mod:`~citeval.synth.corpus`: the gzip'd shards (metadata, and full text when asked);
* :mod:`~citeval.synth.cli`: the command line (``python -m citeval.synth``).
"""

from citeval.synth.citations import CitationGraph, build_citations
from citeval.synth.corpus import generate_corpus, shard_path, shard_ranges
from citeval.synth.records import V2020_KEYS, RecordWriter, paper_id
from citeval.synth.shape import DENSITIES, FIELDS, TEXT_BLOCK, Density
from citeval.synth.structure import Structure, build_structure
from citeval.synth.text import Vocabulary, build_vocabulary

__all__ = [
    "DENSITIES",
    "FIELDS",
    "TEXT_BLOCK",
    "V2020_KEYS",
    "CitationGraph",
    "Density",
    "RecordWriter",
    "Structure",
    "Vocabulary",
    "build_citations",
    "build_structure",
    "build_vocabulary",
    "generate_corpus",
    "paper_id",
    "shard_path",
    "shard_ranges",
]
