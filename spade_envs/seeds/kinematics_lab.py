"""Infer a cart's motion from a few position measurements and extrapolate it.

The cart moves with a hidden constant acceleration: x(t) = x0 + v0*t + a*t^2/2. Three
exact measurements pin down the three unknowns; the target time lies beyond the window
in which measuring is allowed, so the agent must fit the model, not interpolate.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import ClassVar

from spade_envs import TextEnv, boxed, extract_answer

_MEASURE = re.compile(
    r"\bmeasure\s*(?:t\s*=?\s*)?([0-9]{1,2}(?:\.[0-9]{1,2})?)(?![0-9.])", re.IGNORECASE
)
_DECIMAL = re.compile(r"[+-]?[0-9]{1,9}(?:\.[0-9]{1,6})?")


def _fmt(value: Fraction) -> str:
    """A short decimal for an exact value (at most 4 decimal places)."""
    text = f"{float(value):.4f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


class KinematicsLab(TextEnv):
    skill = "science"
    # hole: the task description the agent is given (keep it true to the rules)
    description = (
        "A cart moves along a line with constant but hidden acceleration and initial velocity. "
        "Measure its position at a few chosen early times ('measure t=2'), "
        "then predict its position at a later target time within a small tolerance."
    )
    # hole: turns allowed: measurements plus 2 answers [4, 20]
    max_turns = 6
    # hole: measurements (3 up to max_turns - 2) and latest time to measure (2-20) [2, 20]
    knobs: ClassVar[dict[str, int]] = {"measurements": 3, "latest": 5}
    # What must hold between the holes for the description to be true and the task hard.
    hole_relations = ("3 <= measurements <= max_turns - 2", "2 <= latest <= 20")

    def _reset(self) -> str:
        rng = self.rng
        # Keep knobs where the episode stays winnable: three measurements up to t = 2 suffice.
        self.latest = max(2, min(self.latest, 20))
        self.measurements = max(3, min(self.measurements, self.max_turns - 2))
        self.x0 = Fraction(rng.randint(-10, 10))
        self.v0 = Fraction(rng.randint(-4, 8))
        self.a = Fraction(rng.choice([n for n in range(-6, 7) if n != 0]), 2)
        self.target = rng.randint(self.latest + 3, self.latest + 12)
        self.answer = self.position(Fraction(self.target))
        self.left, self.wrong = self.measurements, 0
        return (
            "A cart moves along a straight track with constant acceleration. Find its position "
            f"(in metres) at t = {self.target} s. You may measure its position at any time "
            f"0 <= t <= {self.latest} s, {self.measurements} times: write 'measure t=2.5'. "
            f"Answer with \\boxed{{position}}; within 1% (or 0.1 m) counts. You have 2 attempts."
        )

    def position(self, t: Fraction) -> Fraction:
        return self.x0 + self.v0 * t + self.a * t * t / 2

    def _step(self, action: str):
        measure = _MEASURE.search(action[:300])
        if measure and "\\boxed" not in action:
            t = Fraction(measure.group(1))
            if self.left == 0:
                return "No measurements left; answer with \\boxed{position}.", 0.0, False
            if t > self.latest:
                return f"You can only measure up to t = {self.latest} s.", 0.0, False
            self.left -= 1
            reading = _fmt(self.position(t))
            return f"x({_fmt(t)} s) = {reading} m. Measurements left: {self.left}.", 0.0, False
        text = extract_answer(action).replace(" ", "").removesuffix("m")
        if not _DECIMAL.fullmatch(text):
            return self.not_understood("Write 'measure t=T' or answer with \\boxed{position}.")
        guess = Fraction(text)
        if abs(guess - self.answer) <= max(Fraction(1, 10), abs(self.answer) / 100):
            return f"Correct: x({self.target} s) = {_fmt(self.answer)} m.", 1.0, True
        self.wrong += 1
        if self.wrong >= 2:
            return f"Wrong again; the position was {_fmt(self.answer)} m.", 0.0, True
        side = "too high" if guess > self.answer else "too low"
        return f"That is {side}; 1 attempt left.", 0.0, False

    # hole: rule: the privileged hint (never the position asked for)
    def hint(self) -> str:
        a, x0 = _fmt(self.a), _fmt(self.x0)
        text = f"The acceleration is {a} m/s^2 and the cart starts at x = {x0} m."
        if _fmt(self.answer) in text:  # never give the answer away
            return "Measure at t = 0, 1 and 2: the second difference of the three readings is a."
        return text

    def solution(self) -> list[str]:
        return ["measure t=0", "measure t=1", "measure t=2", boxed(_fmt(self.answer))]
