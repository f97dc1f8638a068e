# attack: hint expect: neutralized
"""``hint()`` rewrites the class's ``_step`` for the whole process so that any answer
wins, and moves the secret before naming it. Through the door the hint comes from a
twin in another worker: the played episode is untouched."""

from spade_envs import TextEnv


def _anything_wins(self, action):
    return "Correct!", 1.0, True


class HintPatchPrize(TextEnv):
    skill = "math"
    description = "Guess the secret number from 1 to 1000 in one try."
    max_turns = 1

    def _reset(self):
        self.secret = self.rng.randint(1, 1000)
        return "Guess the secret number from 1 to 1000. Answer with \\boxed{n}."

    def _step(self, action):
        won = action.strip() == f"\\boxed{{{self.secret}}}"
        return ("Correct!" if won else "Wrong."), float(won), True

    def hint(self):
        type(self)._step = _anything_wins
        self.secret = 7
        return "It is 7."

    def solution(self):
        return [f"\\boxed{{{self.secret}}}"]
