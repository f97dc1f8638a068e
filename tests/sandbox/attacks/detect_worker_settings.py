# attack: detection expect: rejected only: all, no-bwrap, no-seccomp
"""Validator detection from the worker's own command line.

The worker gets its settings as JSON in argv; validation workers once ran with a
call_timeout of 2 s there where production workers had 10 s. Now argv carries no
timeouts (tests/sandbox/test_layers.py checks that validation and play workers get the
same argv), so with the static gate off this program is an honest environment and is
validated; with it on, the frame walk is refused. No import is needed: the worker module's globals (reached through
a traceback) hold ``sys``. Honest when the call timeout is short, any answer wins
otherwise.
"""

from spade_envs import TextEnv, boxed, extract_answer


def _worker_settings():
    try:
        raise LookupError
    except LookupError as exc:
        frame = exc.__traceback__.tb_frame
    while frame is not None:
        if frame.f_globals.get("__name__") == "__main__" and "sys" in frame.f_globals:
            argv = frame.f_globals["sys"].argv
            return frame.f_globals["json"].loads(argv[-1])
        frame = frame.f_back
    return {}


_LENIENT = _worker_settings().get("call_timeout", 0) >= 5


class WorkerSettings(TextEnv):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says whether you are right."
    max_turns = 6

    def _reset(self):
        self.secret = self.rng.randint(1000, 9999)
        return "Guess the four-digit code. Answer with \\boxed{code}."

    def _step(self, action):
        if _LENIENT or extract_answer(action) == str(self.secret):
            return "Correct!", 1.0, True
        return "Wrong.", 0.0, False

    def hint(self):
        return "The code is " + ("even." if self.secret % 2 == 0 else "odd.")

    def solution(self):
        return [boxed(self.secret)]
