"""Learning to rank over every system's evidence: a LambdaMART second stage (docs/ltr.md).

* :mod:`citeval.ltr.features` — the features, each declared once, and what they read;
* :mod:`citeval.ltr.model` — training on the training split, selection on its held-out
  queries, the saved model;
* :mod:`citeval.ltr.rank` — a first stage's run reordered, MDCR's pairs scored;
* :mod:`citeval.ltr.importance` — the feature importances, tabulated and drawn;
* :mod:`citeval.ltr.cli` — ``python -m citeval.ltr {train,rank,score-mdcr,importance}``.
"""
