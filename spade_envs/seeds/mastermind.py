"""Mastermind: deduce a hidden digit code from exact / partial match feedback."""

from __future__ import annotations

import itertools
import re
from typing import ClassVar

from spade_envs import TextEnv, boxed, extract_answer


def score(code: str, guess: str) -> tuple[int, int]:
    """(exact, partial): right digit in the right place, right digit in the wrong place."""
    exact = sum(c == g for c, g in zip(code, guess))
    common = sum(min(code.count(d), guess.count(d)) for d in "0123456789")
    return exact, common - exact


class Mastermind(TextEnv):
    skill = "logic"
    # hole: the task description the agent is given (keep it true to the rules)
    description = (
        "A secret code of digits (repeats allowed) is hidden. Each turn guess a whole code; "
        "the reply counts exact matches (right digit, right place) and partial matches "
        "(right digit, wrong place). Crack the code before the turns run out by keeping "
        "every guess consistent with all feedback so far."
    )
    # hole: guesses allowed [8, 30]
    max_turns = 10
    # hole: code length (2-5) and digits 1 to N in use (2-7) [2, 7]
    knobs: ClassVar[dict] = {"length": 4, "digits": 6}
    # What must hold between the holes for the description to be true and the task hard.
    hole_relations = ("2 <= length <= 5", "2 <= digits <= 7")

    def _reset(self) -> str:
        self.length = min(max(self.length, 2), 5)  # bounds keep the solver fast
        self.digits = min(max(self.digits, 2), 7)
        self.alphabet = "".join(str(d) for d in range(1, self.digits + 1))
        self.code = "".join(self.rng.choice(self.alphabet) for _ in range(self.length))
        return (
            f"Mastermind. I hid a code of {self.length} digits, each from 1 to {self.digits} "
            f"(digits may repeat). You have {self.max_turns} guesses. After each guess I say "
            "how many digits are exact (right digit, right place) and how many are partial "
            "(right digit, wrong place). Answer each turn with \\boxed{code}, e.g. "
            f"\\boxed{{{self.alphabet[0] * self.length}}}."
        )

    def _step(self, action: str):
        guess = re.sub(r"[\s,]", "", extract_answer(action))
        left = self.max_turns - self.turn
        pattern = f"[1-{self.digits}]{{{self.length}}}"
        if len(guess) != self.length or not re.fullmatch(pattern, guess):
            return self.not_understood(
                f"A guess is exactly {self.length} digits from 1 to {self.digits}, "
                f"like \\boxed{{{self.alphabet[-1] * self.length}}}. Guesses left: {left}."
            )
        exact, partial = score(self.code, guess)
        if exact == self.length:
            return f"{guess}: all {exact} exact. You cracked the code!", 1.0, True
        return f"{guess}: {exact} exact, {partial} partial. Guesses left: {left}.", 0.0, False

    # hole: rule: the privileged hint (never the whole code)
    def hint(self) -> str:
        # One position only: listing the digits would spell out a code such as 4444 or 1234.
        return f"The first digit of the code is {self.code[0]}."

    def solution(self) -> list[str]:
        # Open with a 1122-style guess, then always play the first code consistent with
        # every reply so far (a simple, strong Mastermind strategy).
        half = self.length // 2
        guess = self.alphabet[0] * half + self.alphabet[1] * (self.length - half)
        candidates = ["".join(p) for p in itertools.product(self.alphabet, repeat=self.length)]
        guesses = []
        while True:
            guesses.append(boxed(guess))
            reply = score(self.code, guess)
            if reply[0] == self.length:
                return guesses
            candidates = [c for c in candidates if score(c, guess) == reply]
            guess = candidates[0]
