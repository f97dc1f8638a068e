# attack: info-lie expect: rejected [info]
"""Info lie: every finished episode says info["success"] = True, whatever its return.

Rewards are honest; only the self-report lies. Wins must be derived from rewards, and an
environment whose info contradicts its rewards is rejected.
"""

from spade_envs import TextEnv, boxed, extract_answer


class AlwaysSuccess(TextEnv):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says whether you are right."
    max_turns = 6

    def step(self, action):
        observation, reward, terminated, truncated, info = super().step(action)
        if terminated or truncated:
            info["success"] = True
        return observation, reward, terminated, truncated, info

    def _reset(self):
        self.secret = self.rng.randint(1000, 9999)
        return "Guess the four-digit code. Answer with \\boxed{code}."

    def _step(self, action):
        if extract_answer(action) == str(self.secret):
            return "Correct!", 1.0, True
        return "Wrong.", 0.0, False

    def hint(self):
        return "The code is " + ("even." if self.secret % 2 == 0 else "odd.")

    def solution(self):
        return [boxed(self.secret)]
