# expect: valid
"""Compose permutations of Greek letters written in cycle notation (one-shot answer).

Observations are full of non-ASCII text (Greek letters, ∘, ⁻¹, ↦); the answer is a
string, a single Greek letter (or its English name), compared with ``answers_match``.
"""

from __future__ import annotations

from spade_envs import TextEnv, answers_match, boxed

LETTERS = ["α", "β", "γ", "δ", "ε", "ζ", "η"]
NAMES = {"α": "alpha", "β": "beta", "γ": "gamma", "δ": "delta", "ε": "epsilon", "ζ": "zeta", "η": "eta"}


def cycles(perm: dict[str, str]) -> str:
    seen: list[str] = []
    parts = []
    for start in LETTERS:
        if start in seen or perm[start] == start:
            continue
        cycle, x = [], start
        while x not in cycle:
            cycle.append(x)
            seen.append(x)
            x = perm[x]
        parts.append("(" + " ".join(cycle) + ")")
    return "".join(parts) or "id"


class GreekPermutationCompose(TextEnv):
    skill = "math"
    description = (
        "Three permutations of Greek letters are given in cycle notation. Evaluate a "
        "composition of them (some inverted) at one letter, composing right to left, and "
        "answer with the resulting letter in \\boxed{}. One answer only."
    )
    max_turns = 1

    def _reset(self) -> str:
        size = self.rng.randint(5, 7)
        letters = LETTERS[:size]
        while True:  # bounded in practice: a draw fails with probability well under 1/2
            self.perms: dict[str, dict[str, str]] = {}
            for name in ("σ", "τ", "ρ"):
                image = self.rng.sample(letters, size)
                self.perms[name] = {**{x: x for x in LETTERS}, **dict(zip(letters, image))}
            # Each permutation once, in a random order, each possibly inverted.
            order = self.rng.sample(["σ", "τ", "ρ"], 3)
            self.chain = [(name, self.rng.random() < 0.5) for name in order]
            self.start = self.rng.choice(letters)
            self.trail = [self.start]
            for name, inverse in reversed(self.chain):
                perm = self.perms[name]
                if inverse:
                    perm = {v: k for k, v in perm.items()}
                self.trail.append(perm[self.trail[-1]])
            self.answer = self.trail[-1]
            if self.answer != self.start and all(
                any(p[x] != x for x in letters) for p in self.perms.values()
            ):
                break
        shown = "\n".join(f"  {n} = {cycles(p)}" for n, p in self.perms.items())
        expr = " ∘ ".join(f"{n}⁻¹" if inv else n for n, inv in self.chain)
        return (
            f"Permutations of {{{', '.join(letters)}}} in cycle notation (x ↦ next letter "
            f"in its cycle):\n{shown}\nCompute ({expr})({self.start}), composing right to "
            "left. Answer with one letter, e.g. \\boxed{λ}."
        )

    def _step(self, action: str):
        text = action[:500]
        if answers_match(text, self.answer) or answers_match(text, NAMES[self.answer]):
            return f"Correct: {self.answer}.", 1.0, True
        return f"No: the result is {self.answer}.", 0.0, True

    def hint(self) -> str:
        name, inverse = self.chain[-1]
        first = self.trail[1]
        step = f"{name}⁻¹" if inverse else name
        text = (
            "Start with the rightmost permutation and work leftwards; to invert a cycle, "
            "read it backwards."
        )
        if first != self.answer:
            text += f" The first step gives {step}({self.start}) = {first}."
        return text

    def solution(self) -> list[str]:
        return [boxed(self.answer)]
