"""`ovig spec new|set-boundary`: the task spec, the document whose hash the contract holds, and its files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ovig_node.cli.console import console
from ovig_node.cli.options import config_option, warmup_option
from ovig_node.node_cli import EXISTING_FILE, EXISTING_FOLDER, FOLDER, SHOW_DEFAULTS
from ovig_node.training.chat import FORMATS as CHAT_FORMATS


@click.group()
def spec() -> None:
    """Task specs: the document whose hash the contract holds."""


@spec.command("new", context_settings=SHOW_DEFAULTS)
@click.option("--workload", required=True, help="Workload name: vision, language, diffusion or llm.")
@click.option("--tiny", is_flag=True, help="The tiny config (trains in seconds; for tests and demos).")
@click.option("--out", "out_dir", type=FOLDER, required=True, help="Folder.")
@click.option("--steps", "total_steps", type=int, default=200, help="Training steps N.")
@click.option("--stride", type=int, default=10, help="Steps per interval s.")
@click.option("--intervals-per-batch", type=int, default=8, help="Intervals per commit m.")
@click.option("--sample-bps", type=int, default=2500, help="Share of a batch to open (bps).")
@click.option("--batch-size", type=click.IntRange(min=1), default=None, help="[default: the workload's]")
@click.option("--seed", type=int, default=1, help="The training seed (data order, init draws).")
@click.option(
    "--model",
    "model_dir",
    type=EXISTING_FOLDER,
    default=None,
    help="llm: a Hugging Face model folder (config.json, safetensors, tokenizer) [default: SmolLM2-135M-Instruct].",
)
@click.option(
    "--data",
    "data_file",
    type=EXISTING_FILE,
    default=None,
    help="llm: conversations, one JSON per line: messages, ShareGPT, Alpaca, prompt/completion or prompt/response "
    "(docs/llm.md).",
)
@click.option(
    "--format",
    "data_format",
    type=click.Choice(["auto", *CHAT_FORMATS]),
    default="auto",
    help="llm: the format of every line of --data (auto: each line's keys name it).",
)
@click.option(
    "--exact",
    is_flag=True,
    help="Exact mode: float64 compute rounded to float32, a rounding log; replays must match bit for bit. "
    "Its threshold is calibrated here from a few steps under each CPU profile.",
)
@click.option("--force", is_flag=True, help="Write into a folder that holds files already (they may be overwritten).")
@click.option("--adapter", type=click.Choice(["lora", "none"]), help="llm: a LoRA adapter, or none (a full fine-tune).")
@click.option("--lora-rank", type=click.IntRange(min=1), help="llm: the adapter's rank r [8; tiny 4].")
@click.option("--lora-alpha", type=click.IntRange(min=1), help="llm: the adapter's alpha [16; tiny 8].")
@click.option("--lora-targets", help="llm: the modules it adapts, comma-separated [PEFT's default for the model].")
@config_option
@warmup_option
def spec_new(
    workload: str,
    tiny: bool,
    out_dir: Path,
    config: dict[str, Any],
    model_dir: Path | None,
    data_file: Path | None,
    data_format: str,
    exact: bool,
    force: bool,
    adapter: str | None,
    lora_rank: int | None,
    lora_alpha: int | None,
    lora_targets: str | None,
    **options: Any,
) -> None:
    """Write spec.json, dataset.safetensors and init.safetensors into a folder."""
    if out_dir.exists() and any(out_dir.iterdir()) and not force:  # a calibrated boundary is hours of work
        raise click.BadParameter(
            f"{out_dir} is not empty (its files would be overwritten, a calibrated boundary "
            "too): use another folder, or --force",
            param_hint="--out",
        )
    lora = {
        "rank": lora_rank,
        "alpha": lora_alpha,
        "targets": [t.strip() for t in lora_targets.split(",") if t.strip()] if lora_targets else None,
    }
    given = {key: value for key, value in lora.items() if value is not None}
    if workload != "llm" and (adapter or given):
        raise click.BadParameter("only the llm workload has an adapter", param_hint="--adapter/--lora-*")
    if adapter == "none" and given:
        raise click.BadParameter("a full fine-tune (--adapter none) has no LoRA settings", param_hint="--lora-*")
    if lora_targets is not None and not given.get("targets"):
        raise click.BadParameter("name at least one module", param_hint="--lora-targets")
    if data_format != "auto":
        if data_file is None:
            raise click.BadParameter("names the format of --data: give --data too", param_hint="--format")
        config = config | {"data_format": data_format}
    from ovig_node.training.taskfiles import prepare_task

    if adapter is not None:
        config = config | {"adapter": adapter}
    if given:
        from ovig_node.training.workloads import get_workload

        config = config | {"lora": get_workload("llm").config(tiny=tiny)["lora"] | config.get("lora", {}) | given}

    sources = {"model": model_dir, "data": data_file}
    config = config | {key: str(path.resolve()) for key, path in sources.items() if path is not None}
    try:
        prepared = prepare_task(workload, out_dir, tiny=tiny, config=config, **options)
    except KeyError as exc:
        raise click.BadParameter(str(exc.args[0]), param_hint="--workload") from None
    if exact:
        prepared = _make_exact(prepared)
    layout = prepared.spec.layout
    console.print(f"spec     {prepared.spec_path}  (specHash 0x{prepared.spec_hash.hex()})")
    console.print(f"dataset  {prepared.dataset_path}  {prepared.spec.dataset.cid}")
    console.print(f"init     {prepared.init_path}  {prepared.spec.init.cid}")
    sizes = f"N={layout.total_steps} s={layout.stride} K={layout.intervals}"
    console.print(f"layout   {sizes} m={layout.intervals_per_batch} B={layout.batches}")


def _make_exact(prepared: Any) -> Any:
    from ovig_node.training.execution import PROFILES
    from ovig_node.training.taskfiles import attach_numerics
    from ovig_node.verify.exact import calibrate_numerics

    profiles = [p for p in PROFILES.values() if p.world_size == 1 and p.device == "cpu" and p.name != "reference"]
    with console.status(f"measuring the float64 discrepancy of {len(profiles)} profiles ..."):
        numerics, discrepancies = calibrate_numerics(prepared, profiles)
    for d in discrepancies:
        largest = ", ".join(f"{phase} {value:.2g}" for phase, value in d.largest.items())
        console.print(f"  {d.profile:18} largest discrepancy (ulps; gradient: at every value): {largest}")
    thresholds = ", ".join(f"{phase} {value}" for phase, value in numerics["threshold"].items())
    console.print(
        f"exact    thresholds (ulps): {thresholds}; gradient floor: 2^-{numerics['gradient_floor']} of "
        f"the step's largest gradient; at most {numerics['max_log_entries']} log entries"
    )
    return attach_numerics(prepared.spec_path, numerics)


@spec.command("set-boundary")
@click.option("--spec", "spec_path", type=EXISTING_FILE, required=True, help="The spec to name it in (rewritten).")
@click.option("--boundary", "boundary_path", type=EXISTING_FILE, required=True, help="`ovig calibrate`'s output.")
def spec_set_boundary(spec_path: Path, boundary_path: Path) -> None:
    """Name a calibrated boundary profile in the spec (its hash changes: do this before posting)."""
    from ovig_node.training.taskfiles import attach_boundary

    prepared = attach_boundary(spec_path, boundary_path)
    assert prepared.spec.boundary is not None
    console.print(f"spec     {spec_path}  (specHash 0x{prepared.spec_hash.hex()})")
    console.print(f"boundary {boundary_path}  {prepared.spec.boundary.cid}")
