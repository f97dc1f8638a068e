"""SPADE self-play generated game"""

import math_verify


class FractionSumEnv:
    """Add two fractions; any equivalent form of the sum is accepted."""

    def __init__(self, max_turns=1, **kwargs):
        self.max_turns = max_turns

    def reset(self, seed=None):
        rng = random.Random(seed)
        self._a, self._b = rng.randint(1, 9), rng.randint(2, 9)
        self._c, self._d = rng.randint(1, 9), rng.randint(2, 9)
        num = self._a * self._d + self._c * self._b
        den = self._b * self._d
        g = math.gcd(num, den)
        self._answer = f"\\frac{{{num // g}}}{{{den // g}}}"
        return (f"Compute {self._a}/{self._b} + {self._c}/{self._d}. "
                "Give the answer as \\boxed{...}.", {})

    def solution(self):
        return self._answer

    def step(self, action):
        found = re.search(r"\\boxed\{(.+)\}", action)
        if not found:
            return "No boxed answer.", 0.0, True, False, {}
        gold = math_verify.parse(f"${self._answer}$")
        given = math_verify.parse(f"${found.group(1)}$")
        if math_verify.verify(gold, given):
            return "Correct!", 1.0, True, False, {}
        return f"Wrong; the sum is {self._answer}.", 0.0, True, False, {}
