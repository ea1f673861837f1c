"""Stage ``encode``: embed one shard of ``samples/embed_ids.parquet`` with one model.

    python -m citeval.encode --model specter --model-json '{"path": "allenai/specter", ...}' \\
        --papers results/demo/corpus/papers --ids results/demo/samples/embed_ids.parquet \\
        --shard-id 3 --num-shards 8 --output results/demo/embeddings/specter/shard-00003.npy

Shard ``i`` of ``N`` takes rows ``[i*n//N, (i+1)*n//N)`` of the sorted id list. Titles and
abstracts are streamed from the corpus by one DuckDB range scan per shard (row groups
outside the shard's id range are skipped by their statistics; the corpus parts are sorted
by paper_id, so the scan yields papers in id order with no sort) with a semi-join on each
scanned batch. The corpus is never loaded whole: memory is one scan batch, DuckDB's reader
buffers (bounded by ``--memory-limit``) and two chunks (one encoding, one prefetched),
whatever the shard size.

Outputs (docs/contracts.md, ``embeddings/``, written by :func:`citeval.embeddings.write_shard`):
``shard-IIIII.ids.parquet`` is written first and ``shard-IIIII.npy`` (float16) last, both
atomically, so the ``.npy`` marks a finished shard; a shard whose ``.npy`` exists is
skipped. Vectors are stored as the encoder returns them: L2-normalised for
``similarity: cosine``, raw for ``ip`` and ``l2``.

Prompts: ``--role query|document`` embeds the papers with that role's prompt
(docs/encoders.md#prompts); without it the store serves queries and candidates alike, which
a model whose two prompts differ refuses. ``--ids QUERIES --ids-column query_id`` embeds a
sample's distinct query papers (the query store of such a model).

Resume within a shard: each chunk of ``--chunk-size`` papers is checkpointed under
``.partial/shard-IIIII/`` next to the output. A killed job restarts after its last finished
chunk; the checkpoints are discarded if the model spec, shard or chunk size changed, and
removed once the shard is complete.

The modules, one job each:

- ``shards``: which rows of the id list a shard embeds;
- ``papers``: the shard's titles and abstracts, streamed from the corpus;
- ``run``: encoding a shard chunk by chunk, with checkpoints (or several shards);
- ``cli``: the command line (``python -m citeval.encode``).
"""

from __future__ import annotations

from citeval.encode.papers import SCAN_BATCH, iter_paper_chunks
from citeval.encode.run import (
    DEFAULT_CHUNK_SIZE,
    PARTIAL_DIR,
    encode_shard,
    encode_shards,
    iter_encoded,
)
from citeval.encode.shards import read_shard_ids, shard_bounds

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "PARTIAL_DIR",
    "SCAN_BATCH",
    "encode_shard",
    "encode_shards",
    "iter_encoded",
    "iter_paper_chunks",
    "read_shard_ids",
    "shard_bounds",
]
