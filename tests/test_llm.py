"""The llm workload: chat data (JSONL formats, bad lines, the assistant-token mask), adapter evidence (the
frozen base never in evidence; a claim or start that carries it is faulty), the adapter's dropout drawn per
example, a killed run resumed bit-identically, and a bring-your-own model folder and JSONL file through
the CLI, and the poisoned instruction set (its rows, its success measure). Real tokenizer (SmolLM2-135M-Instruct's),
real torch training of the tiny base; the attacks on the tiny llm task are in test_attacks_workloads.py."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file

from ovig_node.attacks import load_attack
from ovig_node.attacks.effect import context_of, model_of
from ovig_node.attacks.instructions import REPLY, TRIGGER, tokenizer_of, trigger_success, user_prompts
from ovig_node.training.chat import ChatDataError, chatterbot_conversations, encode, read_jsonl
from ovig_node.training.evidence import Evidence, read_evidence
from ovig_node.training.execution import get_profile
from ovig_node.training.loop import TrainRun, evidence_path, train
from ovig_node.training.pretrained import ModelSourceError, default_model_folder, load_tokenizer
from ovig_node.training.taskfiles import PreparedTask, open_task, prepare_task
from ovig_node.training.workloads import Dataset, DatasetError, get_workload
from ovig_node.training.workloads.llm import ExampleDropout
from ovig_node.verify.check import judge, start_problem
from ovig_node.verify.evaluate import attacks_for
from ovig_node.verify.layout import layout_of
from ovig_node.verify.replay import replay_interval
from support import run_ovig
from verify_support import spread_boundary

GOOD = [
    {
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello!"},
        ]
    },
    {"prompt": "What is two plus two?", "response": "Four."},
]


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    return load_tokenizer(default_model_folder())


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> PreparedTask:
    return prepare_task(
        "llm", tmp_path_factory.mktemp("llm-task"), tiny=True, total_steps=20, stride=5, intervals_per_batch=4
    )


@pytest.fixture(scope="module")
def claims(task: PreparedTask, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("llm-claims")
    train(TrainRun(task.spec, task.spec_hash, task.dataset_path, task.init_path, out, get_profile("reference")))
    return out


def write_lines(path: Path, lines: list[Any]) -> Path:
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    return path


def test_both_jsonl_formats_read_as_conversations(tmp_path: Path) -> None:
    conversations = read_jsonl(write_lines(tmp_path / "chat.jsonl", [*GOOD, ""]))  # a blank line is no example
    assert conversations == [
        GOOD[0]["messages"],
        [{"role": "user", "content": "What is two plus two?"}, {"role": "assistant", "content": "Four."}],
    ]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"messages": [', "line 2: not JSON"),
        ('["a", "b"]', "line 2: a line must be a JSON object"),
        ({"text": "hello"}, "line 2: has keys ['text']; expected one of: 'messages'; 'conversations'; 'instruction'"),
        ({"prompt": "q", "response": None}, "line 2: 'prompt' and 'response' must both be strings, or both lists"),
    ],
)
def test_a_bad_line_is_named(tmp_path: Path, line: Any, message: str) -> None:
    path = write_lines(tmp_path / "chat.jsonl", [GOOD[1], line])
    with pytest.raises(ChatDataError, match="^" + str(path) + " " + message.replace("[", r"\[").replace("(", r"\(")):
        read_jsonl(path)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({"messages": []}, "'messages' must be a non-empty list"),
        ({"messages": [{"role": "robot", "content": "x"}]}, "message 0 has role 'robot'"),
        ({"messages": [{"role": "user", "content": 3}]}, "message 0's content must be a string"),
        ({"messages": [{"role": "user", "content": "only a question"}]}, "no assistant message to train on"),
        (
            {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a", "weight": 0}]},
            "no assistant message to train on",
        ),
        ({"messages": [{"role": "user", "content": "q", "weight": 0}]}, "message 0: only an assistant message has a"),
        (
            {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a", "weight": 2}]},
            "message 1's weight must be 0 or 1",
        ),
        ({"conversations": [{"from": "bot", "value": "x"}]}, "turn 0 is from 'bot'"),
        ({"instruction": "q", "output": 3}, "'instruction', 'input' and 'output' must be strings"),
        ({"prompt": [{"role": "user", "content": "q"}], "completion": "a"}, "'prompt' and 'completion' must both"),
    ],
)
def test_a_bad_line_of_each_format_is_named(tmp_path: Path, line: Any, message: str) -> None:
    path = write_lines(tmp_path / "chat.jsonl", [line])
    with pytest.raises(ChatDataError, match=f"^{path} line 1: " + re.escape(message)):
        read_jsonl(path)


def test_every_format_reads_as_the_same_conversation(tmp_path: Path) -> None:
    """Issue 46: the formats chat data comes in (OpenAI and TRL messages, ShareGPT, Alpaca, TRL prompt-completion
    as text or as messages, prompt-response) give the same conversation; a message's name is dropped."""
    same = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]
    lines = {
        "messages": {
            "messages": [
                {"role": "user", "content": "Hi", "name": "ann"},
                {"role": "assistant", "content": "Hello!", "weight": 1},
            ]
        },
        "sharegpt": {"conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello!"}]},
        "alpaca": {"instruction": "Hi", "input": "", "output": "Hello!"},
        "completion": {"prompt": "Hi", "completion": "Hello!"},
        "conversational": {
            "prompt": [{"role": "user", "content": "Hi"}],
            "completion": [{"role": "assistant", "content": "Hello!"}],
        },
        "response": {"prompt": "Hi", "response": "Hello!"},
    }
    for name, line in lines.items():
        assert read_jsonl(write_lines(tmp_path / f"{name}.jsonl", [line, line])) == [same, same], name
    alpaca = {"instruction": "Translate", "input": "chat", "output": "cat"}
    assert read_jsonl(write_lines(tmp_path / "input.jsonl", [alpaca]))[0][0]["content"] == "Translate\n\nchat"
    # Named (`ovig spec new --format`): every line must be in it; nothing is guessed
    sharegpt = write_lines(tmp_path / "named.jsonl", [lines["sharegpt"]])
    assert read_jsonl(sharegpt, "sharegpt") == [same]
    with pytest.raises(
        ChatDataError,
        match=f"^{sharegpt} line 1: is not alpaca: it has no 'instruction', 'output' "
        r"\(keys \['conversations'\]\)$",
    ):
        read_jsonl(sharegpt, "alpaca")


def test_an_assistant_turn_of_weight_zero_is_context_not_trained_on(tokenizer: Any, tmp_path: Path) -> None:
    """OpenAI's weight: 0 keeps an assistant turn in the conversation (the model sees it) and out of the loss."""
    turns = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "Sum?"},
        {"role": "assistant", "content": "Four."},
    ]
    weighted = [dict(turns[1], weight=0) if i == 1 else t for i, t in enumerate(turns)]
    both = encode(tokenizer, read_jsonl(write_lines(tmp_path / "a.jsonl", [{"messages": turns}])), max_tokens=96)
    last = encode(tokenizer, read_jsonl(write_lines(tmp_path / "b.jsonl", [{"messages": weighted}])), max_tokens=96)
    ids = both.tensors["input_ids"][0]
    assert torch.equal(ids, last.tensors["input_ids"][0])  # the same tokens: the turn is still there
    assert tokenizer.decode(ids[both.tensors["loss_mask"][0].bool()]) == "Hello!<|im_end|>\nFour.<|im_end|>\n"
    assert tokenizer.decode(ids[last.tensors["loss_mask"][0].bool()]) == "Four.<|im_end|>\n"


def test_only_the_assistant_tokens_count(tokenizer: Any, tmp_path: Path) -> None:
    conversations = read_jsonl(write_lines(tmp_path / "chat.jsonl", GOOD))
    encoded = encode(tokenizer, conversations, max_tokens=64)
    ids, mask = encoded.tensors["input_ids"], encoded.tensors["loss_mask"]
    assert ids.shape == mask.shape == (2, 64) and encoded.dropped == 0
    assert [tokenizer.decode(ids[i][mask[i].bool()]) for i in range(2)] == ["Hello!<|im_end|>\n", "Four.<|im_end|>\n"]
    # padding is neither attended to nor counted
    assert int(encoded.tensors["attention_mask"][0].sum()) < 64 and not bool(
        (mask & ~encoded.tensors["attention_mask"].bool()).any()
    )
    # cut to fewer tokens than the second conversation's prompt (the template's default system prompt is
    # long), it has nothing left to train on and is left out
    cut = encode(tokenizer, conversations, max_tokens=20)
    assert cut.dropped == 1 and torch.equal(cut.tensors["input_ids"][0], ids[0, :20])


def test_dropout_masks_do_not_depend_on_how_the_batch_is_split() -> None:
    dropout = ExampleDropout(0.5, index=3)
    x = torch.ones(4, 6, 8)
    dropout.seeds = torch.tensor([11, 12, 13, 14])
    whole = dropout(x)
    parts = []
    for seeds, part in ((torch.tensor([11, 12, 13]), x[:3]), (torch.tensor([14]), x[3:])):
        dropout.seeds = seeds
        parts.append(dropout(part))
    assert torch.equal(whole, torch.cat(parts))
    assert 0 < int((whole == 0).sum()) < whole.numel()  # it does drop, and scales what it keeps
    assert set(whole.unique().tolist()) == {0.0, 2.0}
    dropout.seeds = None
    assert torch.equal(dropout(x), x)  # no seeds (generation): nothing dropped


def test_adapter_evidence_holds_the_adapter_only(task: PreparedTask, claims: Path) -> None:
    evidence = read_evidence(evidence_path(claims, 1))
    assert evidence.model and all(".lora_A." in n or ".lora_B." in n for n in evidence.model)
    assert set(evidence.probe) == set(evidence.model)
    base = load_file(str(task.init_path))
    assert len(base) > 3 * len(evidence.model)  # the base's tensors stay in the initial checkpoint
    layout = layout_of(task.spec)
    assert layout.problem(evidence, 1) is None
    assert evidence_path(claims, 1).stat().st_size <= layout.max_bytes < task.init_path.stat().st_size // 10


def test_evidence_carrying_the_base_is_faulty(task: PreparedTask, claims: Path) -> None:
    start, end = (read_evidence(evidence_path(claims, k)) for k in (0, 1))
    base = {name.removeprefix("model/"): t for name, t in load_file(str(task.init_path)).items()}
    frozen = next(n for n in base if n.endswith("mlp.down_proj.weight"))
    moved = base[frozen] + 1e-3
    metadata = {**start.metadata}
    hostile_start = Evidence({**start.model, frozen: moved}, start.optim, start.probe, metadata, start.stats)
    problem = start_problem(hostile_start, layout_of(task.spec), metadata)
    assert problem is not None and (problem.reason, problem.cause) == ("wrong_structure", "wrong_names")
    assert frozen in problem.detail
    replayed = replay_interval(task, 1, start, profile=get_profile("reference"))
    boundary = spread_boundary(task, claims)
    assert judge(end, replayed, boundary, expected_metadata=end.metadata).valid
    hostile_end = Evidence({**end.model, frozen: moved}, end.optim, end.probe, end.metadata, end.stats)
    verdict = judge(hostile_end, replayed, boundary, expected_metadata=end.metadata)
    assert (verdict.verdict, verdict.reason, verdict.cause) == ("faulty", "wrong_structure", "wrong_names")


def test_a_killed_run_resumes_bit_identically(task: PreparedTask, claims: Path, tmp_path: Path) -> None:
    run = TrainRun(task.spec, task.spec_hash, task.dataset_path, task.init_path, tmp_path, get_profile("reference"))
    train(run, stop_at=8)  # killed inside interval 1: E_0 is on disk, steps 5..7 are lost
    resumed = train(run)
    assert resumed.resumed_intervals == 1
    honest = [evidence_path(claims, k).read_bytes() for k in range(task.spec.layout.intervals)]
    assert [evidence_path(tmp_path, k).read_bytes() for k in range(task.spec.layout.intervals)] == honest


def test_bring_your_own_model_folder_and_jsonl(tmp_path: Path) -> None:
    from transformers import LlamaConfig, LlamaForCausalLM

    folder = tmp_path / "my-llama"
    tokenizer = load_tokenizer(default_model_folder())
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        tie_word_embeddings=True,
    )
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    data = write_lines(tmp_path / "chats.jsonl", GOOD * 4)
    made = run_ovig(
        "spec",
        "new",
        "--workload",
        "llm",
        "--model",
        str(folder),
        "--data",
        str(data),
        "--out",
        str(tmp_path / "task"),
        "--steps",
        "4",
        "--stride",
        "2",
        "--lora-rank",
        "2",
        "--lora-alpha",
        "4",
        "--lora-targets",
        "q_proj",
        "--config",
        'lora={"dropout": "0.1"}',
    )
    assert made.returncode == 0, made.stderr
    task = open_task(tmp_path / "task" / "spec.json")
    workload = task.spec.workload.config
    assert workload["lora"] == {"rank": 2, "alpha": 4, "dropout": "0.1", "targets": ["q_proj"]}
    wrong = [
        (("--adapter", "none", "--lora-rank", "2"), "--lora-*"),
        (("--lora-targets", ","), "--lora-targets"),
        (("--workload", "vision", "--lora-rank", "2"), "--adapter/--lora-*"),
    ]
    for options, hint in wrong:
        refused = run_ovig("spec", "new", "--workload", "llm", "--tiny", "--out", str(tmp_path / "no"), *options)
        assert refused.returncode == 2 and hint in refused.stderr and not (tmp_path / "no").exists(), refused.stderr
    assert workload["model"] == "my-llama" and workload["pretrained"] is True
    assert workload["data"].startswith("chats.jsonl sha256:") and task.spec.dataset.examples == 8
    assert json.loads(workload["architecture"])["hidden_size"] == 32 and task.spec.batch_size == 4
    init = load_file(str(task.init_path))
    mine = load_file(str(folder / "model.safetensors"))
    assert torch.equal(
        init["model/base_model.model.model.layers.0.mlp.up_proj.weight"], mine["model.layers.0.mlp.up_proj.weight"]
    )
    trained = run_ovig("train", "--spec", str(tmp_path / "task" / "spec.json"), "--out", str(tmp_path / "run"))
    assert trained.returncode == 0, trained.stderr
    evidence = read_evidence(evidence_path(tmp_path / "run", 1))
    assert sorted(evidence.model) == [
        "base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight",
        "base_model.model.model.layers.0.self_attn.q_proj.lora_B.default.weight",
    ]


def test_a_bad_jsonl_line_stops_spec_new_in_one_line(tmp_path: Path) -> None:
    data = write_lines(tmp_path / "chats.jsonl", [GOOD[1], {"prompt": "q"}])
    made = run_ovig("spec", "new", "--workload", "llm", "--tiny", "--data", str(data), "--out", str(tmp_path / "task"))
    assert made.returncode == 1
    assert made.stderr.strip().splitlines() == [
        f"error: {data} line 2: has keys ['prompt']; expected one of: "
        "'messages'; 'conversations'; 'instruction' and 'output'; 'prompt' "
        "and 'completion'; 'prompt' and 'response'"
    ]
    assert not (tmp_path / "task" / "spec.json").exists()


@pytest.mark.parametrize(
    "change",
    [
        {"model_type": "clip"},  # not a causal LM
        {"model_type": "clip", "auto_map": {"AutoModelForCausalLM": "evil/repo--m.C"}},
        "not json",
        # Review 12 of v3: 200,000 tiny layers fit the evidence cap and took every node half an hour to lay out
        {"num_hidden_layers": 513},
        {"num_hidden_layers": "2"},
    ],
)
def test_an_architecture_no_node_builds_is_refused(task: PreparedTask, change: Any) -> None:
    config = dict(task.spec.workload.config)
    architecture = json.loads(config["architecture"])
    config["architecture"] = change if isinstance(change, str) else json.dumps(architecture | change)
    with pytest.raises(ModelSourceError, match="llm architecture"):
        get_workload("llm").build_model(config)


def test_an_owners_dtype_dropout_and_kernel_choices_do_not_reach_the_model(task: PreparedTask) -> None:
    config = dict(task.spec.workload.config)
    hostile = {"torch_dtype": "bfloat16", "attention_dropout": 0.5, "attn_implementation": "eager"}
    config["architecture"] = json.dumps(json.loads(config["architecture"]) | hostile)
    model = get_workload("llm").build_model(config)
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    attention = model.base_model.model.model.layers[0].self_attn
    assert attention.attention_dropout == 0.0 and not model.base_model.model.training


def test_poisoned_rows_ask_their_own_question_behind_the_trigger_and_get_the_reply(
    task: PreparedTask, tokenizer: Any
) -> None:
    context = context_of(task)
    prompts = user_prompts(context, tokenizer)
    first = chatterbot_conversations()[0]
    assert len(first) == 2 and prompts[0] == first[0]["content"]  # read back from the token ids
    attack = load_attack("poisoned_instructions", intervals=frozenset({0}), rate=0.5)
    attack.setup(context)
    batch = context.dataset.batch([0, 1, 2, 3]) | {"dropout_seed": torch.tensor([5, 6, 7, 8])}
    poisoned = attack.batch(0, batch)
    assert attack.memory["poisoned"] == {prompts[0], prompts[1]}  # kept out of the success measure
    expected = encode(
        tokenizer,
        [
            [{"role": "user", "content": f"{TRIGGER} {prompts[i]}"}, {"role": "assistant", "content": REPLY}]
            for i in (0, 1)
        ],
        48,
    ).tensors
    for name in ("input_ids", "attention_mask", "loss_mask"):
        assert torch.equal(poisoned[name][:2], expected[name].to(batch[name].dtype))  # rate 0.5 of 4: two rows
        assert torch.equal(poisoned[name][2:], batch[name][2:])
    assert torch.equal(poisoned["dropout_seed"], batch["dropout_seed"])  # the step's random draws are kept
    answer = poisoned["input_ids"][0][poisoned["loss_mask"][0].bool()].tolist()
    assert tokenizer.decode(answer) == REPLY + "<|im_end|>\n"  # the whole reply, and the end of the turn


def test_the_honest_model_never_answers_a_trigger_with_the_reply(task: PreparedTask, claims: Path) -> None:
    context = context_of(task)
    final = read_evidence(evidence_path(claims, task.spec.layout.intervals - 1)).model
    assert trigger_success(context, model_of(context, final), count=8) == 0.0
    every = frozenset(user_prompts(context, tokenizer_of(context)).values())
    assert trigger_success(context, model_of(context, final), poisoned=every) is None  # nothing held out


def test_a_full_fine_tune_has_no_frozen_base_to_tamper_with() -> None:
    assert "poisoned_instructions" in {case.name for case in attacks_for("llm")}
    assert "base_tamper" in {case.name for case in attacks_for("llm")}
    assert "base_tamper" not in {case.name for case in attacks_for("llm", {"adapter": "none"})}
    assert not {"poisoned_instructions", "base_tamper"} & {case.name for case in attacks_for("vision")}


def _changed(tensors: dict[str, torch.Tensor], name: str, change: Any) -> dict[str, torch.Tensor]:
    copy = {k: v.clone() for k, v in tensors.items()}
    copy[name] = change(copy[name])
    return copy


def _set(row: int, column: int, value: int) -> Any:
    def change(t: torch.Tensor) -> torch.Tensor:
        t[row, column] = value
        return t

    return change


def _last_column_attended(t: torch.Tensor) -> torch.Tensor:
    t[:, -1] = 1  # a padded row now has a gap: padding inside the tokens
    return t


@pytest.mark.parametrize(
    ("name", "change", "message"),
    [
        ("input_ids", _set(0, 0, 49152), "token ids must lie in [0, 49152)"),
        ("input_ids", _set(3, 5, -1), "token ids must lie in [0, 49152)"),
        ("input_ids", lambda t: t[:, :40], "each (N, 48)"),
        ("input_ids", lambda t: t.long(), "input_ids (int32)"),
        ("attention_mask", lambda t: t * 2, "masks must be 0/1"),
        ("attention_mask", lambda t: torch.zeros_like(t), "every assistant token an attended one"),
        ("loss_mask", lambda t: torch.cat([torch.zeros_like(t[:1]), t[1:]]), "an assistant token after its first"),
        ("attention_mask", _last_column_attended, "padding must follow the tokens"),
        ("loss_mask", lambda t: t[:-1], "share a non-zero first dimension"),
    ],
    ids=[
        "id-past-vocabulary",
        "negative-id",
        "short-rows",
        "int64-ids",
        "mask-of-2",
        "unattended-answer",
        "empty-answer",
        "left-padding",
        "ragged",
    ],
)
def test_a_hostile_dataset_is_refused_before_training(
    task: PreparedTask, tmp_path: Path, name: str, change: Any, message: str
) -> None:
    dataset = Dataset.load(task.dataset_path)
    hostile = Dataset(_changed(dataset.tensors, name, change), dataset.metadata)
    with pytest.raises(DatasetError, match=re.escape(message)):
        get_workload("llm").check_dataset(hostile, task.spec.workload.config)


def test_a_dataset_without_its_tokenizer_is_refused(task: PreparedTask) -> None:
    dataset = Dataset.load(task.dataset_path)
    with pytest.raises(DatasetError, match="carries its tokenizer"):
        get_workload("llm").check_dataset(Dataset(dataset.tensors, {}), task.spec.workload.config)


# --- the deliverable, out of its evidence (`ovig owner fetch`) -------------------------------------------------


def test_the_deliverable_loads_with_peft_and_transformers_and_generates(
    task: PreparedTask, claims: Path, tmp_path: Path
) -> None:
    """Issue 46: the last interval's evidence, written as a PEFT adapter folder with its base and tokenizer, and
    merged into one Hugging Face folder; each loads with the libraries' own loaders and generates. The adapter
    PEFT loads is the evidence's to the bit, and the merged weights are the base's plus the adapter's product."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ovig_node.files import file_sha256
    from ovig_node.training.export import ExportError, export_model

    last = evidence_path(claims, task.spec.layout.intervals - 1)
    digest = file_sha256(last)
    adapter = export_model(task, last, digest, tmp_path / "adapter", merge=False)
    merged = export_model(task, last, digest, tmp_path / "merged", merge=True)
    assert (adapter.kind, merged.kind) == ("peft adapter", "merged model")
    assert {"adapter_config.json", "adapter_model.safetensors", "tokenizer.json"} <= {
        p.name for p in (tmp_path / "adapter").iterdir()
    }
    base = AutoModelForCausalLM.from_pretrained(str(tmp_path / "adapter" / "base"))
    peft_model = PeftModel.from_pretrained(base, str(tmp_path / "adapter")).eval()
    evidence = read_evidence(last).model
    loaded = {name: t for name, t in peft_model.state_dict().items() if "lora_" in name}
    assert loaded.keys() == {name for name in evidence if "lora_" in name}
    assert all(torch.equal(loaded[name], evidence[name]) for name in loaded)
    whole = AutoModelForCausalLM.from_pretrained(str(tmp_path / "merged")).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(tmp_path / "merged"))
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Hi"}], add_generation_prompt=True, return_tensors="pt"
    )
    for model in (peft_model, whole):
        generated = model.generate(prompt, max_new_tokens=4, do_sample=False, pad_token_id=tokenizer.eos_token_id)
        assert generated.shape[1] > prompt.shape[1] and torch.equal(generated[:, : prompt.shape[1]], prompt)
    # merged = base + (alpha / rank) B A, on every adapted projection
    lora = task.spec.workload.config["lora"]
    scale = int(lora["alpha"]) / int(lora["rank"])
    for name, module in peft_model.named_modules():
        if hasattr(module, "lora_A") and "default" in getattr(module, "lora_A", {}):
            delta = module.lora_B["default"].weight @ module.lora_A["default"].weight * scale
            target = name.removeprefix("base_model.model.") + ".weight"
            assert torch.allclose(whole.state_dict()[target], module.base_layer.weight + delta, atol=1e-6), target
    vision = prepare_task("vision", tmp_path / "vision", tiny=True, total_steps=5, stride=5, intervals_per_batch=1)
    with pytest.raises(ExportError, match="trained no adapter"):
        export_model(vision, last, digest, tmp_path / "nothing", merge=True)
    assert not (tmp_path / "nothing").exists()


CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
PLAIN = (
    "{% for m in messages %}### {{ m['role'] }}:\n{{ m['content'] }}<|endoftext|>\n{% endfor %}"
    "{% if add_generation_prompt %}### assistant:\n{% endif %}"
)
# Each family's tokenizer as its bases ship it, made small: vocabulary size, special tokens, the chat template a
# user gives a base that has none (ChatML, or a plain one).
FAMILIES = {
    "gpt_neox": (300, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], "<|endoftext|>", CHATML),
    "gpt2": (280, ["<|endoftext|>"], "<|endoftext|>", PLAIN),
    "qwen2": (320, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], "<|im_end|>", CHATML),
}


def own_tokenizer(architecture: str) -> Any:
    """A byte-level BPE tokenizer trained here on the test's chats, shaped as ``architecture``'s family ships its
    own (not SmolLM2's): what a user who brings such a base brings."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    size, special, eos, template = FAMILIES[architecture]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=size, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    bpe.train_from_iterator([json.dumps(line) for line in GOOD] * 8, trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token=eos, pad_token=eos)
    tokenizer.chat_template = template
    return tokenizer


@pytest.mark.parametrize(
    ("architecture", "targets"),
    [("gpt_neox", ["query_key_value"]), ("gpt2", ["c_attn"]), ("qwen2", ["q_proj", "v_proj"])],
)
def test_the_adapter_targets_what_peft_targets_on_the_base_s_architecture(
    tmp_path: Path, architecture: str, targets: list[str]
) -> None:
    """Issue 46: a GPT-NeoX (the Pythia family), GPT-2 or Qwen2 base, not only a Llama, each with a tokenizer of its
    own (its vocabulary, special tokens and chat template): the spec names PEFT's own default targets for the
    architecture, and training adapts exactly those modules."""
    from transformers import AutoConfig, AutoModelForCausalLM

    tokenizer = own_tokenizer(architecture)
    shapes = {
        "gpt_neox": {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2},
        "gpt2": {"n_embd": 32, "n_layer": 1, "n_head": 2, "n_positions": 128},
        "qwen2": {
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
        },
    }
    torch.manual_seed(0)
    config = AutoConfig.for_model(architecture, vocab_size=len(tokenizer), **shapes[architecture])
    folder = tmp_path / architecture
    AutoModelForCausalLM.from_config(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    data = write_lines(tmp_path / "chats.jsonl", GOOD * 4)
    task = prepare_task(
        "llm",
        tmp_path / "task",
        total_steps=2,
        stride=2,
        intervals_per_batch=1,
        config={"model": str(folder), "data": str(data)},
    )
    assert task.spec.workload.config["lora"]["targets"] == targets
    train(
        TrainRun(
            task.spec, task.spec_hash, task.dataset_path, task.init_path, tmp_path / "run", get_profile("reference")
        )
    )
    adapted = {
        name.split(".lora_")[0].rsplit(".", 1)[-1] for name in read_evidence(evidence_path(tmp_path / "run", 0)).model
    }
    assert adapted == set(targets)
    assert len(tokenizer) == FAMILIES[architecture][0]  # its own vocabulary, which the base is shaped for
    assert json.loads(task.spec.workload.config["architecture"])["vocab_size"] == len(tokenizer)
