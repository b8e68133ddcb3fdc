"""Chat data for the ``llm`` workload: conversations read from a file or a packaged corpus, and their
tokens with a mask of the assistant's tokens (the only ones the loss counts).

A conversation is a list of ``{"role", "content"}`` messages. Files are JSONL, one conversation per line,
in either of the two formats TRL and the Hugging Face chat datasets use::

    {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]}
    {"prompt": "Hi", "response": "Hello!"}

A bad line is an error naming the file and the line, never a silently skipped example.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ovig_node.errors import OvigError

ROLES = ("system", "user", "assistant")
Message = dict[str, str]
Conversation = list[Message]


class ChatDataError(OvigError, ValueError):
    """A chat data file that cannot be read as conversations."""


def read_jsonl(path: Path) -> list[Conversation]:
    """Every conversation of a JSONL file; ChatDataError names the first bad line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ChatDataError(f"cannot read chat data {path}: {exc}") from None
    conversations = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            conversations.append(_conversation(json.loads(line)))
        except json.JSONDecodeError as exc:
            raise ChatDataError(f"{path} line {number}: not JSON ({exc.msg} at column {exc.colno})") from None
        except ValueError as exc:
            raise ChatDataError(f"{path} line {number}: {exc}") from None
    if not conversations:
        raise ChatDataError(f"{path} holds no conversation")
    return conversations


def _conversation(record: Any) -> Conversation:
    if not isinstance(record, dict):
        raise ValueError("a line must be a JSON object with 'messages', or 'prompt' and 'response'")
    if "messages" in record:
        messages = record["messages"]
        if not isinstance(messages, list) or not messages:
            raise ValueError("'messages' must be a non-empty list")
        conversation = [_message(m, i) for i, m in enumerate(messages)]
    elif "prompt" in record and "response" in record:
        prompt, response = record["prompt"], record["response"]
        if not isinstance(prompt, str) or not isinstance(response, str):
            raise ValueError("'prompt' and 'response' must be strings")
        conversation = [{"role": "user", "content": prompt}, {"role": "assistant", "content": response}]
    else:
        raise ValueError(f"has keys {sorted(record)}; expected 'messages', or 'prompt' and 'response'")
    if not any(m["role"] == "assistant" for m in conversation):
        raise ValueError("no assistant message: nothing to train on")
    if next(m["role"] for m in conversation if m["role"] != "system") != "user":
        raise ValueError("the first message after any system message must be the user's")
    return conversation


def _message(message: Any, index: int) -> Message:
    if not isinstance(message, dict) or set(message) - {"role", "content"} or "role" not in message:
        raise ValueError(f"message {index} must be an object with 'role' and 'content' only")
    role, content = message["role"], message.get("content")
    if role not in ROLES:
        raise ValueError(f"message {index} has role {role!r}; roles are {', '.join(ROLES)}")
    if not isinstance(content, str):
        raise ValueError(f"message {index}'s content must be a string")
    return {"role": role, "content": content}


def chatterbot_conversations(language: str = "english") -> list[Conversation]:
    """The question/answer pairs (and longer exchanges) of the ``chatterbot-corpus`` package, user and
    assistant alternating, in file and line order. The package is read as data, never imported."""
    import yaml

    spec = importlib.util.find_spec("chatterbot_corpus")
    if spec is None or spec.origin is None:
        raise ChatDataError("the llm workload's default data needs chatterbot-corpus 1.3.3 (make setup)")
    folder = Path(spec.origin).parent / "data" / language
    conversations = []
    for path in sorted(folder.glob("*.yml")):
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        for turns in document.get("conversations", []):
            texts = [str(t).strip() for t in turns if t is not None and str(t).strip()]
            if len(texts) >= 2:
                roles = ("user", "assistant")
                conversations.append([{"role": roles[i % 2], "content": t} for i, t in enumerate(texts)])
    return conversations


@dataclass(frozen=True)
class Encoded:
    tensors: dict[str, torch.Tensor]  # input_ids (N, T) int32, attention_mask and loss_mask (N, T) uint8
    dropped: int  # conversations left out: no assistant token within the sequence length


def encode(tokenizer: Any, conversations: list[Conversation], max_tokens: int) -> Encoded:
    """Token ids of each conversation in the tokenizer's chat template, cut to ``max_tokens`` and padded,
    with the assistant's tokens marked. A conversation whose assistant tokens all fall past the cut is
    dropped (its loss would be empty)."""
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    rows: list[tuple[list[int], list[int]]] = []
    dropped = 0
    for number, conversation in enumerate(conversations, start=1):
        try:
            ids, mask = _with_assistant_mask(tokenizer, conversation)
        except Exception as exc:  # a template's own checks (roles must alternate, ...) raise what they like
            raise ChatDataError(f"conversation {number}: the chat template cannot render it: {exc}") from None
        ids, mask = ids[:max_tokens], mask[:max_tokens]
        if not any(mask):
            dropped += 1
            continue
        rows.append((ids, mask))
    if not rows:
        raise ChatDataError(f"no conversation has an assistant token within {max_tokens} tokens")
    size = (len(rows), max_tokens)
    input_ids = torch.full(size, pad, dtype=torch.int32)
    attention = torch.zeros(size, dtype=torch.uint8)
    loss_mask = torch.zeros(size, dtype=torch.uint8)
    for row, (ids, mask) in enumerate(rows):
        input_ids[row, : len(ids)] = torch.tensor(ids, dtype=torch.int32)
        attention[row, : len(ids)] = 1
        loss_mask[row, : len(mask)] = torch.tensor(mask, dtype=torch.uint8)
    return Encoded({"input_ids": input_ids, "attention_mask": attention, "loss_mask": loss_mask}, dropped)


def _with_assistant_mask(tokenizer: Any, conversation: Conversation) -> tuple[list[int], list[int]]:
    """The conversation's tokens and a 0/1 mask of its assistant messages' tokens (the end-of-turn token
    included: the model must learn to stop). Spans come from rendering each prefix of the conversation:
    an assistant message spans from the end of the prefix with a generation prompt to the end of the prefix
    holding it."""
    ids = _tokens(tokenizer, conversation, generation_prompt=False)
    mask = [0] * len(ids)
    for i, message in enumerate(conversation):
        if message["role"] != "assistant":
            continue
        prompt = _tokens(tokenizer, conversation[:i], generation_prompt=True)
        start, end = len(prompt), len(_tokens(tokenizer, conversation[: i + 1], generation_prompt=False))
        if ids[:start] != prompt:  # a template that rewrites earlier turns, or a merge across the boundary
            raise ValueError(f"message {i}: its prompt's tokens are not a prefix of the conversation's")
        for position in range(start, min(end, len(ids))):
            mask[position] = 1
    return ids, mask


def _tokens(tokenizer: Any, messages: Conversation, *, generation_prompt: bool) -> list[int]:
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=generation_prompt)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])
