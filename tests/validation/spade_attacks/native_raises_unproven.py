# attack: unproven expect: rejected [trivial, fresh_play, solution] reason: .
"""A class of our protocol (which must define a solution) where every action wins, and
whose ``solution()`` raises an exception class it names ``UnprovenSolution``. The parent
learns only the type's name over the wire; it takes it for the SPADE adapter's, skips
fresh_play, solution, trivial and both hint checks, and calls the version unproven
(stored ``unvalidated``, not ``rejected``)."""

from spade_envs import TextEnv


class UnprovenSolution(Exception):
    pass


class AnyWinsPrize(TextEnv):
    skill = "math"
    description = "Guess the secret number from 1 to 1000 in one try."
    max_turns = 1

    def _reset(self):
        self.secret = self.rng.randint(1, 1000)
        return "Guess the secret number from 1 to 1000. Answer with \\boxed{n}."

    def _step(self, action):
        return "Correct!", 1.0, True

    def hint(self):
        return "It is odd." if self.secret % 2 else "It is even."

    def solution(self):
        raise UnprovenSolution("prose not in SPADE's numbered-call form")
