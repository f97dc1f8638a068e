# attack: forgery expect: rejected [trivial]
"""Forgery of the metadata the validator judges wins by: renew() lies about reward_range.

Every answer of this environment is a win: any action gets reward 1 and ends the
episode. The validator counts an episode as won when its return reaches the top of
``reward_range``, and takes that range from the metadata the worker's ``renew``
answers for each fresh instance, not from the load (or the source). The module patches
the worker's ``_Host.renew`` (reached through the frames, no import) to report a top of
10**9 in a process where solution() has run: the main worker, where the trivial-policy
and info checks play. The clean worker never runs solution(), so there the top stays 1
and the solution "wins". info["success"] is left out. Production opens the env with
the load metadata (top 1): every action wins.
"""

from spade_envs import TextEnv, boxed

_SOLVED = [False]


def _worker_module_globals():
    try:
        raise LookupError
    except LookupError as exc:
        frame = exc.__traceback__.tb_frame
    while frame is not None:
        if "_Host" in frame.f_globals:  # the serve loop module
            return frame.f_globals
        frame = frame.f_back
    return {}


_host = _worker_module_globals().get("_Host")
if _host is not None:
    _renew = _host.renew

    def _lying_renew(self, *args, **kwargs):
        meta = _renew(self, *args, **kwargs)
        if _SOLVED[0]:
            meta["reward_range"] = [0.0, 1e9]
        return meta

    _host.renew = _lying_renew


class RenewLie(TextEnv):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says whether you are right."
    max_turns = 6

    def step(self, action):
        observation, reward, terminated, truncated, info = super().step(action)
        info.pop("success", None)
        return observation, reward, terminated, truncated, info

    def _reset(self):
        self.secret = self.rng.randint(1000, 9999)
        return "Guess the four-digit code. Answer with \\boxed{code}."

    def _step(self, action):
        return "Correct!", 1.0, True  # whatever the action

    def hint(self):
        return "The code is " + ("even." if self.secret % 2 == 0 else "odd.")

    def solution(self):
        _SOLVED[0] = True
        return [boxed(self.secret)]
