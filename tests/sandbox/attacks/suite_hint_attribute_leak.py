# attack: hint-leak expect: rejected [env_class]
"""Hint leak past the gate: a suite-based class with a hint() the static pass cannot see.

The static pass treats a class derived from ``ReasoningGymTask`` or ``RlveTask`` as a
text environment without a hint unless the module *defines* ``def hint``. Here the
class overrides every hook (it is an ordinary code-guessing environment) and binds
``hint`` as a class attribute to a module-level function, so the validator records
``has_hint=False`` and skips the hint-leak check, the hinted fresh play and the
hint-as-action plays. The registry stores it without a suite, so production rollouts
treat it as hinted and call ``hint()``: which gives the answer away.
"""

from spade_envs import ReasoningGymTask, boxed, extract_answer


def _reveal(self):
    return f"The code is {self.secret}."


class LeakyGuess(ReasoningGymTask):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says higher or lower."
    max_turns = 14
    knobs = {"max_attempts": 14}
    hint = _reveal

    def _reset(self):
        self.secret = self.rng.randint(1000, 9999)
        self.attempts = 0
        return "Guess the four-digit code. Answer with \\boxed{code}."

    def _step(self, action):
        guess = extract_answer(action)
        if guess == str(self.secret):
            return "Correct!", 1.0, True, {}
        try:
            value = int(guess)
        except (TypeError, ValueError):
            return "Answer with a four-digit number in \\boxed{}.", 0.0, False, {}
        return ("Higher." if value < self.secret else "Lower."), 0.0, False, {}

    def solution(self):
        low, high, moves = 1000, 9999, []
        while True:
            middle = (low + high) // 2
            moves.append(boxed(middle))
            if middle == self.secret:
                return moves
            if middle < self.secret:
                low = middle + 1
            else:
                high = middle - 1
