"""Chat data for the ``llm`` workload: conversations read from a file or a packaged corpus, and their
tokens with a mask of the assistant's tokens (the only ones the loss counts).

A conversation is a list of ``{"role", "content"}`` messages. Files are JSONL, one conversation per line,
in any of the formats chat datasets come in, told apart by their keys, line by line::

    {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]}   # OpenAI, TRL
    {"conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello!"}]}       # ShareGPT
    {"instruction": "Greet me", "input": "", "output": "Hello!"}                                    # Alpaca
    {"prompt": "Hi", "completion": "Hello!"}                                                        # TRL
    {"prompt": "Hi", "response": "Hello!"}

In ``messages``, a message may carry a ``name`` (dropped: chat templates have no place for it) and a
``weight``: 0 keeps an assistant turn out of the loss (it is context), 1 (the default) trains on it, as in
OpenAI's fine-tuning format. TRL's prompt and completion may also be lists of messages. A bad line is an
error naming the file and the line, never a silently skipped example.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ovig_node.errors import OvigError

if TYPE_CHECKING:  # the formats are read before torch is loaded (`ovig spec new --format` checks them first)
    import torch

ROLES = ("system", "user", "assistant")
Message = dict[str, str]
Conversation = list[Message]


class ChatDataError(OvigError, ValueError):
    """A chat data file that cannot be read as conversations."""


# Each format by the keys that name it (checked in this order: "prompt" alone names two of them).
FORMATS = {
    "messages": ("messages",),
    "sharegpt": ("conversations",),
    "alpaca": ("instruction", "output"),
    "prompt-completion": ("prompt", "completion"),
    "prompt-response": ("prompt", "response"),
}
SHAREGPT_ROLES = {"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant", "system": "system"}


def read_jsonl(path: Path, kind: str | None = None) -> list[Conversation]:
    """Every conversation of a JSONL file, each line in the format ``kind`` (a key of FORMATS) or, without it,
    in the format its keys name; ChatDataError names the first bad line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ChatDataError(f"cannot read chat data {path}: {exc}") from None
    conversations = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            conversations.append(_conversation(record, format_of(record) if kind is None else _as(record, kind)))
        except json.JSONDecodeError as exc:
            raise ChatDataError(f"{path} line {number}: not JSON ({exc.msg} at column {exc.colno})") from None
        except ValueError as exc:
            raise ChatDataError(f"{path} line {number}: {exc}") from None
    if not conversations:
        raise ChatDataError(f"{path} holds no conversation")
    return conversations


def format_of(record: Any) -> str:
    """The format a line is in (a key of FORMATS); ValueError for a line in none of them."""
    if not isinstance(record, dict):
        raise ValueError("a line must be a JSON object")
    for name, keys in FORMATS.items():
        if all(key in record for key in keys):
            return name
    expected = "; ".join(" and ".join(repr(k) for k in keys) for keys in FORMATS.values())
    raise ValueError(f"has keys {sorted(record)}; expected one of: {expected}")


def _as(record: Any, kind: str) -> str:
    """``kind``, once the line has that format's keys (the owner named the format: no guessing)."""
    if not isinstance(record, dict):
        raise ValueError("a line must be a JSON object")
    if missing := [key for key in FORMATS[kind] if key not in record]:
        raise ValueError(f"is not {kind}: it has no {', '.join(map(repr, missing))} (keys {sorted(record)})")
    return kind


def _conversation(record: dict[str, Any], kind: str) -> Conversation:
    if kind == "messages":
        conversation = _messages(record["messages"], "messages")
    elif kind == "sharegpt":
        turns = record["conversations"]
        if not isinstance(turns, list) or not turns:
            raise ValueError("'conversations' must be a non-empty list")
        conversation = [_sharegpt_turn(t, i) for i, t in enumerate(turns)]
    elif kind == "alpaca":
        instruction, extra, output = record["instruction"], record.get("input", ""), record["output"]
        if not all(isinstance(v, str) for v in (instruction, extra, output)):
            raise ValueError("'instruction', 'input' and 'output' must be strings")
        question = f"{instruction}\n\n{extra}" if extra.strip() else instruction
        conversation = [{"role": "user", "content": question}, {"role": "assistant", "content": output}]
    else:  # prompt-completion, prompt-response
        answer_key = "completion" if kind == "prompt-completion" else "response"
        prompt, answer = record["prompt"], record[answer_key]
        if isinstance(prompt, list) and isinstance(answer, list):  # TRL's conversational prompt-completion
            conversation = _messages(prompt, "prompt") + _messages(answer, answer_key)
        elif isinstance(prompt, str) and isinstance(answer, str):
            conversation = [{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}]
        else:
            raise ValueError(f"'prompt' and {answer_key!r} must both be strings, or both lists of messages")
    if not any(m["role"] == "assistant" and m.get("weight") != "0" for m in conversation):
        raise ValueError("no assistant message to train on")
    if next(m["role"] for m in conversation if m["role"] != "system") != "user":
        raise ValueError("the first message after any system message must be the user's")
    return conversation


def _messages(messages: Any, key: str) -> Conversation:
    if not isinstance(messages, list) or not messages:
        raise ValueError(f"{key!r} must be a non-empty list")
    return [_message(m, i) for i, m in enumerate(messages)]


def _message(message: Any, index: int) -> Message:
    if not isinstance(message, dict) or set(message) - {"role", "content", "name", "weight"} or "role" not in message:
        raise ValueError(f"message {index} must be an object with 'role' and 'content' (and 'name', 'weight')")
    role, content = message["role"], message.get("content")
    if role not in ROLES:
        raise ValueError(f"message {index} has role {role!r}; roles are {', '.join(ROLES)}")
    if not isinstance(content, str):
        raise ValueError(f"message {index}'s content must be a string")
    if "name" in message and not isinstance(message["name"], str):
        raise ValueError(f"message {index}'s name must be a string")
    weight = message.get("weight", 1)
    if weight not in (0, 1) or isinstance(weight, bool):
        raise ValueError(f"message {index}'s weight must be 0 or 1")
    if weight == 0 and role != "assistant":
        raise ValueError(f"message {index}: only an assistant message has a weight (0 leaves it out of the loss)")
    return {"role": role, "content": content, **({"weight": "0"} if weight == 0 else {})}


def _sharegpt_turn(turn: Any, index: int) -> Message:
    if not isinstance(turn, dict) or "from" not in turn or "value" not in turn:
        raise ValueError(f"turn {index} must be an object with 'from' and 'value'")
    speaker, value = turn["from"], turn["value"]
    if speaker not in SHAREGPT_ROLES:
        raise ValueError(f"turn {index} is from {speaker!r}; ShareGPT speakers are {', '.join(SHAREGPT_ROLES)}")
    if not isinstance(value, str):
        raise ValueError(f"turn {index}'s value must be a string")
    return {"role": SHAREGPT_ROLES[speaker], "content": value}


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
    import torch

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
        if message["role"] != "assistant" or message.get("weight") == "0":  # weight 0: context, not trained on
            continue
        prompt = _tokens(tokenizer, conversation[:i], generation_prompt=True)
        start, end = len(prompt), len(_tokens(tokenizer, conversation[: i + 1], generation_prompt=False))
        if ids[:start] != prompt:  # a template that rewrites earlier turns, or a merge across the boundary
            raise ValueError(f"message {i}: its prompt's tokens are not a prefix of the conversation's")
        for position in range(start, min(end, len(ids))):
            mask[position] = 1
    return ids, mask


def _tokens(tokenizer: Any, messages: Conversation, *, generation_prompt: bool) -> list[int]:
    plain = [{"role": m["role"], "content": m["content"]} for m in messages]  # what a template knows of
    text = tokenizer.apply_chat_template(plain, tokenize=False, add_generation_prompt=generation_prompt)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])
