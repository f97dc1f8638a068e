"""A SPADE self-play run folder of N games, for benchmarks (``suite_import.py --pool N``).

The games are small number-guess, arithmetic, modular, odd-one-out and word games in the
shapes SPADE's designers write, each with its own parameters (ranges, operators, turn
limits, word lists) so that no two sources are alike: most import their modules and
define ``solution()``; some use SPADE's predefined names without importing them (the
SPADE dialect); one in ten has no ``solution()`` (SPADE's multi-turn contract asks for
none: stored unproven) and one in ten a wrong one (rejected). Beside the games the cache
holds an ``env_memory.json`` record for every fourth game and a hint for every third, as
SPADE's orchestrator writes them.
"""

from __future__ import annotations

import json
import random
import textwrap
from pathlib import Path

__all__ = ["write_pool"]

HEADER = '"""SPADE self-play generated game"""\n\n'
SKILLS = (
    "Mathematical Reasoning", "Logical Deduction", "Pattern Recognition", "Optimization",
    "Spatial Reasoning", "Causal Inference", "Language Understanding",
)  # fmt: skip
WORDS = ("stone", "river", "cloud", "maple", "ember", "quartz", "lantern", "meadow", "harbor")
BOXED = r'r"\\boxed\{(-?\d+)\}"'
BOXED_WORD = r'r"\\boxed\{([a-z]+)\}"'


def _guess(name: str, rng: random.Random) -> str:
    high, turns = rng.randint(10, 200), rng.randint(4, 12)
    return f'''
class {name}:
    """Guess a hidden number from 1 to {high}; the game answers higher or lower."""

    def __init__(self, max_turns={turns}):
        self.max_turns = max_turns
        self.turn = 0
        self.target = 1

    def reset(self, seed=None):
        self.target = random.Random(seed).randint(1, {high})
        self.turn = 0
        return "Guess a number from 1 to {high}. Answer as \\\\boxed{{n}}.", {{}}

    def solution(self):
        return str(self.target)

    def step(self, action):
        self.turn += 1
        found = re.search({BOXED}, action)
        if found and int(found.group(1)) == self.target:
            return "Correct!", 1.0, True, False, {{}}
        over = self.turn >= self.max_turns
        if found:
            side = "higher" if int(found.group(1)) < self.target else "lower"
            return "No: go " + side + ".", 0.0, False, over, {{}}
        return "Answer as \\\\boxed{{n}}.", 0.0, False, over, {{}}
'''


def _arithmetic(name: str, rng: random.Random) -> str:
    operator = rng.choice("+-*")
    low, high = sorted((rng.randint(2, 500), rng.randint(2, 500)))
    return f'''
class {name}:
    """Compute a {operator} b for a, b in [{low}, {high + 1}]; answer in \\\\boxed{{}}."""

    max_turns = {rng.randint(2, 4)}

    def __init__(self):
        self.turn = 0
        self.a = self.b = 0

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.a, self.b = rng.randint({low}, {high + 1}), rng.randint({low}, {high + 1})
        self.turn = 0
        return f"What is {{self.a}} {operator} {{self.b}}? Answer as \\\\boxed{{{{n}}}}.", {{}}

    def solution(self):
        return str(self.a {operator} self.b)

    def step(self, action):
        self.turn += 1
        found = re.search({BOXED}, action)
        if found and found.group(1) == self.solution():
            return "Correct!", 1.0, True, False, {{}}
        return "Wrong.", 0.0, False, self.turn >= self.max_turns, {{}}
'''


def _modular(name: str, rng: random.Random) -> str:
    modulus = rng.randint(5, 97)
    return f'''
class {name}:
    """Reduce a three-digit product modulo {modulus}."""

    def __init__(self, max_turns={rng.randint(2, 5)}):
        self.max_turns = max_turns
        self.turn = 0
        self.value = 0

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.x, self.y = rng.randint(100, 999), rng.randint(100, 999)
        self.value = (self.x * self.y) % {modulus}
        self.turn = 0
        return f"({{self.x}} * {{self.y}}) mod {modulus} = ? Answer as \\\\boxed{{{{n}}}}.", {{}}

    def solution(self):
        return str(self.value)

    def step(self, action):
        self.turn += 1
        found = re.search({BOXED}, action)
        if found and int(found.group(1)) == self.value:
            return "Correct!", 1.0, True, False, {{}}
        return "Not that.", 0.0, False, self.turn >= self.max_turns, {{}}
'''


def _odd_one(name: str, rng: random.Random) -> str:
    count, scale = rng.randint(3, 8), rng.randint(2, 7)
    return f'''
class {name}:
    """Every number but one is a multiple of {scale}: name the one that is not."""

    def __init__(self):
        self.turn = 0
        self.odd = 1

    def reset(self, seed=None):
        rng = random.Random(seed)
        numbers = [{scale} * rng.randint(2, 60) for _ in range({count})]
        self.odd = {scale} * rng.randint(2, 60) + rng.randint(1, {scale - 1})
        numbers.insert(rng.randrange({count + 1}), self.odd)
        self.turn = 0
        task = f"Which of {{numbers}} is no multiple of {scale}?"
        return task + " Answer as \\\\boxed{{n}}.", {{}}

    def solution(self):
        return str(self.odd)

    def step(self, action):
        self.turn += 1
        found = re.search({BOXED}, action)
        if found and int(found.group(1)) == self.odd:
            return "Correct!", 1.0, True, False, {{}}
        return "No.", 0.0, False, self.turn >= 3, {{}}
'''


def _word(name: str, rng: random.Random) -> str:
    words = sorted(rng.sample(WORDS, rng.randint(3, len(WORDS))))
    return f'''
WORDS = {words!r}


class {name}:
    """Spell one of {len(words)} words backwards."""

    def __init__(self, max_turns={rng.randint(2, 3)}):
        self.max_turns = max_turns
        self.turn = 0
        self.word = WORDS[0]

    def reset(self, seed=None):
        self.word = random.Random(seed).choice(WORDS)
        self.turn = 0
        return f"Spell '{{self.word}}' backwards as \\\\boxed{{{{word}}}}.", {{}}

    def solution(self):
        return self.word[::-1]

    def step(self, action):
        self.turn += 1
        found = re.search({BOXED_WORD}, action)
        if found and found.group(1) == self.word[::-1]:
            return "Correct!", 1.0, True, False, {{}}
        return "No.", 0.0, False, self.turn >= self.max_turns, {{}}
'''


TEMPLATES = (_guess, _arithmetic, _modular, _odd_one, _word)


def game_source(index: int, rng: random.Random) -> str:
    """The source of game ``index`` (its class is ``Game<index><Kind>Env``)."""
    template = TEMPLATES[index % len(TEMPLATES)]
    name = f"Game{index}{template.__name__.strip('_').title().replace('_', '')}Env"
    body = textwrap.dedent(template(name, rng)).lstrip("\n")
    if index % 10 == 3:  # no solution(): SPADE's multi-turn contract asks for none
        start = body.index("    def solution(self):")
        end = body.index("    def step(self, action):")
        body = body[:start] + body[end:]
    elif index % 10 == 7:  # a wrong solution(): rejected
        body = body.replace(
            "    def solution(self):\n        return ",
            "    def solution(self):\n        return 'wrong' + ",
        )
    imports = "" if index % 4 == 1 else "import random\nimport re\n\n\n"  # SPADE's predefined names
    return HEADER + imports + body


def write_pool(root: Path, games: int, seed: int = 0) -> Path:
    """Write a SPADE run folder of ``games`` games under ``root``; returns the run folder."""
    rng = random.Random(seed)
    run = root / "spade_run"
    pool, cache = run / "spade_games", run / "spade_games_cache"
    pool.mkdir(parents=True)
    memory = []
    for index in range(games):
        rollout, slot = divmod(index, 24)
        skill = SKILLS[index % len(SKILLS)]
        stem = f"game_{rollout:05d}_{slot:03d}_{skill.lower().replace(' ', '_')}"
        source = game_source(index, rng)
        (pool / f"{stem}.py").write_text(source, encoding="utf-8")
        if index % 3 == 0:
            step = cache / f"step_{rollout:05d}"
            step.mkdir(parents=True, exist_ok=True)
            (step / f"{stem}_hint.txt").write_text(f"Work it out step by step ({index}).")
        if index % 4 == 0:
            memory.append(
                {
                    "game_file": f"/scratch/spade_run/spade_games/{stem}.py",
                    "skill": skill,
                    "code_snippet": source[:2000],
                    "actor_win_rate": round(rng.random(), 3),
                    "regret": round(rng.uniform(-0.5, 0.8), 3),
                    "rollout_id": rollout,
                    "metadata": {},
                }
            )
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "env_memory.json").write_text(json.dumps(memory, indent=1))
    return run
