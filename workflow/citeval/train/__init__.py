"""Encoders trained on the corpus's own citation graph (SciNCL's and SPECTER's triplets).

* :mod:`citeval.train.graph` — the ``graph`` command: citations without any evaluation query;
* :mod:`citeval.train.embed` — the ``embed-graph`` command: citation embeddings (scikit-network);
* :mod:`citeval.train.triplets` — the ``triplets`` command: the scincl and specter samplers;
* :mod:`citeval.train.fit` — the ``fit`` command: sentence-transformers' trainer, triplet loss;
* :mod:`citeval.train.cli` — ``python -m citeval.train {graph,embed-graph,triplets,fit}``.

Design notes: docs/train.md.
"""
