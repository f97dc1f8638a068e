"""Find an unknown resistor in a series/parallel network with a voltmeter and an ammeter.

The network is a chain of segments between nodes A, B, C, ...; each segment is one
resistor or two in parallel, and a battery drives the whole chain. Every reading is
computed exactly (fractions) from Ohm's law and shown rounded.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import ClassVar

from spade_envs import TextEnv, boxed, extract_answer

# hole: resistances in ohms to draw from [1, 10000]
_VALUES = [10, 15, 22, 33, 47, 68, 100, 150, 220, 330]
_VOLTAGE = re.compile(r"\bmeasure\s+v\W*([a-z])\W+([a-z])\b", re.ASCII)
_CURRENT = re.compile(r"\bmeasure\s+i\W*(r[0-9])\b", re.ASCII)
_OHMS = re.compile(r"([+-]?[0-9]{1,9}(?:\.[0-9]{1,6})?)(?:ohms?|ω)?")


class OhmsLawCircuit(TextEnv):
    skill = "science"
    # hole: the task description the agent is given (keep it true to the rules)
    description = (
        "A battery drives a chain of resistors, some in parallel; one resistance is unknown. "
        "Measure voltages between nodes ('measure V B C') and currents through resistors "
        "('measure I R2'), a few times, then give the unknown resistance within 1%."
    )
    # hole: turns allowed: measurements plus 2 answers [3, 12]
    max_turns = 6
    # hole: most segments in the chain (2-4) and measurements (2 up to max_turns - 2) [2, 10]
    knobs: ClassVar[dict[str, int]] = {"segments": 3, "measurements": 3}
    # What must hold between the holes for the description to be true and the task hard.
    hole_relations = (
        "2 <= segments <= 4",
        "2 <= measurements <= max_turns - 2",
        "len(_VALUES) >= 2",
    )

    def _reset(self) -> str:
        rng = self.rng
        count = rng.randint(2, max(2, min(self.segments, 4)))
        self.nodes = "ABCDE"[: count + 1]
        self.chain: list[list[str]] = []  # resistor names of each segment, in order
        self.ohms: dict[str, Fraction] = {}
        for _ in range(count):
            names = [f"R{len(self.ohms) + k + 1}" for k in range(rng.choice([1, 2]))]
            self.ohms.update({name: Fraction(rng.choice(_VALUES)) for name in names})
            self.chain.append(names)
        self.unknown = rng.choice(list(self.ohms))
        self.volts = rng.choice([6, 9, 12, 24])
        # Ohm's law: one current through the chain; each segment drops current * resistance.
        segment_ohms = [1 / sum(1 / self.ohms[n] for n in names) for names in self.chain]
        current = self.volts / sum(segment_ohms)
        self.potential = [Fraction(self.volts)]
        for r in segment_ohms:
            self.potential.append(self.potential[-1] - current * r)
        self.measurements = max(2, min(self.measurements, self.max_turns - 2))  # keep it winnable
        self.left, self.wrong = self.measurements, 0
        lines = [f"A {self.volts} V battery drives node A (+) to node {self.nodes[-1]} (0 V):"]
        for i, names in enumerate(self.chain):
            parts = [f"{n} = {'?' if n == self.unknown else self.ohms[n]} ohm" for n in names]
            lines.append(
                f"  {self.nodes[i]}-{self.nodes[i + 1]}: " + " in parallel with ".join(parts)
            )
        return "\n".join(lines) + (
            f"\nFind the resistance of {self.unknown}. 'measure V B C' reads the voltage of node "
            "B minus node C; 'measure I R1' reads the current through R1. You have "
            f"{self.measurements} measurements. Answer \\boxed{{ohms}} (within 1%); 2 attempts."
        )

    def _segment_of(self, name: str) -> int:
        return next(i for i, names in enumerate(self.chain) if name in names)

    def _measure(self, action: str) -> tuple[str, bool] | None:
        """(reading, whether it was a valid measurement), or None for no measure command."""
        voltage, current = _VOLTAGE.search(action), _CURRENT.search(action)
        if voltage:
            a, b = voltage.group(1).upper(), voltage.group(2).upper()
            if a not in self.nodes or b not in self.nodes:
                return f"The nodes are {', '.join(self.nodes)}; nothing was measured", False
            volts = self.potential[self.nodes.index(a)] - self.potential[self.nodes.index(b)]
            return f"V({a}) - V({b}) = {float(volts):.4f} V", True
        if current:
            name = current.group(1).upper()
            if name not in self.ohms:
                return f"The resistors are {', '.join(self.ohms)}; nothing was measured", False
            i = self._segment_of(name)
            amps = (self.potential[i] - self.potential[i + 1]) / self.ohms[name]
            return f"I({name}) = {float(amps) * 1000:.3f} mA", True
        return None

    def _step(self, action: str):
        measured = self._measure(action[:300].lower()) if "\\boxed" not in action else None
        if measured is not None:
            reading, valid = measured
            if self.left == 0:
                return "No measurements left; answer with \\boxed{ohms}.", 0.0, False
            if valid:
                self.left -= 1
            return f"{reading}. Measurements left: {self.left}.", 0.0, False
        number = _OHMS.fullmatch(extract_answer(action).lower().replace(" ", ""))
        if not number:
            return self.not_understood(
                "Write 'measure V X Y', 'measure I Rk' or answer \\boxed{ohms}."
            )
        guess, answer = Fraction(number.group(1)), self.ohms[self.unknown]
        if abs(guess - answer) <= answer / 100:
            return f"Correct: {self.unknown} = {answer} ohm.", 1.0, True
        self.wrong += 1
        if self.wrong >= 2:
            return f"Wrong again; {self.unknown} is {answer} ohm.", 0.0, True
        return f"Too {'high' if guess > answer else 'low'}; 1 attempt left.", 0.0, False

    # hole: rule: the privileged hint (never the resistance)
    def hint(self) -> str:
        i = self._segment_of(self.unknown)
        others = [n for n in self.chain[i] if n != self.unknown]
        where = f"{self.unknown} is between nodes {self.nodes[i]} and {self.nodes[i + 1]}"
        where += f", in parallel with {others[0]}" if others else ""
        return f"{where}: measure the voltage across it and the current through it; R = V / I."

    def solution(self) -> list[str]:
        i = self._segment_of(self.unknown)
        return [
            f"measure V {self.nodes[i]} {self.nodes[i + 1]}",
            f"measure I {self.unknown}",
            boxed(self.ohms[self.unknown]),
        ]
