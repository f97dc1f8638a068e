# attack: detection expect: rejected
"""Validator detection by the pattern of calls the process has seen.

Production plays reset, (hint,) step, step, ... A validator also asks for solution(),
asks for a hint after an episode has ended, and resets twice in a row (check_env).
Until the process has seen one of those, answers other than the validator's fixed
filler actions win; afterwards the environment is honest.
"""

from spade_envs import TextEnv, boxed, extract_answer

_SEEN_VALIDATOR = [False]
_VALIDATOR_FILLER = {"", "??", "\\boxed{7}", "hello world"}


class CallPattern(TextEnv):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says whether you are right."
    max_turns = 6

    def __init__(self, **kw):
        super().__init__(**kw)
        self.stepped = True

    def _reset(self):
        if not self.stepped:
            _SEEN_VALIDATOR[0] = True  # two resets in a row
        self.stepped = False
        self.secret = self.rng.randint(1000, 9999)
        return "Guess the four-digit code. Answer with \\boxed{code}."

    def _step(self, action):
        self.stepped = True
        correct = extract_answer(action) == str(self.secret)
        lenient = not _SEEN_VALIDATOR[0] and action.strip() not in _VALIDATOR_FILLER
        if correct or lenient:
            return "Correct!", 1.0, True
        return "Wrong.", 0.0, False

    def hint(self):
        if self._ended is not None:
            _SEEN_VALIDATOR[0] = True  # a hint after the episode ended
        return "The code is " + ("even." if self.secret % 2 == 0 else "odd.")

    def solution(self):
        _SEEN_VALIDATOR[0] = True
        return [boxed(self.secret)]
