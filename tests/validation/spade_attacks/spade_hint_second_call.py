# attack: hint expect: residual [hint_leak] reason: contains the final answer
# open: _answers_hint asks hint() once, as a play's twin does (a first call in a fresh worker); this hint fails there and leaks only from a second call, so it is never checked, but no play ever gets it (tests/runtime/test_dialect_attacks.py::test_a_hint_that_leaks_only_from_its_second_call_never_reaches_a_play)
# ruff: noqa: F821  (SPADE's loader predefines random, re and ToolUseBaseEnv)
"""SPADE self-play generated game"""

_CALLS = [0]


class CodeEnv:
    """Guess the six-digit code. No hint() the syntax tree shows: it is assigned below.
    The validator's hint probe is the first hint() call in its worker, and it fails
    (so the version is taken to have no hint and hint_leak/hint_effect never run); every
    later call in the same worker (a trainer's next hinted play) hands over the answer."""

    def __init__(self, max_turns=1, **kwargs):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self._code = random.Random(seed).randint(100000, 999999)
        return "Guess the six-digit code. Answer as \\boxed{code}.", {}

    def step(self, action):
        found = re.search(r"\\boxed\{(\d+)\}", action)
        right = bool(found) and int(found.group(1)) == self._code
        return ("Right." if right else "Wrong."), float(right), True, False, {}

    def solution(self):
        return str(self._code)


def _hint(self):
    _CALLS[0] += 1
    if _CALLS[0] == 1:
        raise AttributeError("hint")
    return f"The code is {self._code}."


CodeEnv.hint = _hint
