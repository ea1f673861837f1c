"""Local citation recommendation (HAtten, Gu et al. 2022): a citation context as the query.

:mod:`citeval.contexts` extracts the contexts; :mod:`citeval.local.sample` splits them by
time into the test and validation samples that BM25, the encoders, fusion and the metrics
run on unchanged; :mod:`citeval.local.tables` writes the local tables. ``python -m
citeval.local sample|tables`` (docs/local.md).
"""
