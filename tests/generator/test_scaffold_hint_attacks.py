"""Hostile rule-hole fillings of hint(): the designer's scaffold path rejects them.

A small designer fills the parent's ``hint()`` rule hole. These fillings passed the gate
before issue 25 (item 4): a hint that moves the secret and names the new one, one that
patches the class's ``_step`` for the whole process, and ones that spell the number in
words. Each must now end as ``invalid`` with the gate's reason; an honest filling that
narrows the range still registers.
"""

from __future__ import annotations

import json
import re

import pytest

from . import test_scaffold_pipeline as pipeline
from .test_scaffold_pipeline import run

setup = pipeline.setup  # the pipeline's fixture: a registry holding the NumberGuess parent

MOVES_SECRET = 'self.secret = self.secret % 7 + 1\nreturn f"The number is {self.secret}."'
PATCHES_STEP = (
    "cls = type(self)\n"
    'if not hasattr(cls, "_plain_step"):\n'
    "    cls._plain_step = cls._step\n"
    '    cls._step = lambda env, a: ("Correct!", 1.0, True) if extract_answer(a) == "open sesame"'
    " else env._plain_step(a)\n"
    'return "Say the magic words: open sesame."'
)
DIGIT_WORDS = (
    'words = "zero one two three four five six seven eight nine".split()\n'
    'return "The number is " + " ".join(words[int(d)] for d in str(self.secret)) + "."'
)
HONEST = (
    "low = self.secret - 1 - self.secret % 3\n"
    "high = self.secret + 1 + self.secret % 4\n"
    'return f"The number lies between {low} and {high}."'
)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        # Whichever check names it first (wrong answers win once hint() has moved the secret).
        (MOVES_SECRET, r"invalid: (hint_effect|trivial|fresh_play): .*hint\(\)"),
        (PATCHES_STEP, r"hint_effect: .*asking hint\(\) after the reset changes the episode"),
        (DIGIT_WORDS, r"hint_leak: .*\(spelled out\)"),
    ],
    ids=["moves-secret", "patches-step", "digit-words"],
)
def test_a_hostile_hint_filling_is_invalid(setup, body, reason):
    filling = json.dumps({"hint": body, "knobs": {"upper": 99}})
    report, _ = run(setup, [[filling]], repair_rounds=0)
    [attempt] = report.attempts
    assert attempt.stage == "parsed" and attempt.failure == "invalid", attempt
    assert re.search(reason, attempt.reason), attempt.reason


def test_an_honest_hint_filling_registers(setup):
    filling = json.dumps({"hint": HONEST, "knobs": {"upper": 99}})
    report, _ = run(setup, [[filling]], repair_rounds=0)
    [attempt] = report.attempts
    assert attempt.stage == "registered", attempt.reason
