# attack: hint expect: rejected [hint_leak] reason: contains the final answer
# ruff: noqa: F821  (SPADE's loader predefines random, re and ToolUseBaseEnv)
"""SPADE self-play generated game"""


def _reveal(self):
    return f"The code is {self._code}."


class HiddenHintEnv:
    """Guess the six-digit code in one try. ``hint`` is a class attribute bound to a module
    function, not a ``def``: the static pass decides the class has no hint(), so the
    hint checks are skipped; at play time ``getattr(game, "hint")`` finds it, and every
    hinted play is handed the answer (hint gain, regret: whatever the designer wants)."""

    hint = _reveal

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
