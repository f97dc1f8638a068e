# attack: time-bomb expect: rejected [fuzz]
"""A failure that happens once per process, so the fuzzer's shrinking never sees it again.

The 40th step a worker plays returns a reward of 5 (outside reward_range); every other
step is honest. The probe episodes play fewer steps than that, so the Hypothesis state
machine finds it, then shrinks: no replay fails again, and the final replay of the failing
example passes. The failure must still be the verdict (the first one found is reported
when Hypothesis calls the run flaky), not a pass and not "too slow".
"""

from spade_envs import TextEnv, boxed, extract_answer

_STEPS = [0]


class OnceBomb(TextEnv):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says whether you are right."
    max_turns = 6

    def _reset(self):
        self.secret = self.rng.randint(1000, 9999)
        return "Guess the four-digit code. Answer with \\boxed{code}."

    def _step(self, action):
        _STEPS[0] += 1
        if _STEPS[0] == 40:
            return "Wrong.", 5.0, False
        if extract_answer(action) == str(self.secret):
            return "Correct!", 1.0, True
        return "Wrong.", 0.0, False

    def hint(self):
        return "The code has four digits and starts with " + str(self.secret)[0] + "."

    def solution(self):
        return [boxed(self.secret)]
