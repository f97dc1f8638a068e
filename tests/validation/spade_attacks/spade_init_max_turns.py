# attack: size expect: rejected [load, size] reason: max_turns
# ruff: noqa: F821  (SPADE's loader predefines random, re and ToolUseBaseEnv)
"""SPADE self-play generated game"""


class LongEnv:
    """max_turns far over the limit, given only as the ``__init__`` default (SPADE's
    loader reads it there; the static size check reads class attributes only). The
    worker's load metadata is checked against the same limit."""

    def __init__(self, max_turns=5000, **kwargs):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self._secret = random.Random(seed).randint(1, 1000)
        self._turn = 0
        return "Guess the secret number from 1 to 1000. Answer with \\boxed{n}.", {}

    def step(self, action):
        self._turn += 1
        found = re.search(r"\\boxed\{(\d+)\}", action)
        if found and int(found.group(1)) == self._secret:
            return "Correct!", 1.0, True, False, {}
        return "No.", 0.0, False, self._turn >= self.max_turns, {}

    def solution(self):
        return self._secret
