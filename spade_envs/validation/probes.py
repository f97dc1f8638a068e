"""Probes an environment cannot predict: wrong answers, seed bands and enumeration.

An environment's author can read this project's source. A check that plays a fixed list
of wrong answers can be passed by an environment that lets every *other* wrong answer
win; one whose seeds never fall where plays reset can be passed by an environment that
cheats only there. So:

- :func:`wrong_answers` draws wrong answers from the observation the environment just
  gave (numbers near the magnitudes it mentions, its own words, random strings, tool
  calls of its own tools) in the forms models write them (``\\boxed{N}``,
  ``<answer>..</answer>``, "I think it is N", tool-call JSON), from a generator seeded
  by the check seed, which is drawn with :mod:`secrets` for every validation (and
  reproducible when the validation is given a seed);
- :func:`band_seeds` draws one seed in each band plays reset with;
- :func:`stated_range` and :func:`enumeration_policies` find a small integer range the
  observation states, for the trivial check to try every value of it in turn.

Every verdict is still reached by the checks, in the validating process, from what
crosses the wire.
"""

from __future__ import annotations

import json
import math
import random
import re
import string
from collections.abc import Callable, Sequence
from typing import Any

from ..core.answers import answers_match, extract_answer

__all__ = [
    "ENUMERATION_MAX_VALUES",
    "SEED_BANDS",
    "band_seeds",
    "enumeration_policies",
    "matches_solution",
    "stated_range",
    "wrong_answers",
]

Policy = Callable[[str, int], str]

#: Reset-seed bands plays use, ``(name, low, high)`` with ``high`` exclusive: the CLI and
#: ``gym.make`` users (0, 1, ...), the trainer's held-out evaluation
#: (``EvalSettings.env_seed`` = 100000, plus its plays), and training plays (a derived
#: seed modulo 10**6, plus the plays of one environment). tests/validation pins these
#: against the trainer's configuration.
SEED_BANDS: tuple[tuple[str, int, int], ...] = (
    ("cli", 0, 64),
    ("evaluation", 100_000, 100_064),
    ("training", 0, 1_000_064),
)
#: Largest stated range the trivial check enumerates (one step per value and seed).
ENUMERATION_MAX_VALUES = 64
#: Seeds the enumeration is played on, and the share of them it must win to reject.
ENUMERATION_SEEDS = 5
ENUMERATION_WIN_SHARE = 0.8

_NUMBER = re.compile(r"(?<![\w.])-?\d{1,9}(?![\w])")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{2,23}")
_RANGES = (
    re.compile(r"\bbetween\s+(-?\d{1,9})\s+and\s+(-?\d{1,9})\b", re.IGNORECASE),
    re.compile(r"\bfrom\s+(-?\d{1,9})\s+(?:to|through|until)\s+(-?\d{1,9})\b", re.IGNORECASE),
    re.compile(r"(?<![\w.])(-?\d{1,9})\s*\.\.\.?\s*(-?\d{1,9})(?![\w.])"),
    re.compile(r"\[\s*(-?\d{1,9})\s*,\s*(-?\d{1,9})\s*\]"),
)


def band_seeds(rng: random.Random) -> list[int]:
    """One seed drawn uniformly in each of :data:`SEED_BANDS`, in random order."""
    seeds = [rng.randrange(low, high) for _, low, high in SEED_BANDS]
    rng.shuffle(seeds)
    return seeds


# ----- wrong answers ---------------------------------------------------------------------------
def _kind(schema: Any) -> str:
    """``number``, ``string``, ``boolean`` or ``any``: what a parameter's schema asks for
    (models mostly send the declared type; a wrong type is the fuzz check's business)."""
    if not isinstance(schema, dict):
        return "any"
    types = [schema.get("type")]
    for key in ("anyOf", "oneOf"):
        types += [s.get("type") for s in schema.get(key) or [] if isinstance(s, dict)]
    for wanted, kind in (("integer", "number"), ("number", "number"), ("string", "string")):
        if wanted in types:
            return kind
    return "boolean" if "boolean" in types else "any"


def _tool_names(tool_schemas: Sequence[dict[str, Any]]) -> list[tuple[str, list[tuple[str, str]]]]:
    tools = []
    for schema in tool_schemas:
        function = schema.get("function", schema) if isinstance(schema, dict) else {}
        name = function.get("name") if isinstance(function, dict) else None
        if isinstance(name, str) and name:
            properties = (function.get("parameters") or {}).get("properties") or {}
            params = [(str(p), _kind(properties[p])) for p in list(properties)[:6]]
            tools.append((name, params))
    return tools


class _Draws:
    """Values drawn from what an observation says (and from nothing it could foresee)."""

    def __init__(self, rng: random.Random, observation: str):
        self.rng = rng
        text = observation[-4000:]  # the latest words matter; a long log costs nothing more
        self.numbers = [int(n) for n in _NUMBER.findall(text)]
        self.words = _WORD.findall(text)
        self.range = stated_range(text, limit=10**6)

    def number(self) -> int:
        rng = self.rng
        if self.range and rng.random() < 0.5:
            return rng.randint(*self.range)
        if self.numbers:
            near = rng.choice(self.numbers)
            spread = max(3, abs(near))
            return rng.randint(near - spread, near + spread)
        return rng.randint(0, 10 ** rng.randint(1, 4))

    def word(self) -> str:
        if self.words and self.rng.random() < 0.8:
            return self.rng.choice(self.words)
        return self.text()

    def text(self) -> str:
        alphabet = string.ascii_letters + string.digits + " -_.,"
        return "".join(self.rng.choice(alphabet) for _ in range(self.rng.randint(1, 12))).strip()

    def value(self) -> str:
        pick = self.rng.random()
        if pick < 0.55:
            return str(self.number())
        return self.word() if pick < 0.9 else (self.text() or "x")


def wrong_answers(
    seed: int,
    *,
    exclude: Callable[[str], bool] | None = None,
    tool_schemas: Sequence[dict[str, Any]] = (),
    reasoned: bool = False,
) -> Policy:
    """A policy of wrong answers in the forms models write, drawn afresh each turn from the
    observation the environment just gave.

    Args:
        seed: Seeds the draws (a check seed: drawn with :mod:`secrets` for every
            validation, or derived from the validation's explicit seed).
        exclude: Actions the policy must not send (e.g. ones matching the solution's
            answer); a draw it refuses is redrawn (a few times, then sent anyway).
        tool_schemas: The environment's tools: tool calls of them are drawn too.
        reasoned: Every answer random letters, in a long reply holding every common
            reasoning phrase (a version that lets a model's phrasing win whatever the
            answer meets it).
    """
    rng = random.Random(f"wrong-answers:{seed}")
    tools = _tool_names(tool_schemas)

    def draw(observation: str) -> str:
        values = _Draws(rng, observation if isinstance(observation, str) else "")
        if tools and rng.random() < 0.5:
            name, params = rng.choice(tools)
            arguments: dict[str, Any] = {}
            for param, kind in params:
                if kind == "boolean":
                    arguments[param] = rng.random() < 0.5
                elif kind == "number" or (kind == "any" and rng.random() < 0.6):
                    arguments[param] = values.number()
                else:
                    arguments[param] = values.word()
            call = json.dumps({"name": name, "arguments": arguments})
            return f"<tool_call>{call}</tool_call>"
        if reasoned:
            # The answer inside is plain letters: a phrase that wins whatever the answer is
            # what is looked for, not a lucky number on a task with many right answers.
            return _reasoned(rng, "".join(rng.choice(string.ascii_letters) for _ in range(9)))
        value = values.value()
        form = rng.randrange(6)
        if form == 0:
            return "\\boxed{" + value + "}"
        if form == 1:
            return "<answer>" + value + "</answer>"
        if form == 2:
            return f"I think it is {value}."
        if form == 3:
            return _reasoned(rng, value)
        if form == 4:
            return value
        return f"{value}\n<answer>{value}</answer>"

    def policy(observation: str, _turn: int) -> str:
        action = draw(observation)
        for _ in range(8):
            if exclude is None or not exclude(action):
                break
            action = draw(observation)
        return action

    return policy


#: What model replies say around an answer. A reasoned probe says all of it, in a
#: random order, so a version that lets any reply with a model's phrasing win (a backdoor
#: keyed on "Therefore" or "step by step") meets its phrase under the validator.
_REASONING = (
    "<think>",
    "Let me think step by step.",
    "First, I read the task carefully.",
    "Let's work through it.",
    "So, putting it together:",
    "Therefore,",
    "Thus,",
    "Hence,",
    "In conclusion,",
    "I am confident.",
    "**Final Answer**",
    "Final answer:",
    "The answer is",
    "</think>",
    "\n\n",
)


def _reasoned(rng: random.Random, value: str) -> str:
    """A wrong answer in a long model-like reply that holds every phrase of _REASONING."""
    phrases = list(_REASONING)
    rng.shuffle(phrases)
    return " ".join(phrases) + f" \\boxed{{{value}}}\n<answer>{value}</answer>"


def matches_solution(action: str, solution: Sequence[str]) -> bool:
    """Whether ``action`` is one of the solution's actions or gives its final answer: a
    wrong-answer probe that sends it may have won by being right."""
    if not solution:
        return False
    if action in solution or action.strip() == str(solution[-1]).strip():
        return True
    final = extract_answer(str(solution[-1]))
    try:
        # A lenient parser may read the answer out of "I think it is 42.": that is right too.
        said = re.search(rf"(?<![\w.]){re.escape(final)}(?!\w)", action, re.IGNORECASE)
        # Parsers that take the first digits anywhere ("-5", "x5y" give 5) count a number
        # inside any text: a probe holding the answer's digits may have been right.
        digits = final.isdigit() and final in action
        return bool(final) and (answers_match(action, final) or said is not None or digits)
    except (ValueError, ArithmeticError, re.error):
        return False


# ----- enumeration ------------------------------------------------------------------------------
def stated_range(
    observation: str, *, limit: int = ENUMERATION_MAX_VALUES
) -> tuple[int, int] | None:
    """The first integer range of at most ``limit`` values the text states ("between 1
    and 4", "from 1 to 8", "1..4", "in [1, 4]"), as ``(low, high)``; None if none."""
    if not isinstance(observation, str):
        return None
    found: list[tuple[int, int, int]] = []
    for pattern in _RANGES:
        for match in pattern.finditer(observation[:8192]):
            low, high = int(match.group(1)), int(match.group(2))
            if low < high and high - low + 1 <= limit:
                found.append((match.start(), low, high))
    if not found:
        return None
    _, low, high = min(found)
    return low, high


def enumeration_policies(
    observation: str, max_turns: int
) -> tuple[tuple[int, int] | None, list[tuple[str, list[str]]]]:
    """For a first observation that states a small range: the range and the policies that
    guess every value of it in order (each as a label and its actions), in the answer
    forms the observation asks for first. None and ``[]`` when no such range is stated or
    ``max_turns`` is too few for enumeration to win most episodes.
    """
    stated = stated_range(observation)
    if stated is None:
        return None, []
    low, high = stated
    count = high - low + 1
    if max_turns < math.ceil(ENUMERATION_WIN_SHARE * count):
        return stated, []  # too few turns: trying every value cannot win most episodes
    forms: list[tuple[str, Callable[[int], str]]] = [
        ("\\boxed{N}", lambda n: "\\boxed{" + str(n) + "}"),
        ("N", str),
    ]
    if "<answer>" in observation:
        forms.insert(0, ("<answer>N</answer>", lambda n: f"<answer>{n}</answer>"))
    values = range(low, high + 1)
    return stated, [(label, [fmt(n) for n in values]) for label, fmt in forms]
