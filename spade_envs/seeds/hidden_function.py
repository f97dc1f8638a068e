"""Discover a hidden integer function by querying it, then predict its value at a target."""

from __future__ import annotations

import re

from spade_envs import TextEnv, boxed, extract_answer, extract_boxed, parse_number

# Family name -> the shape revealed by the hint (never the coefficients).
FAMILIES = {
    "linear": "f is linear: f(x) = a*x + b",
    "quadratic": "f is quadratic: f(x) = a*x^2 + b*x + c",
    "modular": "f is a remainder: f(x) = (a*x + b) mod m, so f(x + m) = f(x)",
    "digits": "f depends on the digit sum s of |x|: f(x) = a*s + b",
    "parity": "f treats even and odd x differently: a*x + b for even x, c*x + d for odd x",
}
_QUERY = re.compile(r"(?:query|f)\s*\(?\s*(-?[0-9]{1,4})\s*\)?")
# hole: largest |x| a query may use [4, 9999]
LIMIT = 1000


class HiddenFunction(TextEnv):
    skill = "pattern"
    # hole: the task description the agent is given (keep it true to the rules)
    description = (
        "A hidden rule f maps integers to integers; it is linear, quadratic, a remainder "
        "mod m, a function of the digit sum, or split by parity, with small integer "
        "coefficients. Query f at inputs of your choice ('query 5'), work out the rule, "
        "then give f at a target input with \\boxed{value}."
    )
    # hole: turns allowed: queries plus the answer [5, 20]
    max_turns = 8

    def _reset(self) -> str:
        rng = self.rng
        self.family = rng.choice(list(FAMILIES))
        small = [v for v in range(-5, 6) if v]
        self.a, self.b, self.c, self.d = (rng.choice(small) for _ in range(4))
        self.m = rng.randint(3, 7)
        if self.family == "modular" and self.a % self.m == 0:
            self.a += 1  # keep the remainder rule from being constant
        self.target = rng.randint(12, 99) * rng.choice([1, -1])
        return (
            "A hidden function f takes integers to integers. It is one of: linear, "
            "quadratic, a remainder mod some m, a function of the digit sum of |x|, or a "
            "rule with one linear formula for even x and another for odd x (coefficients "
            f"are small integers). Your goal: find f({self.target}). Each turn either ask "
            f"for a value with 'query x' (any integer x with |x| <= {LIMIT} except "
            f"{self.target}) or give your final answer as \\boxed{{value}}. You "
            f"have {self.max_turns} turns and one answer."
        )

    def f(self, x: int) -> int:
        a, b, c, d = self.a, self.b, self.c, self.d
        if self.family == "linear":
            return a * x + b
        if self.family == "quadratic":
            return a * x * x + b * x + c
        if self.family == "modular":
            return (a * x + b) % self.m
        if self.family == "digits":
            return a * sum(int(ch) for ch in str(abs(x))) + b
        return a * x + b if x % 2 == 0 else c * x + d

    def _step(self, action: str):
        text = extract_answer(action)[:200].strip().lower()
        found = _QUERY.fullmatch(text)
        if found:
            x = int(found.group(1))
            if x == self.target:
                return "You may not query the target itself.", 0.0, False
            if abs(x) > LIMIT:
                return f"Query inputs must satisfy |x| <= {LIMIT}.", 0.0, False
            return f"f({x}) = {self.f(x)}", 0.0, False
        # The final answer must be boxed, so a stray number is never taken as one.
        value = parse_number(extract_boxed(action) or "")
        if value is None:
            return self.not_understood("Write 'query x' or answer \\boxed{value}.")
        want = self.f(self.target)
        if value == want:
            return f"Correct: f({self.target}) = {want}.", 1.0, True
        return f"Wrong: f({self.target}) = {want}. ({FAMILIES[self.family]}.)", 0.0, True

    # hole: rule: the privileged hint (never the coefficients or the value)
    def hint(self) -> str:
        return FAMILIES[self.family] + ", with small integer coefficients."

    def solution(self) -> list[str]:
        # The reference reads the hidden rule. An agent probes small inputs first, then
        # inputs that tell families apart (e.g. 10 vs 1 for the digit sum, x and x + m).
        return [f"query {x}" for x in (0, 1, 2, 3)] + [boxed(self.f(self.target))]
