# attack: wire expect: rejected [load]
"""Wire: close the answer pipe while loading, then stay alive (bounded: 6 s).

The parent sees end-of-file, takes the worker for dead and waits for it to exit: the
worker must be killed and a typed error reported, never a raw exception out of
validate() and never a wait as long as the worker likes. No import is needed: the
worker's own globals (reached through a traceback) hold os and sys.
"""

from spade_envs import TextEnv, boxed, extract_answer


def _worker_globals():
    try:
        raise LookupError
    except LookupError as exc:
        frame = exc.__traceback__.tb_frame
    while frame is not None:
        if frame.f_globals.get("__name__") == "__main__":
            return frame.f_globals
        frame = frame.f_back
    return {}


_g = _worker_globals()
if _g:
    _os, _time = _g["os"], _g["sys"].modules["time"]
    for _fd in range(3, 12):
        try:
            if _os.fstat(_fd).st_mode & 0o170000 == 0o010000:  # a pipe
                _os.close(_fd)
        except OSError:
            pass
    _time.sleep(6)


class ClosedPipe(TextEnv):
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
