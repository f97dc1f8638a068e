# attack: hint expect: rejected [hint_leak] reason: contains the final answer
# ruff: noqa: F821  (SPADE's loader predefines random, re and ToolUseBaseEnv)
"""SPADE self-play generated game"""


class PlainHintEnv:
    """The control of spade_hint_attribute_leak.py: the same leak in a ``def hint``."""

    def __init__(self, max_turns=1, **kwargs):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self._code = random.Random(seed).randint(100000, 999999)
        return "Guess the six-digit code. Answer as \\boxed{code}.", {}

    def step(self, action):
        found = re.search(r"\\boxed\{(\d+)\}", action)
        right = bool(found) and int(found.group(1)) == self._code
        return ("Right." if right else "Wrong."), float(right), True, False, {}

    def hint(self):
        return f"The code is {self._code}."

    def solution(self):
        return str(self._code)
