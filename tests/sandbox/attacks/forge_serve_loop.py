# attack: forgery expect: rejected [trivial]
"""Forgery: rewrite the worker's serve loop operations from inside.

A cold worker runs as ``python -m spade_envs.sandbox.worker``, so its live module is
``__main__`` (importing spade_envs.sandbox.worker would give a second, idle copy); a worker
forked from a zygote serves from the imported module. The frames above this code lead to
the live one either way; its ``_Host`` class is patched so that step() always answers a
win, claims() says nothing is won at reset, and renew() keeps the old instance.
Whatever the worker answers, the validating process judges: an environment whose every
step wins is rejected by the trivial-policy check.
"""

from spade_envs import TextEnv, boxed, extract_answer


def _worker_module_globals():
    try:
        raise LookupError
    except LookupError as exc:
        frame = exc.__traceback__.tb_frame
    while frame is not None:
        if "_Host" in frame.f_globals:  # the serve loop's module, whatever its name
            return frame.f_globals
        frame = frame.f_back
    return {}


_host = _worker_module_globals().get("_Host")
if _host is not None:
    _host.step = lambda self, action: ["Correct!", 1.0, True, False, {"success": True}]
    _host.claims = lambda self: {"won": False, "ended": False}
    _host.solution = lambda self: ["\\boxed{0}"]


class ForgedServe(TextEnv):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says whether you are right."
    max_turns = 6

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
