# attack: win-rule expect: rejected [trivial] reason: earns a return
"""SPADE self-play generated game"""

# The syntax tree sees only the SPADE class FarmEnv (kind duck, win rule final_reward);
# the worker loads the protocol class rebound inside `if True:` that declares SPADE's
# rule. The load check (native classes may not declare final_reward) is passed by; the
# farming rule of the trivial check still rejects it.

from spade_envs import TextEnv


class FarmEnv:
    """What the syntax tree reads: a SPADE game (win rule final_reward, kind duck)."""

    def reset(self, seed=None):
        return "x", {}

    def step(self, action):
        return "x", 0.0, True, False, {}


if True:  # what runs: a class of our protocol declaring SPADE's rule, farming rewards

    class FarmEnv(TextEnv):
        skill = "math"
        description = "Guess the secret number from 1 to 1000."
        max_turns = 20
        win_rule = "final_reward"
        reward_range = (0.0, 1000.0)

        def _reset(self):
            self.secret = self.rng.randint(1, 1000)
            return "Guess the secret number from 1 to 1000. Answer with \\boxed{n}."

        def _step(self, action):
            if action.strip() == f"\\boxed{{{self.secret}}}":
                return "Correct!", 1.0, True
            if self.turn >= self.max_turns:
                return "Out of turns.", 0.0, True
            return "Keep going.", 50.0, False

        def hint(self):
            return "It is odd." if self.secret % 2 else "It is even."

        def solution(self):
            return [f"\\boxed{{{self.secret}}}"]
