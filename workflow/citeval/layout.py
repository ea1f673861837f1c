"""Where every output of a run lives, and how runs are named: the one owner of paths.

Everything a run writes is under ``results/<dataset>/`` (:attr:`Layout.root`). A
*collection* (one pool of one split, its queries and qrels) is addressed by its setup,
split and name, ``<group>.rep<rep>`` (:func:`citeval.collection_list.collection_name`); its
files sit at ``<kind>/<setup>-<split>/<group>.rep<rep>/...``. Each method returns one path
and accepts Snakemake wildcards (``"{setup}"``) wherever it accepts a value, so the rules
and the stages build paths the same way. :data:`WILDCARDS` holds those placeholders.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

# Placeholders of a rule's wildcards, for templates: layout.run(**WILDCARDS, model="{model}").
WILDCARDS = {
    "setup": "{setup}",
    "split": "{split}",
    "collection": "{group}.rep{rep}",
}

# MDCR's published files name the validation split ``val`` (mdcr_val.json); the samples
# (and every other file) say ``valid``. Only the MDCR file names use ``val``.
MDCR_FILE_SPLIT = {"test": "test", "valid": "val"}
MDCR_SPLIT_OF_FILE = {name: split for split, name in MDCR_FILE_SPLIT.items()}
# The files MDCR's construction writes per split, by role: the suffix after mdcr_<split>.
MDCR_FILES = {
    "benchmark": ".json",
    "data": "_data.jsonl",
    "jaccard": "_jaccard.tsv",
    "report": "_report.json",
}

# The local task has one collection per split: every granularity shares its pool and runs.
LOCAL_SETUP = "local"
LOCAL_GROUP = "contexts"
LOCAL_COLLECTION = f"{LOCAL_GROUP}.rep0"
# A local sample's query texts, as a papers folder (its queries are contexts, not papers).
QUERY_PAPERS = "query_papers"


def reranked_run(first_stage: str, reranker: str, k: int | str) -> str:
    """The file name of a reranked run: ``<first stage>.<reranker>@<K>``."""
    return f"{first_stage}.{reranker}@{k}"


def reranked_label(first_stage: str, reranker: str, k: int | str) -> str:
    """The table label of a reranked run: ``<first stage>><reranker>@<K>`` (a ``>`` in a
    file name invites shell accidents, so only tables use it)."""
    return f"{first_stage}>{reranker}@{k}"


def oracle_run(first_stage: str, k: int | str) -> str:
    """HAtten's oracle prefetch of a first stage at K (citeval.local.oracle)."""
    return f"{first_stage}+oracle{k}"


def run_name(label: str) -> str:
    """The file name of a table label: ``bm25>ce@10`` -> ``bm25.ce@10``."""
    return label.replace(">", ".")


def _shard_file(folder: str, index: int | str) -> str:
    """An embedding shard of ``folder`` (``index``: a number or a ``{wildcard}``)."""
    shard = index if isinstance(index, str) else f"{index:05d}"
    return f"{folder}/shard-{shard}.npy"


def mdcr_file_name(split: str, suffix: str) -> str:
    """A split's MDCR file in the published names: ``mdcr_<test|val><suffix>`` (``split``:
    test or valid; a ``{wildcard}`` stays as it is)."""
    return f"mdcr_{MDCR_FILE_SPLIT.get(split, split)}{suffix}"


def split_name(setup: str, split: str) -> str:
    return f"{setup}-{split}"


@dataclass(frozen=True)
class Layout:
    """Paths of one run's outputs, under ``root`` (``results/<dataset>``)."""

    root: str

    @classmethod
    def for_dataset(cls, dataset: str) -> Layout:
        return cls(f"results/{dataset}")

    # --- bookkeeping ---------------------------------------------------------------

    def log(self, job: str, *parts: str) -> str:
        """A job's log: ``logs/<job>[/<part>...].log``."""
        return "/".join([self.root, "logs", job, *parts]) + ".log"

    def timing(self, job: str, *parts: str) -> str:
        """A job's time and memory, as Snakemake's ``benchmark:`` records them:
        ``timings/<job>[/<part>...].tsv`` ("benchmark" here means the MDCR file only)."""
        return "/".join([self.root, "timings", job, *parts]) + ".tsv"

    # --- corpus ----------------------------------------------------------------------

    def staging(self, shard: str) -> str:
        return f"{self.root}/staging/{shard}"

    @property
    def corpus(self) -> str:
        return f"{self.root}/corpus"

    @property
    def papers(self) -> str:
        return f"{self.corpus}/papers"

    @property
    def filtered(self) -> SimpleNamespace:
        folder = f"{self.root}/filtered"
        return SimpleNamespace(
            papers=f"{folder}/papers.parquet", report=f"{folder}/filter_report.json"
        )

    # --- samples -------------------------------------------------------------------------

    def sample_dir(self, setup: str, split: str) -> str:
        return f"{self.root}/samples/{split_name(setup, split)}"

    def sample_report(self, setup: str) -> str:
        return f"{self.root}/samples/{setup}-report.json"

    def qrels(self, setup: str, split: str, collection: str) -> str:
        return f"{self.sample_dir(setup, split)}/qrels/{collection}.qrels"

    @property
    def embed_ids(self) -> str:
        return f"{self.root}/samples/embed_ids.parquet"

    # --- retrieval ---------------------------------------------------------------------

    @property
    def bm25_analyzed(self) -> str:
        return f"{self.root}/indexes/bm25-analyzed"

    def bm25_index(self, setup: str, split: str, collection: str) -> str:
        return f"{self.root}/indexes/bm25/{split_name(setup, split)}/{collection}"

    def bm25_tuning(self, setup: str) -> str:
        return f"{self.root}/tuning/bm25-{setup}.json"

    def embeddings(self, model: str) -> str:
        return f"{self.root}/embeddings/{model}"

    def embedding_shard(self, model: str, index: int | str) -> str:
        return _shard_file(self.embeddings(model), index)

    def query_paper_embeddings(self, model: str, setup: str, split: str) -> str:
        """A model's embeddings of a split's query papers with its query prompt, for a
        model whose query and document prompts differ (citeval.plan.encoders)."""
        return f"{self.root}/query_embeddings/{model}/{split_name(setup, split)}"

    def query_paper_shard(self, model: str, setup: str, split: str) -> str:
        """A split's query papers are few enough for one shard."""
        return _shard_file(self.query_paper_embeddings(model, setup, split), 0)

    def runs_dir(self, setup: str, split: str) -> str:
        return f"{self.root}/runs/{split_name(setup, split)}"

    def run(self, setup: str, split: str, collection: str, model: str) -> str:
        return f"{self.runs_dir(setup, split)}/{collection}/{model}.trec"

    def metrics(self, setup: str, split: str, collection: str, model: str) -> str:
        return f"{self.root}/metrics/{split_name(setup, split)}/{collection}/{model}.tsv"

    # --- users' systems (systems.*) -------------------------------------------------

    def external(self, system: str) -> str:
        """What a user's system's command writes (its own files stay where they are)."""
        return f"{self.root}/external/{system}"

    def external_store(self, system: str, contexts: bool = False) -> str:
        return f"{self.external(system)}/{'contexts' if contexts else 'store'}"

    def external_run(self, system: str, setup: str, split: str, collection: str) -> str:
        return f"{self.external(system)}/runs/{split_name(setup, split)}/{collection}.trec"

    def external_mdcr_scores(self, system: str, split: str) -> str:
        return f"{self.external(system)}/mdcr/{split}.json"

    def import_report(self, system: str, *parts: str) -> str:
        """The import check's counts of a user's file (skipped queries, vectors, ...)."""
        return f"{self.root}/imports/{system}/{'/'.join(parts)}.json"

    # --- MDCR --------------------------------------------------------------------------

    @property
    def mdcr(self) -> str:
        return f"{self.root}/mdcr"

    def mdcr_file(self, split: str, role: str) -> str:
        """A split's file in the published names, ``mdcr/mdcr_<test|val><suffix>``, by its
        role in :data:`MDCR_FILES` (``split``: test or valid)."""
        return f"{self.mdcr}/{mdcr_file_name(split, MDCR_FILES[role])}"

    def mdcr_scores(self, split: str, model: str) -> str:
        return f"{self.mdcr}/scores/{split}/{model}.json"

    def mdcr_eval(self, split: str, model: str, per_query: bool = False) -> str:
        return f"{self.mdcr}/eval/{split}/{model}{'.per_query' if per_query else ''}.tsv"

    # --- reranking and training -----------------------------------------------------

    def reranker_model(self, reranker: str) -> str:
        return f"{self.root}/rerank/{reranker}/model"

    def ltr_model(self, name: str, setup: str | None = None) -> str:
        """A learning-to-rank system's folder (``model.txt``, ``training.json``): the
        global task's, or the local task's (``setup`` local), trained on its own split."""
        folder = "local-model" if setup == LOCAL_SETUP else "model"
        return f"{self.root}/ltr/{name}/{folder}"

    def rerank_timing(
        self, reranker: str, setup: str, split: str, collection: str, first_stage: str
    ) -> str:
        return (
            f"{self.root}/rerank/{reranker}/timing/{split_name(setup, split)}/"
            f"{collection}/{first_stage}.json"
        )

    @property
    def train(self) -> str:
        return f"{self.root}/train"

    @property
    def train_graph(self) -> str:
        return f"{self.train}/graph"

    def trained(self, name: str, file: str) -> str:
        """A trained encoder's files: ``train/<name>/<file>`` (``model``, ``triplets.parquet``)."""
        return f"{self.train}/{name}/{file}"

    # --- local citation recommendation ----------------------------------------------

    @property
    def local(self) -> str:
        return f"{self.root}/local"

    def contexts_staging(self, shard: str) -> str:
        """One full-text input's raw contexts (``.parquet``, ``.json`` report: ``suffix``)."""
        return f"{self.local}/staging/{shard}"

    @property
    def contexts(self) -> SimpleNamespace:
        return SimpleNamespace(
            table=f"{self.local}/contexts.parquet", report=f"{self.local}/contexts_report.json"
        )

    def query_papers(self, split: str) -> str:
        """The local queries' texts, as a papers folder (citeval.local.sample)."""
        return f"{self.sample_dir('local', split)}/{QUERY_PAPERS}"

    def query_ids(self, split: str) -> str:
        return f"{self.sample_dir('local', split)}/query_ids.parquet"

    def local_reranker_model(self, reranker: str) -> str:
        """The local task's cross-encoder (trained on contexts, not on papers)."""
        return f"{self.local}/rerank/{reranker}/model"

    def query_embeddings(self, model: str, split: str) -> str:
        """A model's embeddings of the local queries of a split (one shard)."""
        return f"{self.local}/embeddings/{model}/{split}"

    def query_embedding_shard(self, model: str, split: str) -> str:
        """The local queries of a split are few enough for one shard."""
        return _shard_file(self.query_embeddings(model, split), 0)

    # --- exports ----------------------------------------------------------------------

    def export_beir(self, setup: str, split: str, collection: str) -> str:
        """A collection as a BEIR folder (citeval.export): ``export/beir/<setup>-<split>/
        <group>.rep<rep>``, beside the collection's other files' naming."""
        return f"{self.root}/export/beir/{split_name(setup, split)}/{collection}"

    def export_beir_mdcr(self, split: str) -> str:
        """MDCR's pairs of a split (test or valid) as a BEIR folder: ``export/beir/
        mdcr-<split>`` (one level, so it never matches a collection's folder)."""
        return f"{self.root}/export/beir/mdcr-{split}"

    # --- tables and figures -----------------------------------------------------------

    @property
    def tables(self) -> str:
        return f"{self.root}/tables"

    def table(self, name: str, ext: str = "tsv") -> str:
        return f"{self.tables}/{name}.{ext}"

    def plot(self, name: str) -> str:
        return f"{self.tables}/plots/{name}.png"
