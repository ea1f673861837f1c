"""Shared test fixtures: a tiny BERT built locally (no hub access), plain and as a
sentence-transformers folder, and the end-to-end pipeline run several modules share.

``HF_HUB_OFFLINE`` is set before anything imports huggingface_hub: a hub lookup from a test
would otherwise hang for over a minute before it fails.
"""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

# Whole words for the test texts; the single letters and "##" letters below let any other
# lower-case word be split into word pieces instead of becoming [UNK].
_TINY_WORDS_TEXT = """
a an the of in on for to with by from and or not is are was were be been this that these
those we our it its as at than then also which who can may using used use based new two
three one results result method methods model models paper papers study studies show shows
shown propose proposed approach approaches data dataset datasets task tasks performance
evaluation evaluate evaluated large scale small citation citations recommendation retrieval
document documents query queries article articles encoder encoders transformer transformers
language neural network networks learning deep training trained train test tests set sets
sentence sentences title abstract text texts word words vector vectors embedding embeddings
representation representations similarity search ranking rank ranked score scores metric
metrics benchmark benchmarks baseline baselines field fields science scientific research
cell cells protein proteins gene genes expression disease patients clinical treatment
effect effects analysis analyses experiment experiments measured measure observed increase
decrease high low higher lower significant significantly method improve improves improved
graph graphs node nodes edge edges algorithm algorithms problem problems solution solutions
time times system systems computer vision image images physics energy matter quantum theory
theoretical chemical chemistry reaction reactions material materials structure structures
temperature pressure water soil climate change economic market policy social political
history art culture human humans mouse mice brain neurons signal signals
"""
TINY_WORDS = _TINY_WORDS_TEXT.split()
LETTERS = "abcdefghijklmnopqrstuvwxyz0123456789"
PUNCTUATION = list(".,;:!?()[]'\"-/%=+<>")


def tiny_vocab() -> list[str]:
    """The tiny model's vocabulary, in id order (no duplicates)."""
    vocab: list[str] = []
    for token in [
        *SPECIAL_TOKENS,
        *PUNCTUATION,
        *TINY_WORDS,
        *LETTERS,
        *(f"##{c}" for c in LETTERS),
    ]:
        if token not in vocab:
            vocab.append(token)
    return vocab


def build_tiny_bert(directory: Path, *, seed: int = 0, max_position_embeddings: int = 512) -> Path:
    """Save a randomly initialised 2-layer, 64-dim BERT and its fast tokenizer."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    directory.mkdir(parents=True, exist_ok=True)
    vocab = tiny_vocab()
    vocab_file = directory / "vocab.txt"
    vocab_file.write_text("\n".join(vocab) + "\n")
    # transformers 5 takes the vocabulary file as `vocab`, not `vocab_file`.
    tokenizer = BertTokenizerFast(vocab=str(vocab_file), do_lower_case=True)
    tokenizer.model_max_length = max_position_embeddings
    config = BertConfig(
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        vocab_size=len(vocab),
        max_position_embeddings=max_position_embeddings,
    )
    torch.manual_seed(seed)
    model = BertModel(config)
    model.eval()
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A local folder with a tiny BERT (hidden 64, 2 layers) and its fast tokenizer."""
    return build_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture(scope="session")
def tiny_st_dir(tiny_bert_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny BERT wrapped as a sentence-transformers model with CLS pooling."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    transformer = Transformer(str(tiny_bert_dir))
    pooling = Pooling(transformer.get_embedding_dimension(), pooling_mode="cls")
    directory = tmp_path_factory.mktemp("tiny-st")
    SentenceTransformer(modules=[transformer, pooling], device="cpu").save(str(directory))
    return directory


# The modules that read the one end-to-end run (the ``e2e_run`` fixture): one worker runs
# them all, so that the run happens once.
SHARED_RUN_MODULES = frozenset(
    f"tests/{name}.py"
    for name in ("test_pipeline", "test_pipeline_train", "test_pipeline_external")
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow modules first (a stable sort), so that the longest runs start at once."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist's ``loadfile``, with the modules of :data:`SHARED_RUN_MODULES` as one unit:
    a module's tests share one worker, so a module-scoped run happens once, and so do the
    modules that share a session-scoped run. (``--dist loadgroup`` would say this with
    marks, but newer pytest releases ignore the node ids it rewrites: pytest-xdist#1386.)
    Units are handed out in collection order, the slow ones first."""
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return "shared-run" if module in SHARED_RUN_MODULES else module

    return ModuleScheduling(config, log)


@pytest.fixture(scope="session")
def e2e_run(tmp_path_factory: pytest.TempPathFactory, tiny_bert_dir: Path) -> Path:
    """The working folder of one finished run of :func:`pipeline_runs.shared_config`."""
    import pipeline_runs

    workdir = pipeline_runs.prepare(
        tmp_path_factory.mktemp("pipeline") / "first", pipeline_runs.shared_config(tiny_bert_dir)
    )
    # Every CPU: the other worker's runs mostly wait (on SLURM, on sleeping jobs) and
    # finish first, and this run is the suite's longest.
    result = pipeline_runs.snakemake(workdir, cores=len(os.sched_getaffinity(0)))
    assert result.returncode == 0, result.stderr[-6000:]
    return workdir


@pytest.fixture
def one_thread() -> Iterator[None]:
    """One Faiss/BLAS thread during the test; the process-wide settings are put back after.

    Modules of vector searches take it with ``pytestmark = pytest.mark.usefixtures(...)``.
    """
    # Imported here so that only the tests that use it load Faiss.
    import embedding_store_builder

    with embedding_store_builder.one_thread():
        yield
