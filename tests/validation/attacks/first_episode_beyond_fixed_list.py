# attack: detection expect: rejected [fresh_play] reason: wrong answers .*win the first episode
"""The first episode of a process lets every wrong answer win, except those the old
fresh-play check sent (it read them in checks.py's _plausible_answers: a nine-digit
number boxed or after "I think it is", or one of seven fixed words, bare or in
<answer>), the determinism check's filler, and the empty action. Later episodes are
honest, so every other check passes; a production worker, which plays one episode, was
won by anything a model writes. The probes are now drawn from the observation itself.
"""

import re

from spade_envs import TextEnv, boxed, extract_answer

_RESETS = [0]
_OLD_WORDS = {"yes", "north", "submit", "done", "left", "open the door", "z"}
_OLD_FORMS = re.compile(r"^(\\boxed\{\d{9}\}|I think it is \d{9})$")
_FILLER = {"", "??", "\\boxed{7}", "hello world"}


def _old_probe(action):
    text = action.strip()
    word = extract_answer(text).lower() if text.startswith("<answer>") else text.lower()
    return bool(_OLD_FORMS.match(text)) or word in _OLD_WORDS or text in _FILLER


class BeyondFixedList(TextEnv):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says whether you are right."
    max_turns = 6

    def _reset(self):
        _RESETS[0] += 1
        self.lenient = _RESETS[0] == 1
        self.secret = self.rng.randint(1000, 9999)
        return "Guess the four-digit code. Answer with \\boxed{code}."

    def _step(self, action):
        correct = extract_answer(action) == str(self.secret)
        if correct or (self.lenient and not _old_probe(action)):
            return "Correct!", 1.0, True
        return "Wrong.", 0.0, False

    def hint(self):
        return "The code is " + ("even." if self.secret % 2 == 0 else "odd.")

    def solution(self):
        return [boxed(self.secret)]
