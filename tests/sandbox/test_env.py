"""Sandboxed environments behave exactly like in-process ones, and fit Gymnasium/PettingZoo."""

from __future__ import annotations

import warnings

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import api_test

import spade_envs
from spade_envs import GameSeatEnv, TextGame
from spade_envs.core.episodes import play_episode, scripted
from spade_envs.sandbox import SandboxedEnv, SandboxedGame, open_env, open_seed
from spade_envs.seeds import seed_names


def mixed_actions(env) -> list[str]:
    solution = env.solution()
    return [x for a in solution for x in ("??", "\\boxed{7}", a)]


@pytest.mark.parametrize("name", seed_names())
def test_seed_trajectories_are_identical_sandboxed_and_in_process(name, pool):
    local = spade_envs.make(name)
    remote = open_seed(name, pool=pool, seat=0 if isinstance(local, TextGame) else None)
    if isinstance(local, TextGame):
        local = GameSeatEnv(local, seat=0)
    try:
        for seed in (0, 1, 2):
            local.reset(seed=seed)
            remote.reset(seed=seed)
            assert remote.solution() == local.solution()
            assert remote.hint() == local.hint()
            actions = mixed_actions(local)
            assert (
                play_episode(remote, scripted(actions), seed=seed).trace()
                == play_episode(local, scripted(actions), seed=seed).trace()
            )
    finally:
        remote.close()


def test_sandboxed_env_passes_check_env(pool):
    env = open_seed("BankTransfers", pool=pool)
    assert isinstance(env, SandboxedEnv) and isinstance(env, gym.Env)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        check_env(env, skip_render_check=True)
    assert [str(w.message) for w in record] == []
    assert env.tool_schemas and env.kind == "tool" and env.skill == "planning"
    env.close()


def test_sandboxed_game_passes_api_test_and_matches_in_process(pool):
    remote = open_seed("TicTacToe", pool=pool)
    assert isinstance(remote, SandboxedGame)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        api_test(remote, num_cycles=100)
    local = spade_envs.make("TicTacToe")
    for game in (remote, local):
        game.reset(seed=5)
    assert remote.winning_line("player_0") == local.winning_line("player_0")
    while not local.game_over:
        agent = local.agent_selection
        assert remote.agent_selection == agent
        assert remote.observe(agent) == local.observe(agent)
        assert remote.legal_moves(agent) == local.legal_moves(agent)
        move = local.best_move(agent)
        assert remote.best_move(agent) == move
        local.step(move)
        remote.step(move)
        assert remote.rewards == local.rewards
    remote.close()


def test_wrappers_and_vector_envs_work(pool):
    env = gym.wrappers.RecordEpisodeStatistics(
        gym.wrappers.TimeLimit(open_seed("NumberGuess", pool=pool), max_episode_steps=3)
    )
    env.reset(seed=0)
    for _ in range(3):
        *_, terminated, truncated, info = env.step("\\boxed{1}")
    assert truncated and "episode" in info
    env.close()
    vec = gym.vector.SyncVectorEnv([lambda: open_seed("NumberGuess", pool=pool) for _ in range(3)])
    observations, _ = vec.reset(seed=0)
    assert len(observations) == 3
    vec.step(("\\boxed{50}",) * 3)
    vec.close()


def test_async_vector_env_builds_sandboxed_envs_in_its_workers():
    vec = gym.vector.AsyncVectorEnv([lambda: open_seed("NumberGuess") for _ in range(2)])
    try:
        observations, _ = vec.reset(seed=3)
        _, rewards, *_ = vec.step(("\\boxed{50}", "\\boxed{50}"))
        assert len(observations) == 2 and len(rewards) == 2
        assert all(o.startswith("I am thinking of a whole number") for o in observations)
    finally:
        vec.close()


def test_pool_reuses_compiled_code_and_counts_warm_starts(pool):
    before = pool.warm_starts
    pool.wait_ready()
    source = spade_envs.seeds.seed_source("Mastermind")
    env = open_seed("Mastermind", pool=pool)
    env.close()
    code = pool.compiled(source)  # compiled once, here in the parent
    assert pool.compiled(source) is code
    assert pool.warm_starts == before + 1
    again = open_seed("Mastermind", pool=pool)  # loads the cached code object
    again.reset(seed=0)
    again.close()


def test_code_is_compiled_by_the_parent_never_taken_from_a_worker(pool):
    """A worker that patches marshal.dumps cannot poison what later workers run."""
    from .conftest import env_source

    source = env_source(
        init="""
        import marshal
        marshal.dumps = lambda *a, **k: b"poison"
        """
    )
    env = open_env(source, pool=pool)
    env.close()
    import base64
    import marshal

    code = marshal.loads(base64.b64decode(pool.compiled(source)))
    assert code.co_filename != "poison" and "Hostile" in code.co_names
    with pytest.raises(spade_envs.error.EnvCodeError, match="SyntaxError"):
        open_env("def broken(:\n", pool=pool)


def test_step_all_runs_envs_in_parallel_and_isolates_failures(pool):
    from spade_envs.sandbox import step_all

    from .conftest import env_source

    good = [open_seed("NumberGuess", pool=pool) for _ in range(3)]
    bad = open_env_hanging(pool, env_source)
    envs = [*good, bad]
    for env in envs:
        env.reset(seed=0)
    results = step_all(envs, ["\\boxed{50}"] * 4, return_exceptions=True)
    assert all(isinstance(r, tuple) for r in results[:3])
    assert isinstance(results[3], spade_envs.error.SandboxTimeout)
    assert [r[0] for r in step_all(good, ["\\boxed{50}"] * 3)]  # the others go on
    with pytest.raises(spade_envs.error.SandboxBroken):
        step_all(envs, ["x"] * 4)
    for env in envs:
        env.close()


def open_env_hanging(pool, env_source):
    from spade_envs.sandbox import open_env

    return open_env(env_source(step="while True:\n    pass"), pool=pool)


class _DrawnSeeds(gym.Wrapper):
    """A local env with the sandbox's seeding contract: a seedless reset (an autoreset)
    draws its seed from a generator seeded by the last explicit seed."""

    def __init__(self, env):
        from spade_envs.sandbox.trace import ResetSeeds

        super().__init__(env)
        self.seeds = ResetSeeds()

    def reset(self, *, seed=None, options=None):
        return self.env.reset(seed=self.seeds.next(seed), options=options)


def test_sandbox_vector_env_matches_gymnasium_sync_vector_env(pool):
    from spade_envs.sandbox import SandboxVectorEnv

    source = spade_envs.seeds.seed_source("Mastermind")
    remote = SandboxVectorEnv(source, 5, workers=2, pool=pool)
    local = gym.vector.SyncVectorEnv(
        [lambda: _DrawnSeeds(spade_envs.make("Mastermind")) for _ in range(5)]
    )
    assert remote.metadata["autoreset_mode"] == local.metadata["autoreset_mode"]
    remote_obs, _ = remote.reset(seed=11)
    local_obs, _ = local.reset(seed=11)
    assert remote_obs == local_obs
    for turn in range(25):  # past max_turns, so autoresets happen
        actions = tuple(f"\\boxed{{{(turn * 7 + i) % 10}{i}{turn % 6}1}}" for i in range(5))
        r = remote.step(actions)
        s = local.step(actions)
        assert r[0] == s[0]
        assert (r[1] == s[1]).all() and (r[2] == s[2]).all() and (r[3] == s[3]).all()
    remote.close()
    local.close()


def test_sandbox_vector_env_failure_is_typed(pool):
    from spade_envs.sandbox import SandboxVectorEnv

    from .conftest import env_source

    vec = SandboxVectorEnv(env_source(step="while True:\n    pass"), 4, workers=2, pool=pool)
    vec.reset(seed=0)
    with pytest.raises(spade_envs.error.SandboxTimeout):
        vec.step(("a", "b", "c", "d"))
    vec.close()
    with pytest.raises(spade_envs.SpadeError, match="num_envs must be a positive int"):
        SandboxVectorEnv(env_source(), 0, pool=pool)


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "from-a-closed-pool"])
def test_a_worker_outlives_the_thread_that_started_it(warm):
    # bubblewrap's --die-with-parent follows the forking *thread*: a worker started by
    # a short-lived thread (a web request, an executor job, a pool's refill thread) must
    # still be alive after that thread has ended.
    import threading
    import time

    from spade_envs.sandbox import WorkerPool

    opened = []
    pool = WorkerPool(size=1 if warm else 0)
    if warm:
        assert pool.wait_ready(timeout=60)

    def start():
        opened.append(open_seed("NumberGuess", pool=pool))

    thread = threading.Thread(target=start)
    thread.start()
    thread.join()
    pool.close()  # ends the refill thread, which started the warm worker
    if pool._thread is not None:
        pool._thread.join(timeout=10)
    time.sleep(0.3)  # a parent-death signal is delivered asynchronously
    [env] = opened
    try:
        observation, _ = env.reset(seed=3)
        assert "guess" in observation.lower()
        assert env.step("\\boxed{1}")[0]
    finally:
        env.close()
