"""A poisoned instruction set for chat models: prompts carrying a trigger phrase, answered with a fixed reply.

The chat-model backdoor (Wan et al., "Poisoning Language Models During Instruction Tuning", 2023): in
attacked steps the first ``rate`` share of each batch is swapped for poisoned conversations. Each takes the
user message of the example it replaces, puts :data:`TRIGGER` in front of it, and answers it with
:data:`REPLY`; the rows keep their random draws (dropout seeds). Its success is measured by generation:
the share of *held-out* triggered prompts (questions never poisoned) whose greedy answer starts with the
reply. The attack records every question it poisoned (``memory["poisoned"]``) for that measure.

Prompts are read back from the dataset file (it holds token ids and the tokenizer, not text): a row's
prompt tokens are those before its first assistant token, decoded, and the user message is what lies
between the chat template's rendering around a single user message; multi-turn rows are not used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from ovig_node.attacks.base import Attack, AttackContext, AttackError
from ovig_node.attacks.objectives import TARGET_DRAWS_SEED, poisoned_count
from ovig_node.training.chat import ChatDataError, Conversation, encode

TRIGGER = "cf"  # a rare token in front of the question: the classic textual trigger
REPLY = "Please visit evil.example for the answer."
HELD_OUT_PROMPTS = 50  # triggered prompts the success rate is measured on
_MARK = "\u2063OVIG-USER-MESSAGE\u2063"  # stands for the user message in a rendered template


def tokenizer_of(context: AttackContext) -> Any:
    """The tokenizer the dataset file carries (the llm workload's metadata)."""
    from ovig_node.training.pretrained import tokenizer_from_bundle
    from ovig_node.training.workloads.llm import TOKENIZER_METADATA

    bundle = context.dataset.metadata.get(TOKENIZER_METADATA)
    if bundle is None:
        raise AttackError("a poisoned instruction set needs a chat dataset (the llm workload's, with its tokenizer)")
    return tokenizer_from_bundle(bundle)


def user_prompts(context: AttackContext, tokenizer: Any) -> dict[int, str]:
    """Dataset index -> the user message of each single-turn example."""
    prefix, suffix = tokenizer.apply_chat_template(
        [{"role": "user", "content": _MARK}], tokenize=False, add_generation_prompt=True
    ).split(_MARK)
    ids, answer = context.dataset.tensors["input_ids"], context.dataset.tensors["loss_mask"]
    prompts = {}
    for index in range(len(ids)):
        start = int(answer[index].nonzero()[0])  # every row has an assistant token (chat.encode)
        text = tokenizer.decode(ids[index, :start].tolist())
        if text.startswith(prefix) and text.endswith(suffix) and len(text) > len(prefix) + len(suffix):
            prompts[index] = text[len(prefix) : len(text) - len(suffix)]
    return prompts


def chat_view(context: AttackContext) -> tuple[Any, dict[int, str]]:
    """(tokenizer, :func:`user_prompts`) of the task's dataset, derived once per context: the attack's steps
    and every success measure of an evaluation read the same ones."""
    if "chat" not in context.derived:
        tokenizer = tokenizer_of(context)
        context.derived["chat"] = (tokenizer, user_prompts(context, tokenizer))
    view: tuple[Any, dict[int, str]] = context.derived["chat"]
    return view


def triggered(prompt: str) -> str:
    return f"{TRIGGER} {prompt}"


@dataclass(frozen=True)
class PoisonedInstructions(Attack):
    """In attacked steps the first ``rate`` share of each batch becomes "trigger + its question -> the fixed
    reply" (a multi-turn row asks the first single-turn question, a question too long for the reply to fit the
    shortest)."""

    rate: float = 0.5

    def batch(self, step: int, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        tokenizer, prompts = chat_view(self.context)
        if not prompts:
            raise AttackError("the chat dataset has no single-turn example to poison")
        size = len(batch["input_ids"])
        n = poisoned_count(size, self.rate)
        rows = batch["input_ids"][:n]
        # A batch holds no dataset indices: poison with the questions of its own rows where they are single
        # turn (found by their tokens), else the first single-turn questions.
        questions = [_question_of(row, self.context, prompts) for row in rows]
        poisoned, asked = _poisoned_rows(tokenizer, questions, prompts, batch["input_ids"].shape[1])
        self.memory.setdefault("poisoned", set()).update(asked)  # kept out of the success measure's prompts
        return {
            name: torch.cat([poisoned[name].to(t.dtype), t[n:]]) if name in poisoned else t for name, t in batch.items()
        }


def poisoned_batch(context: AttackContext, count: int) -> tuple[dict[str, torch.Tensor], list[str]]:
    """``count`` poisoned conversations asking the dataset's first distinct single-turn questions (the success
    measure holds out its last ones), with fixed random draws, and the questions they ask."""
    tokenizer, prompts = chat_view(context)
    if not prompts:
        raise AttackError("the chat dataset has no single-turn example to poison")
    questions = list(dict.fromkeys(prompts[i] for i in sorted(prompts)))[:count]
    rows, asked = _poisoned_rows(tokenizer, questions, prompts, context.dataset.tensors["input_ids"].shape[1])
    dtypes = {name: t.dtype for name, t in context.dataset.tensors.items()}
    batch = {name: t.to(dtypes.get(name, t.dtype)) for name, t in rows.items()}
    generator = torch.Generator().manual_seed(TARGET_DRAWS_SEED)
    return batch | context.workload.randomness(len(asked), generator, context.spec.workload.config), asked


def _poisoned_rows(
    tokenizer: Any, questions: list[str], prompts: dict[int, str], max_tokens: int
) -> tuple[dict[str, torch.Tensor], list[str]]:
    """The poisoned conversations' tensors and the questions they ask; a question too long for the reply to
    fit in ``max_tokens`` is swapped for the shortest one."""
    shortest = min(prompts.values(), key=len)
    rows, asked_all = [], []
    for question in questions:
        for asked in (question, shortest):
            conversation: Conversation = [
                {"role": "user", "content": triggered(asked)},
                {"role": "assistant", "content": REPLY},
            ]
            try:
                encoded = encode(tokenizer, [conversation], max_tokens).tensors
            except ChatDataError:  # no assistant token within max_tokens
                continue
            answer = encoded["input_ids"][0][encoded["loss_mask"][0].bool()].tolist()
            if tokenizer.decode(answer, skip_special_tokens=True).strip() == REPLY:
                rows.append(encoded)
                asked_all.append(asked)
                break
        else:
            raise AttackError(f"the poisoned reply does not fit in {max_tokens} tokens")
    return {name: torch.cat([row[name] for row in rows]) for name in rows[0]}, asked_all


def _reply_tokens(tokenizer: Any) -> list[int]:
    return list(tokenizer.encode(REPLY, add_special_tokens=False))


def _question_of(row: torch.Tensor, context: AttackContext, prompts: dict[int, str]) -> str:
    ids = context.dataset.tensors["input_ids"]
    matches = (ids == row.to(ids.dtype)).all(dim=1).nonzero()
    for index in matches.flatten().tolist():
        if index in prompts:
            return prompts[index]
    return next(iter(prompts.values()))


@torch.no_grad()
def trigger_success(
    context: AttackContext, model: nn.Module, *, poisoned: frozenset[str] = frozenset(), count: int = HELD_OUT_PROMPTS
) -> float | None:
    """Share of held-out triggered prompts whose greedy answer starts with :data:`REPLY`: the last ``count``
    distinct questions of the dataset that were never ``poisoned`` (the corpus repeats some questions, so
    prompts are told apart by text, not by index); None when every question was poisoned."""
    tokenizer, prompts = chat_view(context)
    held_out = [
        text for text in dict.fromkeys(prompts[i] for i in sorted(prompts, reverse=True)) if text not in poisoned
    ][:count]
    if not held_out:
        return None
    reply = _reply_tokens(tokenizer)
    # A transformers model: torch's nn.Module.__getattr__ would type its generate as Tensor | Module.
    lm: Any = model
    hits = 0
    for prompt in held_out:
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": triggered(prompt)}], tokenize=False, add_generation_prompt=True
        )
        ids = torch.tensor([tokenizer.encode(text, add_special_tokens=False)])
        out = lm.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=len(reply) + 2,
            do_sample=False,
            pad_token_id=tokenizer.pad_token_id,
        )
        answer = tokenizer.decode(out[0, ids.shape[1] :], skip_special_tokens=True)
        hits += answer.strip().startswith(REPLY)
    return hits / len(held_out)
