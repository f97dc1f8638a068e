# expect: fuzz
"""Hidden number search with a hand-written step whose turn limit is off by one."""

from __future__ import annotations

from spade_envs import TextEnv, boxed, extract_answer, parse_number


class OffByOneGuess(TextEnv):
    skill = "math"
    description = (
        "A whole number from 1 to 60 is hidden. Guess it in \\boxed{}; the reply says "
        "higher or lower. Six guesses."
    )
    max_turns = 6

    def _reset(self) -> str:
        self.secret = self.rng.randint(1, 60)
        self.done = False
        return "Guess my number from 1 to 60 with \\boxed{n}. You have 6 guesses."

    def step(self, action: str):
        if self.done:
            return "The episode is over.", 0.0, True, False, {"turn": self.turn}
        self.turn += 1
        value = parse_number(extract_answer(action if isinstance(action, str) else ""))
        if value is not None and value == self.secret:
            self.done = True
            self.episode_return += 1.0
            return f"Correct, it is {self.secret}.", 1.0, True, False, {"turn": self.turn}
        reply = "Not a number." if value is None else ("Higher." if value < self.secret else "Lower.")
        truncated = self.turn > self.max_turns
        self.done = truncated
        return reply, 0.0, False, truncated, {"turn": self.turn}

    def hint(self) -> str:
        return f"The number is {'even' if self.secret % 2 == 0 else 'odd'}."

    def solution(self) -> list[str]:
        low, high, guesses = 1, 60, []
        while True:
            mid = (low + high) // 2
            guesses.append(boxed(mid))
            if mid == self.secret:
                return guesses
            low, high = (mid + 1, high) if mid < self.secret else (low, mid - 1)
