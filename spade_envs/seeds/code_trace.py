"""Trace a small generated program (assignments, a loop, an if) and predict what it prints.

The program is built as a tiny syntax tree, rendered to Python-like text for the agent
and run by a ten-line interpreter over the same tree: no ``exec``/``eval`` of strings.
"""

from __future__ import annotations

import operator
import re
from typing import ClassVar

from spade_envs import TextEnv, boxed, extract_answer

_OPS = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "%": operator.mod,
    "<": operator.lt, ">": operator.gt, "==": operator.eq,
}  # fmt: skip
_NAMES = [("a", "b"), ("x", "y"), ("total", "step"), ("p", "q"), ("acc", "k"), ("u", "w")]
_INT = re.compile(r"[+-]?[0-9]{1,12}")


def _evaluate(expr, env: dict) -> int:
    """An expression is a variable name, an int, or a tuple (expr, op, expr)."""
    if isinstance(expr, tuple):
        left, op, right = expr
        return _OPS[op](_evaluate(left, env), _evaluate(right, env))
    return env[expr] if isinstance(expr, str) else expr


def _show(expr) -> str:
    if isinstance(expr, tuple):
        return " ".join(_show(part) if isinstance(part, tuple) else str(part) for part in expr)
    return str(expr)


class CodeTrace(TextEnv):
    skill = "code"
    description = (
        "Read a short Python-like program with two variables, a for loop and an if/else, "
        "and predict the single integer it prints. Three attempts; a wrong answer is told "
        "whether it is too high or too low."
    )
    max_turns = 3
    # hole: largest loop count (3-9) [3, 9]
    knobs: ClassVar[dict[str, int]] = {"max_loop": 5}

    def _reset(self) -> str:
        rng = self.rng
        u, v = rng.choice(_NAMES)
        cond = rng.choice(
            [
                (("i", "%", 2), "==", rng.randint(0, 1)),
                ("i", "<", rng.randint(1, 3)),
                (u, ">", v),
                ((u, "%", 3), "==", 0),
            ]
        )
        updates = [
            lambda t, o: (t, "+", "i"),
            lambda t, o: (t, "+", o),
            lambda t, o: (t, "-", rng.randint(1, 4)),
            lambda t, o: (t, "*", 2),
            lambda t, o: (o, "-", t),
            lambda t, o: (t, "+", rng.randint(2, 9)),
        ]
        then_var, else_var = rng.choice([(u, v), (v, u), (u, u)])
        then_stmt = ("set", then_var, rng.choice(updates)(then_var, v if then_var == u else u))
        else_stmt = ("set", else_var, rng.choice(updates)(else_var, v if else_var == u else u))
        body = [("if", cond, [then_stmt], [else_stmt])]
        if rng.random() < 0.5:
            body.append(("set", v, (v, "+", 1)))
        self.program = [
            ("set", u, rng.randint(0, 9)),
            ("set", v, rng.randint(1, 9)),
            ("for", rng.randint(3, max(3, min(9, self.max_loop))), body),
            ("print", rng.choice([(u, "+", v), (u, "-", v), u, (u, "*", 2)])),
        ]
        self.vars, self.branches, printed = {}, [], []
        self._run(self.program, printed)
        self.answer = printed[-1]
        self.after_loop = dict(self.vars)
        return (
            "What does this Python-like program print? (`%` is Python's modulo, "
            "`range(n)` counts 0 to n-1.)\n\n"
            + "\n".join(self._render(self.program, 0))
            + f"\n\nAnswer with \\boxed{{integer}}. You have {self.max_turns} attempts."
        )

    def _run(self, statements: list, printed: list) -> None:
        """The interpreter: execute statements on self.vars, recording if-branches taken."""
        for kind, *parts in statements:
            if kind == "set":
                self.vars[parts[0]] = _evaluate(parts[1], self.vars)
            elif kind == "for":
                for i in range(parts[0]):
                    self.vars["i"] = i
                    self._run(parts[1], printed)
                self.vars.pop("i", None)
            elif kind == "if":
                taken = bool(_evaluate(parts[0], self.vars))
                self.branches.append(taken)
                self._run(parts[1] if taken else parts[2], printed)
            elif kind == "print":
                printed.append(_evaluate(parts[0], self.vars))

    def _render(self, statements: list, depth: int) -> list[str]:
        pad, lines = "    " * depth, []
        for kind, *parts in statements:
            if kind == "set":
                lines.append(f"{pad}{parts[0]} = {_show(parts[1])}")
            elif kind == "for":
                lines += [f"{pad}for i in range({parts[0]}):", *self._render(parts[1], depth + 1)]
            elif kind == "if":
                lines += [f"{pad}if {_show(parts[0])}:", *self._render(parts[1], depth + 1)]
                lines += [f"{pad}else:", *self._render(parts[2], depth + 1)]
            else:
                lines.append(f"{pad}print({_show(parts[0])})")
        return lines

    def _step(self, action: str):
        text = extract_answer(action).replace(" ", "")
        left = self.max_turns - self.turn
        if not _INT.fullmatch(text):
            message = f"Answer with a whole number, e.g. \\boxed{{12}}. Attempts left: {left}."
            return self.not_understood(message, terminated=left == 0)
        guess = int(text)
        if guess == self.answer:
            return f"Correct, it prints {self.answer}.", 1.0, True
        if left == 0:
            return f"Wrong. It prints {self.answer}.", 0.0, True
        direction = "too high" if guess > self.answer else "too low"
        return f"{guess} is {direction}. Attempts left: {left}.", 0.0, False

    # hole: rule: the privileged hint (never the printed number)
    def hint(self) -> str:
        # "; " between the values: "1, 3" would read as the number 13 to the hint-leak check.
        taken = "; ".join(str(i) for i, t in enumerate(self.branches) if t)
        text = f"The if-branch runs when i is one of {taken}. Otherwise the else-branch runs."
        if not taken:
            text = "The if-branch never runs: every pass takes the else-branch."
        values = ", ".join(f"{name} = {value}" for name, value in self.after_loop.items())
        full = f"{text} After the loop: {values}."
        return full if str(self.answer) not in full else text  # never give the answer away

    def solution(self) -> list[str]:
        return [boxed(self.answer)]
