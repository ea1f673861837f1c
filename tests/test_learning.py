"""Validation curves (citeval.curves), their table, figure and notes (citeval.learning),
and the reranker's mean-pooled-segments head (citeval.rerank.heads)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from citeval.config import load_config
from citeval.curves import LEARNED_MARGIN, Curve, read_curve, split_queries
from citeval.errors import ConfigError, InputDataError
from citeval.learning import not_learned, read_trained
from citeval.learning.cli import main as learning_main
from citeval.plan import Plan
from citeval.table_files import write_table

MAP, MRR = "validation_map", "validation_mrr@10"


# Twelve held-out queries whose average precisions move together with the MAP.
OFFSETS = [-0.06, -0.05, -0.04, -0.03, -0.02, -0.01, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06]


def _history(*maps: float, steps: tuple[int, ...] | None = None, noise: float = 0.0) -> list[dict]:
    """Trainer log entries; ``noise`` adds alternating per-query swings to each point."""
    steps = steps or tuple(range(0, 10 * len(maps), 10))
    history: list[dict] = []
    for point, (step, value) in enumerate(zip(steps, maps, strict=True)):
        if step:
            history.append({"step": step, "loss": 1.0 / step})
        swings = [noise * (-1) ** (i + point) for i in range(len(OFFSETS))]
        precisions = [value + o + n for o, n in zip(OFFSETS, swings, strict=True)]
        history.append(
            {"step": step, f"eval_{MAP}": value, f"eval_{MRR}": value}
            | {f"eval_validation_ap/{i}": ap for i, ap in enumerate(precisions)}
        )
    return history


def test_queries_are_split_by_seed_and_both_parts_are_kept_non_empty() -> None:
    ids = [f"q{i}" for i in range(20)]
    train, held = split_queries(reversed(ids), 0.2, seed=3)
    assert (train, held) == split_queries(ids, 0.2, seed=3)  # order of the input is moot
    assert len(held) == 4 and sorted(train + held) == sorted(ids) and not set(train) & set(held)
    assert split_queries(ids, 0.2, seed=4)[1] != held
    assert len(split_queries(["a", "b"], 0.01, seed=1)[1]) == 1  # at least one held out
    assert len(split_queries(["a", "b"], 0.99, seed=1)[0]) == 1  # at least one trains
    with pytest.raises(ConfigError, match="at least 2"):
        split_queries(["a"], 0.5, seed=1)
    with pytest.raises(ConfigError, match="between 0 and 1"):
        split_queries(ids, 1.0, seed=1)


def test_the_kept_point_is_the_best_step_0_included_and_learning_needs_a_margin() -> None:
    rising = Curve.from_log_history(_history(0.40, 0.50, 0.45), MAP, MRR, queries=12)
    assert rising.kept.step == 10 and rising.learned
    assert rising.points[1].loss == 0.1 and rising.start.loss is None
    assert "learned: validation MAP 40.0 at step 0, 50.0 at the kept step 10" in rising.verdict(
        "ce"
    )

    falling = Curve.from_log_history(_history(0.70, 0.60, 0.65), MAP, MRR, queries=12)
    assert falling.kept.step == 0 and not falling.learned
    assert "did NOT learn" in falling.verdict("ce") and "starting point" in falling.verdict("ce")

    within = 0.40 + LEARNED_MARGIN / 2
    flat = Curve.from_log_history(_history(0.40, within), MAP, MRR, queries=12)
    assert flat.kept.step == 10 and not flat.learned
    assert "within 1.0 of step 0" in flat.verdict("ce")

    # A gain that some queries make and others lose by as much is not learning.
    noisy = Curve.from_log_history(_history(0.40, 0.43, noise=0.3), MAP, MRR, queries=12)
    assert noisy.kept.step == 10 and noisy.p_value > 0.05 and not noisy.learned
    assert "not significantly better" in noisy.verdict("ce")
    assert rising.p_value < 0.01

    ties = Curve.from_log_history(_history(0.5, 0.6, 0.6), MAP, MRR, queries=12)
    assert ties.kept.step == 10  # the earliest of equal points
    back = read_curve(json.loads(json.dumps(ties.record())))
    assert (back.points, back.queries, back.kept) == (ties.points, ties.queries, ties.kept)
    with pytest.raises(ValueError, match="step-0"):
        Curve.from_log_history(_history(0.5, 0.6, steps=(10, 20)), MAP, MRR, queries=1)


def _training_json(folder: Path, *maps: float) -> Path:
    curve = Curve.from_log_history(_history(*maps), MAP, MRR, queries=9)
    folder.mkdir(parents=True)
    path = folder / "training.json"
    path.write_text(json.dumps({"validation": curve.record()}))
    return path


def test_the_learning_stage_tabulates_draws_and_flags(tmp_path: Path) -> None:
    good = _training_json(tmp_path / "good", 0.3, 0.5)
    bad = _training_json(tmp_path / "bad", 0.3, 0.3, 0.3)
    argv = ["--trained", "minilm_scincl", str(good), "--trained", "ce", str(bad),
            "--tables-dir", str(tmp_path / "tables"),
            "--plot", str(tmp_path / "curves.png")]  # fmt: skip
    assert learning_main(argv) == 0
    tsv = (tmp_path / "tables" / "learning.tsv").read_text().splitlines()
    assert tsv[1].split("\t") == ["minilm_scincl", "9", "30.0", "50.0", "10", "yes"]
    assert tsv[2].split("\t") == ["ce", "9", "30.0", "30.0", "0", "NO"]
    markdown = (tmp_path / "tables" / "learning.md").read_text()
    assert (
        "**Not learned.** ce did NOT learn" in markdown and "minilm_scincl did NOT" not in markdown
    )
    assert (tmp_path / "curves.png").read_bytes()[:4] == b"\x89PNG"
    assert not_learned([("ce", bad), ("minilm_scincl", good)]) == {
        "ce": read_trained("ce", bad).curve.verdict("ce")
    }

    # A record without a curve (trained before curves were kept) is named, with its field.
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "training.json").write_text(json.dumps({"losses": []}))
    with pytest.raises(InputDataError, match="no validation curve") as error:
        read_trained("old", tmp_path / "old" / "training.json")
    assert error.value.field == "validation"


def test_a_table_with_rows_of_a_model_that_did_not_learn_says_so(tmp_path: Path) -> None:
    flagged = {"ce": "ce did NOT learn: ...", "minilm_scincl": "minilm_scincl did NOT learn"}
    rows = [["bm25", 10.0], ["bm25>ce@10", 11.0]]
    write_table(tmp_path, "t", "T", ["model", "MAP"], rows, not_learned=flagged)
    markdown = (tmp_path / "t.md").read_text()
    assert "**Not learned:** ce did NOT learn" in markdown
    assert "minilm_scincl" not in markdown  # no row of it
    write_table(tmp_path, "u", "U", ["model", "MAP"], [["bm25", 10.0]], not_learned=flagged)
    assert "Not learned" not in (tmp_path / "u.md").read_text()


def test_the_plan_tabulates_every_trained_models_curve() -> None:
    with open("config/config.yaml", encoding="utf-8") as handle:
        raw = yaml.safe_load(handle)
    plan = Plan.from_config(load_config(raw))
    trained = plan.outputs.trained_models
    assert list(trained) == ["minilm_scincl", "minilm_specter", "minilm_local", "ltr",
                             "ltr (local task)", "ce", "ce (local task)"]  # fmt: skip
    assert trained["ltr"] == plan.layout.ltr_model("ltr")
    assert trained["ce"] == plan.layout.reranker_model("ce")
    assert plan.outputs.learning()[0] in plan.outputs.final()
    raw["rerank"]["enabled"] = False
    trained = set(raw["train"]["models"])
    raw["encode"]["models"] = [m for m in raw["encode"]["models"] if m not in trained]
    raw["local"]["enabled"] = False
    raw["ltr"] = []
    untrained = Plan.from_config(load_config(raw))
    assert untrained.outputs.trained_models == {} and untrained.outputs.learning() == []


def test_the_segments_head_scores_the_cosine_of_each_sides_mean_tokens(
    tiny_bert_dir: Path, tmp_path: Path
) -> None:
    from rerank_builder import cpu_reranker

    from citeval.rerank.segment_cosine import INITIAL_CENTRE, INITIAL_SCALE

    torch.manual_seed(0)
    reranker = cpu_reranker(str(tiny_bert_dir), 12, head="mean_segments")
    queries, candidates = ["cells and genes", "a query"], ["genes of cells", "quantum matter"]
    features = reranker.features(queries, candidates)
    transformer = reranker.model[0].model
    with torch.no_grad():  # the model sees every token type 0
        tokens = transformer(
            input_ids=features["input_ids"],
            attention_mask=features["attention_mask"],
            token_type_ids=torch.zeros_like(features["token_type_ids"]),
        ).last_hidden_state
    specials = torch.tensor(reranker.tokenizer.all_special_ids)
    expected = []
    for row in range(2):
        text = features["attention_mask"][row].bool() & ~torch.isin(
            features["input_ids"][row], specials
        )
        types = features["token_type_ids"][row]
        query = tokens[row][text & (types == 0)].mean(0)
        candidate = tokens[row][text & (types == 1)].mean(0)
        cosine = torch.nn.functional.cosine_similarity(query, candidate, dim=0)
        expected.append(torch.sigmoid(INITIAL_SCALE * (cosine - INITIAL_CENTRE)).item())
    scores = reranker.score(queries, candidates)
    np.testing.assert_allclose(scores, expected, rtol=1e-5)
    # Saved with its head and loaded as saved, it scores the same.
    reranker.model.save(str(tmp_path / "model"))
    again = cpu_reranker(str(tmp_path / "model"), 12)
    np.testing.assert_array_equal(again.score(queries, candidates), scores)
    assert [type(module).__name__ for module in again.model] == [
        "SegmentTransformer",
        "SegmentCosine",
    ]


def test_a_folder_naming_foreign_module_code_is_not_imported(tmp_path: Path) -> None:
    from citeval.rerank.model import _only_known_modules

    folder = tmp_path / "m"
    folder.mkdir()
    modules = [
        {
            "idx": 0,
            "name": "0",
            "path": "",
            "type": "sentence_transformers.base.modules.Transformer",
        }
    ]
    (folder / "modules.json").write_text(json.dumps(modules))
    assert _only_known_modules(str(folder))
    modules.append(
        {"idx": 1, "name": "1", "path": "1", "type": "citeval.rerank.segment_cosine.SegmentCosine"}
    )
    (folder / "modules.json").write_text(json.dumps(modules))
    assert _only_known_modules(str(folder))
    modules.append({"idx": 2, "name": "2", "path": "2", "type": "evil.Module"})
    (folder / "modules.json").write_text(json.dumps(modules))
    assert not _only_known_modules(str(folder))


def test_the_schemas_heads_and_losses_are_the_codes() -> None:
    from citeval.config import schema_node
    from citeval.rerank.heads import HEADS
    from citeval.rerank.train import LOSSES

    rerank = schema_node("rerank")["properties"]
    assert sorted(rerank["head"]["enum"]) == sorted(HEADS)
    assert sorted(rerank["train"]["properties"]["loss"]["enum"]) == sorted(LOSSES)


def test_the_local_tables_name_the_local_tasks_trained_models() -> None:
    with open("config/config.yaml", encoding="utf-8") as handle:
        plan = Plan.from_config(load_config(yaml.safe_load(handle)))
    # The prefetcher by its name, the local ltr model and reranker by the names their
    # rows carry.
    assert plan.local.trained_models == {
        "minilm_local": plan.layout.trained("minilm_local", "model"),
        "ltr": plan.layout.ltr_model("ltr", "local"),
        "ce": plan.layout.local_reranker_model("ce"),
    }
