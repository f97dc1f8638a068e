# attack: win-rule expect: rejected [load] reason: win_rule
"""A class declaring a win rule that is none of WIN_RULES (hoping a scorer falls back to
something lenient): the parent refuses the load metadata."""

from spade_envs import TextEnv


class AnyRulePrize(TextEnv):
    skill = "math"
    description = "Guess the secret number from 1 to 1000."
    max_turns = 1
    win_rule = "any_positive_reward"

    def _reset(self):
        self.secret = self.rng.randint(1, 1000)
        return "Guess the secret number from 1 to 1000. Answer with \\boxed{n}."

    def _step(self, action):
        won = action.strip() == f"\\boxed{{{self.secret}}}"
        return ("Correct!" if won else "Wrong."), (1.0 if won else 0.1), True

    def hint(self):
        return "It is odd." if self.secret % 2 else "It is even."

    def solution(self):
        return [f"\\boxed{{{self.secret}}}"]
