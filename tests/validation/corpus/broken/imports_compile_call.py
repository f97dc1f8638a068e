# expect: imports
"""Make 24 from four numbers; the agent's expression is syntax-checked with compile()."""

from __future__ import annotations

import ast
from fractions import Fraction

from spade_envs import TextEnv, extract_answer

_PUZZLES = [
    ((4, 7, 8, 8), "(7 - 8 / 8) * 4"), ((1, 5, 5, 5), "5 * (5 - 1 / 5)"),
    ((3, 3, 8, 8), "8 / (3 - 8 / 3)"), ((2, 3, 4, 6), "6 * 4 * (3 - 2)"),
    ((1, 2, 3, 4), "1 * 2 * 3 * 4"), ((2, 2, 6, 6), "6 * 2 + 6 * 2"),
]


def _value(node: ast.AST) -> Fraction:
    if isinstance(node, ast.Expression):
        return _value(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return Fraction(node.value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
        left, right = _value(node.left), _value(node.right)
        if isinstance(node.op, ast.Add):
            return left + right
        if isinstance(node.op, ast.Sub):
            return left - right
        if isinstance(node.op, ast.Mult):
            return left * right
        if right == 0:
            raise ValueError("division by zero")
        return left / right
    raise ValueError("only + - * / and whole numbers are allowed")


def _numbers(node: ast.AST) -> list[int]:
    return sorted(
        n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and type(n.value) is int
    )


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
        text = extract_answer(action)[:200]
        left = self.max_turns - self.turn
        try:
            code = compile(text, "<answer>", "eval", ast.PyCF_ONLY_AST)
            ok = _numbers(code) == sorted(self.numbers) and _value(code) == 24
        except (SyntaxError, ValueError, RecursionError):
            return f"That is not a valid expression. Attempts left: {left}.", 0.0, left == 0
        if ok:
            return "24! Well done.", 1.0, True
        return f"That does not make 24 with these numbers. Attempts left: {left}.", 0.0, left == 0

    def hint(self) -> str:
        return "Try making a factor of 24 (like 6 or 8) from two of the numbers first."

    def solution(self) -> list[str]:
        return ["\\boxed{" + self.example + "}"]
