"""Registry environments over OpenEnv's protocol, played by OpenEnv's own client.

A real server on 127.0.0.1 and ``openenv.core.GenericEnvClient`` (openenv-core from
PyPI): the same first observation and rewards as the door gives for the same seed and
actions, pinned IDs with their hash, bare names resolved and said so, the hint option,
protocol errors that keep the connection, and hostile environments contained.

Bounds (hostile tests): one sandbox worker per session, each under 1 GB and 10 s of CPU;
every stall is cut at the 2 s call deadline.
"""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from openenv.core import GenericEnvClient

from spade_envs.core.metadata import EnvMetadata
from spade_envs.registry import Registry
from spade_envs.sandbox import SandboxConfig
from spade_envs.web.config import ServeConfig

from ..play_support import door_episode, reference_solution
from .conftest import Client, stop
from .test_play_stall import SPIN_STEP

CALL_S = 2.0


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    from spade_envs.core.metadata import describe
    from spade_envs.seeds import seed_class, seed_source
    from spade_envs.web.server import make_server

    path = tmp_path_factory.mktemp("openenv-registry") / "registry.db"
    registry = Registry(f"sqlite:///{path}")
    ids = {
        "NumberGuess": registry.register(
            seed_source("NumberGuess"), describe(seed_class("NumberGuess")), status="validated"
        ).id
    }
    meta = EnvMetadata("SpinStep", "text", "logic", "stalls", 3, (0.0, 1.0), origin="designer")
    # Registered as validated directly: validation would never let it through.
    ids["SpinStep"] = registry.register(SPIN_STEP, meta, status="validated").id
    registry.ids = ids
    config = ServeConfig(port=0, quiet=True, embedder="hashing", play_call_s=CALL_S)
    sandbox = SandboxConfig(cpu_seconds=10, memory_mb=1024, max_processes=32)
    server = make_server(config, registry=registry, sandbox=sandbox)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    stop(server, thread)
    registry.close()


def base(srv, ident: str) -> str:
    return f"http://127.0.0.1:{srv.port}/api/v1/openenv/{ident}"


def test_openenv_client_plays_the_same_episode_as_the_door(srv):
    registry = srv.app.registry
    env_id = registry.ids["NumberGuess"]
    actions = [r"\boxed{50}", r"\boxed{25}", r"\boxed{75}"]
    first, rewards = door_episode(registry, env_id, 7, actions)
    with GenericEnvClient(base_url=base(srv, env_id.removeprefix("spade/"))).sync() as client:
        result = client.reset(seed=7)
        observation = result.observation
        assert observation["text"] == first
        assert observation["env_id"] == env_id
        assert observation["sha256"] == registry.get(env_id).sha256
        assert observation["seed"] == 7 and result.done is False and result.reward is None
        got = []
        for action in actions[: len(rewards)]:
            step = client.step({"text": action})
            got.append(step.reward)
        assert got == rewards
        state = client.state()
        assert state["step_count"] == len(rewards) and state["env_id"] == env_id
        # A second reset on the same connection: the same episode again.
        assert client.reset(seed=7).observation["text"] == first


def test_the_reference_solution_wins_over_openenv(srv):
    registry = srv.app.registry
    env_id = registry.ids["NumberGuess"]
    solution = reference_solution(registry, env_id, 11)
    with GenericEnvClient(base_url=base(srv, env_id)).sync() as client:
        client.reset(seed=11)
        for action in solution:
            step = client.step({"text": action})
            if step.done:
                break
        assert step.done and step.observation["won"] and step.observation["terminated"]
        with pytest.raises(RuntimeError, match="EXECUTION_ERROR"):
            client.step({"text": solution[-1]})  # the episode is over


def test_a_bare_name_resolves_to_the_newest_validated_version_and_says_so(srv):
    env_id = srv.app.registry.ids["NumberGuess"]
    with GenericEnvClient(base_url=base(srv, "NumberGuess")).sync() as client:
        observation = client.reset(seed=1).observation
    assert observation["env_id"] == env_id
    assert "NumberGuess resolved to " + env_id in observation["note"]
    status, _, text = Client(f"http://127.0.0.1:{srv.port}").get(
        "/api/v1/openenv/NumberGuess/metadata"
    )
    meta = json.loads(text)
    assert status == 200 and meta["env_id"] == env_id and meta["sha256"]
    status, _, text = Client(f"http://127.0.0.1:{srv.port}").get(f"/api/v1/openenv/{env_id}/health")
    assert status == 200 and json.loads(text)["status"] == "healthy"


def test_hint_option_puts_the_hint_in_the_first_observation(srv):
    with GenericEnvClient(base_url=base(srv, "NumberGuess")).sync() as client:
        plain = client.reset(seed=3).observation
        hinted = client.reset(seed=3, hint=True).observation
    assert plain["hint"] == "" and hinted["hint"]
    assert hinted["text"] == plain["text"]


def test_an_unknown_name_is_refused_with_close_matches(srv):
    with GenericEnvClient(base_url=base(srv, "NumberGues")).sync() as client:
        with pytest.raises(RuntimeError, match=r"FACTORY_ERROR|NumberGuess"):
            client.reset(seed=0)
    status, _, text = Client(f"http://127.0.0.1:{srv.port}").get(
        "/api/v1/openenv/NumberGues/health"
    )
    assert status == 404 and "NumberGuess" in text


def test_bad_messages_get_openenv_errors_and_keep_the_session(srv):
    with GenericEnvClient(base_url=base(srv, "NumberGuess")).sync() as client:
        with pytest.raises(RuntimeError, match="reset first"):
            client.step({"text": "x"})
        client.reset(seed=2)
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            client.step({"txt": "x"})
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            client.step({"text": "x" * 5000})
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            client.reset(seed=-1)
        assert client.step({"text": r"\boxed{50}"}).reward is not None


def test_a_cross_site_websocket_is_refused(srv):
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidStatus

    async def attempt():
        url = f"ws://127.0.0.1:{srv.port}/api/v1/openenv/NumberGuess/ws"
        async with connect(url, origin="http://evil.example", open_timeout=10):
            pass

    with pytest.raises(InvalidStatus, match="403"):
        asyncio.run(attempt())


def test_a_stalling_environment_ends_its_own_session_and_nobody_elses(srv):
    client = Client(f"http://127.0.0.1:{srv.port}")
    with GenericEnvClient(base_url=base(srv, srv.app.registry.ids["SpinStep"])).sync() as spin:
        spin.reset(seed=0)
        # Ended by the call deadline (what the message names), not by any later limit.
        with pytest.raises(RuntimeError, match="SESSION_ERROR") as ended:
            spin.step({"text": "anything"})
        assert f"did not answer within {CALL_S:g} s" in str(ended.value), ended.value
        status, _, _ = client.get("/healthz")
        assert status == 200
    with GenericEnvClient(base_url=base(srv, "NumberGuess")).sync() as other:
        assert other.reset(seed=0).observation["text"]


def test_a_version_that_is_not_validated_is_not_served(srv):
    registry = srv.app.registry
    meta = EnvMetadata("Unproven", "text", "logic", "new", 3, (0.0, 1.0), origin="designer")
    env_id = registry.register(
        SPIN_STEP.replace("SpinStep", "Unproven"), meta, status="candidate"
    ).id
    status, _, text = Client(f"http://127.0.0.1:{srv.port}").get(f"/api/v1/openenv/{env_id}/health")
    assert status == 400 and "is candidate, not validated" in text
    with GenericEnvClient(base_url=base(srv, env_id)).sync() as client:
        with pytest.raises(RuntimeError, match="FACTORY_ERROR"):
            client.reset(seed=0)


def test_connections_over_the_cap_are_refused_with_capacity_reached(srv):
    server = srv.app.openenv
    saved = server.max_connections
    server.max_connections = server.open + 1
    try:
        with GenericEnvClient(base_url=base(srv, "NumberGuess")).sync() as first:
            first.reset(seed=0)
            with GenericEnvClient(base_url=base(srv, "NumberGuess")).sync() as second:
                with pytest.raises(RuntimeError, match="CAPACITY_REACHED"):
                    second.reset(seed=0)
            assert first.step({"text": r"\boxed{5}"}).reward is not None
    finally:
        server.max_connections = saved


def test_a_null_origin_websocket_is_refused(srv):
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidStatus

    async def attempt():
        url = f"ws://127.0.0.1:{srv.port}/api/v1/openenv/NumberGuess/ws"
        async with connect(url, origin="null", open_timeout=10):
            pass

    with pytest.raises(InvalidStatus, match="403"):
        asyncio.run(attempt())


def test_malformed_frames_and_lone_surrogates_keep_the_session(srv):
    from websockets.asyncio.client import connect

    async def play():
        url = f"ws://127.0.0.1:{srv.port}/api/v1/openenv/NumberGuess/ws"
        async with connect(url, open_timeout=10) as ws:
            await ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
            assert json.loads(await ws.recv())["type"] == "observation"
            await ws.send(b"\x00binary")
            assert "text frames" in json.loads(await ws.recv())["data"]["message"]
            await ws.send("[" * 5000 + "]" * 5000)
            assert json.loads(await ws.recv())["data"]["code"] == "INVALID_JSON"
            await ws.send(json.dumps({"type": "step", "data": {"text": "\\boxed{\ud800}"}}))
            step = json.loads(await ws.recv())
            assert step["type"] == "observation" and step["data"]["reward"] == 0.0
            await ws.send(json.dumps({"type": "step", "data": {"text": "\\boxed{50}"}}))
            assert json.loads(await ws.recv())["type"] == "observation"

    asyncio.run(play())


def test_a_version_rejected_mid_connection_is_not_reset_again(srv):
    registry = srv.app.registry
    meta = EnvMetadata("Soon", "text", "logic", "soon rejected", 3, (0.0, 1.0), origin="designer")
    env_id = registry.register(SPIN_STEP.replace("SpinStep", "Soon"), meta, status="validated").id
    with GenericEnvClient(base_url=base(srv, env_id)).sync() as client:
        client.reset(seed=0)
        registry.set_status(env_id, "rejected")
        with pytest.raises(RuntimeError, match="no longer validated"):
            client.reset(seed=1)


def test_evicting_a_session_whose_worker_is_slow_to_stop_blocks_nobody():
    from spade_envs.web.play import EVICT_AFTER_S, PlaySessions

    # A close that cannot finish until the test lets it: a start that waited for it would
    # come back only after the bounded wait gives up, and on the caller's thread.
    release = threading.Event()
    closes: list[tuple[threading.Thread, bool]] = []
    closed = threading.Event()

    class SlowClose:
        reward_range = (0.0, 1.0)
        max_turns = 3

        def reset(self, seed=None):
            return "obs", {}

        def close(self):
            closes.append((threading.current_thread(), release.wait(30)))
            closed.set()

    class FakeRegistry:
        def get(self, env_id):
            from types import SimpleNamespace

            return SimpleNamespace(id=env_id, kind="text", max_turns=3, hint="")

    now = [0.0]
    sessions = PlaySessions(
        FakeRegistry(), max_sessions=1, clock=lambda: now[0], opener=lambda r, o: SlowClose()
    )
    sessions.start("spade/A-v1", "me", 0)
    now[0] += EVICT_AFTER_S + 1
    sessions.start("spade/B-v1", "me", 0)  # evicts A, whose close is held
    # B started while A's close was still held: the close never ran on this thread.
    assert all(thread is not threading.current_thread() for thread, _ in closes), closes
    release.set()
    assert closed.wait(30), "the evicted session was never closed"
    [(thread, released)] = closes
    assert released and thread is not threading.current_thread()
