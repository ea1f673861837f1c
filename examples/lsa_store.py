"""An embeddings system of your own: LSA vectors (TF-IDF, then a truncated SVD) of every
paper of the corpus, and of the local task's contexts, written as citeval's vector stores.

citeval runs it as the `command` of `systems.embeddings.lsa` in config/config.yaml:

    python examples/lsa_store.py --papers {papers} --contexts {contexts} \\
        --store {store} --contexts-store {contexts_store} --dim 64 --seed 13

and then checks and imports what it wrote (docs/contracts.md, "Your own system"). It
imports nothing from citeval: the store format is all it shares with the pipeline.
A paper's text is its title and abstract; a context's is the text citeval ranks for it
(the passage, then the citing paper's title and abstract where the task adds them).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import TfidfVectorizer


def read_texts(paths: list[Path]) -> tuple[list[str], list[str]]:
    """Ids and texts (title, then abstract) of papers-format parquet files or folders."""
    ids: list[str] = []
    texts: list[str] = []
    for path in paths:
        table = pq.read_table(path, columns=["paper_id", "title", "abstract"])
        titles = table.column("title").to_pylist()
        abstracts = table.column("abstract").to_pylist()
        ids += [str(paper_id) for paper_id in table.column("paper_id").to_pylist()]
        texts += [f"{t or ''} {a or ''}".strip() for t, a in zip(titles, abstracts, strict=True)]
    return ids, texts


def write_store(folder: Path, ids: list[str], vectors: np.ndarray) -> None:
    """citeval's shard format: shard-00000.npy and its id table. A text without a word of
    the vocabulary has no LSA vector (all zeros: no direction for cosine similarity), so it
    is left out; citeval's import names any paper a collection needs that is missing."""
    keep = np.flatnonzero(np.abs(vectors).sum(axis=1) > 0)
    if len(keep) < len(ids):
        print(f"{folder}: {len(ids) - len(keep)} texts without a known word left out")
    ids, vectors = [ids[i] for i in keep], vectors[keep]
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        pa.table({"paper_id": pa.array(ids, pa.string())}), folder / "shard-00000.ids.parquet"
    )
    np.save(folder / "shard-00000.npy", vectors.astype(np.float32))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", required=True, type=Path, help="papers parquet")
    parser.add_argument("--contexts", nargs="*", type=Path, default=[], help="context folders")
    parser.add_argument("--store", required=True, type=Path)
    parser.add_argument("--contexts-store", required=True, type=Path)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args()

    ids, texts = read_texts([args.papers])
    # Fitted on the papers alone: the contexts are queries, mapped into the papers' space.
    tfidf = TfidfVectorizer(sublinear_tf=True, stop_words="english")
    svd = TruncatedSVD(n_components=args.dim, algorithm="arpack", random_state=args.seed)
    vectors = svd.fit_transform(tfidf.fit_transform(texts))
    write_store(args.store, ids, vectors)
    print(f"{len(ids)} papers, {len(tfidf.vocabulary_)} terms -> {args.dim} dimensions")
    if args.contexts:
        context_ids, context_texts = read_texts(args.contexts)
        write_store(args.contexts_store, context_ids, svd.transform(tfidf.transform(context_texts)))
        print(f"{len(context_ids)} contexts")


if __name__ == "__main__":
    main()
