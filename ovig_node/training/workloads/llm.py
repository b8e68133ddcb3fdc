"""LLM post-training: supervised fine-tuning of a pretrained causal language model on chat examples,
with a LoRA adapter or in full.

The base is any Hugging Face ``AutoModelForCausalLM``: by default SmolLM2-135M-Instruct
(:mod:`ovig_node.training.pretrained`), or the owner's folder (``model`` = a path when the spec is made).
The spec pins it in two parts: ``architecture`` (the base's ``config.json`` as canonical text, so any node
rebuilds the same model) and the initial checkpoint's weights (``init``, base and fresh adapter). The
data are conversations (:mod:`ovig_node.training.chat`) rendered with the tokenizer's chat template and
cut or padded to ``max_tokens``; the dataset file holds the token ids, the assistant-token mask, and the
tokenizer itself in its metadata, pinned with it by the dataset's CID and sha256.

The loss is next-token cross-entropy on the assistant's tokens only, averaged per example and then over
examples, so a batch split into micro-batches computes the same mathematics. The base's own dropouts
are off (their masks would come from torch's global generator, and so from how a batch is split); the
adapter's dropout draws every example's mask from a seed drawn with the step's randomness (protocol
section 2.2), so a replay drops the same coordinates whatever the split. ``tiny`` keeps the tokenizer and
the adapter but shrinks the base to two small layers, randomly initialised from the spec's seed.
"""

from __future__ import annotations

import hashlib
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from ovig_node.training.chat import chatterbot_conversations, encode, read_jsonl
from ovig_node.training.pretrained import (
    DEFAULT_MODEL,
    ModelSourceError,
    architecture,
    check_folder,
    default_model_folder,
    load_tokenizer,
    tokenizer_bundle,
)
from ovig_node.training.workloads.base import Dataset, DatasetError, Workload, derived_seed

DEFAULT_DATA = "chatterbot-corpus:english"
TOKENIZER_METADATA = "tokenizer"  # the dataset file's metadata key holding the tokenizer's files
# Most layers a base may have (the largest open models have about 130): a deterministic bound on the work of
# building its layout. The keys transformers' configs name the count by.
MAX_LAYERS = 512
LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")
# The tiny base: the default's architecture and tokenizer, two narrow layers (about 3.3M parameters, most
# of them the tied 49,152-token embedding).
TINY_SHRINK = {
    "num_hidden_layers": 2,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
}


class ExampleDropout(nn.Module):
    """Dropout whose mask for each example comes from that example's seed (``seeds``, set by the loss for
    one forward pass) and this module's index, never from torch's global generator. Without seeds (a
    model used for generation) it does nothing."""

    def __init__(self, p: float, index: int) -> None:
        super().__init__()
        self.p, self.index = p, index
        self.seeds: torch.Tensor | None = None  # (B,) int64

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (B, T, F)
        if self.seeds is None or self.p == 0.0:
            return x
        keep = []
        for seed in self.seeds.tolist():
            generator = torch.Generator().manual_seed(derived_seed(f"{seed}:{self.index}:dropout"))
            keep.append(torch.rand(x.shape[1:], generator=generator) >= self.p)  # drawn on the CPU everywhere
        mask = torch.stack(keep).to(device=x.device, dtype=x.dtype)
        return x * mask / (1.0 - self.p)


class LlmWorkload(Workload):
    name = "llm"

    def config(self, *, tiny: bool) -> dict[str, Any]:
        # targets "auto": PEFT's own default for the base's architecture, written into the spec when it is made
        lora = {"rank": 4 if tiny else 8, "alpha": 8 if tiny else 16, "dropout": "0.05", "targets": "auto"}
        return {
            "model": DEFAULT_MODEL,  # or, when the spec is made, a Hugging Face model folder
            "data": DEFAULT_DATA,  # or, when the spec is made, a JSONL file of conversations
            "data_format": None,  # its lines' format (training.chat.FORMATS); None: each line's keys name it
            "architecture": "",  # filled in when the spec is made: the base's config.json
            "pretrained": not tiny,  # False: the base is initialised from the seed, not the folder's weights
            "shrink": dict(TINY_SHRINK) if tiny else {},  # architecture keys replaced (the tiny base)
            "adapter": "lora",  # or "none": a full fine-tune
            "lora": lora,
            "max_tokens": 48 if tiny else 64,
            "max_examples": 256 if tiny else 0,  # 0: every conversation
        }

    def optimizer(self, *, tiny: bool) -> dict[str, Any]:
        recipe = super().optimizer(tiny=tiny)
        recipe["lr"] = "0.001" if tiny else "0.0002"  # LoRA's usual 1e-4 .. 2e-4 on a pretrained base
        return recipe

    def batch_size(self, *, tiny: bool) -> int:
        return 4

    # --- made once, by the owner: dataset and initial checkpoint --------------------------------------

    def build_dataset(self, config: dict[str, Any]) -> Dataset:
        folder = _model_folder(config)
        tokenizer = load_tokenizer(folder)
        language = _corpus_language(str(config["data"]))
        if language is not None:
            conversations = chatterbot_conversations(language)
        else:
            conversations = read_jsonl(Path(str(config["data"])), config.get("data_format"))
        if int(config["max_examples"]) > 0:
            conversations = conversations[: int(config["max_examples"])]
        encoded = encode(tokenizer, conversations, int(config["max_tokens"]))
        return Dataset(tensors=encoded.tensors, metadata={TOKENIZER_METADATA: tokenizer_bundle(folder)})

    def check_dataset(self, dataset: Dataset, config: dict[str, Any]) -> None:
        """Token ids within the architecture's vocabulary, right-padded 0/1 masks of the spec's sequence
        length, every example with an assistant token the loss counts (not the first, which nothing
        predicts) among its attended ones, and the tokenizer in the metadata."""
        super().check_dataset(dataset, config)
        width = config.get("max_tokens")
        if not isinstance(width, int) or isinstance(width, bool) or width < 2:
            raise DatasetError(f"max_tokens must be an integer >= 2, not {width!r}")
        tensors = dataset.tensors
        expected = {"input_ids": torch.int32, "attention_mask": torch.uint8, "loss_mask": torch.uint8}
        shapes = {name: (tensor.dtype, tuple(tensor.shape[1:])) for name, tensor in tensors.items()}
        if shapes != {name: (dtype, (width,)) for name, dtype in expected.items()}:
            raise DatasetError(
                f"an llm dataset holds input_ids (int32), attention_mask and loss_mask (uint8), "
                f"each (N, {width}); this one {shapes}"
            )
        vocabulary = _checked_architecture(config.get("architecture") or "{}").get("vocab_size")
        if not isinstance(vocabulary, int) or vocabulary < 1:
            raise DatasetError("the architecture names no vocab_size to check the token ids against")
        ids, attended, counted = tensors["input_ids"], tensors["attention_mask"], tensors["loss_mask"]
        if int(ids.min()) < 0 or int(ids.max()) >= vocabulary:
            raise DatasetError(
                f"token ids must lie in [0, {vocabulary}), the vocabulary; this dataset's span "
                f"[{int(ids.min())}, {int(ids.max())}]"
            )
        if int(attended.max()) > 1 or int(counted.max()) > 1 or bool((counted > attended).any()):
            raise DatasetError("the masks must be 0/1, and every assistant token an attended one")
        if bool((attended[:, 1:] > attended[:, :-1]).any()):
            raise DatasetError("padding must follow the tokens (attention_mask 1s, then 0s)")
        if bool((counted[:, 1:].sum(1) == 0).any()):
            raise DatasetError("every example needs an assistant token after its first (its loss would be empty)")
        if TOKENIZER_METADATA not in dataset.metadata:
            raise DatasetError(f"an llm dataset carries its tokenizer in its metadata ({TOKENIZER_METADATA!r})")

    def published_config(self, config: dict[str, Any]) -> dict[str, Any]:
        """The spec's config: the architecture filled in, and the sources named by what they are rather
        than where they lay on the owner's disk."""
        folder = _model_folder(config)
        if config["pretrained"] and config["shrink"]:
            raise ModelSourceError(
                "shrink changes the architecture: only for a base initialised from the seed (pretrained: false)"
            )
        shape = json.loads(architecture(folder)) | dict(config["shrink"])
        data = str(config["data"])
        if _corpus_language(data) is None:
            data = f"{Path(data).name} sha256:{hashlib.sha256(Path(data).read_bytes()).hexdigest()}"
        model = str(config["model"]) if config["model"] == DEFAULT_MODEL else folder.name
        given = {key: value for key, value in config.items() if key != "data_format" or value is not None}
        published = {
            **given,
            "model": model,
            "data": data,
            "architecture": json.dumps(shape, sort_keys=True, separators=(",", ":")),
        }
        if config["adapter"] == "lora" and config["lora"]["targets"] == "auto":
            published["lora"] = {**config["lora"], "targets": lora_targets(str(shape.get("model_type")))}
        return published

    def initial_model(self, config: dict[str, Any]) -> nn.Module:
        """The base (pretrained weights, or seeded ones for ``pretrained: false``) and a fresh adapter
        initialised from the seeded global generator (LoRA's A matrices are random)."""
        folder = _model_folder(config)
        published = self.published_config(config)
        if not published["pretrained"]:
            return self.build_model(published)
        from transformers import AutoModelForCausalLM
        from transformers.utils import logging

        logging.set_verbosity_error()
        base = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
        return _with_adapter(_without_dropout(base), published)

    # --- every node: the architecture, the step's randomness, the loss --------------------------------

    def build_model(self, config: dict[str, Any]) -> nn.Module:
        from transformers import AutoConfig, AutoModelForCausalLM

        if not config.get("architecture"):
            raise ModelSourceError("the llm config has no architecture (make specs with `ovig spec new`)")
        base_config = AutoConfig.for_model(**_checked_architecture(config["architecture"]))
        base = AutoModelForCausalLM.from_config(base_config, dtype=torch.float32)
        return _with_adapter(_without_dropout(base), config)

    def randomness(
        self, batch_size: int, generator: torch.Generator, config: dict[str, Any]
    ) -> dict[str, torch.Tensor]:
        if config["adapter"] != "lora" or Decimal(str(config["lora"]["dropout"])) == 0:
            return {}
        return {"dropout_seed": torch.randint(0, 2**62, (batch_size,), generator=generator)}

    def loss(self, model: nn.Module, batch: dict[str, torch.Tensor], config: dict[str, Any]) -> torch.Tensor:
        dropouts = [m for m in model.modules() if isinstance(m, ExampleDropout)]
        for module in dropouts:
            module.seeds = batch.get("dropout_seed")
        try:
            logits = model(input_ids=batch["input_ids"].long(), attention_mask=batch["attention_mask"].long()).logits
        finally:
            for module in dropouts:
                module.seeds = None
        # logits (B, T, V): position t predicts token t + 1
        targets = batch["input_ids"][:, 1:].long()  # (B, T-1)
        counted = batch["loss_mask"][:, 1:].to(logits.dtype)  # (B, T-1)
        vocab = logits.shape[-1]
        tokens = F.cross_entropy(logits[:, :-1].reshape(-1, vocab), targets.reshape(-1), reduction="none")
        tokens = tokens.view_as(targets)  # (B, T-1)
        per_example = (tokens * counted).sum(1) / counted.sum(1).clamp(min=1.0)  # (B,)
        return per_example.mean()


# Keys of an architecture no node takes from an owner: code to fetch and run (auto_map), another weight
# dtype than the spec's float32, quantisation, a kernel picked by name (possibly fetched from the Hub).
_REFUSED_KEYS = (
    "auto_map",
    "torch_dtype",
    "dtype",
    "quantization_config",
    "attn_implementation",
    "_attn_implementation",
    "trust_remote_code",
)


def _checked_architecture(text: str) -> dict[str, Any]:
    """The architecture as ``AutoConfig.for_model`` keyword arguments: a causal LM transformers ships (never
    remote code), float32, and every dropout of the base at zero before a module copies its rate."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    try:
        document = json.loads(text)
    except ValueError as exc:
        raise ModelSourceError(f"the llm architecture is not JSON: {exc}") from None
    if not isinstance(document, dict) or document.get("model_type") not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        raise ModelSourceError("the llm architecture's model_type is not a causal LM transformers ships")
    document = {k: v for k, v in document.items() if k not in _REFUSED_KEYS}
    for key in LAYER_KEYS:
        layers = document.get(key, 0)
        if not isinstance(layers, int) or isinstance(layers, bool) or not 0 <= layers <= MAX_LAYERS:
            # Building even on the meta device takes time per layer and the layout is built before any deadline
            # applies: a spec of 200,000 tiny layers (under the evidence cap) held every auditor's prefetch for
            # half an hour (review 12 of v3). A count, not a clock, so every node refuses alike.
            raise ModelSourceError(f"the llm architecture's {key} must be an integer 0 .. {MAX_LAYERS}, not {layers!r}")
    for key, value in list(document.items()):
        if isinstance(value, float) and key.endswith(("dropout", "pdrop", "dropout_prob", "dropout_rate")):
            document[key] = 0.0
    return document


def lora_targets(model_type: str) -> list[str]:
    """The modules a LoRA adapter targets on a ``model_type`` by default: PEFT's own choice for it (Llama's and
    Qwen2's ``q_proj``/``v_proj``, GPT-NeoX's ``query_key_value``, GPT-2's ``c_attn``, ...)."""
    from peft.utils import TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING as DEFAULTS

    targets = DEFAULTS.get(model_type)
    if not targets:
        raise ModelSourceError(f"no default LoRA targets for a {model_type} model: name them (--lora-targets)")
    return list(targets)


def _corpus_language(source: str) -> str | None:
    """The language of a ``chatterbot-corpus:<language>`` source; None for a file."""
    corpus, _, language = source.partition(":")
    return language if corpus == "chatterbot-corpus" and language else None


def _model_folder(config: dict[str, Any]) -> Path:
    """The base's folder when the spec is made: the cached default, or the owner's folder, checked."""
    if config["model"] == DEFAULT_MODEL:
        return default_model_folder()
    folder = Path(str(config["model"])).expanduser()
    check_folder(folder)
    return folder


def _without_dropout(model: nn.Module) -> nn.Module:
    """The base with every dropout of its own off (see the module docstring)."""
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
    for key, value in list(vars(model.config).items()):
        if isinstance(value, float) and (key.endswith("dropout") or key.endswith("pdrop")):
            setattr(model.config, key, 0.0)
    # nn.Module.__getattr__ types `config` Tensor | Module; it is the transformers model's PretrainedConfig.
    model.config.use_cache = False  # type: ignore[union-attr]
    return model.eval()  # no module of the base may drop anything in training mode either


def _with_adapter(base: nn.Module, config: dict[str, Any]) -> nn.Module:
    if config["adapter"] == "none":
        return base
    if config["adapter"] != "lora":
        raise ModelSourceError(f"adapter {config['adapter']!r}: use lora or none")
    from peft import LoraConfig, get_peft_model

    lora = config["lora"]
    p = float(Decimal(str(lora["dropout"])))
    # nn.Module.__getattr__ types `config` Tensor | Module; it is the transformers model's PretrainedConfig.
    auto = lora["targets"] == "auto"
    targets = lora_targets(str(base.config.model_type)) if auto else list(lora["targets"])  # type: ignore[union-attr]
    peft_config = LoraConfig(
        r=int(lora["rank"]), lora_alpha=int(lora["alpha"]), lora_dropout=p, target_modules=targets, bias="none"
    )
    model = get_peft_model(base, peft_config)
    index = 0
    for module in model.modules():
        dropouts = getattr(module, "lora_dropout", None)
        if isinstance(dropouts, nn.ModuleDict):
            for name in list(dropouts):
                dropouts[name] = ExampleDropout(p, index)
                index += 1
    return model
