"""MDCR (Multi-Domain Citation Recommendation, Medić & Šnajder 2022 §4).

* :mod:`citeval.mdcr.formats` — the published benchmark, data and scores files;
* :mod:`citeval.mdcr.evaluate` — the published evaluator, per field and per candidate type;
* :mod:`citeval.mdcr.negatives` — candidate selection, as pure functions;
* :mod:`citeval.mdcr.construct` — a split's benchmark from in-memory inputs;
* :mod:`citeval.mdcr.inputs` — those inputs read from the pipeline's tables and runs;
* :mod:`citeval.mdcr.build` — the ``build`` command: model selection, Jaccard table, files;
* :mod:`citeval.mdcr.score` — every model's score of every query–candidate pair;
* :mod:`citeval.mdcr.tables` — Tables 3 and 4 from the evaluations, with significance
  tests against a baseline from the per-query evaluations (:mod:`citeval.significance`);
* :mod:`citeval.mdcr.cli` — ``python -m citeval.mdcr {build,check,score,evaluate,tables}``.

Formats, rules and settled details: docs/mdcr.md.
"""
