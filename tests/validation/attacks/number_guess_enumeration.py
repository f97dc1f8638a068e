# attack: scaffold-filling expect: rejected [trivial] reason: (guessing every value 1\.\.4 in turn .*wins \d/\d episodes: the task is won by enumeration|reaches the maximum reward)
"""NumberGuess filled by a designer with the range 1..4 and 30 guesses (issue 25): every
bound held, so it was registered as validated, and trying 1, 2, 3, 4 wins every episode.
The parent's hole relations now refuse the filling; the trivial check refuses the child.
"""

from __future__ import annotations

from spade_envs import TextEnv, boxed, extract_answer, parse_number


class NumberGuessX9f4a3a(TextEnv):
    skill = "math"
    description = (
        "A number from 1 to N is hidden. Each turn guess it; the reply says whether the "
        "hidden number is higher or lower. Winning in few guesses needs binary search."
    )
    # hole: guesses allowed (binary search needs log2(upper)) [4, 30]
    max_turns = 30
    # hole: the hidden number lies in 1..upper [4, 5000]
    knobs = {"upper": 4}

    def _reset(self) -> str:
        self.secret = self.rng.randint(1, self.upper)
        self.low, self.high = 1, self.upper
        return (
            f"I am thinking of a whole number from 1 to {self.upper}. You have "
            f"{self.max_turns} guesses. Answer each turn with \\boxed{{your guess}}."
        )

    def _step(self, action: str):
        value = parse_number(extract_answer(action))
        left = self.max_turns - self.turn
        if value is None or value != int(value):
            return f"That is not a whole number. Guesses left: {left}.", 0.0, False
        guess = int(value)
        if guess == self.secret:
            return f"Correct, the number is {guess}!", 1.0, True
        if guess < self.secret:
            self.low = max(self.low, guess + 1)
            return f"Higher than {guess}. Guesses left: {left}.", 0.0, False
        self.high = min(self.high, guess - 1)
        return f"Lower than {guess}. Guesses left: {left}.", 0.0, False

    # hole: rule: the privileged hint (never the number itself)
    def hint(self) -> str:
        parity = "even" if self.secret % 2 == 0 else "odd"
        half = "upper" if self.secret > self.upper // 2 else "lower"
        return f"The number is {parity} and lies in the {half} half of the range."

    def solution(self) -> list[str]:
        # Binary search over the range, written out as the guesses it would make.
        low, high, guesses = 1, self.upper, []
        while True:
            mid = (low + high) // 2
            guesses.append(boxed(mid))
            if mid == self.secret:
                return guesses
            low, high = (mid + 1, high) if mid < self.secret else (low, mid - 1)
