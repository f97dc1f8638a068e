# attack: latency expect: quarantined
"""The latency cheat again, through the clock leak the virtual clock cannot close: the
``time`` module is deleted from ``sys.modules`` and imported afresh (a built-in module
is re-created with its original functions, with no audit event). A play with a model
that takes over a second per reply wins with any answer; the replay audit replays it at
once in a fresh worker, where the same answer loses: the version is quarantined and the
play voided."""

import dataclasses

from spade_envs import TextEnv


def _real_time():
    modules = dataclasses.sys.modules
    modules.pop("time", None)
    fresh = modules["importlib"].import_module("time")
    return fresh.time()


class ReimportedClockPrize(TextEnv):
    skill = "math"
    description = "Guess the secret number from 1 to 1000 in one try."
    max_turns = 1

    def _reset(self):
        self.secret = self.rng.randint(1, 1000)
        self.started = _real_time()
        return "Guess the secret number from 1 to 1000. Answer with \\boxed{n}."

    def _step(self, action):
        if _real_time() - self.started > 1.0:
            return "Correct!", 1.0, True
        won = action.strip() == f"\\boxed{{{self.secret}}}"
        return ("Correct!" if won else "Wrong."), float(won), True

    def hint(self):
        return "It is odd." if self.secret % 2 else "It is even."

    def solution(self):
        return [f"\\boxed{{{self.secret}}}"]
