"""Find the one buggy line of a small function by comparing its outputs with the spec.

The function is a list of line tuples ``(kind, a, b)`` that the environment both renders
as Python source and interprets itself (nothing is ever exec'd). The spec is the
original program; the shown program has one line mutated (a constant, a comparison or a
sign). An episode is only accepted when no single mutation of any *other* line would
make the shown program meet the spec on inputs -50..50, so the buggy line is well defined.
"""

from __future__ import annotations

import json
import operator
import re
from typing import ClassVar

from spade_envs import ToolEnv, ToolError

_OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}
_DOMAIN = range(-50, 51)
_TEMPLATES = {
    "init": "    y = x * {a}",
    "ify": "    if y {a} {b}:",
    "ifx": "    if x % {a} == 0:",
    "div": "        y = y // {a}",
    "mul": "        y = y * {a}",
    "ret": "    return y % {a}",
}


def _call(name: str, **arguments: object) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def _run(lines: list[tuple], x: int) -> int:
    """Interpret the program on input ``x``."""
    y, i = 0, 0
    while i < len(lines):
        kind, a, b = lines[i]
        if kind == "init":
            y = x * a
        elif kind in ("add", "addx"):
            y += a * (x if kind == "addx" else 1)
        elif kind in ("div", "mul"):
            y = y // a if kind == "div" else y * a
        elif kind == "ret":
            return y % a
        elif (kind == "ify" and not _OPS[a](y, b)) or (kind == "ifx" and x % a != 0):
            i += 1  # condition false: skip the indented line
        i += 1
    return y


def _render(line: tuple) -> str:
    kind, a, b = line
    if kind in ("add", "addx"):
        sign = "+" if a > 0 else "-"
        return f"    y = y {sign} {abs(a)}" if kind == "add" else f"    y = y {sign} x"
    return _TEMPLATES[kind].format(a=a, b=b)


def _mutations(line: tuple) -> list[tuple]:
    """Every single-token change of a line: another constant, comparison or sign."""
    kind, a, b = line
    if kind == "ify":
        return [(kind, op, b) for op in _OPS if op != a] + [
            (kind, a, b + d) for d in (-2, -1, 1, 2)
        ]
    if kind == "addx":
        return [(kind, -a, b)]
    if kind == "add":
        return [(kind, v, b) for v in range(a - 3, a + 4) if v not in (0, a)] + [(kind, -a, b)]
    low, high = {"init": (1, 6), "ret": (max(2, a - 3), a + 3)}.get(kind, (2, 5))
    return [(kind, v, b) for v in range(low, high + 1) if v != a]


class UnitTestDebugger(ToolEnv):
    skill = "code"
    # hole: the task description the agent is given (keep it true to the rules)
    description = (
        "A short Python function has exactly one buggy line (a wrong constant, comparison "
        "or sign). Call run(x) to see what the function returns and expected(x) to see "
        "what the specification says, reason about which line explains the differences, "
        "and answer its line number as <answer>N</answer>. One wrong answer ends the task."
    )
    # hole: turns allowed (the reference needs up to 5) [5, 30]
    max_turns = 10
    # hole: blocks in the function (1-6) [1, 6]
    knobs: ClassVar[dict[str, int]] = {"blocks": 4}

    def _reset(self) -> str:
        for _ in range(500):  # nearly every draw is accepted within a few tries
            self.reference = self._draw()
            self.bug = self.rng.randrange(len(self.reference))
            self.lines = list(self.reference)
            self.lines[self.bug] = self.rng.choice(_mutations(self.reference[self.bug]))
            if self._well_posed():
                break
        self.line_number = self.bug + 2  # line 1 is the def
        return (
            f"This function has one buggy line:\n{self.tool_source()}\nTools: run(x) (actual "
            "output), expected(x) (specified output), source(). Inputs are whole numbers from "
            "-1000 to 1000. Answer the buggy line number as <answer>N</answer>."
        )

    def _draw(self) -> list[tuple]:
        lines = [("init", self.rng.randint(2, 5), 0)]
        for _ in range(max(1, min(self.blocks, 6))):
            kind = self.rng.choice(["add", "addx", "ify", "ifx"])
            if kind == "add":
                lines.append(("add", self.rng.choice([-1, 1]) * self.rng.randint(1, 9), 0))
            elif kind == "addx":
                lines.append(("addx", self.rng.choice([-1, 1]), 0))
            elif kind == "ify":
                lines += [
                    ("ify", self.rng.choice(list(_OPS)), self.rng.randint(0, 30)),
                    ("div", self.rng.randint(2, 4), 0),
                ]
            else:
                lines += [("ifx", self.rng.randint(2, 4), 0), ("mul", self.rng.randint(2, 4), 0)]
        return lines + [("ret", self.rng.randint(11, 40), 0)]

    def _well_posed(self) -> bool:
        """The bug shows on small inputs, and fixing any other single line cannot help."""
        want = [_run(self.reference, x) for x in _DOMAIN]
        if all(_run(self.lines, x) == w for x, w in zip(_DOMAIN, want) if abs(x) <= 20):
            return False
        return not any(
            all(
                _run(self.lines[:j] + [fix] + self.lines[j + 1 :], x) == w
                for x, w in zip(_DOMAIN, want)
            )
            for j, line in enumerate(self.lines)
            if j != self.bug
            for fix in _mutations(line)
        )

    def _check(self, x: int) -> int:
        if not -1000 <= x <= 1000:
            raise ToolError("x must be a whole number from -1000 to 1000")
        return x

    def tool_run(self, x: int) -> str:
        """Run the function as written.

        Args:
            x: Input, a whole number from -1000 to 1000.
        """
        return f"f({x}) returns {_run(self.lines, self._check(x))}"

    def tool_expected(self, x: int) -> str:
        """Look up the output the specification requires.

        Args:
            x: Input, a whole number from -1000 to 1000.
        """
        return f"the spec says f({x}) should be {_run(self.reference, self._check(x))}"

    def tool_source(self) -> str:
        """Show the function's source with line numbers."""
        source = ["def f(x):"] + [_render(line) for line in self.lines]
        return "\n".join(f"{n:>2}  {text}" for n, text in enumerate(source, 1))

    def _answer(self, answer: str):
        found = re.search(r"[0-9]{1,3}", answer[:60])
        if found and int(found.group()) == self.line_number:
            return f"Correct: line {self.line_number} is the bug.", 1.0, True
        return "Wrong line.", 0.0, True

    # hole: rule: the privileged hint (never the line number)
    def hint(self) -> str:
        kind = self.lines[self.bug][0]
        what = {"addx": "has the wrong sign", "ify": "has a wrong comparison or threshold"}.get(
            kind, "uses a wrong constant"
        )
        where = "inside an if block" if kind in ("div", "mul") else "not inside an if block"
        return f"The buggy line {what} and is {where}. Compare small inputs of both signs."

    def solution(self) -> list[str]:
        small = sorted(range(-20, 21), key=lambda x: (abs(x), x))
        diffs = [x for x in small if _run(self.lines, x) != _run(self.reference, x)]
        actions = []
        for x in diffs[:2]:
            actions += [_call("run", x=x), _call("expected", x=x)]
        return actions + [f"<answer>{self.line_number}</answer>"]
