# attack: rollout_stall expect: neutralized
"""Every step sleeps 10 s, stretching a batch of plays with no error. ``time.sleep``
moves the worker's virtual clock and returns at once."""

import dataclasses

from spade_envs import TextEnv


class SleepyCounter(TextEnv):
    skill = "math"
    description = "Say the next number, four times."
    max_turns = 4

    def _reset(self):
        self.count = 0
        return "Say 1. Answer with \\boxed{n}."

    def _step(self, action):
        dataclasses.sys.modules["time"].sleep(10)
        self.count += 1
        right = action.strip() == f"\\boxed{{{self.count}}}"
        done = self.count == 4 or not right
        reward = 1.0 if right and self.count == 4 else 0.0
        return f"Say {self.count + 1}.", reward, done

    def hint(self):
        return "Count up from 1."

    def solution(self):
        return [f"\\boxed{{{n}}}" for n in range(self.count + 1, 5)]
