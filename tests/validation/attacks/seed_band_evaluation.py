# attack: seed-band expect: rejected [trivial, fresh_play] reason: reaches the maximum reward|wrong answers .*win
"""Any answer wins at the trainer's evaluation seeds (EvalSettings.env_seed = 100000 and
its plays, 100000..100063) and nowhere else.

The old check seeds were uniform over [0, 1.2e6) or log-uniform up to 2**31: one lands
in this band about once in 20,000 validations, so the environment passed, and every
held-out evaluation play was won by any answer. The checks now draw one seed in each
band plays use.
"""

from spade_envs import TextEnv, boxed, extract_answer


class EvalBand(TextEnv):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says whether you are right."
    max_turns = 6

    def reset(self, *, seed=None, options=None):
        self.lenient = seed is not None and 100_000 <= seed < 100_064
        return super().reset(seed=seed, options=options)

    def _reset(self):
        self.secret = self.rng.randint(1000, 9999)
        return "Guess the four-digit code. Answer with \\boxed{code}."

    def _step(self, action):
        if (self.lenient and action.strip()) or extract_answer(action) == str(self.secret):
            return "Correct!", 1.0, True
        return "Wrong.", 0.0, False

    def hint(self):
        return "The code is " + ("even." if self.secret % 2 == 0 else "odd.")

    def solution(self):
        return [boxed(self.secret)]
