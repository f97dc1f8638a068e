"""Find the temperature at which a reaction runs fastest, with a limited number of measurements.

The hidden rate curve is unimodal (a lopsided bell: rate = peak / (1 + (d / w)^2) with a
different width w on each side of the optimum), so comparing two neighbouring
temperatures tells which way the optimum lies: a binary search on the slope finds it in
about log2(range) pairs of measurements, far fewer than a sweep.
"""

from __future__ import annotations

import json
from typing import ClassVar

from spade_envs import ToolEnv, ToolError, parse_number


def _call(name: str, **arguments: object) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


class LabThermostat(ToolEnv):
    skill = "science"
    # hole: the task description the agent is given (keep it true to the rules)
    description = (
        "An enzyme reaction's rate depends on temperature through a hidden single-peaked "
        "curve. Set the thermostat with set_temperature(celsius), read the rate with "
        "measure_rate(), and answer the whole-degree temperature with the highest rate as "
        "<answer>T</answer>. Turns are scarce: sweeping every temperature is impossible."
    )
    # hole: turns allowed (a binary search over a 63-degree range needs 25) [25, 60]
    max_turns = 26  # 6 steps x 2 probes x 2 calls + answer = 25 at most
    # hole: lowest and highest temperature in Celsius (range kept to 10-63 degrees) [0, 120]
    knobs: ClassVar[dict[str, int]] = {"low": 20, "high": 80}
    # What must hold between the holes for the description to be true and the task hard.
    hole_relations = ("low + 10 <= high", "high - low <= 63", "max_turns < 2 * (high - low + 1)")

    def _reset(self) -> str:
        self.lo = self.low
        self.hi = min(max(self.high, self.lo + 10), self.lo + 63)  # 6 search steps
        self.best = self.rng.randint(self.lo + 3, self.hi - 3)
        self.peak = self.rng.uniform(40.0, 120.0)
        self.widths = (self.rng.uniform(6.0, 20.0), self.rng.uniform(6.0, 20.0))
        self.window = (
            max(self.lo, self.best - self.rng.randint(2, 6)),
            min(self.hi, self.best + self.rng.randint(2, 6)),
        )
        self.temperature: int | None = None
        return (
            f"The incubator accepts whole temperatures from {self.lo} to {self.hi} °C. Find "
            "the temperature where the reaction rate peaks (the curve has a single peak). "
            "Call set_temperature(celsius), then measure_rate() to read the rate there. "
            f"You have {self.max_turns} turns in all. Answer with <answer>T</answer>; a wrong "
            "answer ends the experiment."
        )

    def _rate(self, celsius: int) -> float:
        offset = celsius - self.best
        width = self.widths[0] if offset < 0 else self.widths[1]
        return round(self.peak / (1.0 + (offset / width) ** 2), 3)

    def tool_set_temperature(self, celsius: int) -> str:
        """Set the thermostat; the sample settles at once.

        Args:
            celsius: Whole degrees Celsius, inside the incubator's range.
        """
        if not self.lo <= celsius <= self.hi:
            raise ToolError(f"the incubator only reaches {self.lo} to {self.hi} °C")
        self.temperature = celsius
        return f"Thermostat set to {celsius} °C."

    def tool_measure_rate(self) -> str:
        """Measure the reaction rate at the current temperature (exact, no noise)."""
        if self.temperature is None:
            raise ToolError("no temperature set yet: call set_temperature(celsius) first")
        return f"Rate at {self.temperature} °C: {self._rate(self.temperature):.3f} µmol/min"

    def _answer(self, answer: str):
        value = parse_number(answer.replace("°", " ").removesuffix("C").strip())
        if value == self.best:
            return f"Correct: the rate peaks at {self.best} °C.", 1.0, True
        return "Wrong: the rate is higher at some other temperature.", 0.0, True

    # hole: rule: the privileged hint (never the peak temperature)
    def hint(self) -> str:
        steep = "colder" if self.widths[0] < self.widths[1] else "warmer"
        low, high = self.window
        return (
            f"The peak lies between {low} and {high} °C (exclusive), and the rate falls off "
            f"faster on the {steep} side. Compare neighbouring temperatures to see the slope."
        )

    def solution(self) -> list[str]:
        # Binary search on the slope: rate(mid) < rate(mid + 1) means the peak is above mid.
        lo, hi, actions, seen = self.lo, self.hi, [], set()
        while lo < hi:
            mid = (lo + hi) // 2
            for t in (mid, mid + 1):
                if t not in seen:
                    seen.add(t)
                    actions += [_call("set_temperature", celsius=t), _call("measure_rate")]
            lo, hi = (mid + 1, hi) if self._rate(mid) < self._rate(mid + 1) else (lo, mid)
        return actions + [f"<answer>{lo}</answer>"]
