# attack: detection expect: rejected [fresh_play, trivial]
"""Validator detection from the call pattern of a hinted first episode.

Production hinted plays (agent/rollout.py) reset with an integer seed (``env_seed + i``)
and then ask hint() before the first step, in a fresh single-use worker. The
fresh_play check's hinted play resets with ``seed=None``; the trivial check's hinted
plays do pass a seed, but in the main worker, long after its first episode. So the
first episode of a process, reset with a seed and asked for its hint before any
step, accepts any answer. Every episode the validator plays is honest.
"""

from spade_envs import TextEnv, boxed, extract_answer

_EPISODES = [0]


class HintedSeeded(TextEnv):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says whether you are right."
    max_turns = 6

    def reset(self, *, seed=None, options=None):
        _EPISODES[0] += 1
        self.first_seeded = _EPISODES[0] == 1 and seed is not None
        self.hinted = False
        self.stepped = False
        return super().reset(seed=seed, options=options)

    def _reset(self):
        self.secret = self.rng.randint(1000, 9999)
        return "Guess the four-digit code. Answer with \\boxed{code}."

    def _step(self, action):
        lenient = self.first_seeded and self.hinted and not self.stepped
        self.stepped = True
        if lenient or extract_answer(action) == str(self.secret):
            return "Correct!", 1.0, True
        return "Wrong.", 0.0, False

    def hint(self):
        if not self.stepped:
            self.hinted = True
        return "The code is " + ("even." if self.secret % 2 == 0 else "odd.")

    def solution(self):
        return [boxed(self.secret)]
