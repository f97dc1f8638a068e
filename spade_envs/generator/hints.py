"""Model-written hints: a short strategy hint written from an environment's source.

Besides an environment's own ``hint()`` (derived from its hidden state), the SPADE
code asks a model to read the source and write a hint. A written hint is the same for
every episode, so it must help without containing any episode's answer: the leak check
plays the environment in the sandbox for a few seeds, takes the final answer of each
``solution()``, and rejects a hint that contains one of them as a whole word.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core.answers import leaked_encoding, marked_answer
from ..error import SpadeError
from .prompts import load_template

__all__ = ["HintWriter", "WrittenHint", "final_answers"]

MAX_HINT_CHARS = 600


@dataclass(frozen=True)
class WrittenHint:
    """A hint a model wrote, and whether it may be used.

    Attributes:
        text: The cleaned hint ("" when the model gave nothing usable).
        ok: True when the hint is non-empty and leaks no answer.
        reason: Why it may not be used ("" when ok).
    """

    text: str
    ok: bool
    reason: str = ""


def _clean(reply: str) -> str:
    text = reply.strip()
    fenced = re.search(r"```(?:json)?\s*(\{.*?\})\s*```", text, re.S)
    if fenced:  # some models answer {"hint": "..."}
        try:
            value = json.loads(fenced.group(1)).get("hint")
            if isinstance(value, str):
                text = value
        except (ValueError, AttributeError):
            pass
    text = re.sub(r"```.*?(```|\Z)", " ", text, flags=re.S)  # code is not a hint
    text = re.sub(r"^\s*(hint|HINT)\s*:\s*", "", text)
    return " ".join(text.split())[:MAX_HINT_CHARS]


def final_answers(source: str, seeds: Sequence[int] = (0, 1, 2, 3, 4)) -> set[str]:
    """The final answers of ``solution()`` for ``seeds``, found by playing in the sandbox."""
    from ..sandbox import open_env

    answers: set[str] = set()
    env = open_env(source, filename="hint-leak-check")
    try:
        for seed in seeds:
            env.reset(seed=seed)
            solution = env.solution()
            if solution:
                answer = marked_answer(str(solution[-1]))
                if answer:
                    answers.add(answer)
    finally:
        env.close()
    return answers


class HintWriter:
    """Asks a model for hints and checks them for leaked answers.

    Args:
        model: A :class:`spade_envs.llm.ChatModel`.
        temperature: Sampling temperature (low: hints should be sober).
        max_tokens: Longest hint reply.
        seeds: Episodes whose answers the leak check collects.
    """

    def __init__(
        self,
        model: Any,
        *,
        temperature: float = 0.3,
        max_tokens: int = 160,
        seeds: Sequence[int] = (0, 1, 2, 3, 4),
    ):
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seeds = tuple(seeds)

    def messages(self, source: str) -> list[dict[str, str]]:
        """The prompt for one environment."""
        return [{"role": "user", "content": load_template("hint").substitute(source=source)}]

    def write(self, sources: Sequence[str], *, seed: int = 0) -> list[WrittenHint]:
        """One checked hint per source (a batch; a failure of one never stops the rest)."""
        from ..llm.base import SamplingParams

        params = SamplingParams(temperature=self.temperature, max_tokens=self.max_tokens, seed=seed)
        replies = self.model.generate([self.messages(s) for s in sources], params)
        out = []
        for source, reply in zip(sources, replies):
            if not reply.ok:
                out.append(WrittenHint("", False, f"model error: {reply.error}"))
                continue
            out.append(self.check(source, _clean(reply.text)))
        return out

    def check(self, source: str, hint: str) -> WrittenHint:
        """Whether ``hint`` may be shown to the agent for the environment ``source``."""
        if not hint:
            return WrittenHint("", False, "empty hint")
        try:
            answers = final_answers(source, self.seeds)
        except SpadeError as exc:
            return WrittenHint(hint, False, f"cannot play the environment to check: {exc}")
        leaked = sorted((a, how) for a in answers if (how := leaked_encoding(hint, a)))
        if leaked:
            answer, how = leaked[0]
            return WrittenHint(hint, False, f"leaks the answer {answer!r} ({how})")
        return WrittenHint(hint, True)
