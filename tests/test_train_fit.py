"""citeval.train.fit: training an encoder on triplets, its input read from disk, its
checkpoints and resumption, and reloading the trained model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import torch
from interruption import Killed, die_at
from rerank_builder import write_papers

from citeval.config import schema_default
from citeval.errors import CitevalError, ConfigError, InputDataError
from citeval.io import file_fingerprint
from citeval.models import ModelSpec, load_encoder
from citeval.train.fit import FitSettings, build_model, mean_triplet_loss, train_encoder
from citeval.train.inputs import open_triplet_texts, write_triplet_texts

# DuckDB's budget for joining the triplets with their texts.
MEMORY = "1GB"


def fit_settings(**values) -> FitSettings:
    """The schema's defaults (seed 13) but for ``values``."""
    names = (
        "epochs", "batch_size", "gradient_accumulation", "learning_rate",
        "weight_decay", "warmup_steps", "margin", "max_steps", "eval_steps",
    )  # fmt: skip
    defaults = {name: schema_default(f"train.fit.{name}") for name in names}
    return FitSettings(**{**defaults, "seed": 13, "validation_fraction": VALID_FRACTION, **values})


# Eight of the 24 anchors are held out for the validation curve (enough for its paired
# test to be significant); 16 triplets train.
VALID_FRACTION = 1 / 3


# Negatives repeat their anchor's words and positives do not, so an untrained model ranks
# them the wrong way (the validation curve has room to rise); positives are "cited" and
# negatives "uncited", which training learns.
TOPICS = [
    "protein cell gene",
    "neural network learning",
    "climate water soil",
    "market economic policy",
]


def triplet_inputs(tmp_path: Path) -> tuple[Path, Path]:
    texts, rows = {}, []
    for t, topic in enumerate(TOPICS):
        for i in range(6):
            texts[f"q{t}{i}"] = (topic, f"{topic} study {i}")
            texts[f"p{t}{i}"] = (topic, "a cited result")
            texts[f"n{t}{i}"] = (topic, f"{topic} study {i} uncited")
            rows.append((f"q{t}{i}", f"p{t}{i}", f"n{t}{i}", "easy"))
    papers = write_papers(tmp_path / "papers", texts)
    query, positive, negative, kind = zip(*rows, strict=True)
    path = tmp_path / "triplets.parquet"
    pq.write_table(
        pa.table({"query_id": list(query), "positive_id": list(positive),
                  "negative_id": list(negative), "negative_kind": list(kind)}),
        path,
    )  # fmt: skip
    return path, papers


def triplet_texts(
    triplets: Path, papers: Path, sep: str, work: Path, anchors: Path | None = None
) -> dict[str, list[str]]:
    """The triplets' texts as training reads them: ``{"anchor": [...], ...}``."""
    path = work / "texts.arrow"
    write_triplet_texts(triplets, papers, sep, path, memory_limit=MEMORY, anchor_papers=anchors)
    return open_triplet_texts(path).to_dict()


def tiny_spec(tiny_bert_dir: Path) -> ModelSpec:
    return ModelSpec(
        name="tiny", path=str(tiny_bert_dir), pooling="cls", similarity="l2", max_length=32
    )


def test_training_lowers_the_triplet_loss_and_reloads_through_the_registry(
    tmp_path: Path, tiny_bert_dir: Path
) -> None:
    from sentence_transformers.sentence_transformer.losses import TripletLoss

    from citeval.train.fit import triplet_distance

    triplets, papers = triplet_inputs(tmp_path)
    spec = tiny_spec(tiny_bert_dir)
    settings = fit_settings(
        epochs=8, batch_size=4, gradient_accumulation=1, learning_rate=5e-3, seed=2
    )

    def loss_of(model) -> float:
        texts = triplet_texts(triplets, papers, model.tokenizer.sep_token, tmp_path)
        loss = TripletLoss(model, distance_metric=triplet_distance("l2"), triplet_margin=1.0)
        return mean_triplet_loss(model, loss, texts, batch_size=8)

    before = loss_of(build_model(spec, "cpu"))
    model_dir = train_encoder(
        triplets, papers, spec, settings, tmp_path / "out", device="cpu", memory_limit=MEMORY
    )
    trained = build_model(
        ModelSpec(
            name="trained", path=str(model_dir), pooling="cls", similarity="l2", max_length=32
        ),
        "cpu",
    )
    after = loss_of(trained)
    assert after < 0.5 * before, (before, after)

    training = json.loads((model_dir / "training.json").read_text())
    assert training["num_triplets"] == 16 and training["steps"] == 32
    # The held-out anchors rank their positives higher at the kept (last) step than at
    # step 0; eight queries are too few for that to be significant, which the card says.
    validation = training["validation"]
    assert validation["kept_step"] == 32 and validation["kept_map"] > validation["start_map"]
    assert validation["curve"][0]["step"] == 0 and validation["queries"] == 8
    assert len(validation["curve"][0]["average_precisions"]) == 8
    assert validation["p_value"] > 0.05 and not validation["learned"]
    assert "not significantly better" in (model_dir / "README.md").read_text()
    assert training["loss_history"] and not (tmp_path / "out" / "checkpoints").exists()

    # The registry loads the saved folder (citeval.models.Encoder) and embeds as the
    # trained model did before it was saved.
    titles = ["protein cell gene", "market economic policy"]
    abstracts = ["we report protein results", "a study of markets"]
    encoder = load_encoder(
        ModelSpec(name="trained", path=str(model_dir), pooling="cls", max_length=32),
        device="cpu",
    )
    from citeval.models import build_text

    texts = [
        build_text(t, a, trained.tokenizer.sep_token)
        for t, a in zip(titles, abstracts, strict=True)
    ]
    expected = trained.encode(texts, convert_to_numpy=True)
    got = encoder.encode(titles, abstracts).vectors
    assert np.allclose(got, expected, atol=1e-5)

    # A finished run is never redone; what a job that died before cleaning up left behind
    # (the texts file, checkpoints) is removed.
    stamp = (model_dir / "training.json").stat().st_mtime_ns
    leftovers = [tmp_path / "out" / "triplet_texts.arrow", tmp_path / "out" / "checkpoints"]
    leftovers[0].write_bytes(b"texts")
    (leftovers[1] / "checkpoint-3").mkdir(parents=True)
    train_encoder(
        triplets, papers, spec, settings, tmp_path / "out", device="cpu", memory_limit=MEMORY
    )
    assert (model_dir / "training.json").stat().st_mtime_ns == stamp
    assert not any(path.exists() for path in leftovers)


def test_training_is_byte_identical_for_a_seed(tmp_path: Path, tiny_bert_dir: Path) -> None:
    triplets, papers = triplet_inputs(tmp_path)
    spec = tiny_spec(tiny_bert_dir)
    settings = fit_settings(
        epochs=1, batch_size=4, gradient_accumulation=1, learning_rate=1e-3, seed=4
    )
    one = train_encoder(
        triplets, papers, spec, settings, tmp_path / "one", device="cpu", memory_limit=MEMORY
    )
    two = train_encoder(
        triplets, papers, spec, settings, tmp_path / "two", device="cpu", memory_limit=MEMORY
    )
    assert (one / "model.safetensors").read_bytes() == (two / "model.safetensors").read_bytes()


def test_training_refuses_aspire_pooling(tmp_path: Path, tiny_bert_dir: Path) -> None:
    spec = ModelSpec(name="a", path=str(tiny_bert_dir), pooling="aspire")
    with pytest.raises(ConfigError, match="cls or mean"):
        build_model(spec, "cpu")


def test_fit_reports_a_paper_missing_from_the_corpus(tmp_path: Path, tiny_bert_dir: Path) -> None:
    triplets, _ = triplet_inputs(tmp_path)
    papers = write_papers(tmp_path / "few", {"q00": ("t", "a")})
    with pytest.raises(InputDataError, match=r"triplets.parquet:2 \(field 'query_id'\)"):
        train_encoder(
            triplets,
            papers,
            tiny_spec(tiny_bert_dir),
            fit_settings(),
            tmp_path / "out",
            device="cpu",
            memory_limit=MEMORY,
        )


def test_fit_max_steps_is_minus_one_or_a_step_count() -> None:
    assert fit_settings(max_steps=-1).max_steps == -1  # the epochs decide
    assert fit_settings(max_steps=3).max_steps == 3
    with pytest.raises(ConfigError, match="max_steps must be -1"):
        fit_settings(max_steps=0)


def test_in_batch_training_reads_anchors_from_their_own_papers(
    tmp_path: Path, tiny_bert_dir: Path
) -> None:
    """The local prefetcher: anchors are contexts (their own papers folder), in-batch loss;
    training ranks each anchor's positive above the other positives better than before."""
    import shutil

    triplets, papers = triplet_inputs(tmp_path)
    # Move the anchors into their own folder, as the local task's query_papers are.
    table = pq.read_table(next(papers.glob("*.parquet")))
    anchors = table.filter(pc.starts_with(table.column("paper_id"), "q"))
    others = table.filter(pc.invert(pc.starts_with(table.column("paper_id"), "q")))
    shutil.rmtree(papers)
    papers.mkdir()
    pq.write_table(others, papers / "part-00000.parquet")
    (tmp_path / "anchors").mkdir()
    pq.write_table(anchors, tmp_path / "anchors" / "part-00000.parquet")
    spec = ModelSpec(
        name="tiny", path=str(tiny_bert_dir), pooling="mean", similarity="cosine", max_length=32
    )
    settings = fit_settings(
        epochs=6, batch_size=4, gradient_accumulation=1, learning_rate=5e-3, seed=2
    )

    def margin(model) -> float:
        """Mean cosine of anchor and positive minus that of anchor and negative."""
        texts = triplet_texts(
            triplets, papers, model.tokenizer.sep_token, tmp_path, anchors=tmp_path / "anchors"
        )
        a, p, n = (
            model.encode(texts[role], normalize_embeddings=True)
            for role in ("anchor", "positive", "negative")
        )
        return float(np.mean(np.sum(a * p, axis=1) - np.sum(a * n, axis=1)))

    with pytest.raises(InputDataError, match="not in the papers corpus"):
        train_encoder(
            triplets, papers, spec, settings, tmp_path / "bad", device="cpu", memory_limit=MEMORY
        )
    before = margin(build_model(spec, "cpu"))
    model_dir = train_encoder(
        triplets,
        papers,
        spec,
        settings,
        tmp_path / "out",
        device="cpu",
        memory_limit=MEMORY,
        loss_name="in_batch",
        anchor_papers=tmp_path / "anchors",
    )
    training = json.loads((model_dir / "training.json").read_text())
    assert training["loss"] == "in_batch"
    trained = build_model(
        ModelSpec(
            name="t", path=str(model_dir), pooling="mean", similarity="cosine", max_length=32
        ),
        "cpu",
    )
    assert margin(trained) > before + 0.1, before


def test_a_split_of_the_effective_batch_trains_as_the_whole_batch(
    tmp_path: Path, tiny_bert_dir: Path
) -> None:
    # Without dropout, micro-batches only change float sums: the triplet loss is a mean
    # over the effective batch, which the optimizer sees whatever the split. (Weights are
    # not compared one by one: Adam scales the float noise of near-zero gradients up to
    # full-size steps.) Halving the effective batch instead is a real change.
    model_dir = tmp_path / "no-dropout"
    shutil.copytree(tiny_bert_dir, model_dir)
    config = json.loads((model_dir / "config.json").read_text())
    config.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    (model_dir / "config.json").write_text(json.dumps(config))
    triplets, papers = triplet_inputs(tmp_path)
    titles = [topic for topic in TOPICS]
    abstracts = [f"we report {topic} results" for topic in TOPICS]

    def vectors(micro_batch: int, accumulation: int) -> np.ndarray:
        settings = fit_settings(
            epochs=2,
            batch_size=micro_batch,
            gradient_accumulation=accumulation,
            learning_rate=1e-3,
            seed=4,
        )
        out = train_encoder(
            triplets, papers, tiny_spec(model_dir), settings,
            tmp_path / f"{micro_batch}x{accumulation}", device="cpu", memory_limit=MEMORY,
        )  # fmt: skip
        spec = ModelSpec(name="t", path=str(out), pooling="cls", max_length=32)
        return load_encoder(spec, device="cpu").encode(titles, abstracts).vectors

    whole = vectors(8, 1)
    split = max(np.abs(vectors(micro, 8 // micro) - whole).max() for micro in (4, 2))
    halved = np.abs(vectors(4, 1) - whole).max()
    assert split < 1e-2 and split < halved / 20, (split, halved)


def test_on_cuda_the_effective_batch_is_split_into_the_largest_micro_batch_that_fits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from citeval import training

    made = []

    def make_trainer(micro_batch: int, accumulation: int) -> tuple[int, int]:
        made.append((micro_batch, accumulation))
        return (micro_batch, accumulation)

    monkeypatch.setattr(training, "_fits", lambda trainer, micro_batch, device: micro_batch <= 3)
    cuda = torch.device("cuda")
    trainer, batch = training.fitted_trainer(make_trainer, (4, 2), device=cuda, refit=True)
    # Divisors of 8 from the top: 8 and 4 do not fit, 2 does (2 x 4 = 8 again).
    assert batch == trainer == (2, 4) and made == [(8, 1), (4, 2), (2, 4)]
    # In-batch negatives, and the CPU, keep the configured split.
    assert training.fitted_trainer(make_trainer, (4, 2), device=cuda, refit=False)[1] == (4, 2)
    cpu = torch.device("cpu")
    assert training.fitted_trainer(make_trainer, (4, 2), device=cpu, refit=True)[1] == (4, 2)


def test_loader_workers_only_on_cuda_and_never_with_a_forced_parallel_tokenizer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from citeval import training

    monkeypatch.delenv("TOKENIZERS_PARALLELISM", raising=False)
    assert training._loader_workers(on_cuda=False) == 0
    assert training._loader_workers(on_cuda=True) == training.CUDA_LOADER_WORKERS
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "true")
    assert training._loader_workers(on_cuda=True) == 0


# --- input from disk, checkpoints and resumption -----------------------------------------


def test_texts_on_disk_give_the_batches_of_texts_in_memory(
    tmp_path: Path, tiny_bert_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The texts file, written in chunks, holds each triplet's texts in the triplets' order,
    and the trainer draws from it the batches it draws from the same texts in memory."""
    from datasets import Dataset
    from sentence_transformers import SentenceTransformerTrainer
    from sentence_transformers import SentenceTransformerTrainingArguments as Arguments
    from sentence_transformers.sentence_transformer.losses import TripletLoss

    from citeval.models import build_text
    from citeval.train import inputs

    triplets, papers = triplet_inputs(tmp_path)
    model = build_model(tiny_spec(tiny_bert_dir), "cpu")
    sep = model.tokenizer.sep_token
    corpus = {row["paper_id"]: row for row in pq.read_table(papers).to_pylist()}
    ids = pq.read_table(triplets).to_pydict()
    in_memory = {
        role: [build_text(corpus[i]["title"], corpus[i]["abstract"], sep) for i in ids[column]]
        for role, column in inputs.ROLES.items()
    }
    monkeypatch.setattr(inputs, "ROWS_PER_CHUNK", 5)
    path = tmp_path / "texts.arrow"
    assert write_triplet_texts(triplets, papers, sep, path, memory_limit=MEMORY) == 24
    with pa.memory_map(str(path)) as source:
        assert sum(1 for _ in pa.ipc.open_stream(source)) == 5  # chunks of 5 and one of 4
    on_disk = open_triplet_texts(path)
    assert on_disk.to_dict() == in_memory

    def batches(dataset: Dataset) -> list[dict[str, list]]:
        arguments = Arguments(
            output_dir=str(tmp_path / "loop"), per_device_train_batch_size=4, seed=3,
            data_seed=3, use_cpu=True, report_to="none",
        )  # fmt: skip
        trainer = SentenceTransformerTrainer(
            model=model, args=arguments, train_dataset=dataset, loss=TripletLoss(model)
        )
        return [
            {
                key: getattr(value, "tolist", lambda value=value: value)()
                for key, value in batch.items()
            }
            for batch in trainer.get_train_dataloader()
        ]

    drawn = batches(on_disk)
    assert len(drawn) == 6 and drawn == batches(Dataset.from_dict(in_memory))
    assert {"anchor_input_ids", "positive_input_ids", "negative_input_ids"} <= set(drawn[0])

    # A resumed run reuses the file only while it holds these triplets' texts.
    assert inputs.is_current(path, file_fingerprint(triplets))
    table = pq.read_table(triplets)
    pq.write_table(table.take(list(range(23, -1, -1))), triplets)
    assert not inputs.is_current(path, file_fingerprint(triplets))


def test_inputs_without_a_needed_column_are_reported(tmp_path: Path) -> None:
    triplets, papers = triplet_inputs(tmp_path)
    part = next(papers.glob("*.parquet"))
    pq.write_table(pq.read_table(part).drop_columns(["abstract"]), part)
    with pytest.raises(InputDataError, match=r"no column\(s\) \['abstract'\]"):
        write_triplet_texts(triplets, papers, "[SEP]", tmp_path / "t.arrow", memory_limit=MEMORY)
    pq.write_table(pq.read_table(triplets).drop_columns(["negative_id"]), triplets)
    with pytest.raises(InputDataError, match=r"triplets.parquet.*no column\(s\) \['negative_id'\]"):
        write_triplet_texts(triplets, papers, "[SEP]", tmp_path / "t.arrow", memory_limit=MEMORY)


def test_duplicate_papers_are_reported_not_trained_on_twice(
    tmp_path: Path, tiny_bert_dir: Path
) -> None:
    triplets, papers = triplet_inputs(tmp_path)
    part = next(papers.glob("*.parquet"))
    table = pq.read_table(part)
    pq.write_table(table.slice(0, 1), papers / "part-00001.parquet")
    with pytest.raises(InputDataError, match="more than once"):
        write_triplet_texts(triplets, papers, "[SEP]", tmp_path / "t.arrow", memory_limit=MEMORY)
    assert not (tmp_path / "t.arrow").exists()


def test_a_killed_run_resumes_without_rereading_the_triplets_it_trained_on(
    tmp_path: Path, tiny_bert_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """16 triplets in batches of 4, 2 epochs: 8 steps, a checkpoint every 3. Killed at step
    5, the run resumes from checkpoint-3: it reads only the rows of steps 4 to 8 (in the
    uninterrupted run's order) and ends with the uninterrupted run's model."""
    from datasets import Dataset

    triplets, papers = triplet_inputs(tmp_path)
    spec = tiny_spec(tiny_bert_dir)
    settings = fit_settings(
        epochs=2, batch_size=4, gradient_accumulation=1, learning_rate=1e-3, seed=4,
        eval_steps=3,
    )  # fmt: skip
    reads: list[list[int]] = []
    read_rows = Dataset.__getitems__

    def recording(self, keys):
        reads.append(list(keys))
        return read_rows(self, keys)

    monkeypatch.setattr(Dataset, "__getitems__", recording)

    def fit(out: str, fit_settings: FitSettings = settings, **options):
        return train_encoder(
            triplets, papers, spec, fit_settings, tmp_path / out, device="cpu",
            memory_limit=MEMORY, logging_steps=1, **options,
        )  # fmt: skip

    whole = fit("whole")
    whole_reads, reads[:] = list(reads), []
    assert len(whole_reads) == 8 and sorted(
        row for rows in whole_reads[:4] for row in rows
    ) == list(range(16))

    with pytest.raises(Killed):
        fit("cut", on_step=die_at(5))
    checkpoints = tmp_path / "cut" / "checkpoints"
    assert "checkpoint-3" in {p.name for p in checkpoints.iterdir()}
    with pytest.raises(CitevalError, match="other settings or data"):
        fit("cut", fit_settings(epochs=2, batch_size=4, gradient_accumulation=1,
                                learning_rate=2e-3, seed=4, eval_steps=3))  # fmt: skip
    reads[:] = []
    done: list[int] = []
    resumed = fit("cut", on_step=done.append)
    assert done == [4, 5, 6, 7, 8]
    assert reads == whole_reads[3:]
    record = json.loads((resumed / "training.json").read_text())
    assert record["resumed_from"] == str(checkpoints / "checkpoint-3") and record["steps"] == 8
    assert (resumed / "model.safetensors").read_bytes() == (
        whole / "model.safetensors"
    ).read_bytes()
    assert sorted(p.name for p in (tmp_path / "cut").iterdir()) == ["model"]


def test_the_last_steps_checkpoint_is_the_model(
    tmp_path: Path, tiny_bert_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job that died after its last checkpoint, before the model folder was renamed, takes
    the model from that checkpoint without a step more."""
    from citeval.train import fit as fit_module

    triplets, papers = triplet_inputs(tmp_path)
    spec = tiny_spec(tiny_bert_dir)
    settings = fit_settings(
        max_steps=4, batch_size=4, gradient_accumulation=1, seed=4, eval_steps=2
    )

    def fit(out: str, **options):
        return train_encoder(
            triplets, papers, spec, settings, tmp_path / out, device="cpu",
            memory_limit=MEMORY, **options,
        )  # fmt: skip

    whole = fit("whole")
    with monkeypatch.context() as patch:
        patch.setattr(fit_module, "atomic_path", _raise_killed)
        with pytest.raises(Killed):
            fit("cut")
    assert (tmp_path / "cut" / "checkpoints" / "checkpoint-4").is_dir()
    done: list[int] = []
    model = fit("cut", on_step=done.append)
    assert done == []
    assert json.loads((model / "training.json").read_text())["resumed_from"].endswith(
        "checkpoint-4"
    )
    assert (model / "model.safetensors").read_bytes() == (whole / "model.safetensors").read_bytes()


def _raise_killed(path):
    raise Killed
