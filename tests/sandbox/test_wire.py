"""What a worker answers is checked in the parent: one guard per kind of value, and a
lie fails that environment alone with a typed error (never a raw exception)."""

from __future__ import annotations

import pytest

from spade_envs.error import EnvCodeError, SandboxProtocolError
from spade_envs.sandbox import SandboxVectorEnv, open_env, open_seed, step_all
from spade_envs.sandbox.wire import decode

from .conftest import env_source


def assert_pool_still_works(pool):
    env = open_seed("NumberGuess", pool=pool)
    env.reset(seed=1)
    assert env.step(env.solution()[0])[0]
    env.close()


@pytest.mark.parametrize(
    ("reward", "match"),
    [
        ("10**4000", "reward that is not a finite number"),
        ("float('nan')", "cannot cross the wire.*reward must be a finite number"),
        ("float('-inf')", "cannot cross the wire"),
        ("7.5", r"reward 7.5, outside reward_range \(0, 1\)"),
        ("True", "a reward of type bool"),
    ],
    ids=["huge-int", "nan", "-inf", "out-of-range", "bool"],
)
def test_a_reward_lie_fails_only_that_env(pool, reward, match):
    # _step is bypassed: the lie is returned from step() itself, as hostile code would.
    source = env_source() + (
        f"\n    def step(self, action):\n        return 'x', {reward}, False, False, {{}}\n"
    )
    env = open_env(source, pool=pool)
    env.reset(seed=0)
    good = open_seed("NumberGuess", pool=pool)
    good.reset(seed=2)
    results = step_all([env, good], ["a", good.solution()[0]], return_exceptions=True)
    assert isinstance(results[0], EnvCodeError)
    with pytest.raises(EnvCodeError, match=match):
        raise results[0]
    assert isinstance(results[1], tuple)
    env.close()
    good.close()
    assert_pool_still_works(pool)


@pytest.mark.parametrize(
    "attribute",
    [
        'max_turns = "many"',
        "max_turns = 10**6",
        "reward_range = (1.0, 0.0)",
        'reward_range = (0.0, float("inf"))',
    ],
)
def test_forged_metadata_fails_the_load_with_a_typed_error(pool, attribute):
    source = env_source().replace("    max_turns = 20\n", f"    max_turns = 20\n    {attribute}\n")
    with pytest.raises(EnvCodeError, match="load"):
        open_env(source, pool=pool)
    assert_pool_still_works(pool)


def test_the_parent_refuses_nan_literals_and_deep_nesting():
    with pytest.raises(ValueError, match="NaN is not JSON"):
        decode(b'{"ok": true, "result": NaN}')
    with pytest.raises(RecursionError):
        decode(b"[" * 100_000 + b"]" * 100_000)


def test_a_worker_writing_nan_on_the_wire_is_a_protocol_error(pool):
    """Code that bypasses the worker's encoder and writes a frame itself."""
    source = env_source(
        step="""
        import gc
        for obj in gc.get_objects():
            if type(obj).__name__ == "Channel" and hasattr(obj, "write_fd"):
                body = b'{"ok":true,"result":["x",NaN,false,false,{}]}'
                os.write(obj.write_fd, len(body).to_bytes(4, "big") + body)
                break
        return "after", 0.0, False
        """,
        header="import os",
    )
    env = open_env(source, pool=pool)
    env.reset(seed=0)
    with pytest.raises(SandboxProtocolError, match="not valid JSON"):
        env.step("go")
    assert env.broken
    assert_pool_still_works(pool)


def test_one_failing_copy_of_a_vector_env_ends_only_its_own_episode(pool):
    source = env_source(
        step="""
        if action == "boom":
            raise ValueError("this copy broke")
        return "fine", 0.0, False
        """
    )
    vec = SandboxVectorEnv(source, 4, workers=2, pool=pool)
    vec.reset(seed=0)
    observations, rewards, terminated, truncated, infos = vec.step(("a", "boom", "c", "d"))
    assert observations == ("fine", "", "fine", "fine")
    assert list(truncated) == [False, True, False, False]
    assert "this copy broke" in infos["sandbox_error"][1]
    assert not infos["_sandbox_error"][0]
    # The broken copy starts a new episode on its next step; the others go on.
    observations, *_ = vec.step(("a", "b", "c", "d"))
    assert observations == ("fine", "ready", "fine", "fine")
    vec.close()
