"""Repair one mistyped input of a spreadsheet so that its total comes out right.

Column A holds numbers, column B formulas over A (and earlier B cells), and C1 the total.
get_cell shows a formula, never its value, so the agent must read the cells the total
depends on, evaluate them itself and solve for the input. All coefficients are positive,
so the total grows strictly with every input: exactly one value of the input is right.
"""

from __future__ import annotations

import json
from typing import ClassVar

from spade_envs import ToolEnv, ToolError

# hole: labels of the input cells (at least 8 distinct words)
_LABELS = ["rent", "wages", "stock", "fuel", "tax", "fees", "parts", "power"]


def _call(name: str, **arguments: object) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


class SpreadsheetCells(ToolEnv):
    skill = "math"
    # hole: the task description the agent is given (keep it true to the rules)
    description = (
        "A small spreadsheet: inputs in column A, formulas in column B and the total in C1. "
        "One named input was mistyped, so C1 misses its target. Read cells with get_cell "
        "(formulas are shown, never their values), work out the input value that makes C1 "
        "hit the target, and write it with set_cell, within a small number of attempts."
    )
    # hole: turns allowed (reading the cells C1 depends on, then the fix: up to 16) [16, 40]
    max_turns = 16
    # hole: inputs (3-8), formulas (2-6) and set_cell attempts [1, 8]
    knobs: ClassVar[dict[str, int]] = {"inputs": 5, "formulas": 4, "attempts": 2}
    # What must hold between the holes for the description to be true and the task hard.
    hole_relations = (
        "3 <= inputs <= 8",
        "2 <= formulas <= 6",
        "inputs <= len(_LABELS)",
        "len(_LABELS) >= 8",
    )

    def _reset(self) -> str:
        n, m = max(3, min(self.inputs, 8)), max(2, min(self.formulas, 6))
        inputs = [f"A{i + 1}" for i in range(n)]
        self.values = {ref: self.rng.randint(2, 25) for ref in inputs}
        self.labels = dict(zip(inputs, self.rng.sample(_LABELS, n)))
        self.sheet: dict[str, tuple] = {}
        for j in range(m):
            kind = self.rng.choice(["sum", "lin", "lin", "mul"])
            if kind == "sum":
                start = self.rng.randint(0, n - 2)
                refs = inputs[start : start + self.rng.randint(2, 3)]
                self.sheet[f"B{j + 1}"] = ("sum", refs, 0)
            elif kind == "mul":
                self.sheet[f"B{j + 1}"] = ("mul", self.rng.sample(inputs, 2), 0)
            else:
                refs = self.rng.sample(inputs + list(self.sheet), 2)
                terms = [(self.rng.randint(1, 4), ref) for ref in refs]
                self.sheet[f"B{j + 1}"] = ("lin", terms, self.rng.randint(-9, 9))
        used = self.rng.sample(list(self.sheet), self.rng.randint(2, m))
        self.sheet["C1"] = ("lin", [(self.rng.randint(1, 2), ref) for ref in sorted(used)], 0)
        self.reads = self._depends("C1", [])
        self.cell = self.rng.choice([ref for ref in self.reads if ref in self.values])
        self.right = self.values[self.cell]
        self.target = self._value("C1")
        self.values[self.cell] = max(1, self.right + self.rng.choice([-6, -4, -3, 3, 5, 7]))
        self.slope = self._value("C1", {self.cell: 1}) - self._value("C1", {self.cell: 0})
        self.left = max(1, self.attempts)
        return (
            f"C1 (the total) should equal {self.target}, but input {self.cell} "
            f"({self.labels[self.cell]}) was mistyped. Cells: {', '.join(self.values)} "
            f"(inputs), {', '.join(self.sheet)} (formulas). Tools: list_cells(), "
            "get_cell(ref) and set_cell(ref, value). Fix the input with set_cell; you have "
            f"{self.left} attempts and are only told whether C1 then matches."
        )

    def _depends(self, ref: str, seen: list[str]) -> list[str]:
        """Cells that ``ref`` reads, depth first, each once (``ref`` first)."""
        if ref not in seen:
            seen.append(ref)
            if ref in self.sheet:
                kind, refs, _ = self.sheet[ref]
                for child in (r for _, r in refs) if kind == "lin" else refs:
                    self._depends(child, seen)
        return seen

    def _value(self, ref: str, override: dict[str, int] | None = None) -> int:
        if ref in self.values:
            return (override or {}).get(ref, self.values[ref])
        kind, refs, const = self.sheet[ref]
        if kind == "sum":
            return sum(self._value(r, override) for r in refs)
        if kind == "mul":
            return self._value(refs[0], override) * self._value(refs[1], override)
        return sum(c * self._value(r, override) for c, r in refs) + const

    def _text(self, ref: str) -> str:
        kind, refs, const = self.sheet[ref]
        if kind == "sum":
            return f"=SUM({refs[0]}:{refs[-1]})"
        if kind == "mul":
            return f"={refs[0]}*{refs[1]}"
        text = " + ".join(r if c == 1 else f"{c}*{r}" for c, r in refs)
        return f"={text}" + (f" + {const}" if const > 0 else f" - {-const}" if const else "")

    def _ref(self, ref: str) -> str:
        ref = ref.strip().upper()
        if ref not in self.values and ref not in self.sheet:
            raise ToolError(f"no cell {ref[:12]!r}; call list_cells() to see the cells")
        return ref

    def tool_list_cells(self) -> list[str]:
        """List every cell with its label and whether it is an input or a formula."""
        return [f"{r} {self.labels[r]} (input)" for r in self.values] + [
            f"{r} {'total' if r == 'C1' else 'subtotal'} (formula)" for r in self.sheet
        ]

    def tool_get_cell(self, ref: str) -> str:
        """Show one cell: an input's number or a formula's text (not its value).

        Args:
            ref: Cell reference such as A2, B1 or C1.
        """
        ref = self._ref(ref)
        return f"{ref}: {self.values[ref]}" if ref in self.values else f"{ref}: {self._text(ref)}"

    def tool_set_cell(self, ref: str, value: int) -> str:
        """Overwrite the mistyped input cell with a new whole number.

        Args:
            ref: The input cell named in the task.
            value: Its new value, a whole number from -1000000 to 1000000.
        """
        ref = self._ref(ref)
        if ref != self.cell:
            raise ToolError(f"{ref} is locked; only {self.cell} may be changed")
        if abs(value) > 10**6:
            raise ToolError("value must lie between -1000000 and 1000000")
        self.values[ref] = value
        self.left -= 1
        if self._value("C1") == self.target:
            self.end_episode(1.0, f"C1 now equals {self.target}. Sheet repaired!")
            return f"{ref} set to {value}."
        if self.left <= 0:
            self.end_episode(0.0, "C1 still misses its target and no attempts are left.")
        return f"{ref} set to {value}. C1 does not match; attempts left: {self.left}."

    # hole: rule: the privileged hint (never the right input value)
    def hint(self) -> str:
        return (
            f"C1 depends on {len(self.reads) - 1} other cells; it grows by {self.slope} for "
            f"every 1 added to {self.cell}."
        )

    def solution(self) -> list[str]:
        reads = [_call("get_cell", ref=ref) for ref in self.reads]
        return reads + [_call("set_cell", ref=self.cell, value=self.right)]
