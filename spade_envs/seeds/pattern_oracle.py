"""Infer a hidden integer sequence from a few revealed terms and extrapolate far ahead.

Each episode draws one rule family (arithmetic, quadratic, two interleaved progressions,
a repeating cycle of steps, geometric, alternating sign) and its parameters. Only a few
early terms can be revealed, and the question asks for a term far beyond them, so the
agent has to state the rule as a formula rather than continue the list by hand.
"""

from __future__ import annotations

import json
from typing import ClassVar

from spade_envs import ToolEnv, ToolError, parse_number

_RULES = {
    "arithmetic": "The same amount is added at every step.",
    "quadratic": "The differences between consecutive terms grow by a constant amount.",
    "interleaved": "Odd and even positions follow two separate rules, each adding its own step.",
    "cycle": "The steps between consecutive terms repeat in a short cycle.",
    "geometric": "Each term is a fixed multiple of the one before.",
    "alternating": "The sign flips at every step while the size grows by a constant amount.",
}


def _call(name: str, **arguments: object) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


class PatternOracle(ToolEnv):
    skill = "pattern"
    # hole: the task description the agent is given (keep it true to the rules)
    description = (
        "A hidden rule generates an integer sequence t(1), t(2), ... Reveal a few early "
        "terms with term(index), infer the rule, and answer the term at a far-away index "
        "as <answer>number</answer>. Reveals are limited and one wrong answer ends the task."
    )
    # hole: turns allowed: reveals plus the answer [7, 30]
    max_turns = 10
    # hole: terms that may be revealed and largest index that may be revealed (at least 6) [1, 100]
    knobs: ClassVar[dict[str, int]] = {"probes": 6, "max_index": 20}
    # What must hold between the holes for the description to be true and the task hard.
    hole_relations = ("max_index >= 6",)

    def _reset(self) -> str:
        rng = self.rng
        self.rule = rng.choice(list(_RULES))
        if self.rule == "arithmetic":
            self.params = (rng.randint(-20, 40), rng.choice([-1, 1]) * rng.randint(2, 15))
        elif self.rule == "quadratic":
            self.params = (rng.randint(1, 3), rng.randint(-6, 6), rng.randint(-10, 10))
        elif self.rule == "interleaved":
            steps = rng.sample(range(-7, 13), 2)  # two different steps: not one progression
            self.params = (rng.randint(-9, 30), steps[0], rng.randint(-9, 30), steps[1])
        elif self.rule == "cycle":
            self.params = (rng.randint(-10, 20), rng.sample(range(-5, 13), 3))
        elif self.rule == "geometric":
            self.params = (rng.randint(1, 5), rng.randint(2, 3))
        else:
            self.params = (rng.randint(0, 9), rng.randint(2, 9))
        far = (12, 25) if self.rule == "geometric" else (100, 999)
        self.index = rng.randint(*far)
        self.value = self._term(self.index)
        self.left = max(1, self.probes)
        self.limit = max(6, self.max_index)
        self.seen: dict[int, int] = {}
        return (
            f"A hidden rule generates integers t(1), t(2), t(3), ... What is t({self.index})? "
            f"You may reveal {self.left} terms with term(index) (index 1 to {self.limit}); "
            "revealed() lists what you have seen. Answer with <answer>number</answer>; a "
            "wrong answer ends the episode."
        )

    def _term(self, n: int) -> int:
        p = self.params
        if self.rule == "arithmetic":
            return p[0] + p[1] * (n - 1)
        if self.rule == "quadratic":
            return p[0] * n * n + p[1] * n + p[2]
        if self.rule == "interleaved":
            return p[0] + p[1] * (n // 2) if n % 2 else p[2] + p[3] * (n // 2 - 1)
        if self.rule == "cycle":
            full, part = divmod(n - 1, len(p[1]))
            return p[0] + full * sum(p[1]) + sum(p[1][:part])
        if self.rule == "geometric":
            return p[0] * p[1] ** (n - 1)
        return (-1) ** n * (p[0] + p[1] * n)

    def tool_term(self, index: int) -> str:
        """Reveal one term of the sequence (uses up one reveal).

        Args:
            index: Position of the term, from 1 to the largest index allowed.
        """
        if not 1 <= index <= self.limit:
            raise ToolError(f"index must be between 1 and {self.limit}")
        if self.left <= 0:
            raise ToolError("no reveals left: answer with <answer>number</answer>")
        self.left -= 1
        self.seen[index] = self._term(index)
        return f"t({index}) = {self.seen[index]}; reveals left: {self.left}"

    def tool_revealed(self) -> str:
        """List every term revealed so far, by index, and the reveals left."""
        terms = ", ".join(f"t({i}) = {v}" for i, v in sorted(self.seen.items())) or "none"
        return f"Revealed: {terms}. Reveals left: {self.left}."

    def _answer(self, answer: str):
        if parse_number(answer) == self.value:  # exact comparison, safe for huge numbers
            return f"Correct: t({self.index}) = {self.value}.", 1.0, True
        return f"Wrong: that is not t({self.index}).", 0.0, True

    # hole: rule: the privileged hint (never the term asked for)
    def hint(self) -> str:
        return _RULES[self.rule]

    def solution(self) -> list[str]:
        reveals = [_call("term", index=i) for i in range(1, min(6, self.left) + 1)]
        return reveals + [f"<answer>{self.value}</answer>"]
