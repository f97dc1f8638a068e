"""The chat-model protocol every backend implements.

A :class:`ChatModel` takes a batch of conversations (lists of ``{"role", "content"}``
messages) and returns one :class:`Completion` per conversation, in order. Per-request
failures (a server that is down, an HTTP 500, a reply that is not JSON, a timeout, a
prompt longer than the model's context) come back as completions with
``finish_reason="error"`` and a readable ``error``: a designer or rollout batch of
hundreds of requests must never crash because one of them failed. Only
misconfiguration found at construction time (a missing file, a bad URL, a missing
optional dependency) raises :class:`~spade_envs.error.SpadeError`.
"""

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from types import TracebackType
from typing import Any

from ..error import SpadeError

__all__ = [
    "FINISH_REASONS",
    "ChatModel",
    "Completion",
    "LLMConfigError",
    "Message",
    "SamplingParams",
    "check_conversation",
    "truncate_at_stop",
]

Message = dict[str, str]
"""One chat message: ``{"role": "system" | "user" | "assistant", "content": "..."}``."""

FINISH_REASONS = ("stop", "length", "error")
_ROLES = ("system", "user", "assistant", "tool")


class LLMConfigError(SpadeError, ValueError):
    """A model client was configured wrongly (bad parameter, missing file or package)."""


@dataclass(frozen=True)
class SamplingParams:
    """How to sample one completion.

    Attributes:
        temperature: Softmax temperature; ``0`` means greedy decoding (top-p is then ignored).
        top_p: Nucleus sampling: sample only from the smallest set of tokens whose
            probability adds up to at least ``top_p``; ``1.0`` disables it.
        max_tokens: The most tokens to generate (the reply stops with
            ``finish_reason="length"`` when it reaches this).
        stop: Strings that end the reply; the text is cut before the first one found,
            and ``finish_reason`` is ``"stop"``.
        seed: Makes sampling reproducible where the backend supports it. In a batch,
            conversation ``i`` is sampled with ``seed + i``, so its reply does not depend
            on what else is in the batch. ``None`` draws fresh randomness.
        json_schema: A JSON Schema (a dict) the reply must be an instance of: the backend
            decodes under it (structured generation), so the reply is that JSON and
            nothing else, unless it is cut at ``max_tokens``. The transformers backend
            uses llguidance (:mod:`spade_envs.llm.structured`), vLLM its structured
            outputs, an OpenAI-compatible server ``response_format``. ``None`` leaves the
            reply free. A copy is stored; it is compared but not hashed.
    """

    temperature: float = 0.7
    top_p: float = 0.95
    max_tokens: int = 512
    stop: tuple[str, ...] = ()
    seed: int | None = None
    # Not hashed: a dict is not hashable, and the other fields tell requests apart well
    # enough for a hash (equality still compares the schema).
    json_schema: dict[str, Any] | None = field(default=None, hash=False)

    def __post_init__(self) -> None:
        # Accept a bare string or a list for convenience, but store an immutable tuple so
        # the dataclass stays hashable and cannot be changed under a running batch.
        stop = self.stop
        if isinstance(stop, str):
            stop = (stop,)
        if not isinstance(stop, (tuple, list)) or not all(isinstance(s, str) for s in stop):
            raise LLMConfigError(
                f"SamplingParams.stop must be a tuple of strings, got {self.stop!r}."
            )
        if any(s == "" for s in stop):
            raise LLMConfigError(
                "SamplingParams.stop contains an empty string, which would end every reply "
                "at once; remove it."
            )
        object.__setattr__(self, "stop", tuple(stop))
        if isinstance(self.temperature, bool) or not isinstance(self.temperature, (int, float)):
            raise LLMConfigError(
                f"SamplingParams.temperature must be a number, got {self.temperature!r}."
            )
        if not math.isfinite(self.temperature) or self.temperature < 0:
            raise LLMConfigError(
                f"SamplingParams.temperature must be finite and >= 0 (0 = greedy), "
                f"got {self.temperature!r}."
            )
        if isinstance(self.top_p, bool) or not isinstance(self.top_p, (int, float)):
            raise LLMConfigError(f"SamplingParams.top_p must be a number, got {self.top_p!r}.")
        if not 0.0 < self.top_p <= 1.0:
            raise LLMConfigError(
                f"SamplingParams.top_p must lie in (0, 1] (1 disables it), got {self.top_p!r}."
            )
        if isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int):
            raise LLMConfigError(
                f"SamplingParams.max_tokens must be an int, got {self.max_tokens!r}."
            )
        if self.max_tokens < 1:
            raise LLMConfigError(
                f"SamplingParams.max_tokens must be at least 1, got {self.max_tokens}."
            )
        if self.seed is not None and (
            isinstance(self.seed, bool) or not isinstance(self.seed, int)
        ):
            raise LLMConfigError(f"SamplingParams.seed must be an int or None, got {self.seed!r}.")
        if self.json_schema is not None:
            object.__setattr__(self, "json_schema", _checked_schema(self.json_schema))

    @property
    def greedy(self) -> bool:
        """Whether decoding is greedy (temperature 0)."""
        return self.temperature == 0

    def seed_for(self, index: int) -> int | None:
        """The seed of batch item ``index``: ``seed + index``, or ``None`` without a seed."""
        return None if self.seed is None else self.seed + index


def _checked_schema(schema: object) -> dict[str, Any]:
    """``schema`` as JSON reads it back (a private copy; tuples become lists), once it is
    a dict with text keys that JSON can hold: the form every backend sends or compiles."""
    if not isinstance(schema, dict):
        raise LLMConfigError(
            f"SamplingParams.json_schema must be a dict (a JSON Schema such as "
            f'{{"type": "object", ...}}), got {type(schema).__name__}; pass None for a free reply.'
        )
    stack: list[object] = [schema]
    while stack:  # JSON would turn a key 1 into "1": a different schema, silently
        item = stack.pop()
        if isinstance(item, dict):
            bad = next((k for k in item if not isinstance(k, str)), None)
            if bad is not None:
                raise LLMConfigError(
                    f"SamplingParams.json_schema is not JSON: the key {bad!r} is not a string."
                )
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    try:
        return json.loads(json.dumps(schema, allow_nan=False))
    except (TypeError, ValueError, RecursionError) as exc:
        raise LLMConfigError(
            f"SamplingParams.json_schema is not JSON ({exc}); use only dicts, lists, strings, "
            "finite numbers, bools and None in it."
        ) from None


@dataclass(frozen=True)
class Completion:
    """One model reply.

    Attributes:
        text: The reply text, cut before any stop string; end-of-sequence tokens are not
            part of it.
        token_ids: The generated token ids, when the backend knows them (an
            OpenAI-compatible server often does not send them: then empty). They include
            the end-of-sequence token when generation ended on one.
        logprobs: Log-probability of each generated token, aligned with ``token_ids``
            (or with the server's tokens when ids are unknown); empty when unavailable.
        finish_reason: ``"stop"`` (end of sequence or a stop string), ``"length"``
            (``max_tokens`` reached) or ``"error"``.
        prompt_token_ids: The tokenized prompt, when known.
        error: What went wrong, when ``finish_reason == "error"``; empty otherwise.
    """

    text: str
    token_ids: tuple[int, ...] = ()
    logprobs: tuple[float, ...] = ()
    finish_reason: str = "stop"
    prompt_token_ids: tuple[int, ...] = ()
    error: str = ""

    def __post_init__(self) -> None:
        if self.finish_reason not in FINISH_REASONS:
            raise LLMConfigError(
                f"Completion.finish_reason must be one of {FINISH_REASONS}, "
                f"got {self.finish_reason!r}."
            )
        if self.finish_reason == "error" and not self.error:
            raise LLMConfigError("A Completion with finish_reason='error' needs an error message.")
        for name in ("token_ids", "logprobs", "prompt_token_ids"):
            value = getattr(self, name)
            if not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))

    @property
    def ok(self) -> bool:
        """Whether the request succeeded (``finish_reason`` is not ``"error"``)."""
        return self.finish_reason != "error"

    @classmethod
    def failed(cls, error: str) -> Completion:
        """A completion that reports ``error`` instead of text."""
        return cls(text="", finish_reason="error", error=error or "unknown error")


def check_conversation(conversation: object) -> str:
    """Return why ``conversation`` is not a list of chat messages, or ``""`` when it is.

    Backends call this per item so that one malformed conversation becomes one error
    completion, not an exception that loses the whole batch.
    """
    if isinstance(conversation, (str, bytes)) or not isinstance(conversation, Sequence):
        return (
            f"a conversation must be a list of {{'role', 'content'}} messages, "
            f"got {type(conversation).__name__}"
        )
    if len(conversation) == 0:
        return "the conversation is empty; give at least one message"
    for i, message in enumerate(conversation):
        if not isinstance(message, dict):
            return f"message {i} is a {type(message).__name__}, not a dict"
        role, content = message.get("role"), message.get("content")
        if role not in _ROLES:
            return f"message {i} has role {role!r}; use one of {', '.join(_ROLES)}"
        if not isinstance(content, str):
            return f"message {i} has content of type {type(content).__name__}; it must be a str"
    return ""


def truncate_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """Cut ``text`` before the earliest stop string.

    Returns:
        The text before the first occurrence of any stop string, and whether one was found.
    """
    cut = -1
    for s in stop:
        at = text.find(s)
        if at != -1 and (cut == -1 or at < cut):
            cut = at
    if cut == -1:
        return text, False
    return text[:cut], True


class ChatModel(ABC):
    """A chat model that answers batches of conversations.

    Subclasses implement :meth:`generate`; :meth:`chat`, :meth:`close` and the context
    manager come for free.

    Attributes:
        name: A short name of the model (what an OpenAI-compatible server lists).
        parameter_count: How many parameters the model has, where the client can know
            (local weights); None for remote models. The designer's ``auto`` mode uses it.
    """

    name: str = "model"
    parameter_count: int | None = None

    @abstractmethod
    def generate(
        self,
        conversations: Sequence[Sequence[Message]],
        params: SamplingParams | None = None,
    ) -> list[Completion]:
        """Answer every conversation.

        Args:
            conversations: The conversations, each a list of ``{"role", "content"}``
                messages ending where the assistant should speak.
            params: Sampling parameters; ``SamplingParams()`` when ``None``.

        Returns:
            One :class:`Completion` per conversation, in the same order. A request that
            fails becomes a completion with ``finish_reason="error"``; this method does
            not raise for such failures.
        """

    def generate_each(
        self,
        conversations: Sequence[Sequence[Message]],
        params: Sequence[SamplingParams],
    ) -> list[Completion]:
        """Answer every conversation under its own sampling parameters.

        What a designer batch needs when each conversation has its own JSON Schema.
        Conversation ``i`` is sampled with ``params[i]`` and seed ``params[i].seed``
        itself (no offset). The backends batch such a call; this default runs
        :meth:`generate` once per run of neighbours whose parameters differ only in
        seeds that count up by one (what :meth:`generate` gives a batch), so a wrapper
        that only implements :meth:`generate` stays correct, if less batched.

        Raises:
            LLMConfigError: ``params`` is not one :class:`SamplingParams` per conversation.
        """
        items = _check_each(conversations, params)
        replies: list[Completion] = []
        start = 0
        while start < len(items):
            end = start + 1
            while end < len(items) and _continues(items[end - 1][1], items[end][1]):
                end += 1
            group = items[start:end]
            replies.extend(self.generate([c for c, _ in group], group[0][1]))
            start = end
        return replies

    def chat(self, messages: Sequence[Message], params: SamplingParams | None = None) -> Completion:
        """Answer one conversation (a batch of one)."""
        return self.generate([messages], params)[0]

    def close(self) -> None:  # noqa: B027 - an optional hook: most clients hold nothing
        """Release what the model holds (memory, connections). Safe to call twice."""

    def __enter__(self) -> ChatModel:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def _check_each(
    conversations: Sequence[Sequence[Message]], params: Sequence[SamplingParams]
) -> list[tuple[Sequence[Message], SamplingParams]]:
    """Pairs of (conversation, its params) for :meth:`ChatModel.generate_each`."""
    if isinstance(params, SamplingParams) or not isinstance(params, Sequence):
        raise LLMConfigError(
            "generate_each takes one SamplingParams per conversation (a list); for one "
            "SamplingParams for all of them call generate."
        )
    if len(params) != len(conversations):
        raise LLMConfigError(
            f"generate_each got {len(conversations)} conversations and {len(params)} "
            "SamplingParams; give one per conversation."
        )
    for i, item in enumerate(params):
        if not isinstance(item, SamplingParams):
            raise LLMConfigError(
                f"generate_each: params[{i}] is a {type(item).__name__}, not SamplingParams."
            )
    return list(zip(conversations, params))


def _continues(previous: SamplingParams, current: SamplingParams) -> bool:
    """Whether ``current`` is what :meth:`ChatModel.generate` would give the item after
    ``previous`` in one batch (the same parameters, the seed one higher)."""
    if previous.seed is None or current.seed is None:
        return previous == current and previous.seed is None
    return replace(previous, seed=previous.seed + 1) == current
