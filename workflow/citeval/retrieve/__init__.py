"""Dense retrieval of one collection with Faiss: the ``retrieve`` stage.

For one collection (setup, split, group, rep) this ranks the pool's papers for every query
by the similarity of their embeddings and writes a TREC run
(``runs/<setup>-<split>/<group>.rep<rep>/<model>.trec``, see ``docs/contracts.md``). Query
vectors come from the same embedding store as the pool: queries are embedded with the
corpus. A query is never its own candidate: ``k + 1`` neighbours (plus a small margin, see
below) are searched and the query's own paper is dropped.

**Ties.** Faiss keeps an arbitrary member of a group of equal scores at its cut-off. So a
few more than ``k`` neighbours are searched (:data:`citeval.faiss_index.TIE_MARGIN`) and
:func:`citeval.trec.write_run` cuts at ``k`` in trec_eval's order (score descending, doc id
descending), which decides ties at ``k`` the way trec_eval would unless a tie group is
longer than the margin.

**Multi-vector models (ASPIRE)** (``--pooling aspire``) are ranked by
:func:`citeval.aspire.retrieve_aspire`, which scores a pair of papers by their best sentence
pair.

Example::

    python -m citeval.retrieve --embeddings results/demo/embeddings/specter \\
        --similarity l2 --pooling cls --queries samples/dataset-test/queries.parquet \\
        --pools samples/dataset-test/pools.parquet --group pool-800 --rep 0 --k 500 \\
        --index flat --threads 2 --output run.trec --tag specter

A collection's queries and pool are read by :func:`citeval.collection_list.read_collection`;
:mod:`citeval.retrieve.dense` ranks it, :mod:`citeval.retrieve.cli` is the command line.
"""

from __future__ import annotations

from citeval.collection_list import read_collection
from citeval.retrieve.dense import POOLINGS, retrieve_dense

__all__ = ["POOLINGS", "read_collection", "retrieve_dense"]
