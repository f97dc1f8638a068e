# expect: imports
"""Make 24 from four numbers; the agent's expression is syntax-checked with compile()."""

from __future__ import annotations

import re
from fractions import Fraction

from spade_envs import TextEnv, extract_answer

_PUZZLES = [
    ((4, 7, 8, 8), "(7 - 8 / 8) * 4"), ((1, 5, 5, 5), "5 * (5 - 1 / 5)"),
    ((3, 3, 8, 8), "8 / (3 - 8 / 3)"), ((2, 3, 4, 6), "6 * 4 * (3 - 2)"),
    ((1, 2, 3, 4), "1 * 2 * 3 * 4"), ((2, 2, 6, 6), "6 * 2 + 6 * 2"),
]
_TOKEN = re.compile(r"\s*(\d+|[-+*/()])")


def _tokens(text: str) -> list[str]:
    tokens, pos = [], 0
    text = text.strip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match:
            raise ValueError("unexpected character")
        tokens.append(match.group(1))
        pos = match.end()
    return tokens


def _evaluate(tokens: list[str]) -> tuple[Fraction, list[int]]:
    """Recursive descent over + - * / and parentheses; returns (value, numbers used)."""
    pos, used = 0, []

    def atom() -> Fraction:
        nonlocal pos
        if pos < len(tokens) and tokens[pos] == "(":
            pos += 1
            value = expr()
            if pos >= len(tokens) or tokens[pos] != ")":
                raise ValueError("missing )")
            pos += 1
            return value
        if pos < len(tokens) and tokens[pos].isdigit():
            used.append(int(tokens[pos]))
            pos += 1
            return Fraction(used[-1])
        raise ValueError("expected a number")

    def term() -> Fraction:
        nonlocal pos
        value = atom()
        while pos < len(tokens) and tokens[pos] in "*/":
            op = tokens[pos]
            pos += 1
            right = atom()
            if op == "/" and right == 0:
                raise ValueError("division by zero")
            value = value * right if op == "*" else value / right
        return value

    def expr() -> Fraction:
        nonlocal pos
        value = term()
        while pos < len(tokens) and tokens[pos] in "+-":
            op = tokens[pos]
            pos += 1
            value = value + term() if op == "+" else value - term()
        return value

    value = expr()
    if pos != len(tokens):
        raise ValueError("trailing input")
    return value, sorted(used)


class MakeTwentyFour(TextEnv):
    skill = "math"
    description = (
        "Use each of four given numbers exactly once with + - * / and parentheses to make "
        "24. Reply with the expression in \\boxed{}. Three attempts."
    )
    max_turns = 3

    def _reset(self) -> str:
        self.numbers, self.example = self.rng.choice(_PUZZLES)
        return f"Numbers: {', '.join(map(str, self.numbers))}. Make 24; reply \\boxed{{expression}}."

    def _step(self, action: str):
        text = extract_answer(action)[:80]
        left = self.max_turns - self.turn
        try:
            compile(text, "<answer>", "eval")  # quick syntax check before evaluating
            value, used = _evaluate(_tokens(text))
        except (SyntaxError, ValueError):
            return f"That is not a valid expression. Attempts left: {left}.", 0.0, left == 0
        if used == sorted(self.numbers) and value == 24:
            return "24! Well done.", 1.0, True
        return f"That does not make 24 with these numbers. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        return "Try making a factor of 24 (like 6 or 8) from two of the numbers first."

    def solution(self) -> list[str]:
        return ["\\boxed{" + self.example + "}"]
