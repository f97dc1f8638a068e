"""Corpus export/import: JSONL and Parquet round trips, a pip-installable package that
registers its environments with Gymnasium, and SPADE environment pools (read, never run).

Imports validate what they store (the file's status is never read); tests that are about
the format, not validation, import with ``validate=False``. See ``test_import_trust.py``
for the lies a file can tell."""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from spade_envs import describe, seed_class
from spade_envs.core.loader import load_env_class
from spade_envs.error import SpadeError
from spade_envs.registry import Registry
from spade_envs.registry.formats import (
    detect_format,
    export_corpus,
    spade_skill,
)
from spade_envs.runtime import import_corpus
from spade_envs.seeds import seed_source

EXPECTED_IDS = [
    "spade/HalvingGuess-v1",
    "spade/Nim-v1",
    "spade/Mastermind-v1",
    "spade/HalvingGuess-v2",
]
#: NumberGuess renamed: a seed's name is reserved for the seed's own code.
HALVING = seed_source("NumberGuess").replace("class NumberGuess(", "class HalvingGuess(")
HALVING_META = dataclasses.replace(describe(seed_class("NumberGuess")), name="HalvingGuess")


def _require(name: str):
    """``name`` imported; in CI (where the [parquet] extra is installed) a missing one
    fails the test instead of skipping it."""
    if os.environ.get("CI"):
        return importlib.import_module(name)
    return pytest.importorskip(name)


def populate(registry: Registry) -> Registry:
    registry.register(HALVING, HALVING_META, status="validated", model="m-1")
    for name in ("Nim", "Mastermind"):
        registry.register(
            seed_source(name), describe(seed_class(name)), status="validated", model="m-1"
        )
    registry.register(HALVING + "\n# v2\n", HALVING_META, hint="Halve the interval each guess.")
    return registry


@pytest.fixture
def source_registry(registry_url):
    registry = populate(Registry(registry_url))
    yield registry
    registry.close()


def fresh(tmp_path: Path, name: str = "fresh") -> Registry:
    return Registry(f"sqlite:///{tmp_path / (name + '.db')}")


def sources(registry: Registry) -> dict[str, str]:
    return {r.id: r.source for r in registry.iter_records()}


# ----- jsonl and parquet --------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_round_trip_keeps_sources_names_and_version_order(source_registry, tmp_path, fmt):
    out = tmp_path / f"corpus.{fmt}"
    assert export_corpus(source_registry, out, fmt) == 4
    assert not out.with_name(out.name + ".partial").exists()
    target = fresh(tmp_path)
    result = import_corpus(target, out, budget="fast")  # format detected from the suffix
    assert result.format == fmt and result.skipped == 0 and result.problems == []
    assert [r.id for r in result.imported] == EXPECTED_IDS
    assert sources(target) == sources(source_registry)
    v2 = target.get("spade/HalvingGuess-v2")
    assert v2.hint == "Halve the interval each guess." and v2.origin == "imported"
    # Validated here on import (it was a "candidate" in the file), with its report stored.
    assert v2.status == "validated" and target.validations(v2.id)[0].passed
    assert target.get("spade/Nim-v1").status == "validated"
    assert target.get("spade/Nim-v1").model == "m-1"
    assert target.get("spade/Nim-v1").kind == "game"
    for record in result.imported:  # each status is its own report's verdict
        (report,) = target.validations(record.id)
        assert record.status == ("validated" if report.passed else "rejected"), record.id

    again = import_corpus(target, out, fmt)  # identical code: nothing validated again
    assert again.imported == [] and again.skipped == 4 and target.count() == 4


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_export_filters_by_status(source_registry, tmp_path, fmt):
    out = tmp_path / f"validated.{fmt}"
    assert export_corpus(source_registry, out, fmt, status="validated") == 3
    result = import_corpus(fresh(tmp_path), out, validate=False)
    assert [r.id for r in result.imported] == EXPECTED_IDS[:3]
    assert {r.status for r in result.imported} == {"unvalidated"}
    with pytest.raises(SpadeError, match="status must be one of"):
        export_corpus(source_registry, out, fmt, status="shiny")


def test_parquet_columns(source_registry, tmp_path):
    pq = _require("pyarrow.parquet")
    export_corpus(source_registry, tmp_path / "c.parquet", "parquet")
    table = pq.read_table(tmp_path / "c.parquet")
    assert str(table.schema.field("parents").type) == "list<element: string>"
    assert str(table.schema.field("created_at").type).startswith("timestamp[us")
    assert table.column("name").to_pylist() == [
        "HalvingGuess",
        "Nim",
        "Mastermind",
        "HalvingGuess",
    ]
    assert all(t is not None for t in table.column("created_at").to_pylist())


def _target_with_one(registry_url) -> Registry:
    registry = Registry(registry_url)
    registry.register(seed_source("LightsOut"), describe(seed_class("LightsOut")))
    return registry


def test_malformed_jsonl_imports_nothing(registry_url, tmp_path):
    out = tmp_path / "corpus.jsonl"
    export_corpus(populate(fresh(tmp_path, "source")), out, "jsonl")
    lines = out.read_text(encoding="utf-8").splitlines()
    target = _target_with_one(registry_url)
    bad_extra = json.loads(lines[2])
    bad_extra["extra"] = [1, 2]
    deep = json.loads(lines[1])
    deep["extra"] = {"a": json.loads("[" * 100 + "]" * 100)}
    cases = {
        "line 3: extra must be a JSON object": [*lines[:2], json.dumps(bad_extra), lines[3]],
        "line 2: not JSON": [lines[0], "{not json", *lines[1:]],
        r"line 4: missing field\(s\) source": [*lines[:3], json.dumps({"name": "Foo"})],
        "line 2: JSON nested more than 64 levels deep": [
            lines[0],
            json.dumps(deep),
        ],
        "line 1: JSON nested more than 64 levels deep": ["[" * 100_000],
    }
    tampered = json.loads(lines[3])
    tampered["source"] += "\n# edited after export\n"
    cases["line 4: the source of HalvingGuess does not match its sha256"] = [
        *lines[:3],
        json.dumps(tampered),
    ]
    for message, content in cases.items():
        path = tmp_path / "bad.jsonl"
        path.write_text("\n".join(content) + "\n", encoding="utf-8")
        with pytest.raises(SpadeError, match=message):
            import_corpus(target, path, validate=False)
        assert target.count() == 1, message
    target.close()


def test_malformed_parquet_imports_nothing(registry_url, tmp_path):
    pa = _require("pyarrow")
    pq = _require("pyarrow.parquet")
    target = _target_with_one(registry_url)
    garbage = tmp_path / "garbage.parquet"
    garbage.write_bytes(b"PAR1 this is not parquet at all")
    with pytest.raises(SpadeError, match="not a readable Parquet file"):
        import_corpus(target, garbage)
    good = tmp_path / "good.parquet"
    export_corpus(populate(fresh(tmp_path, "source")), good, "parquet")
    rows = pq.read_table(good).to_pylist()
    rows[2]["extra"] = "[" * 1000 + "]" * 1000
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "bad_row.parquet")
    with pytest.raises(SpadeError, match="row 3: extra: JSON nested more than 64 levels deep"):
        import_corpus(target, tmp_path / "bad_row.parquet")
    pq.write_table(pq.read_table(good).drop_columns(["source"]), tmp_path / "no_src.parquet")
    with pytest.raises(SpadeError, match=r"missing column\(s\) source"):
        import_corpus(target, tmp_path / "no_src.parquet")
    assert target.count() == 1
    target.close()


def test_unknown_formats_suggest_close_ones(source_registry, tmp_path):
    with pytest.raises(SpadeError, match="Did you mean 'parquet'.*jsonl, parquet, package"):
        export_corpus(source_registry, tmp_path / "x", "parkett")
    with pytest.raises(SpadeError, match="Did you mean 'spade-pool'"):
        import_corpus(source_registry, tmp_path, "spade-pol")
    (tmp_path / "corpus.csv").write_text("name\n")
    with pytest.raises(SpadeError, match="Cannot tell the format"):
        import_corpus(source_registry, tmp_path / "corpus.csv")
    with pytest.raises(SpadeError, match="does not exist"):
        detect_format(tmp_path / "missing.jsonl")


# ----- package ------------------------------------------------------------------------------
def test_package_round_trip_and_tamper_detection(source_registry, tmp_path):
    out = tmp_path / "x"
    assert export_corpus(source_registry, out, "package") == 4
    manifest = json.loads((out / "spade_corpus_x" / "manifest.json").read_text())
    assert [e["file"] for e in manifest["envs"]] == [
        "envs/HalvingGuess_v1.py",
        "envs/Nim_v1.py",
        "envs/Mastermind_v1.py",
        "envs/HalvingGuess_v2.py",
    ]
    assert detect_format(out) == "package"
    target = fresh(tmp_path)
    result = import_corpus(target, out, validate=False)
    assert [r.id for r in result.imported] == EXPECTED_IDS
    assert {r.status for r in result.imported} == {"unvalidated"}  # not the manifest's
    assert sources(target) == sources(source_registry)

    tampered = out / "spade_corpus_x" / "envs" / "Nim_v1.py"
    tampered.write_text(tampered.read_text() + "\nimport os\n")
    other = fresh(tmp_path, "other")
    with pytest.raises(SpadeError, match="Nim_v1.py does not match its sha256"):
        import_corpus(other, out, "package")
    assert other.count() == 0


def test_package_refuses_a_non_empty_directory(source_registry, tmp_path):
    out = tmp_path / "busy"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(SpadeError, match="is not empty"):
        export_corpus(source_registry, out, "package")
    assert [p.name for p in out.iterdir()] == ["notes.txt"]
    empty = tmp_path / "Spade Corpus-2024"
    empty.mkdir()
    export_corpus(source_registry, empty, "package")
    assert (empty / "spade_corpus_2024" / "__init__.py").is_file()


@pytest.fixture(scope="module")
def installed_package(tmp_path_factory):
    """The package export of four versions, pip-installed into a target directory."""
    root = tmp_path_factory.mktemp("package")
    registry = populate(Registry(f"sqlite:///{root / 'source.db'}"))
    export_corpus(registry, root / "x", "package")
    registry.close()
    site = root / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
         "--quiet", "--disable-pip-version-check", "--target", str(site), str(root / "x")],
        check=True,
        capture_output=True,
        timeout=300,
    )  # fmt: skip
    return root, site


def run_fresh(root: Path, site: Path, script: str) -> dict:
    env = {
        **os.environ,
        "PYTHONPATH": str(site),
        "SPADE_REGISTRY_URL": f"sqlite:///{root / 'empty.db'}",
    }
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=root,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_installed_package_registers_gym_ids_in_a_fresh_process(installed_package):
    root, site = installed_package
    out = run_fresh(
        root,
        site,
        """
        import json
        import gymnasium as gym
        import spade_corpus_x
        from spade_envs import GameSeatEnv
        from spade_envs.error import UntrustedCodeError
        from spade_envs.registry import Registry

        try:
            gym.make("spade/HalvingGuess-v2", isolation="none")  # not a seed: refused
            refused = ""
        except UntrustedCodeError as exc:
            refused = str(exc)
        env = gym.make("spade/HalvingGuess-v2", isolation="none", trust_code=True)
        observation, _ = env.reset(seed=1)
        total = sum(env.step(a)[1] for a in env.unwrapped.solution())
        game = gym.make("spade/Nim-v1", isolation="none", opponent="random")  # a seed
        game.reset(seed=1)
        registry = Registry()
        before = registry.count()
        records = spade_corpus_x.register_into(registry, budget="fast")
        print(json.dumps({
            "observation": observation, "total": total, "before": before,
            "seat": isinstance(game.unwrapped, GameSeatEnv), "refused": refused,
            "ids": [r.id for r in records], "hint": registry.get(records[-1].id).hint,
            "statuses": [r.status for r in records],
            "verdicts": [registry.validations(r.id)[0].passed for r in records],
        }))
        """,
    )
    assert "spade_corpus_x/envs/HalvingGuess_v2.py is not a packaged seed" in out["refused"]
    assert "whole number" in out["observation"] and out["total"] == 1.0 and out["seat"]
    assert out["before"] == 0  # gym.make built them from the package, not the SQL registry
    assert out["ids"] == EXPECTED_IDS and out["hint"] == "Halve the interval each guess."
    # Validated on import: each status is its report's verdict, not the manifest's status.
    assert out["statuses"] == [("validated" if v else "rejected") for v in out["verdicts"]]


def test_installed_package_is_sandboxed_by_default(installed_package):
    root, site = installed_package
    out = run_fresh(
        root,
        site,
        """
        import json
        import gymnasium as gym
        import spade_corpus_x

        env = gym.make("spade/Mastermind-v1")
        env.reset(seed=3)
        total = sum(env.step(a)[1] for a in env.unwrapped.solution())
        print(json.dumps({"type": type(env.unwrapped).__name__, "total": total}))
        env.close()
        """,
    )
    assert out == {"type": "SandboxedEnv", "total": 1.0}


# ----- SPADE pools --------------------------------------------------------------------------
HEADER = '"""SPARE self-play generated game"""\n\n'

MODULAR_SUM = r'''
import random
import re
from typing import Any, Dict, Optional, Tuple


class ModularSumEnv:
    """Compute (a * b + c) mod m for three-digit a, b, c and a modulus m; answer in \\boxed{}."""

    def __init__(self, max_turns=4, **kwargs):
        self.max_turns = max_turns
        self.turn_count = 0
        self._answer = 0
        self.reset()

    def reset(self, seed: Optional[int] = None) -> Tuple[str, Dict[str, Any]]:
        rng = random.Random(seed)
        self.a, self.b, self.c = (rng.randint(100, 999) for _ in range(3))
        self.m = rng.randint(7, 97)
        self._answer = (self.a * self.b + self.c) % self.m
        self.turn_count = 0
        return self._task(), {}

    def _task(self) -> str:
        return f"Compute ({self.a} * {self.b} + {self.c}) mod {self.m}. Answer as \\boxed{{n}}."

    def solution(self) -> str:
        return str(self._answer)

    def step(self, action: str) -> Tuple[str, float, bool, bool, Dict[str, Any]]:
        self.turn_count += 1
        truncated = self.turn_count >= self.max_turns
        match = re.search(r"\\boxed\{([^}]+)\}", action)
        if match and match.group(1).strip() == self.solution():
            return "Correct!", 1.0, True, False, {}
        if truncated:
            return f"Time's up. The answer was {self.solution()}.", 0.0, False, True, {}
        return "Wrong: reduce the whole sum modulo m. " + self._task(), 0.0, False, False, {}

    def close(self):
        pass
'''

ODD_DIVISOR = r'''
import random
import re


class OddDivisorEnv:
    """Every number but one is a multiple of a hidden k; name the one that is not."""

    def __init__(self, max_turns=3, **kwargs):
        self.max_turns = max_turns
        self.turn_count = 0
        self.numbers = []
        self._odd = 0
        self.reset()

    def reset(self, seed=None):
        rng = random.Random(seed)
        k = rng.randint(3, 9)
        self.numbers = [k * n for n in rng.sample(range(2, 60), 6)]
        self._odd = k * rng.randint(2, 60) + rng.randint(1, k - 1)
        self.numbers.insert(rng.randrange(7), self._odd)
        self.turn_count = 0
        return self._task(), {}

    def _task(self):
        listed = ", ".join(str(n) for n in self.numbers)
        return f"All but one of {listed} share a divisor k > 2. Which one does not? \\boxed{{n}}"

    def solution(self):
        return str(self._odd)

    def step(self, action):
        self.turn_count += 1
        truncated = self.turn_count >= self.max_turns
        match = re.search(r"\\boxed\{([^}]+)\}", action)
        if match and match.group(1).strip() == self.solution():
            return "Correct!", 1.0, True, False, {}
        if truncated:
            return f"Out of turns; it was {self._odd}.", 0.0, False, True, {}
        return "No: that one is a multiple of k. " + self._task(), 0.0, False, False, {}
'''

SEQUENCE_NEXT = r"""
import random
import re


class SequenceNextEnv:
    def __init__(self, max_turns=10, **kwargs):
        self.max_turns = max_turns
        self.turn_count = 0
        self.shown = []
        self._next = 0
        self.reset()

    def reset(self, seed=None):
        rng = random.Random(seed)
        terms = [rng.randint(1, 9)]
        ratio, shift = rng.randint(2, 4), rng.randint(-5, 5)
        for _ in range(5):
            terms.append(terms[-1] * ratio + shift)
        self.shown, self._next = terms[:5], terms[5]
        self.turn_count = 0
        return f"Next term of {self.shown}? Answer as \\boxed{{n}}.", {}

    def solution(self):
        return str(self._next)

    def step(self, action):
        self.turn_count += 1
        match = re.search(r"\\boxed\{([^}]+)\}", action)
        if match and match.group(1).strip() == self.solution():
            return "Correct!", 1.0, True, False, {}
        over = self.turn_count >= self.max_turns
        return f"Wrong. The sequence is {self.shown}.", 0.0, False, over, {}
"""

ANAGRAM = r'''
import random
import re

WORDS = ["planet", "garden", "silver", "market", "candle", "forest"]


class AnagramEnv:
    """Unscramble a six-letter English word."""

    def __init__(self, *, max_turns=6, **kwargs):
        self.max_turns = max_turns
        self.turn_count = 0
        self.reset()

    def reset(self, seed=None):
        rng = random.Random(seed)
        self._word = rng.choice(WORDS)
        letters = list(self._word)
        while "".join(letters) == self._word:
            rng.shuffle(letters)
        self.scrambled = "".join(letters)
        self.turn_count = 0
        return f"Unscramble '{self.scrambled}'. Answer as \\boxed{{word}}.", {}

    def solution(self):
        return self._word

    def step(self, action):
        self.turn_count += 1
        match = re.search(r"\\boxed\{([^}]+)\}", action)
        if match and match.group(1).strip().lower() == self._word:
            return "Correct!", 1.0, True, False, {}
        over = self.turn_count >= self.max_turns
        return f"Not a match for '{self.scrambled}'.", 0.0, False, over, {}
'''

TOOL_USE = '''
import json

from spare.core.envs.tool_use_base_env import ToolUseBaseEnv


class WarehouseLookupEnv(ToolUseBaseEnv):
    """Find the shelf of a product with the lookup tool, then report it."""

    def __init__(self, max_turns=8, **kwargs):
        super().__init__(max_turns=max_turns, **kwargs)
        self.inventory = {"widget": "A3", "gizmo": "B7"}

    def execute_tool(self, name, arguments):
        return json.dumps({"shelf": self.inventory.get(arguments.get("product"))})
'''

TRIPWIRE = r'''
import pathlib

pathlib.Path(__file__).with_name("EXECUTED").write_text("this file was run")


class TripwireEnv:
    """Leaves a file behind if anything runs this module."""

    def __init__(self, max_turns=2, **kwargs):
        self.max_turns = max_turns

    def reset(self, seed=None):
        return "Say \\boxed{ok}.", {}

    def step(self, action):
        return "Done.", float("\\boxed{ok}" in action), True, False, {}

    def solution(self):
        return "ok"
'''

NO_ENV_CLASS = """
class RiddleGame:
    def play(self):
        return "no environment class here"
"""

SYNTAX_ERROR = """
class BrokenEnv:
    def reset(self seed=None):
        return "", {}
"""

REJECTED = """
class GreedyPathEnv:
    def reset(self, seed=None):
        return "", {}

    def step(self, action):
        return "", 0.0, True, False, {}
"""


def build_pool(root: Path) -> Path:
    """A SPADE run directory: games, a hint, rejects and the memory one level up."""
    pool = root / "run7" / "spare_games"
    pool.mkdir(parents=True)
    games = {
        "game_00003_000_mathematical_reasoning": MODULAR_SUM,
        "game_00003_001_spatial_reasoning": ODD_DIVISOR,  # memory says Logical Deduction
        "game_00003_002_pattern_recognition": SEQUENCE_NEXT,
        "game_00004_000_language_understanding": ANAGRAM,
        "game_00004_001_multi_turn_tool_use": TOOL_USE,
        "game_00004_002_logical_deduction": NO_ENV_CLASS,
        "game_00004_003_strategic_planning": SYNTAX_ERROR,
        "game_00005_000_optimization": TRIPWIRE,
    }
    for stem, code in games.items():
        (pool / f"{stem}.py").write_text(HEADER + code.lstrip("\n"), encoding="utf-8")
    (pool / "game_00003_000_mathematical_reasoning_hint.txt").write_text(
        "Multiply first, add c, then take the remainder modulo m. Answer with one integer.\n"
    )
    (pool / "reject_00003_003_optimization_solution.py").write_text(HEADER + REJECTED)
    rejects = pool.parent / "spare_games_rejected"
    rejects.mkdir()
    (rejects / "reject_00004_004_optimization_judge.py").write_text(HEADER + REJECTED)
    remote = "/scratch/spade/run7/spare_games"

    # SPADE's memory calls the hint gain (with hint - without, unfloored) "regret".
    def memory(stem: str, skill: str, win_rate: float, regret: float) -> dict:
        return {
            "game_file": f"{remote}/{stem}.py",
            "skill": skill,
            "code_snippet": "class ...",
            "actor_win_rate": win_rate,
            "regret": regret,
            "rollout_id": int(stem.split("_")[1]),
            "metadata": {},
        }

    (pool.parent / "env_memory.json").write_text(
        json.dumps(
            [
                memory(
                    "game_00003_000_mathematical_reasoning", "Mathematical Reasoning", 0.25, 0.5
                ),
                memory("game_00003_001_spatial_reasoning", "Logical Deduction", 0.75, 0.125),
                memory("game_00004_002_logical_deduction", "Logical Deduction", 0.5, 0.0),
            ],
            indent=2,
        )
    )
    return pool


POOL_IDS = [
    "spade/ModularSumEnv-v1",
    "spade/OddDivisorEnv-v1",
    "spade/SequenceNextEnv-v1",
    "spade/AnagramEnv-v1",
    "spade/WarehouseLookupEnv-v1",
    "spade/TripwireEnv-v1",
]


def test_spade_pool_import(registry_url, tmp_path):
    pool = build_pool(tmp_path)
    registry = Registry(registry_url)
    assert detect_format(pool) == "spade-pool"
    result = import_corpus(registry, pool, validate=False)
    assert [r.id for r in result.imported] == POOL_IDS and result.skipped == 0
    assert len(result.problems) == 2
    assert "game_00004_002_logical_deduction.py: expected one class" in result.problems[0]
    assert "game_00004_003_strategic_planning.py: does not parse" in result.problems[1]
    assert "GreedyPathEnv" not in registry.names()  # rejects are ignored
    assert not (pool / "EXECUTED").exists()  # read with ast, never run

    modular = registry.get("spade/ModularSumEnv-v1")
    assert (modular.kind, modular.skill, modular.max_turns) == ("text", "math", 4)
    assert modular.description.startswith("Compute (a * b + c) mod m")
    assert (modular.origin, modular.status, modular.model) == ("imported", "unvalidated", "")
    hint = "Multiply first, add c, then take the remainder modulo m. Answer with one integer."
    assert result.hints == {modular.id: hint} and modular.hint == hint
    odd = registry.get("spade/OddDivisorEnv-v1")
    assert odd.skill == "logic" and odd.max_turns == 3  # the memory's skill wins
    sequence = registry.get("spade/SequenceNextEnv-v1")
    assert sequence.skill == "pattern" and sequence.max_turns == 10
    assert sequence.description == "SPARE self-play generated game"  # no class docstring
    anagram = registry.get("spade/AnagramEnv-v1")
    assert anagram.skill == "general" and anagram.max_turns == 6
    assert registry.get("spade/WarehouseLookupEnv-v1").kind == "tool"

    # SPADE's statistics are kept as SPADE's (extra["spade"]), not as this registry's plays.
    stats = modular.extra["spade"]["memory"]
    assert (stats["actor_win_rate"], stats["regret"], stats["rollout_id"]) == (0.25, 0.5, 3)
    assert odd.extra["spade"]["memory"]["regret"] == 0.125
    assert "memory" not in sequence.extra["spade"]
    assert registry.play_stats(modular.id) == registry.play_stats(odd.id) == []
    assert set(result.spade_stats) == {modular.id, odd.id}

    again = import_corpus(registry, pool, "spade-pool", validate=False)
    assert again.imported == [] and again.skipped == 6 and len(again.problems) == 2
    assert registry.count() == 6

    for env_id in POOL_IDS[:4]:
        env = load_env_class(registry.get(env_id).source)()
        env.reset(seed=0)
        [action] = env.solution()  # the bare answer of a SPADE game, put in \\boxed{}
        _, reward, terminated, _, info = env.step(action)
        assert reward == 1.0 and terminated and info["success"], env_id
    registry.close()


def test_spade_pool_without_games_or_with_bad_memory(tmp_path):
    registry = fresh(tmp_path)
    empty = tmp_path / "empty_pool"
    empty.mkdir()
    with pytest.raises(SpadeError, match="holds no game_\\*.py files"):
        import_corpus(registry, empty, "spade-pool")
    pool = tmp_path / "pool"
    pool.mkdir()
    (pool / "game_00001_000_logical_deduction.py").write_text(HEADER + ODD_DIVISOR)
    (pool / "env_memory.json").write_text("[{not json")
    result = import_corpus(registry, pool, validate=False)
    assert [r.id for r in result.imported] == ["spade/OddDivisorEnv-v1"]
    assert "env_memory.json: not readable JSON" in result.problems[0]
    assert result.spade_stats == {}


@pytest.mark.parametrize(
    ("text", "skill"),
    [
        ("Mathematical Reasoning", "math"),
        ("logical_deduction", "logic"),
        ("pattern_recognition", "pattern"),
        ("Causal Inference", "science"),
        ("optimization", "planning"),
        ("memory_recall", "general"),
        ("code", "code"),
    ],
)
def test_spade_skills_map_to_our_families(text, skill):
    assert spade_skill(text) == skill
