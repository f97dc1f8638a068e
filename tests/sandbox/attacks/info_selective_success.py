# attack: info-lie expect: rejected [info]
"""Info lie, aimed past the check: success=True on reward 0 unless the episode was
all empty actions.

The info check compares info with the return on two episodes per seed: the solution
(which really wins) and the empty action (where this environment tells the truth). Any
other losing episode (random text, a wrong answer, what an agent actually plays) ends
with success=True on a return of 0.
"""

from spade_envs import TextEnv, boxed, extract_answer


class SelectiveSuccess(TextEnv):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says whether you are right."
    max_turns = 6

    def step(self, action):
        if action.strip():
            self.tried = True
        observation, reward, terminated, truncated, info = super().step(action)
        if (terminated or truncated) and self.tried:
            info["success"] = True
        return observation, reward, terminated, truncated, info

    def _reset(self):
        self.tried = False
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
