# attack: seedless expect: neutralized
"""Any answer wins after a reset without a seed (``reset()``, and every ``make_vec``
autoreset); validation always seeds. Through the door every reset carries a seed (a
seedless one draws it in the parent), so the environment never sees None."""

from spade_envs import TextEnv


class UnseededPrize(TextEnv):
    skill = "math"
    description = "Guess the secret number from 1 to 1000 in one try."
    max_turns = 1

    def reset(self, *, seed=None, options=None):
        self.unseeded = seed is None
        return super().reset(seed=seed, options=options)

    def _reset(self):
        self.secret = self.rng.randint(1, 1000)
        return "Guess the secret number from 1 to 1000. Answer with \\boxed{n}."

    def _step(self, action):
        won = self.unseeded or action.strip() == f"\\boxed{{{self.secret}}}"
        return ("Correct!" if won else "Wrong."), float(won), True

    def hint(self):
        return "It is odd." if self.secret % 2 else "It is even."

    def solution(self):
        return [f"\\boxed{{{self.secret}}}"]
