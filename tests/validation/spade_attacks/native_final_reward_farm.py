# attack: win-rule expect: rejected [trivial, fresh_play, env_class, load] reason: .
"""A class of our protocol declaring SPADE's win rule. The right answer ends the episode
with reward 1 (a win by SPADE's rule); every wrong answer earns 50 and the episode goes
on, ending at max_turns with a final reward of 0 (no win). With the ``return`` rule the
same class is rejected (the solution never reaches the top of (0, 1000)); with
``final_reward`` nothing checks returns that are not wins, so a policy that never
answers right earns 950 an episode and the validator accepts it."""

from spade_envs import TextEnv


class FarmPrize(TextEnv):
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
