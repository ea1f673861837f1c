"""Cross-encoder reranking of first-stage runs (Nogueira et al. 2020; HAtten's trade-off).

* :mod:`citeval.rerank.model` — the cross-encoder: per-side token budgets, loading, scoring;
* :mod:`citeval.rerank.data` — paper texts and first-stage runs, checked against the corpus;
* :mod:`citeval.rerank.train` — the ``train`` command (pairs from runs and qrels, BCE);
* :mod:`citeval.rerank.rerank` — the ``rerank`` command (score the top max(K) once, every K);
* :mod:`citeval.rerank.tradeoff` — the ``tradeoff`` command (R@10 against K and time);
* :mod:`citeval.rerank.cli` — ``python -m citeval.rerank {train,rerank,tradeoff}``.

Design notes: docs/rerank.md.
"""
