"""Synthetic papers and randomly initialised BERTs for the model benchmarks.

Speed does not depend on the weights, so a random BERT of the right shape stands in for
SciBERT; a real tokenizer (MiniLM's, BERT-base-uncased's vocabulary) keeps token counts
realistic. Imports only torch and transformers, so it runs on a bare GPU machine.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

SHAPES: dict[str, dict[str, int]] = {
    "tiny": {
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 128,
    },
    "bert-base": {
        "hidden_size": 768,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "intermediate_size": 3072,
    },
}


def build_random_bert(
    directory: Path, shape: str, tokenizer_dir: str | os.PathLike, seed: int = 0
) -> Path:
    """A randomly initialised BERT of ``shape`` with the tokenizer of ``tokenizer_dir``."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    config = BertConfig(vocab_size=tokenizer.vocab_size, **SHAPES[shape])
    torch.manual_seed(seed)
    BertModel(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


class SyntheticText:
    """Deterministic titles and 150–250 word abstracts from a WordPiece vocabulary's
    whole words (``vocab.txt`` in ``tokenizer_dir``).

    About one word in six is two vocabulary words glued together, which splits into
    word pieces the way rarer scientific terms do.
    """

    def __init__(self, tokenizer_dir: str | os.PathLike, seed: int = 0) -> None:
        vocab = (Path(tokenizer_dir) / "vocab.txt").read_text().split("\n")
        self.words = [w for w in vocab if w.isalpha() and w.isascii() and len(w) >= 3]
        self.rng = random.Random(seed)

    def _words(self, count: int) -> list[str]:
        words = self.rng.choices(self.words, k=count)
        for index in range(0, count, 6):
            words[index] += self.rng.choice(self.words)
        return words

    def paper(self) -> tuple[str, str]:
        title = " ".join(self._words(self.rng.randint(6, 14))).capitalize()
        sentences = []
        remaining = self.rng.randint(150, 250)
        while remaining > 0:
            length = min(remaining, self.rng.randint(12, 30))
            sentences.append(" ".join(self._words(length)).capitalize() + ".")
            remaining -= length
        return title, " ".join(sentences)
