"""The Reasoning Agent's policy: chat formatting of observations and per-turn records.

A play is one chat: a system prompt that explains the answer convention of the
environment's kind, the first observation (with ``\\n\\nHINT: <hint>`` appended for a
hinted play, as the SPADE code does), then alternating model replies (actions) and
observations. :class:`Policy` answers many such chats with ONE batched model call,
each with its own sampling seed, and :class:`Turn` keeps what a trainer needs: the
prompt token ids, the generated token ids and their log-probabilities, and a mask
that is 1 on model tokens and 0 on prompt/environment tokens.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..core.answers import extract_boxed, extract_tag, parse_tool_call
from ..core.text_env import ACTION_PARSED
from ..llm.base import ChatModel, Completion, Message, SamplingParams

__all__ = [
    "ACTION_OUTCOMES",
    "Policy",
    "SeededParams",
    "Turn",
    "classify_action",
    "reported_parse",
    "system_prompt",
    "with_hint",
]

#: What a turn's outcome may be. The first group describe the action (the env still
#: judges it); the second end the episode.
ACTION_OUTCOMES = (
    "ok",
    "no_answer",
    "several_answers",
    "bad_tool_call",
    "wrong_tool",
    "empty",
    "length",
    "too_long",
    "model_error",
    "env_error",
    "timeout",
    "sandbox_crashed",
)

_TEXT_SYSTEM = """\
You are an agent acting in a text environment over several turns. Each user message is
what the environment shows you; each of your replies is one action. Think briefly, then
act. Write your answer or move as \\boxed{{...}} (for example \\boxed{{42}}); only the
last \\boxed{{}} in a reply counts.{task}"""

_TOOL_SYSTEM = """\
You are an agent using tools over several turns. Each user message is what the
environment shows you (a tool result or an error); each of your replies is one action.
Call exactly one tool per reply as
<tool_call>{{"name": "<tool>", "arguments": {{...}}}}</tool_call>
and give the final answer as <answer>...</answer>.{task}

Tools (JSON schemas):
{tools}"""

_GAME_SYSTEM = """\
You are {seat} in a two-player text game, playing to win. Each user message shows the
game from your seat; each of your replies is one move. Think briefly, then write your
move as \\boxed{{...}}, in the form the game asks for.{task}"""


def system_prompt(
    kind: str,
    *,
    description: str = "",
    tools: Sequence[dict[str, Any]] = (),
    seat: str = "player_0",
) -> str:
    """The system prompt of a play.

    Args:
        kind: ``"text"``, ``"tool"`` or ``"game"``.
        description: The environment's description (its task), if any.
        tools: OpenAI-style function schemas, for ``"tool"``.
        seat: The seat the model plays, for ``"game"``.
    """
    task = f"\n\nTask: {' '.join(description.split())}" if description.strip() else ""
    if kind == "tool":
        listed = "\n".join(json.dumps(t, sort_keys=True) for t in tools) or "(none)"
        return _TOOL_SYSTEM.format(task=task, tools=listed)
    if kind == "game":
        return _GAME_SYSTEM.format(task=task, seat=seat)
    return _TEXT_SYSTEM.format(task=task)


def with_hint(observation: str, hint: str) -> str:
    """The first observation of a hinted play: ``"{observation}\\n\\nHINT: {hint}"``."""
    return f"{observation}\n\nHINT: {hint}"


def reported_parse(info: Any) -> bool | None:
    """What a step's ``info`` says about the action: ``info["action_parsed"]`` when it
    is a real bool, else None (not reported).

    ``info`` comes from environment code, possibly untrusted and through a sandbox: a
    string, a number or a truthy object is not a report.
    """
    if not isinstance(info, dict):
        return None
    try:  # dict.get, not a subclass's own get; a hostile key's __eq__ may raise
        value = dict.get(info, ACTION_PARSED)
    except Exception:
        return None
    return value if isinstance(value, bool) else None


def classify_action(text: str, kind: str, tool_names: Sequence[str] = ()) -> str:
    """Describe a reply as an action (the environment still judges it).

    Returns:
        ``"empty"``, ``"several_answers"``, ``"no_answer"``, ``"bad_tool_call"``,
        ``"wrong_tool"`` or ``"ok"``.
    """
    if not text.strip():
        return "empty"
    if kind == "tool":
        calls = text.count("<tool_call>")
        answers = text.count("<answer>")
        if calls + answers > 1:
            return "several_answers"
        if calls == 0:
            if extract_tag(text, "answer") is None and extract_boxed(text) is None:
                return "no_answer"
            return "ok"
        call = parse_tool_call(text)
        if call is None or not call.ok:
            return "bad_tool_call"
        if tool_names and call.name not in tool_names:
            return "wrong_tool"
        return "ok"
    boxes = text.count("\\boxed")
    if boxes > 1:
        return "several_answers"
    if boxes == 0 and extract_tag(text, "answer") is None:
        # A terse "42" is understood by most envs (extract_answer falls back to the
        # text), but the convention was not followed: worth counting.
        return "no_answer"
    return "ok"


@dataclass(frozen=True)
class SeededParams(SamplingParams):
    """Sampling parameters with one explicit seed per batch item.

    Every backend seeds item ``i`` with ``params.seed_for(i)``; here that is
    ``item_seeds[i]``, so a play's reply depends on its own seed and not on its place
    in the batch: a batched rollout and a one-at-a-time rollout give the same replies.
    """

    item_seeds: tuple[int, ...] = ()

    def seed_for(self, index: int) -> int | None:
        if self.seed is None:
            return None
        return self.item_seeds[index] if index < len(self.item_seeds) else self.seed + index


@dataclass
class Turn:
    """One model turn of a play.

    Attributes:
        index: The turn number in the play (0-based; in self-play, over all seats).
        seat: The seat that acted (``""`` for single-agent envs).
        action: The reply text sent to the environment (cut to the action limit).
        outcome: One of :data:`ACTION_OUTCOMES`.
        observation: What the environment answered ("" when it failed).
        reward: The reward of this step.
        finish_reason: The model's finish reason.
        sampling_seed: The seed the reply was sampled with (None: unseeded).
        prompt_token_ids: The prompt, tokenized by the model (environment and chat tokens).
        token_ids: The generated tokens (model tokens).
        logprobs: Log-probability of each generated token.
        error: What went wrong (model or environment), "" otherwise.
        parsed: Whether the environment understood the action (its step's
            ``info["action_parsed"]``); None when it did not say, or the action never
            reached it.
    """

    index: int
    seat: str
    action: str
    outcome: str
    observation: str = ""
    reward: float = 0.0
    finish_reason: str = "stop"
    sampling_seed: int | None = None
    prompt_token_ids: list[int] = field(default_factory=list)
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    error: str = ""
    parsed: bool | None = None

    @property
    def well_formed(self) -> bool:
        """Whether the action was well-formed: what the environment reported (any action
        it understood, ``\\boxed`` or not), else whether it followed the answer
        convention (:attr:`outcome` ``"ok"``)."""
        # A bool test, not truthiness: a loaded trajectory may carry anything here.
        if isinstance(self.parsed, bool):
            return self.parsed
        return self.outcome == "ok"

    @property
    def tokens(self) -> list[int]:
        """Prompt and generated tokens, in order (what :attr:`mask` describes)."""
        return [*self.prompt_token_ids, *self.token_ids]

    @property
    def mask(self) -> list[int]:
        """1 for each model token, 0 for each prompt/environment token of :attr:`tokens`."""
        return [0] * len(self.prompt_token_ids) + [1] * len(self.token_ids)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Policy:
    """A chat model acting in environments: one batched, per-item-seeded call per turn.

    Args:
        model: The chat model.
        temperature: Sampling temperature (0: greedy).
        top_p: Nucleus sampling mass.
        max_tokens: The most tokens of one reply.
        stop: Strings that end a reply.
    """

    def __init__(
        self,
        model: ChatModel,
        *,
        temperature: float = 0.7,
        top_p: float = 0.95,
        max_tokens: int = 256,
        stop: Sequence[str] = (),
    ) -> None:
        self.model = model
        # Checked once here, so a bad value fails before any environment is opened.
        self.base = SamplingParams(
            temperature=temperature, top_p=top_p, max_tokens=max_tokens, stop=tuple(stop)
        )

    def act(
        self, conversations: Sequence[Sequence[Message]], seeds: Sequence[int | None]
    ) -> list[Completion]:
        """Answer every conversation in one model call.

        Args:
            conversations: One chat per live play.
            seeds: One sampling seed per chat; all ``None`` for unseeded sampling.

        Returns:
            One completion per chat. A backend that raises (instead of returning error
            completions, as the protocol asks) makes every item an error completion, so
            the batch's plays record the failure and the rollout goes on.
        """
        if not conversations:
            return []
        seeded = all(s is not None for s in seeds)
        params = SeededParams(
            temperature=self.base.temperature,
            top_p=self.base.top_p,
            max_tokens=self.base.max_tokens,
            stop=self.base.stop,
            seed=int(seeds[0]) if seeded else None,  # type: ignore[arg-type]
            item_seeds=tuple(int(s) for s in seeds) if seeded else (),  # type: ignore[arg-type]
        )
        try:
            replies = self.model.generate([list(c) for c in conversations], params)
        except Exception as exc:  # a broken backend must not lose the other plays
            return [Completion.failed(f"the model call raised {type(exc).__name__}: {exc}")] * len(
                conversations
            )
        if not isinstance(replies, list) or len(replies) != len(conversations):
            count = len(replies) if isinstance(replies, list) else type(replies).__name__
            return [
                Completion.failed(f"the model returned {count} replies for {len(conversations)}")
            ] * len(conversations)
        return [
            r if isinstance(r, Completion) else Completion.failed(f"not a Completion: {r!r:.80}")
            for r in replies
        ]
