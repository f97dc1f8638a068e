"""Issue 14, items 4 and 5: nothing generated or imported runs in-process by default, seed
names are reserved, and an import file's claims (status, kind, skill, max_turns) carry no
trust. Hostile pools (links, FIFOs, devices) and deep JSON give clear errors, never hang."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import gymnasium as gym
import pytest

import spade_envs
from spade_envs import describe, seed_class
from spade_envs.error import SpadeError, UntrustedCodeError
from spade_envs.registry import Registry, ReservedNameError, UnvalidatedEnvWarning
from spade_envs.registry import trust as trust_module
from spade_envs.runtime import import_corpus, validate_stored
from spade_envs.sandbox import SandboxedEnv
from spade_envs.seeds import seed_source

#: A hostile "NumberGuess": Nim's code under the seed's class name.
SQUAT = seed_source("Nim").replace("class Nim(", "class NumberGuess(")
ORBIT = seed_source("NumberGuess").replace("class NumberGuess(", "class OrbitGuess(")
ORBIT_META = dataclasses.replace(describe(seed_class("NumberGuess")), name="OrbitGuess")


@pytest.fixture
def registry(monkeypatch, tmp_path):
    url = f"sqlite:///{tmp_path / 'trust.db'}"
    monkeypatch.setenv("SPADE_REGISTRY_URL", url)
    registry = Registry(url)
    yield registry
    registry.close()


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# ----- seed names are reserved ---------------------------------------------------------------
@pytest.mark.parametrize("name", ["NumberGuess", "Numberguess"])
def test_a_class_squatting_a_seed_name_is_refused(registry, name):
    meta = dataclasses.replace(describe(seed_class("Nim")), name=name)
    with pytest.raises(
        ReservedNameError, match="is the name of the packaged seed NumberGuess.*Rename"
    ):
        registry.register(SQUAT.replace("class NumberGuess(", f"class {name}("), meta)
    with pytest.raises(ReservedNameError, match="packaged seed NumberGuess"):
        registry.register_many([(ORBIT, ORBIT_META), (SQUAT, meta)])  # all or nothing
    assert registry.count() == 0
    # The seed's own code under its own name is fine, and is what gym.make builds.
    seed = registry.register(seed_source("NumberGuess"), describe(seed_class("NumberGuess")))
    assert seed.id == "spade/NumberGuess-v1"


def test_seed_name_refusal_is_a_spade_error():
    assert issubclass(ReservedNameError, SpadeError)


@pytest.fixture
def squatted(registry, monkeypatch):
    """A registry made before seed names were reserved, holding a squatted NumberGuess."""
    with monkeypatch.context() as patch:
        patch.setattr(trust_module, "check_seed_name", lambda name, source: None)
        meta = dataclasses.replace(describe(seed_class("Nim")), name="NumberGuess")
        record = registry.register(SQUAT, meta, status="validated")
    assert record.id == "spade/NumberGuess-v1"
    return registry


def test_a_squatted_row_in_an_old_registry_never_runs_in_process(squatted):
    with pytest.raises(UntrustedCodeError, match="spade/NumberGuess-v1 is not a packaged seed"):
        gym.make("spade/NumberGuess-v1", isolation="none")
    env = gym.make("spade/NumberGuess-v1")  # the default: in the sandbox
    try:
        assert isinstance(env.unwrapped, SandboxedEnv)
    finally:
        env.close()
    # make() by name is always the packaged seed, whatever the registry holds.
    made = spade_envs.make("NumberGuess")
    assert type(made).__module__ == "spade_envs.seeds.number_guess"


def test_a_bare_seed_name_resolves_to_the_seed_not_the_squat(squatted):
    from spade_envs.agent import resolve_envs

    (target,) = resolve_envs(["NumberGuess"], squatted)
    assert target.source == seed_source("NumberGuess") and target.env_id != "spade/NumberGuess-v1"


def test_non_seed_code_in_process_needs_trust_code(registry):
    record = registry.register(ORBIT, ORBIT_META, status="validated")
    with pytest.raises(
        UntrustedCodeError, match="OrbitGuess-v1 is not a packaged seed.*trust_code=True"
    ):
        gym.make(record.id, isolation="none")
    env = gym.make(record.id, isolation="none", trust_code=True)
    env.reset(seed=3)
    assert type(env.unwrapped).__name__ == "OrbitGuess"
    assert sum(env.step(a)[1] for a in env.unwrapped.solution()) == 1.0
    seed = gym.make("spade/Nim-v1", isolation="none")  # a seed's exact code needs nothing
    assert type(seed.unwrapped.game).__name__ == "Nim"


# ----- imports carry no trust ----------------------------------------------------------------
def test_a_file_claiming_validated_for_code_that_does_not_parse_is_not_validated(
    registry, tmp_path
):
    path = write_jsonl(
        tmp_path / "lies.jsonl",
        [
            {"name": "Broken", "source": "class BrokenEnv(:\n", "status": "validated",
             "kind": "text", "skill": "math", "max_turns": 3},
            {"name": "Honest", "source": "import os\n" + ORBIT.replace("OrbitGuess", "Honest"),
             "status": "validated"},
        ],
    )  # fmt: skip
    result = import_corpus(registry, path, budget="fast")
    assert "line 1: not imported: no environment class could be read" in result.problems[0]
    assert "syntax" in result.problems[0]
    assert "Broken" not in registry.names()
    (honest,) = result.imported  # parses, but imports os: rejected by validation
    assert honest.status == "rejected" and not registry.validations(honest.id)[0].passed
    assert registry.list(status="validated") == []


def test_kind_skill_max_turns_and_name_lies_are_ignored(registry, tmp_path):
    path = write_jsonl(
        tmp_path / "lies.jsonl",
        [{"name": "Totally", "source": ORBIT, "status": "validated", "kind": "game",
          "skill": "code", "max_turns": 999, "origin": "seed", "description": "lie"}],
    )  # fmt: skip
    (record,) = import_corpus(registry, path, validate=False).imported
    truth = describe(seed_class("NumberGuess"))
    assert record.id == "spade/OrbitGuess-v1"  # the class's name, not the file's
    assert (record.kind, record.skill, record.max_turns) == ("text", truth.skill, truth.max_turns)
    assert record.origin == "imported" and record.status == "unvalidated"
    assert record.description == truth.description


def test_a_squatting_row_in_an_import_is_skipped_with_a_reason(registry, tmp_path):
    path = write_jsonl(
        tmp_path / "squat.jsonl",
        [{"source": SQUAT, "status": "validated"}, {"source": ORBIT}],
    )
    result = import_corpus(registry, path, validate=False)
    assert [r.id for r in result.imported] == ["spade/OrbitGuess-v1"]
    assert (
        "line 1: not imported: 'NumberGuess' is the name of the packaged seed"
        in (result.problems[0])
    )
    assert registry.versions("NumberGuess") == []


def test_no_validate_stores_unvalidated_and_gym_make_warns_until_revalidated(registry, tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", [{"source": ORBIT, "status": "validated"}])
    (record,) = import_corpus(registry, path, validate=False).imported
    assert record.status == "unvalidated"
    with pytest.warns(
        UnvalidatedEnvWarning, match="OrbitGuess-v1 was imported without validation.*revalidate"
    ):
        env = gym.make(record.id)
    env.close()
    [(env_id, verdict)] = validate_stored(registry, [record.id], budget="fast")
    status = registry.get(record.id).status
    assert env_id == record.id and status == verdict and verdict in ("validated", "rejected")
    passed = verdict == "validated"
    if passed:  # a validated version is built without the warning
        with warnings.catch_warnings():
            warnings.simplefilter("error", UnvalidatedEnvWarning)
            gym.make(record.id).close()


# ----- hostile pools and JSON ----------------------------------------------------------------
GAME = '''
class PoolGuessEnv:
    """Say \\\\boxed{ok}."""

    def __init__(self, max_turns=2):
        self.max_turns = max_turns

    def reset(self, seed=None):
        return "Say ok.", {}

    def step(self, action):
        return "Done.", 1.0, True, False, {}
'''


def test_links_fifos_and_devices_in_a_pool_are_refused_without_hanging(tmp_path):
    """In a child with a timeout and a memory cap: a regression hangs or eats memory there."""
    pool = tmp_path / "pool"
    pool.mkdir()
    secret = tmp_path / "secret.py"
    secret.write_text(GAME.replace("PoolGuessEnv", "SecretEnv") + "# TOP-SECRET\n")
    secret.chmod(0o600)
    (pool / "game_00001_000_logic.py").write_text(GAME)
    (pool / "game_00001_000_logic_hint.txt").symlink_to(secret)  # the hint: a link
    (pool / "game_00001_001_logic.py").write_text(GAME.replace("PoolGuess", "Second"))
    (pool / "game_00002_000_logic.py").symlink_to(secret)
    os.mkfifo(pool / "game_00002_001_logic.py")
    (pool / "game_00002_002_logic.py").symlink_to("/dev/zero")
    os.mkfifo(pool / "env_memory.json")
    script = textwrap.dedent(f"""
        import json, resource
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
        from spade_envs.registry import Registry
        from spade_envs.runtime import import_corpus
        registry = Registry("sqlite:///{tmp_path / "pool.db"}")
        result = import_corpus(registry, {str(pool)!r}, "spade-pool", validate=False)
        print(json.dumps({{"ids": [r.id for r in result.imported], "problems": result.problems,
                          "hints": [r.hint for r in registry.iter_records()],
                          "sources": [r.source for r in registry.iter_records()]}}))
    """)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["ids"] == ["spade/SecondEnv-v1"]
    problems = "\n".join(out["problems"])
    assert "env_memory.json" in problems and "is a FIFO (named pipe)" in problems
    assert "game_00001_000_logic_hint.txt (pool hint) is a symbolic link" in problems
    assert "game_00002_000_logic.py (pool game) is a symbolic link" in problems
    assert "game_00002_001_logic.py (pool game) is a FIFO (named pipe)" in problems
    assert "game_00002_002_logic.py (pool game) is a symbolic link" in problems
    assert "never follow links" in problems
    assert not any("TOP-SECRET" in text for text in out["sources"] + out["hints"])


def test_oversized_pool_files_are_refused_before_reading(tmp_path, monkeypatch):
    from spade_envs.registry import spade_pool

    monkeypatch.setattr(spade_pool, "MAX_SOURCE_BYTES", 200)
    pool = tmp_path / "pool"
    pool.mkdir()
    (pool / "game_00001_000_logic.py").write_text(GAME + "#" * 1000)
    result = import_corpus(Registry(f"sqlite:///{tmp_path / 'r.db'}"), pool, validate=False)
    assert result.imported == []
    assert "imports read at most 200 bytes of it" in result.problems[0]


def test_deep_json_in_a_pool_memory_and_a_manifest_gives_clear_errors(tmp_path):
    pool = tmp_path / "pool"
    pool.mkdir()
    (pool / "game_00001_000_logic.py").write_text(GAME)
    (pool / "env_memory.json").write_text("[" * 200_000 + "]" * 200_000)
    registry = Registry(f"sqlite:///{tmp_path / 'r.db'}")
    result = import_corpus(registry, pool, validate=False)
    assert [r.id for r in result.imported] == ["spade/PoolGuessEnv-v1"]
    assert "JSON nested more than 64 levels deep" in result.problems[0]
    package = tmp_path / "pkg"
    (package / "spade_corpus_pkg").mkdir(parents=True)
    (package / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (package / "spade_corpus_pkg" / "__init__.py").write_text("")
    (package / "spade_corpus_pkg" / "manifest.json").write_text("{" + '"a":{' * 100_000)
    with pytest.raises(SpadeError, match="manifest.json: JSON nested more than 64 levels deep"):
        import_corpus(registry, package, "package")


def test_an_import_file_that_is_a_fifo_or_device_is_refused(registry, tmp_path):
    fifo = tmp_path / "corpus.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(SpadeError, match=r"corpus.jsonl \(JSONL export\) is a FIFO"):
        import_corpus(registry, fifo)
    zero = tmp_path / "zero.jsonl"
    zero.symlink_to("/dev/zero")  # a link the user named is followed, to a device: refused
    with pytest.raises(SpadeError, match=r"/dev/zero \(JSONL export\) is a character device"):
        import_corpus(registry, zero)
    assert registry.count() == 0
