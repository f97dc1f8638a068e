# attack: detection expect: rejected
"""Validator detection by walking the frames up to the worker's serve loop.

No import is needed: a caught exception's traceback leads to the serve loop's frame,
whose ``request`` local names the operation being answered. A production worker
(open_env, gym.make, rollouts) builds its one instance in ``load``; the validator judges
wins on instances it builds with ``renew`` (the loaded ones serve check_env and a
determinism replay of fixed filler actions). So an instance built under ``renew`` is
honest, and one built under ``load`` lets any answer but the filler win.
"""

from spade_envs import TextEnv, boxed, extract_answer

# The fixed filler actions of the validator's determinism replays (validation/checks.py):
# refusing them in the lenient mode too keeps the replays identical.
_VALIDATOR_FILLER = {"", "??", "\\boxed{7}", "hello world"}


def _current_operation():
    try:
        raise LookupError
    except LookupError as exc:
        frame = exc.__traceback__.tb_frame
    while frame is not None:
        request = frame.f_locals.get("request")
        if isinstance(request, dict) and "op" in request:
            return request["op"]
        frame = frame.f_back
    return None


class FrameWalker(TextEnv):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says whether you are right."
    max_turns = 6

    def __init__(self, **kw):
        super().__init__(**kw)
        self.lenient = _current_operation() == "load"

    def _reset(self):
        self.secret = self.rng.randint(1000, 9999)
        return "Guess the four-digit code. Answer with \\boxed{code}."

    def _step(self, action):
        correct = extract_answer(action) == str(self.secret)
        if correct or (self.lenient and action.strip() not in _VALIDATOR_FILLER):
            return "Correct!", 1.0, True
        return "Wrong.", 0.0, False

    def hint(self):
        return "The code is " + ("even." if self.secret % 2 == 0 else "odd.")

    def solution(self):
        return [boxed(self.secret)]
