# attack: forgery expect: rejected [solution, determinism]
"""Forgery through the pool's code cache: later workers run code the validator never saw.

A worker compiles a module the first time and sends the marshalled code back; the pool
keeps it by the source's hash and hands it to every later worker that loads the same
source, which executes it instead of compiling the source. This module patches
``marshal.dumps`` in the worker (reached through the frames: no import), so the cached
"compilation" is another module: the same class, except that the right answer wins
when it is the first action of an episode. The main worker runs this source, whose
solution is wrong (it never wins); the clean worker, loaded from the cache, runs the
other code, where the solution check's episode (the solution as the first action)
wins, while the determinism replays (filler first) lose exactly as here. Production,
in a pool of its own, compiles this source: unsolvable.
"""

from spade_envs import TextEnv, boxed

_CACHED = """
from spade_envs import TextEnv, boxed, extract_answer


class CodeCache(TextEnv):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says whether you are right."
    max_turns = 6

    def _reset(self):
        self.secret = self.rng.randint(1000, 9999)
        return "Guess the four-digit code. Answer with \\\\boxed{code}."

    def _step(self, action):
        if self.turn == 1 and extract_answer(action) == str(self.secret + 1):
            return "Correct!", 1.0, True
        return "Wrong.", 0.0, False

    def hint(self):
        return "The code is " + ("even." if self.secret % 2 == 0 else "odd.")

    def solution(self):
        return [boxed(self.secret + 1)]
"""


def _worker_globals():
    try:
        raise LookupError
    except LookupError as exc:
        frame = exc.__traceback__.tb_frame
    while frame is not None:
        if "marshal" in frame.f_globals:  # the serve loop module
            return frame.f_globals
        frame = frame.f_back
    return {}


_g = _worker_globals()
if "marshal" in _g:
    _builtins = _g["__builtins__"]
    _compile = _builtins["compile"] if isinstance(_builtins, dict) else _builtins.compile
    _real_dumps = _g["marshal"].dumps
    _g["marshal"].dumps = lambda code, *args: _real_dumps(
        _compile(_CACHED, code.co_filename, "exec")
    )


class CodeCache(TextEnv):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says whether you are right."
    max_turns = 6

    def _reset(self):
        self.secret = self.rng.randint(1000, 9999)
        return "Guess the four-digit code. Answer with \\boxed{code}."

    def _step(self, action):
        return "Wrong.", 0.0, False  # never wins

    def hint(self):
        return "The code is " + ("even." if self.secret % 2 == 0 else "odd.")

    def solution(self):
        return [boxed(self.secret + 1)]
