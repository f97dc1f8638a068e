from __future__ import annotations

import pickle
import textwrap

import pytest

import spade_envs
from spade_envs import EnvLoadError, UnknownEnvironmentError
from spade_envs.core.loader import load_env_class

GOOD = textwrap.dedent("""
    from spade_envs import TextEnv, boxed

    class Echo(TextEnv):
        skill = "pattern"
        description = "Repeat the word."
        max_turns = 2

        def _reset(self):
            self.word = self.rng.choice(["alpha", "beta"])
            return f"Say {self.word}"

        def _step(self, action):
            return "ok", float(self.word in action), True

        def hint(self):
            return "It is in the prompt."

        def solution(self):
            return [boxed(self.word)]
""")


def test_make_seed_by_name_is_case_insensitive_and_accepts_module_names():
    assert type(spade_envs.make("NumberGuess")).__name__ == "NumberGuess"
    assert type(spade_envs.make("numberguess")).__name__ == "NumberGuess"
    assert type(spade_envs.make("number_guess")).__name__ == "NumberGuess"


def test_make_passes_knobs():
    assert spade_envs.make("NumberGuess", upper=10).upper == 10


def test_unknown_name_suggests_close_matches():
    with pytest.raises(
        UnknownEnvironmentError,
        match=r"No seed environment named 'NumberGues'\. Did you mean 'NumberGuess'\?",
    ):
        spade_envs.make("NumberGues")


def test_make_from_a_file(tmp_path):
    path = tmp_path / "echo.py"
    path.write_text(GOOD)
    env = spade_envs.make(str(path))
    env.reset(seed=0)
    assert env.step(env.solution()[0])[1] == 1.0


def test_loaded_classes_pickle():
    cls = load_env_class(GOOD)
    env = cls()
    env.reset(seed=1)
    assert pickle.loads(pickle.dumps(env)).word == env.word


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("x = 1", "defines no environment class"),
        (
            GOOD + GOOD.split("from spade_envs import TextEnv, boxed")[1].replace("Echo", "Other"),
            "defines 2 environment classes",
        ),
        ("def broken(:", "does not parse"),
        ("raise RuntimeError('boom')", "raised RuntimeError while loading: boom"),
    ],
)
def test_bad_sources_are_load_errors(source, message):
    with pytest.raises(EnvLoadError, match=message):
        load_env_class(source)


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(EnvLoadError, match="is not a file"):
        spade_envs.make(str(tmp_path / "nope.py"))


def test_a_seed_name_always_makes_the_packaged_seed(tmp_path, monkeypatch):
    """Even when the registry holds other code under the seed's name (an old registry)."""
    import dataclasses
    import inspect

    from spade_envs import describe, seed_class
    from spade_envs.registry import Registry, ReservedNameError, trust
    from spade_envs.seeds import seed_source

    url = f"sqlite:///{tmp_path / 'r.db'}"
    monkeypatch.setenv("SPADE_REGISTRY_URL", url)
    squat = seed_source("Nim").replace("class Nim(", "class NumberGuess(")
    meta = dataclasses.replace(describe(seed_class("Nim")), name="NumberGuess")
    registry = Registry(url)
    with pytest.raises(ReservedNameError, match="Rename the environment class"):
        registry.register(squat, meta)
    with monkeypatch.context() as patch:  # as an older spade-envs would have stored it
        patch.setattr(trust, "check_seed_name", lambda name, source: None)
        registry.register(squat, meta, status="validated")
    for name in ("NumberGuess", "numberguess", "number_guess"):
        env = spade_envs.make(name)
        module = inspect.getmodule(type(env))
        assert inspect.getsource(module) == seed_source("NumberGuess"), name
        assert not hasattr(env, "legal_moves")  # not the squatting game
    registry.close()
