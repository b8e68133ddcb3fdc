"""The trained model, out of its evidence, in the format the owner's tools load.

The deliverable's evidence E_{K-1} holds the trainable tensors only; the initial checkpoint holds the rest. The
model is rebuilt as every replay rebuilds it (the spec's workload and config, the initial checkpoint, then the
evidence's tensors) and written:

- an ``llm`` task with a LoRA adapter: a PEFT adapter folder (``adapter_config.json``,
  ``adapter_model.safetensors``) with the tokenizer, its base in ``base/``
  (``PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(out / "base"), out)``); with ``merge``,
  the adapter merged into the base as one Hugging Face model folder (``AutoModelForCausalLM.from_pretrained``);
- an ``llm`` task trained in full: a Hugging Face model folder with the tokenizer;
- any other workload: ``model.safetensors``, the model's state dict (``load_state_dict`` on the workload's
  model).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from safetensors.torch import save_file

from ovig_node.errors import OvigError
from ovig_node.training.evidence import load_model_tensors, model_tensors, read_evidence
from ovig_node.training.loop import load_initial_model
from ovig_node.training.taskfiles import PreparedTask
from ovig_node.training.workloads import Dataset, get_workload


class ExportError(OvigError, ValueError):
    """The deliverable cannot be written as asked (a merge of a task without an adapter, say)."""


@dataclass(frozen=True)
class Exported:
    folder: Path
    kind: str  # "peft adapter", "merged model", "model", "state dict"
    loads_with: str  # one line: how to load it


def export_model(prepared: PreparedTask, evidence: Path, digest: str, out: Path, *, merge: bool) -> Exported:
    """Rebuild the model of ``evidence`` (its sha256 must be ``digest``) and write it into ``out``."""
    spec = prepared.spec
    workload = get_workload(spec.workload.name)
    config = spec.workload.config
    lora = spec.workload.name == "llm" and config.get("adapter") == "lora"
    if merge and not lora:
        raise ExportError("--merge: the task trained no adapter, so there is nothing to merge")
    model = load_initial_model(workload, config, prepared.init_path)
    load_model_tensors(model, read_evidence(evidence, expected_sha256=digest).model, trainable_only=True)
    out.mkdir(parents=True, exist_ok=True)
    if spec.workload.name != "llm":
        save_file(
            {name: t.contiguous() for name, t in model_tensors(model, trainable_only=False).items()},
            str(out / "model.safetensors"),
        )
        return Exported(out, "state dict", f"the {spec.workload.name} workload's model, load_state_dict")
    tokenizer = _tokenizer(prepared)
    if not lora:
        _save_causal_lm(model, out)
        tokenizer.save_pretrained(str(out))
        return Exported(out, "model", f"AutoModelForCausalLM.from_pretrained({str(out)!r})")
    # A peft model: torch's nn.Module.__getattr__ types the methods peft adds as Tensor | Module.
    peft_model: Any = model
    if merge:
        _save_causal_lm(peft_model.merge_and_unload(), out)
        tokenizer.save_pretrained(str(out))
        return Exported(out, "merged model", f"AutoModelForCausalLM.from_pretrained({str(out)!r})")
    peft_model.save_pretrained(str(out))  # the adapter alone: adapter_config.json, adapter_model.safetensors
    tokenizer.save_pretrained(str(out))
    _save_causal_lm(peft_model.unload(), out / "base")  # the base as it was, the adapter's layers taken out
    tokenizer.save_pretrained(str(out / "base"))
    return Exported(
        out,
        "peft adapter",
        f"PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained({str(out / 'base')!r}), {str(out)!r})",
    )


def _save_causal_lm(model: Any, folder: Path) -> None:
    """A transformers model (a ``PreTrainedModel``: its ``config`` and ``save_pretrained`` are not
    nn.Module's) as its folder, ready to generate (training turned the key-value cache off)."""
    model.config.use_cache = True
    model.save_pretrained(str(folder))


def _tokenizer(prepared: PreparedTask) -> Any:
    from ovig_node.training.pretrained import tokenizer_from_bundle
    from ovig_node.training.workloads.llm import TOKENIZER_METADATA

    return tokenizer_from_bundle(Dataset.load(prepared.dataset_path).metadata[TOKENIZER_METADATA])
