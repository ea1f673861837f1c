"""Training the cross-encoder: pairs, learning, determinism, resumption, bad input."""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest
from interruption import Killed, die_at
from rerank_builder import cpu_reranker, write_papers, write_qrels, write_ranked_run

from citeval import stages
from citeval.config import load_config_file
from citeval.errors import CitevalError, InputDataError
from citeval.rerank.cli import build_parser, main
from citeval.rerank.model import Reranker
from citeval.rerank.train import (
    CHECKPOINT_DIR,
    FINAL_DIR,
    TRAINING_JSON,
    Pair,
    TrainSettings,
    build_pairs,
    load_training_data,
    total_steps,
    train,
)
from citeval.training import TRAINER_STATE

ROOT = Path(__file__).resolve().parents[1]

# A separable toy task: cited candidates are about citations, the others about physics.
QUERIES = {f"q{i}": (f"query {i} paper", "we study a new method") for i in range(12)}
# Each paper has words of its own, so that an untrained head does not rank all of one
# kind alike (the validation curve must have room to rise).
WORDS = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta", "zeta", "rho",
         "tau", "phi"]  # fmt: skip
POSITIVES = {
    f"p{i}": (f"citation recommendation {WORDS[i]}", "citation retrieval of papers")
    for i in range(6)
}
NEGATIVES = {
    f"n{i}": (f"quantum matter {WORDS[i]}", "energy of quantum physics theory") for i in range(12)
}
TEXTS = {**QUERIES, **POSITIVES, **NEGATIVES}


def _run_and_qrels() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    run, qrels = {}, {}
    for i in range(12):
        positives = [f"p{i % 6}", f"p{(i + 1) % 6}"]
        negatives = [f"n{(i + j) % 12}" for j in range(6)]
        run[f"q{i}"] = [negatives[0], positives[0], *negatives[1:4], positives[1], *negatives[4:]]
        qrels[f"q{i}"] = positives
    return run, qrels


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path, Path]:
    run, qrels = _run_and_qrels()
    return (
        write_ranked_run(tmp_path / "train.trec", run),
        write_qrels(tmp_path / "train.qrels", qrels),
        write_papers(tmp_path / "papers", TEXTS),
    )


def _settings(tiny_bert_dir: Path, **changes) -> TrainSettings:
    values = dict(
        base_model=str(tiny_bert_dir),
        base_layers=None,
        head="cls",
        loss="pointwise",
        top=10,
        learning_rate=2e-3,
        weight_decay=0.01,
        warmup_steps=2,
        batch_size=16,
        epochs=1,
        max_steps=-1,
        seed=13,
        query_tokens=12,
        candidate_tokens=12,
        dropout=0.1,
        validation_fraction=VALID_FRACTION,
        eval_steps=2,
    )
    return TrainSettings(**{**values, **changes})


# Six of the twelve queries are held out for the validation curve (enough for its paired
# test to be significant); six train (48 pairs).
VALID_FRACTION = 0.5


def _load(run: Path, qrels: Path, papers: Path, **options) -> tuple[list, list, dict]:
    return load_training_data(
        [run], [qrels], papers, validation_fraction=VALID_FRACTION, seed=13, **options
    )


def _weights(model_dir: Path) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    return load_file(str(model_dir / "model.safetensors"))


def test_pairs_are_the_top_of_each_run_labelled_by_qrels_each_once(tmp_path: Path) -> None:
    run_a = {"q1": [("d1", 3.0), ("d2", 2.0), ("d3", 1.0)], "q2": [("d4", 1.0)]}
    run_b = {"q1": [("d2", 5.0), ("d5", 4.0)]}
    qrels_a = {"q1": {"d2": 1, "d3": 1}}
    qrels_b = {"q1": {"d5": 0}}
    pairs = build_pairs([("a", run_a), ("b", run_b)], [qrels_a, qrels_b], top=2)
    assert pairs == [
        Pair("q1", "d1", 0),
        Pair("q1", "d2", 1),  # in both runs, taken once; positive by run a's qrels
        Pair("q1", "d5", 0),  # rel 0 is not cited
        Pair("q2", "d4", 0),
    ]


def test_training_learns_a_separable_toy_task(
    tiny_bert_dir: Path, inputs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    run, qrels, papers = inputs
    pairs, valid, texts = _load(run, qrels, papers, top=10)
    assert len(pairs) == 48 and sum(p.label for p in pairs) == 12  # not rebalanced
    settings = _settings(tiny_bert_dir, learning_rate=5e-3, epochs=12, eval_steps=100)
    record = train(pairs, valid, texts, settings, tmp_path / "out", device="cpu", logging_steps=3)
    losses = [row["loss"] for row in record["losses"]]
    assert record["steps"] == 36 and len(losses) == 12
    assert losses[-1] < 0.5 * losses[0]

    def accuracy(reranker: Reranker) -> float:
        scores = reranker.score(
            [reranker.text(*texts[p.query_id]) for p in pairs],
            [reranker.text(*texts[p.candidate_id]) for p in pairs],
        )
        return float(np.mean((scores > 0.5) == np.array([p.label for p in pairs], bool)))

    import torch

    torch.manual_seed(settings.seed)
    before = accuracy(cpu_reranker(tiny_bert_dir, 12))
    after = accuracy(cpu_reranker(tmp_path / "out" / FINAL_DIR, 12))
    assert after == 1.0 and after > before
    # The held-out queries rank their cited papers first once trained, not at step 0.
    validation = record["validation"]
    assert [p["step"] for p in validation["curve"]] == [0, 36]
    assert validation["learned"] and validation["kept_step"] == 36
    assert validation["kept_map"] == 1.0 > validation["start_map"]
    card = (tmp_path / "out" / FINAL_DIR / "README.md").read_text()
    assert "This reranker learned" in card
    saved = json.loads((tmp_path / "out" / FINAL_DIR / TRAINING_JSON).read_text())
    assert saved["pairs"] == 48 and saved["positives"] == 12 and saved["steps"] == 36
    assert saved["settings"]["learning_rate"] == 5e-3 and saved["seconds"] > 0


def test_a_run_that_cannot_learn_is_flagged_and_keeps_its_start(
    tiny_bert_dir: Path, inputs: tuple[Path, Path, Path], tmp_path: Path, caplog
) -> None:
    """Learning rate 0: the curve is flat, so the model is step 0's (the base with its
    seeded head) and the log, the model card and training.json say it did not learn."""
    run, qrels, papers = inputs
    pairs, valid, texts = _load(run, qrels, papers, top=10)
    settings = _settings(tiny_bert_dir, learning_rate=0.0, max_steps=4)
    with caplog.at_level(logging.WARNING):
        record = train(pairs, valid, texts, settings, tmp_path / "out", device="cpu")
    validation = record["validation"]
    assert [p["step"] for p in validation["curve"]] == [0, 2, 4]
    assert len({p["map"] for p in validation["curve"]}) == 1
    assert not validation["learned"] and validation["kept_step"] == 0
    assert "did NOT learn" in caplog.text
    assert "did NOT learn" in (tmp_path / "out" / FINAL_DIR / "README.md").read_text()
    start = cpu_reranker(tmp_path / "out" / FINAL_DIR, 12)
    import torch

    torch.manual_seed(settings.seed)
    base = cpu_reranker(tiny_bert_dir, 12)
    queries = [base.text(*texts[p.query_id]) for p in valid]
    candidates = [base.text(*texts[p.candidate_id]) for p in valid]
    np.testing.assert_array_equal(start.score(queries, candidates), base.score(queries, candidates))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_same_seed_same_model_bytes_and_a_finished_run_is_not_redone(
    tiny_bert_dir: Path, inputs: tuple[Path, Path, Path], tmp_path: Path, caplog
) -> None:
    run, qrels, papers = inputs
    pairs, valid, texts = _load(run, qrels, papers, top=10)
    settings = _settings(tiny_bert_dir, max_steps=3)
    for name in ("a", "b"):
        train(pairs, valid, texts, settings, tmp_path / name, device="cpu")
    first, second = (tmp_path / name / FINAL_DIR / "model.safetensors" for name in ("a", "b"))
    assert _sha256(first) == _sha256(second)
    other = train(
        pairs,
        valid,
        texts,
        _settings(tiny_bert_dir, max_steps=3, seed=99),
        tmp_path / "c",
        device="cpu",
    )
    assert not np.array_equal(
        _weights(tmp_path / "c" / FINAL_DIR)["classifier.weight"],
        _weights(tmp_path / "a" / FINAL_DIR)["classifier.weight"],
    )
    assert other["steps"] == 3
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == [FINAL_DIR]  # no checkpoints

    stamp = (tmp_path / "a" / FINAL_DIR / TRAINING_JSON).stat().st_mtime_ns
    # Checkpoints a job that died before deleting them left behind are removed.
    (tmp_path / "a" / "checkpoints" / "checkpoint-2").mkdir(parents=True)
    with caplog.at_level(logging.INFO):
        assert train(pairs, valid, texts, settings, tmp_path / "a", device="cpu") == {}
        argv = ["train", "--run", str(run), "--qrels", str(qrels), "--papers", str(papers),
                "--base-model", str(tiny_bert_dir), "--seed", "13",
                "--output-dir", str(tmp_path / "a")]  # fmt: skip
        assert main(argv) == 0
    assert "nothing to do" in caplog.text
    assert (tmp_path / "a" / FINAL_DIR / TRAINING_JSON).stat().st_mtime_ns == stamp
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == [FINAL_DIR]


def test_a_killed_run_resumes_from_its_checkpoint_to_the_same_model(
    tiny_bert_dir: Path, inputs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    """48 pairs in batches of 16: 3 steps per epoch, so the cut falls in the second epoch
    and the resumed run must replay the second epoch's order, dropout and optimizer state."""
    run, qrels, papers = inputs
    pairs, valid, texts = _load(run, qrels, papers, top=10)
    settings = _settings(tiny_bert_dir, epochs=3)
    options = dict(device="cpu", logging_steps=1)
    whole = train(pairs, valid, texts, settings, tmp_path / "whole", **options)
    assert whole["steps"] == 9 and whole["resumed_from"] is None

    out = tmp_path / "cut"
    with pytest.raises(Killed):
        train(pairs, valid, texts, settings, out, on_step=die_at(5), **options)
    checkpoints = out / CHECKPOINT_DIR
    assert not (out / FINAL_DIR).exists()
    # The latest checkpoint, and the best one kept beside it for the validation curve.
    assert "checkpoint-4" in {p.name for p in checkpoints.iterdir()}
    done: list[int] = []
    resumed = train(pairs, valid, texts, settings, out, on_step=done.append, **options)
    assert done == [5, 6, 7, 8, 9]  # the steps after the checkpoint, not a fresh start
    assert resumed["resumed_from"] == str(checkpoints / "checkpoint-4")
    assert resumed["steps"] == 9
    assert [row["step"] for row in resumed["losses"]] == list(range(1, 10))
    assert resumed["losses"] == whole["losses"]
    assert _sha256(out / FINAL_DIR / "model.safetensors") == _sha256(
        tmp_path / "whole" / FINAL_DIR / "model.safetensors"
    )
    assert sorted(p.name for p in out.iterdir()) == [FINAL_DIR]  # checkpoints cleared


def test_a_half_written_checkpoint_is_dropped_and_other_settings_are_refused(
    tiny_bert_dir: Path, inputs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    run, qrels, papers = inputs
    pairs, valid, texts = _load(run, qrels, papers, top=10)
    settings = _settings(tiny_bert_dir, max_steps=4)
    options = dict(device="cpu", logging_steps=1)
    whole = train(pairs, valid, texts, settings, tmp_path / "whole", **options)
    # A run kept to its end keeps its checkpoints: removing the model "un-finishes" it.
    out = tmp_path / "kept"
    train(pairs, valid, texts, settings, out, keep_checkpoints=True, **options)
    checkpoints = out / CHECKPOINT_DIR
    assert (checkpoints / "checkpoint-4" / TRAINER_STATE).is_file()
    shutil.rmtree(out / FINAL_DIR)
    done: list[int] = []
    again = train(
        pairs, valid, texts, settings, out, keep_checkpoints=True, on_step=done.append, **options
    )
    assert done == []  # the last step's checkpoint is the model: no step more
    assert again["resumed_from"] == str(checkpoints / "checkpoint-4")
    assert again["losses"] == whole["losses"]
    assert _sha256(out / FINAL_DIR / "model.safetensors") == _sha256(
        tmp_path / "whole" / FINAL_DIR / "model.safetensors"
    )
    shutil.rmtree(out / FINAL_DIR)
    shutil.rmtree(checkpoints / "checkpoint-4")
    with pytest.raises(Killed):  # keep checkpoint-2 and leave a checkpoint-3 cut short
        train(
            pairs, valid, texts, settings, out, keep_checkpoints=True, on_step=die_at(3), **options
        )
    (checkpoints / "checkpoint-3").mkdir()
    (checkpoints / "checkpoint-3" / "model.safetensors").write_bytes(b"half")

    with pytest.raises(CitevalError, match="other settings or data"):
        train(pairs, valid, texts, _settings(tiny_bert_dir, max_steps=4, seed=5), out, **options)
    assert not (checkpoints / "checkpoint-3").exists()  # incomplete: removed
    done.clear()
    resumed = train(pairs, valid, texts, settings, out, on_step=done.append, **options)
    assert done == [3, 4]
    assert resumed["resumed_from"] == str(checkpoints / "checkpoint-2")
    assert resumed["losses"] == whole["losses"]
    assert _sha256(out / FINAL_DIR / "model.safetensors") == _sha256(
        tmp_path / "whole" / FINAL_DIR / "model.safetensors"
    )
    assert not checkpoints.exists()


def test_a_run_naming_a_paper_outside_the_corpus_is_located(
    inputs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    run, qrels, papers = inputs
    lines = run.read_text().splitlines(keepends=True)
    lines[3] = lines[3].replace(lines[3].split()[2], "ghost")
    run.write_text("".join(lines))
    with pytest.raises(InputDataError) as error:
        _load(run, qrels, papers, top=10)
    assert error.value.path == str(run) and error.value.line == 4
    assert error.value.field == "docid" and "'ghost'" in str(error.value)


def test_no_positive_pairs_and_empty_runs_are_refused(
    inputs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    run, _, papers = inputs
    no_hits = write_qrels(tmp_path / "none.qrels", {"q0": ["n11-not-retrieved"]})
    with pytest.raises(InputDataError, match="no positive pair"):
        _load(run, no_hits, papers, top=10)
    empty = tmp_path / "empty.trec"
    empty.write_text("")
    with pytest.raises(InputDataError, match="the run has no queries") as error:
        _load(empty, no_hits, papers, top=10)
    assert error.value.path == str(empty)


def test_base_layers_keeps_the_first_layers_and_the_model_reloads_with_them(
    tiny_bert_dir: Path, inputs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    import json

    run, qrels, papers = inputs
    pairs, valid, texts = _load(run, qrels, papers, top=10)
    settings = _settings(tiny_bert_dir, max_steps=2, base_layers=1)
    train(pairs, valid, texts, settings, tmp_path / "one", device="cpu")
    model_dir = tmp_path / "one" / FINAL_DIR
    config = json.loads((model_dir / "config.json").read_text())
    assert config["num_hidden_layers"] == 1
    base = json.loads((tiny_bert_dir / "config.json").read_text())
    assert base["num_hidden_layers"] == 2
    weights = _weights(model_dir)
    assert any(".layer.0." in key for key in weights)
    assert not any(".layer.1." in key for key in weights)
    reranker = cpu_reranker(str(model_dir), 12)
    assert reranker.model.model.config.num_hidden_layers == 1


def test_max_steps_minus_one_lets_the_epochs_decide(tiny_bert_dir: Path) -> None:
    assert total_steps(40, _settings(tiny_bert_dir, epochs=3)) == (3, 9)
    assert total_steps(40, _settings(tiny_bert_dir, epochs=3, max_steps=5)) == (3, 5)
    with pytest.raises(CitevalError, match="max_steps must be -1"):
        _settings(tiny_bert_dir, max_steps=0)


@pytest.mark.parametrize("config_file", ["config.yaml", "acm-cr.yaml"])
def test_the_commands_take_the_settings_the_pipeline_passes(config_file: str) -> None:
    config = load_config_file(ROOT / "config" / config_file)
    train_argv = ["train", "--run", "r.trec", "--qrels", "q.qrels", "--papers", "p",
                  "--output-dir", "out", "--threads", "2",
                  *stages.RERANK_TRAIN.argv(config)]  # fmt: skip
    args = build_parser().parse_args(train_argv)
    assert args.base_model == config.rerank.model
    assert args.base_layers == config.rerank.base_layers
    assert args.learning_rate == config.rerank.train.learning_rate
    assert args.max_steps == config.rerank.train.max_steps
    assert args.seed == config.seed
    rerank_argv = ["rerank", "--model", "m", "--papers", "p", "--run", "r.trec", "--ks", "5",
                   "--outputs", "a.trec", "--timing", "t.json", "--tag-prefix", "bm25>ce@",
                   "--threads", "2", *stages.RERANK.argv(config)]  # fmt: skip
    args = build_parser().parse_args(rerank_argv)
    assert (args.batch_size, args.device) == (config.rerank.batch_size, config.rerank.device)
    # Scoring takes the token budgets from the trained model's training.json.
    assert args.query_tokens is None and args.candidate_tokens is None


def test_contexts_as_queries_and_the_cited_papers_added(tmp_path: Path) -> None:
    """The local task: query texts from their own papers folder; ``add_cited`` pairs each
    query with its cited papers even when the first stage missed them (HAtten's scheme).
    The held-out query's pairs always have its cited papers (the validation ranks them)."""
    papers = write_papers(
        tmp_path / "papers",
        {"p1": ("cells", "about cells"), "p2": ("genes", "about genes"), "p3": ("x", "y")},
    )
    contexts = write_papers(
        tmp_path / "contexts",
        {"c:0": ("as shown by CIT", "a paper"), "c:1": ("CIT found", "a paper")},
    )
    run = tmp_path / "run.trec"
    run.write_text(
        "c:0 Q0 p1 1 2.0 bm25\nc:0 Q0 p2 2 1.0 bm25\nc:1 Q0 p1 1 2.0 bm25\nc:1 Q0 p2 2 1.0 bm25\n"
    )
    qrels = tmp_path / "qrels"
    qrels.write_text("c:0 0 p3 1\nc:1 0 p3 1\n")
    with pytest.raises(InputDataError, match="no positive pair"):
        _load(run, qrels, papers, top=2, query_papers=contexts)
    pairs, valid, texts = _load(run, qrels, papers, top=2, query_papers=contexts, add_cited=True)
    for part in (pairs, valid):
        assert len({p.query_id for p in part}) == 1
        assert [(p.candidate_id, p.label) for p in part] == [("p1", 0), ("p2", 0), ("p3", 1)]
    assert {p.query_id for p in [*pairs, *valid]} == {"c:0", "c:1"}
    assert texts["c:0"] == ("as shown by CIT", "a paper") and texts["p3"] == ("x", "y")
