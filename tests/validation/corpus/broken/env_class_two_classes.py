# expect: env_class
"""Two difficulty levels written as two independent environment classes in one module."""

from __future__ import annotations

from spade_envs import TextEnv, boxed, extract_answer, parse_number


class GuessEasy(TextEnv):
    skill = "math"
    description = (
        "A whole number from 1 to 20 is hidden. Guess it in \\boxed{}; the reply says "
        "higher or lower. Five guesses."
    )
    max_turns = 5
    upper = 20

    def _reset(self) -> str:
        self.secret = self.rng.randint(1, self.upper)
        return f"Guess my number from 1 to {self.upper} with \\boxed{{n}}. {self.max_turns} guesses."

    def _step(self, action: str):
        value = parse_number(extract_answer(action))
        if value is not None and value == self.secret:
            return f"Correct, it is {self.secret}.", 1.0, True
        if value is None:
            return "That is not a number.", 0.0, False
        return ("Higher." if value < self.secret else "Lower."), 0.0, False

    def hint(self) -> str:
        return f"The number is {'even' if self.secret % 2 == 0 else 'odd'}."

    def solution(self) -> list[str]:
        low, high, guesses = 1, self.upper, []
        while True:
            mid = (low + high) // 2
            guesses.append(boxed(mid))
            if mid == self.secret:
                return guesses
            low, high = (mid + 1, high) if mid < self.secret else (low, mid - 1)


class GuessHard(TextEnv):
    skill = "math"
    description = (
        "A whole number from 1 to 1000 is hidden. Guess it in \\boxed{}; the reply says "
        "higher or lower. Ten guesses."
    )
    max_turns = 10
    upper = 1000

    def _reset(self) -> str:
        self.secret = self.rng.randint(1, self.upper)
        return f"Guess my number from 1 to {self.upper} with \\boxed{{n}}. {self.max_turns} guesses."

    def _step(self, action: str):
        value = parse_number(extract_answer(action))
        if value is not None and value == self.secret:
            return f"Correct, it is {self.secret}.", 1.0, True
        if value is None:
            return "That is not a number.", 0.0, False
        return ("Higher." if value < self.secret else "Lower."), 0.0, False

    def hint(self) -> str:
        return f"The number is {'even' if self.secret % 2 == 0 else 'odd'}."

    def solution(self) -> list[str]:
        low, high, guesses = 1, self.upper, []
        while True:
            mid = (low + high) // 2
            guesses.append(boxed(mid))
            if mid == self.secret:
                return guesses
            low, high = (mid + 1, high) if mid < self.secret else (low, mid - 1)
