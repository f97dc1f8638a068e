# attack: unproven expect: rejected [trivial] reason: the empty action
# ruff: noqa: F821  (SPADE's loader predefines random, re and ToolUseBaseEnv)
"""SPADE self-play generated game"""


class AnyWinsEnv:
    """No solution() (SPADE's multi-turn contract asks for none), and every action, the
    empty one included, wins."""

    def __init__(self, max_turns=1, **kwargs):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self._secret = random.Random(seed).randint(1, 1000)
        return "Guess the secret number from 1 to 1000. Answer with \\boxed{n}.", {}

    def step(self, action):
        return "Correct!", 1.0, True, False, {}
