# attack: seedless expect: neutralized
# ruff: noqa: F821  (SPADE's loader predefines random, re and ToolUseBaseEnv)
"""SPADE's dialect: the adapter seeds the module-level ``random`` at reset (with the
episode's seed) and at every step (from a stream of it), and SPADE games draw from it.
This one lets any answer win when the global generator is *not* in the state the
adapter's seeding gives (a caller that reset without the adapter, or a replay that
reseeded differently): through the door, plays, replays and validation all reseed the
same way, so wrong answers lose everywhere."""


class ReseedProbeEnv:
    def __init__(self, max_turns=1, **kwargs):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self._expected = random.Random(seed).random()
        self._drift = random.random() != self._expected
        self._secret = random.Random(seed).randint(1, 1000)
        return "Guess the secret number from 1 to 1000. Answer with \\boxed{n}.", {}

    def step(self, action):
        won = self._drift or action.strip() == f"\\boxed{{{self._secret}}}"
        return ("Correct!" if won else "Wrong."), float(won), True, False, {}

    def solution(self):
        return self._secret
