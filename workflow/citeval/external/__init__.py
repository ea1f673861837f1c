"""Users' own systems, checked and imported: the ``external`` stage.

A user's system (config ``systems``) is files they made, or that a command of theirs
makes: TREC runs per collection, MDCR scores per split, or a store of paper (and context)
vectors. Before anything reads them, each is checked against what the pipeline asked for
and copied into the pipeline's own layout, where metrics, fusion, reranking, MDCR and the
tables read it like a built-in system's:

* :mod:`citeval.external.runs`: a run against its collection (every query, only pool
  papers, finite scores, no line twice), cut at the pipeline's depth;
* :mod:`citeval.external.stores`: a vector store (``.npy`` shards or one parquet file)
  against the papers the collections need (one finite vector each, one dimension, no id
  twice);
* :mod:`citeval.external.scores`: MDCR scores against the benchmark's pairs.

Every problem is one line naming the file, its line or row, and the query or paper.

    python -m citeval.external run --input my.trec --queries Q.parquet --pools P.parquet \\
        --group pool-800 --rep 0 --k 500 --tag mine --output runs/.../mine.trec
    python -m citeval.external embeddings --input vectors.parquet --ids embed_ids.parquet \\
        --similarity cosine --output embeddings/mine/shard-00000.npy
    python -m citeval.external mdcr-scores --input mine_test.json \\
        --benchmark mdcr_test.json --output mdcr/scores/test/mine.json
"""

from __future__ import annotations

from citeval.external.runs import import_run
from citeval.external.scores import import_mdcr_scores
from citeval.external.stores import import_store

__all__ = ["import_mdcr_scores", "import_run", "import_store"]
