"""The door's shape: one function builds played environments, ``registry/`` is storage,
and what every play through the door gets (seeds, the virtual clock, twin hints,
traces); Gymnasium's own checkers pass on every packaged seed opened through it."""

from __future__ import annotations

import ast
import contextlib
import io
from pathlib import Path

import pytest
from gymnasium.utils.env_checker import check_env

import spade_envs
from spade_envs.core.metadata import env_kind
from spade_envs.registry import Registry
from spade_envs.runtime import open_id, open_source, register_seed
from spade_envs.seeds import seed_classes, seed_source

PACKAGE = Path(spade_envs.__file__).parent


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, as an absolute ``spade_envs`` name where relative."""
    package = ".".join(("spade_envs", *path.relative_to(PACKAGE).parent.parts))
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


#: The one allowed exception: the entry point that packages exported by older versions
#: import (``registry/gym_ids.py``), which hands over to the door when one opens an env.
_OLD_PACKAGE_ENTRY = {"registry/gym_ids.py: spade_envs.runtime.door.open_source"}


def test_registry_is_storage_it_imports_neither_validation_nor_sandbox():
    forbidden = ("spade_envs.validation", "spade_envs.sandbox", "spade_envs.runtime")
    offenders = (
        {
            f"{path.relative_to(PACKAGE)}: {name}"
            for path in (PACKAGE / "registry").glob("*.py")
            for name in _imports(path)
            if name.startswith(forbidden)
        }
        - _OLD_PACKAGE_ENTRY
        - {"registry/gym_ids.py: spade_envs.runtime.door"}
    )
    assert not offenders, sorted(offenders)


def test_packages_exported_by_older_versions_still_open_their_environments():
    from spade_envs.registry.gym_ids import build_env

    env = build_env(NUMBER_GUESS, "text", filename="old_package/envs/number_guess.py")
    try:
        env.reset(seed=4)
        assert env.step(env.solution()[0])[1] >= 0.0 and env.twin_opener is not None
    finally:
        env.close()


def test_lower_packages_never_import_the_runtime():
    lower = ("core", "sandbox", "validation", "registry", "memory", "corpus", "llm")
    offenders = (
        {
            f"{path.relative_to(PACKAGE)}: {name}"
            for package in lower
            for path in (PACKAGE / package).rglob("*.py")
            for name in _imports(path)
            if name.startswith("spade_envs.runtime")
        }
        - _OLD_PACKAGE_ENTRY
        - {"registry/gym_ids.py: spade_envs.runtime.door"}
    )
    assert not offenders, sorted(offenders)


#: Modules that may open environments in the sandbox without the door: the sandbox
#: itself, and the checks that judge code before it is stored (they never play it).
#: (``agent/rollout.py`` names ``SandboxedEnv`` only to batch steps of the door's envs.)
_CHECKERS = ("sandbox/", "validation/", "generator/hints.py", "runtime/door.py")
_TYPE_CHECKS = {"agent/rollout.py: spade_envs.sandbox.SandboxedEnv"}


def test_one_function_builds_played_environments():
    openers = ("open_env", "open_seed", "open_file", "SandboxedEnv", "SandboxedGame")
    offenders = set()
    for path in PACKAGE.rglob("*.py"):
        where = str(path.relative_to(PACKAGE))
        if where.startswith(_CHECKERS):
            continue
        for name in _imports(path):
            if name.startswith("spade_envs.sandbox") and name.rsplit(".", 1)[-1] in openers:
                offenders.add(f"{where}: {name}")
    assert not offenders - _TYPE_CHECKS, sorted(offenders - _TYPE_CHECKS)


@pytest.fixture
def registry(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'door.db'}"
    monkeypatch.setenv("SPADE_REGISTRY_URL", url)
    reg = Registry(url)
    yield reg
    reg.close()


NUMBER_GUESS = seed_source("NumberGuess")


def test_every_reset_carries_a_seed_and_reset_then_reset_is_deterministic():
    first, second = open_source(NUMBER_GUESS), open_source(NUMBER_GUESS)
    try:
        assert first.reset(seed=123)[0] == second.reset(seed=123)[0]
        assert first.reset()[0] == second.reset()[0]  # drawn from the explicit seed
        assert isinstance(first.trace.seed, int) and first.trace.seed == second.trace.seed
        with pytest.raises(spade_envs.SpadeError, match=r"non-negative int or None, got -1"):
            first.reset(seed=-1)
    finally:
        first.close()
        second.close()


def test_traces_record_what_was_played_and_hints_come_from_a_twin():
    env = open_source(NUMBER_GUESS, env_id="spade/NumberGuess-v1")
    try:
        env.reset(seed=9)
        solution = env.solution()
        env.step("\\boxed{0}")
        hint = env.hint()  # a twin replays the reset and the step, then answers
        assert hint == env.own_hint()
        for action in solution:
            env.step(action)
        trace = env.trace
        assert trace.seed == 9 and trace.actions == ["\\boxed{0}", *solution]
        assert trace.episode_return == 1.0
    finally:
        env.close()


@pytest.mark.parametrize(
    "name", sorted(n for n, c in seed_classes().items() if env_kind(c) != "game")
)
def test_gymnasium_check_env_passes_on_every_seed_opened_through_the_door(registry, name):
    env = open_id(register_seed(registry, name))
    try:
        check_env(env, skip_render_check=True)
    finally:
        env.close()


@pytest.mark.parametrize(
    "name", sorted(n for n, c in seed_classes().items() if env_kind(c) == "game")
)
def test_pettingzoo_api_test_passes_on_every_game_opened_through_the_door(registry, name):
    from pettingzoo.test import api_test

    from spade_envs.runtime import open_record

    game = open_record(registry.get(register_seed(registry, name)), seat=None)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            api_test(game, num_cycles=20)
    finally:
        game.close()
