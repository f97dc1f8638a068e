"""SPADE-shaped games and pool folders for the pool tests (written under ``tmp_path``).

Small number-guess, arithmetic, odd-one-out and word games in the shapes SPADE's
designers write: a duck-typed ``*Env`` class after SPADE's header docstring. Pool code is
never run by an import; :func:`spade_loader_emulation` runs these fixtures only.
Append more shapes (the SPADE dialect's) to :data:`ROUND_TRIP_GAMES`.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

from spade_envs.registry.spade_pool import SPADE_HEADER

HEADER = SPADE_HEADER + "\n\n"


def number_guess(name: str, high: int, turns: int) -> str:
    """A higher/lower game: the __init__ default is its max_turns."""
    return textwrap.dedent(f'''
        import random
        import re


        class {name}:
            """Guess a hidden whole number from 1 to {high}; the game says higher or lower."""

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
                found = re.search(r"\\\\boxed\\{{(-?\\d+)\\}}", action)
                if found and int(found.group(1)) == self.target:
                    return "Correct!", 1.0, True, False, {{}}
                over = self.turn >= self.max_turns
                if found:
                    side = "higher" if int(found.group(1)) < self.target else "lower"
                    return f"No: go {{side}}.", 0.0, False, over, {{}}
                return "Answer as \\\\boxed{{n}}.", 0.0, False, over, {{}}
    ''').lstrip()


def arithmetic(name: str, operator: str, digits: int) -> str:
    """One question, a class attribute max_turns."""
    low, high = 10 ** (digits - 1), 10**digits - 1
    return textwrap.dedent(f'''
        import random
        import re


        class {name}:
            """Compute a {operator} b for {digits}-digit numbers and answer in \\\\boxed{{}}."""

            max_turns = 2

            def __init__(self):
                self.turn = 0
                self.a = self.b = 0

            def reset(self, seed=None):
                rng = random.Random(seed)
                self.a, self.b = rng.randint({low}, {high}), rng.randint({low}, {high})
                self.turn = 0
                return f"What is {{self.a}} {operator} {{self.b}}? Answer as \\\\boxed{{{{n}}}}.", {{}}

            def solution(self):
                return str(self.a {operator} self.b)

            def step(self, action):
                self.turn += 1
                found = re.search(r"\\\\boxed\\{{(-?\\d+)\\}}", action)
                if found and found.group(1) == self.solution():
                    return "Correct!", 1.0, True, False, {{}}
                return "Wrong.", 0.0, False, self.turn >= self.max_turns, {{}}
    ''').lstrip()


def odd_one_out(name: str, count: int) -> str:
    """A logic game that declares no max_turns at all (SPADE's default applies)."""
    return textwrap.dedent(f'''
        import random
        import re


        class {name}:
            """All numbers but one are even: name the odd one."""

            def __init__(self):
                self.turn = 0
                self.odd = 1

            def reset(self, seed=None):
                rng = random.Random(seed)
                numbers = [2 * rng.randint(1, 50) for _ in range({count})]
                self.odd = 2 * rng.randint(1, 50) + 1
                numbers.insert(rng.randrange({count} + 1), self.odd)
                self.turn = 0
                return f"Which of {{numbers}} is odd? Answer as \\\\boxed{{{{n}}}}.", {{}}

            def solution(self):
                return str(self.odd)

            def step(self, action):
                self.turn += 1
                found = re.search(r"\\\\boxed\\{{(-?\\d+)\\}}", action)
                if found and int(found.group(1)) == self.odd:
                    return "Correct!", 1.0, True, False, {{}}
                return "No.", 0.0, False, self.turn >= 3, {{}}
    ''').lstrip()


def reverse_word(name: str, words: tuple[str, ...]) -> str:
    """A word game (SPADE's Language Understanding: our 'general')."""
    return textwrap.dedent(f'''
        import random
        import re

        WORDS = {list(words)!r}


        class {name}:
            """Spell a word backwards."""

            def __init__(self, max_turns=2):
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
                found = re.search(r"\\\\boxed\\{{([a-z]+)\\}}", action)
                if found and found.group(1) == self.word[::-1]:
                    return "Correct!", 1.0, True, False, {{}}
                return "No.", 0.0, False, self.turn >= self.max_turns, {{}}
    ''').lstrip()


TOOL_GAME = textwrap.dedent('''
    class ShelfLookupEnv(ToolUseBaseEnv):
        """Find a product's shelf with the lookup tool, then answer with it."""

        def reset(self, seed=None):
            self._expected_answer = "A3"
            return "Where is the widget?", {}

        def solution(self):
            return '1. tool_lookup(product="widget")\\nANSWER: A3'

        def tool_lookup(self, product=""):
            return {"widget": "A3"}.get(product, "unknown")
''').lstrip()

#: (file stem, source) of the self-play run most tests import.
BASE_GAMES = [
    ("game_00002_000_mathematical_reasoning", number_guess("HighLowEnv", 20, 6)),
    ("game_00002_001_spatial_reasoning", arithmetic("SumTwoEnv", "+", 2)),  # memory: math
    ("game_00003_000_logical_deduction", odd_one_out("OddOneEnv", 4)),
    ("game_00003_001_language_understanding", reverse_word("BackwardsEnv", ("stone", "river"))),
]
#: The games of the round trip and SPADE-loader tests: more shapes (the SPADE dialect's
#: among them) are appended here, after the base games.
ROUND_TRIP_GAMES = [
    *BASE_GAMES,
    # The SPADE dialect: random and re used without importing them, no solution().
    (
        "game_00006_000_pattern_recognition",
        number_guess("BareGuessEnv", 30, 5)
        .replace("import random\nimport re\n", "")
        .replace("    def solution(self):\n        return str(self.target)\n\n", ""),
    ),
]


def memory_record(stem: str, skill: str, win_rate: object, regret: object, rollout: int) -> dict:
    """One env_memory.json record, in SPADE's EnvironmentRecord fields."""
    return {
        "game_file": f"/scratch/run/spade_games/{stem}.py",
        "skill": skill,
        "code_snippet": "class ...",
        "actor_win_rate": win_rate,
        "regret": regret,
        "rollout_id": rollout,
        "metadata": {"note": "from SPADE"},
    }


def build_run(root: Path, games: list[tuple[str, str]] | None = None) -> Path:
    """A SPADE run folder: spade_games/ and spade_games_cache/ (memory, step hints)."""
    run = root / "run"
    pool, cache = run / "spade_games", run / "spade_games_cache"
    pool.mkdir(parents=True)
    for stem, code in games or BASE_GAMES:
        (pool / f"{stem}.py").write_text(HEADER + code, encoding="utf-8")
    (cache / "step_00002").mkdir(parents=True)
    (cache / "step_00004").mkdir()
    (cache / "step_00002" / "game_00002_000_mathematical_reasoning_hint.txt").write_text("old")
    (cache / "step_00004" / "game_00002_000_mathematical_reasoning_hint.txt").write_text(
        "Halve the interval each guess.\n"
    )
    (cache / "step_00004" / "game_00003_000_logical_deduction_hint.txt").write_text(
        "Look at parity."
    )
    records = [
        memory_record(
            "game_00002_000_mathematical_reasoning", "Mathematical Reasoning", 0.5, 0.25, 4
        ),
        memory_record(
            "game_00002_001_spatial_reasoning", "Mathematical Reasoning", 0.75, -0.125, 4
        ),
        memory_record("game_00003_000_logical_deduction", "Logical Deduction", "high", 0.0, 4),
    ]
    (cache / "env_memory.json").write_text(json.dumps(records, indent=2))
    return run


def spade_loader_emulation(path: Path) -> None:
    """What SPADE's loader and validate_game do with a game file (facts from
    /work/shared/SPADE-FORMAT.md): run the module with standard-library names defined, take
    the first name ending in 'Env', build it, reset, step '1', '2', 'test'."""
    import collections
    import math
    import random
    import re

    namespace = {"random": random, "re": re, "math": math, "json": json,
                 "collections": collections, "__name__": "dynamic_game"}  # fmt: skip
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    cls = next(
        v for k, v in namespace.items()
        if k.endswith("Env") and k not in ("Env", "ToolUseBaseEnv") and callable(v)
    )  # fmt: skip
    try:
        env = cls(max_turns=5)
    except TypeError:
        env = cls()
    first = env.reset()
    assert isinstance(first if isinstance(first, str) else first[0], str)
    for action in ("1", "2", "test"):
        result = env.step(action)
        assert len(result) == 5 and -10 <= result[1] <= 10
        if result[2] or result[3]:
            break


MIRROR = Path("/work/.mirror/spade-rl+spade/repo")


def spade_loader_source() -> str | None:
    """SPADE's own synthetic_game_env.py, when a mirror of its repository is at hand."""
    if not MIRROR.is_dir():
        return None
    done = subprocess.run(
        ["git", "-C", str(MIRROR), "show", "HEAD:spade/core/envs/synthetic_game_env.py"],
        capture_output=True,
        text=True,
    )
    return done.stdout if done.returncode == 0 else None
