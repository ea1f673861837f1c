"""The embedding store: shard format, locating papers and gathering their vectors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from embedding_store_builder import DIM, paper_ids, random_vectors, write_store

from citeval.embeddings import EmbeddingStore, ids_path_for, ids_schema, shard_name, write_shard
from citeval.errors import InputDataError

pytestmark = pytest.mark.usefixtures("one_thread")


def test_gather_from_shards_equals_concatenation(tmp_path: Path) -> None:
    ids = paper_ids(50)
    stored = write_store(tmp_path / "emb", ids, random_vectors(50, 0), num_shards=4)
    store = EmbeddingStore(tmp_path / "emb")
    assert (store.n_rows, store.dim, store.multi_vector) == (50, DIM, False)
    selection = store.locate(reversed(ids))
    assert selection.paper_ids.tolist() == ids
    # Chunks of 7 rows straddle the shard borders.
    gathered = store.gather(selection, chunk_rows=7, progress=False)
    assert gathered.dtype == np.float32
    np.testing.assert_array_equal(gathered, stored)

    subset = [ids[i] for i in (3, 48, 11, 12, 13, 30)]
    sel = store.locate(subset)
    expected = stored[sorted(ids.index(p) for p in subset)]
    np.testing.assert_array_equal(store.gather(sel, chunk_rows=4, progress=False), expected)
    out = np.zeros_like(expected)
    assert store.gather(sel, out=out, normalize=True, progress=False) is out
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-6)


def test_a_nan_vector_is_an_error_naming_its_shard_row_and_paper(tmp_path: Path) -> None:
    ids = paper_ids(20)
    vectors = random_vectors(20, 0)
    vectors[13, 2] = np.nan
    write_store(tmp_path / "emb", ids, vectors, num_shards=2)
    store = EmbeddingStore(tmp_path / "emb")
    with pytest.raises(InputDataError, match=rf"shard-00001.npy: row 3 \(paper {ids[13]}\)"):
        store.gather(store.locate(ids), chunk_rows=6, progress=False)
    # The papers around it gather as before.
    clean = [ids[i] for i in range(20) if i != 13]
    assert np.isfinite(store.gather(store.locate(clean), progress=False)).all()


def test_store_order_does_not_depend_on_shard_layout(tmp_path: Path) -> None:
    ids = paper_ids(20)
    vectors = random_vectors(20, 1)
    perm = np.random.default_rng(2).permutation(20)
    write_store(tmp_path / "a", ids, vectors, num_shards=1)
    write_store(tmp_path / "b", [ids[i] for i in perm], vectors[perm], num_shards=3)
    a, b = EmbeddingStore(tmp_path / "a"), EmbeddingStore(tmp_path / "b")
    sel_a, sel_b = a.locate(ids[5:15]), b.locate(ids[5:15])
    assert sel_a.paper_ids.tolist() == sel_b.paper_ids.tolist() == ids[5:15]
    np.testing.assert_array_equal(a.gather(sel_a, progress=False), b.gather(sel_b, progress=False))


def test_gather_with_interleaved_shards(tmp_path: Path) -> None:
    """Selection order alternates shards (even ids in one, odd in the other)."""
    ids = paper_ids(12)
    vectors = random_vectors(12, 5)
    order = [*range(0, 12, 2), *range(1, 12, 2)]
    stored = write_store(tmp_path / "emb", [ids[i] for i in order], vectors[order], num_shards=2)
    store = EmbeddingStore(tmp_path / "emb")
    selection = store.locate(ids)
    assert selection.shard.tolist() == [0, 1] * 6
    expected = stored[np.argsort(order)]
    for chunk_rows in (1, 3, 5, 100):
        gathered = store.gather(selection, chunk_rows=chunk_rows, progress=False)
        np.testing.assert_array_equal(gathered, expected)
        chunks = [
            c.copy() for _, c in store.iter_chunks(selection, chunk_rows=chunk_rows, progress=False)
        ]
        np.testing.assert_array_equal(np.concatenate(chunks), expected)


def test_locate_reports_missing_and_duplicate_papers(tmp_path: Path) -> None:
    write_store(tmp_path / "emb", paper_ids(10), random_vectors(10, 0), num_shards=2)
    store = EmbeddingStore(tmp_path / "emb")
    with pytest.raises(InputDataError, match=r"1 of 2 papers have no vector.*nope"):
        store.locate(["p00001", "nope"])
    write_store(tmp_path / "dup", ["a", "b", "a"], random_vectors(3, 0), num_shards=1)
    with pytest.raises(InputDataError, match="more than once"):
        EmbeddingStore(tmp_path / "dup").locate(["a"])
    with pytest.raises(InputDataError, match="no shard"):
        EmbeddingStore(tmp_path / "emb" / "..")


def test_write_shard_concatenates_parts_that_the_store_reads_back(tmp_path: Path) -> None:
    ids = paper_ids(9)
    vectors = random_vectors(9, 4).astype(np.float16)
    parts = []
    for k, (start, stop) in enumerate([(0, 4), (4, 4), (4, 9)]):
        vectors_path, ids_path = tmp_path / f"part-{k}.npy", tmp_path / f"part-{k}.ids.parquet"
        np.save(vectors_path, vectors[start:stop])
        pq.write_table(pa.table({"paper_id": ids[start:stop]}, schema=ids_schema(False)), ids_path)
        parts.append((vectors_path, ids_path))
    output = tmp_path / "emb" / f"{shard_name(0)}.npy"
    output.parent.mkdir()
    assert write_shard(output, parts, DIM, multi_vector=False) == 9
    assert ids_path_for(output) == tmp_path / "emb" / "shard-00000.ids.parquet"
    store = EmbeddingStore(output.parent)
    assert (store.n_rows, store.dim, store.multi_vector) == (9, DIM, False)
    selection = store.locate(ids)
    np.testing.assert_array_equal(
        store.gather(selection, progress=False), vectors.astype(np.float32)
    )
