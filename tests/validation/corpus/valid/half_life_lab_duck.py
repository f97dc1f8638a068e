# expect: valid
"""Measure a radioactive sample and report its half-life. SPADE-style duck-typed class.

Unlike the plainest duck style, ``reset`` returns ``(observation, info)`` and ``step``
returns the Gymnasium 5-tuple ``(observation, reward, terminated, truncated, info)``;
the class also declares ``reward_range`` (0 to 5 points) and its metadata as class
attributes. Randomness comes only from ``random.Random(seed)``.
"""

import math
import random
import re

ISOTOPES = ["Xe-1a", "Kr-7", "Rn-2b", "I-13x", "Tc-9m", "Po-4q"]
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


class HalfLifeLabEnv:
    skill = "science"
    description = (
        "A freshly prepared radioactive sample starts with a known number of atoms. Measure "
        "how many remain after chosen waiting times, then report the half-life in whole "
        "minutes. An exact answer scores 5 points; a report within 10% is told it is close "
        "and may report again (SPADE's rule counts any positive final reward as a win)."
    )
    max_turns = 6
    reward_range = (0.0, 5.0)

    def __init__(self):
        self.over = True

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.isotope = rng.choice(ISOTOPES)
        self.half_life = rng.randint(5, 150)
        self.atoms = rng.choice([10**6, 2 * 10**6, 5 * 10**6])
        self.low = self.half_life - rng.randint(3, 9)
        self.high = self.half_life + rng.randint(3, 9)
        self.turns = 0
        self.over = False
        observation = (
            f"Sample of {self.isotope}: {self.atoms} atoms at t = 0. Commands: 'measure T' "
            "(atoms left after T minutes, 1 <= T <= 1000; the sample is not used up) and "
            f"'report H' (your half-life in whole minutes, ends the task). {self.max_turns} "
            "turns in total."
        )
        return observation, {"atoms": self.atoms}

    def _remaining(self, minutes):
        return round(self.atoms * 0.5 ** (minutes / self.half_life))

    def step(self, action):
        if self.over:
            return "The experiment is over.", 0.0, True, False, {}
        self.turns += 1
        text = str(action)[:200].lower()
        numbers = NUMBER.findall(text)
        value = float(numbers[-1]) if numbers and len(numbers[-1]) < 12 else None
        truncated = self.turns >= self.max_turns
        if "report" in text or "\\boxed" in text:
            self.over = True
            if value is not None and value != self.half_life and (
                abs(value - self.half_life) <= 0.1 * self.half_life
            ):
                self.over = truncated
                return "Close, but not exact: report again.", 0.0, False, truncated, {}
            if value is None:
                return "No half-life given. The experiment ends.", 0.0, True, False, {}
            if value == self.half_life:
                return f"Exactly right: {self.half_life} minutes.", 5.0, True, False, {}
            return f"Off: the half-life is {self.half_life} minutes.", 0.0, True, False, {}
        if "measure" in text and value is not None and 1 <= value <= 1000:
            left = self._remaining(value)
            self.over = truncated
            return f"After {value:g} minutes: {left} atoms remain.", 0.0, False, truncated, {"t": value}
        self.over = truncated
        return "Use 'measure T' or 'report H'.", 0.0, False, truncated, {}

    def hint(self):
        return f"The half-life lies between {self.low} and {self.high} minutes."

    def solution(self):
        t = 100
        left = self._remaining(t)
        estimate = t * math.log(2) / math.log(self.atoms / left)
        return [f"measure {t}", f"report {round(estimate)}"]
