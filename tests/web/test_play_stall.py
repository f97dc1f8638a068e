"""No shared stall: an environment that stops answering costs its own session, nobody else.

The attack (found against the web server): one play session of an environment whose
step never returns, 80 steps sent at once, and every other client's ``/healthz`` and
``/api/v1/envs`` timed out for minutes. Here, over real HTTP on 127.0.0.1: the steps of a
stalling session are refused (429) or end it (504, then 410), and a second client is
answered meanwhile.

Bounds (hostile tests): at most a few sandbox workers at once (well under 50 processes),
each under 1 GB and 10 s of CPU (the sandbox's rlimits below); every stall is cut at the
2 s deadline; every request loop is bounded in count, every request in time.
"""

from __future__ import annotations

import http.client
import json
import re
import threading
import time

import pytest

from spade_envs.core.metadata import EnvMetadata
from spade_envs.registry import Registry
from spade_envs.sandbox import SandboxConfig
from spade_envs.web.config import ServeConfig
from spade_envs.web.play_runner import PlayGate, PlayLimits, PlayRefused, Refusal

from .conftest import Client, fill_registry, stop

#: The deadline of one environment call in these tests (seconds).
CALL_S = 2.0
#: The second client's patience: it must be answered well within this.
PATIENCE_S = 5.0

# A busy loop: what a model-written step can always do (the virtual clock makes
# time.sleep return at once, so sleeping no longer stalls anything).
SPIN_STEP = """from spade_envs import TextEnv, boxed


class SpinStep(TextEnv):
    skill = "logic"
    description = "Its step never returns."
    max_turns = 3

    def _reset(self) -> str:
        return "Say anything."

    def _step(self, action: str):
        while True:
            pass

    def solution(self) -> list[str]:
        return [boxed("x")]
"""

# Blocks on a lock it holds: a stall that costs no CPU (for the tests that need several).
BLOCK_STEP = """import threading

from spade_envs import TextEnv, boxed

_HELD = threading.Lock()


class BlockStep(TextEnv):
    skill = "logic"
    description = "Its step waits forever."
    max_turns = 3

    def _reset(self) -> str:
        return "Say anything."

    def _step(self, action: str):
        _HELD.acquire()
        _HELD.acquire()
        return "", 0.0, True

    def solution(self) -> list[str]:
        return [boxed("x")]
"""


def _meta(name: str) -> EnvMetadata:
    return EnvMetadata(name, "text", "logic", "stalls", 3, (0.0, 1.0), origin="designer")


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    from spade_envs.web.server import make_server

    path = tmp_path_factory.mktemp("stall-registry") / "registry.db"
    registry = Registry(f"sqlite:///{path}")
    ids = fill_registry(registry)
    # Registered as validated directly: validation would never let these through.
    ids["SpinStep"] = registry.register(SPIN_STEP, _meta("SpinStep"), status="validated").id
    ids["BlockStep"] = registry.register(BLOCK_STEP, _meta("BlockStep"), status="validated").id
    registry.ids = ids
    config = ServeConfig(
        port=0,
        quiet=True,
        embedder="hashing",
        play_call_s=CALL_S,
        play_calls_per_client=2,
        play_calls_total=6,
    )
    sandbox = SandboxConfig(cpu_seconds=10, memory_mb=1024, max_processes=32)
    server = make_server(config, registry=registry, sandbox=sandbox)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    server.app.catalog.refresh()
    yield server
    stop(server, thread)
    registry.close()


def call(srv, method: str, path: str, data: dict | None = None, timeout: float = 30.0):
    """One JSON API request: (status, decoded body)."""
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=timeout)
    try:
        body = None if data is None else json.dumps(data).encode()
        headers = {"Content-Type": "application/json"} if body is not None else {}
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        text = response.read().decode("utf-8", "replace")
        try:
            return response.status, json.loads(text)
        except ValueError:
            return response.status, text
    finally:
        conn.close()


def message(body) -> str:
    return body["error"]["message"] if isinstance(body, dict) and "error" in body else str(body)


def start_session(srv, name: str) -> str:
    status, body = call(srv, "POST", "/api/v1/play", {"env": srv.app.registry.ids[name], "seed": 0})
    assert status == 201, body
    return body["id"]


def fire(srv, paths: list[str]) -> list[tuple[int, object]]:
    """POST every path at once (one thread each; the list is short); all answers."""
    answers: list[tuple[int, object]] = [(0, None)] * len(paths)

    def one(i: int, path: str) -> None:
        try:
            answers[i] = call(srv, "POST", path, {"action": "x"})
        except OSError as exc:  # counted as a failure below, never dropped
            answers[i] = (-1, repr(exc))

    threads = [threading.Thread(target=one, args=(i, p)) for i, p in enumerate(paths)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return answers


def test_a_stalled_session_neither_stalls_other_clients_nor_outlives_its_deadline(srv):
    sid = start_session(srv, "SpinStep")
    answers: list[tuple[int, object]] = []
    attack = threading.Thread(
        target=lambda: answers.extend(fire(srv, [f"/api/v1/play/{sid}/step"] * 20))
    )
    attack.start()
    try:
        deadline = time.monotonic() + 5
        while srv.app.play.gate.in_flight == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert srv.app.play.gate.in_flight == 1  # the first step spins; the rest were refused
        seen = []
        for _ in range(5):  # the second client, while the attack lasts
            for path in ("/healthz", "/api/v1/envs"):
                status, body = call(srv, "GET", path, timeout=PATIENCE_S)
                seen.append((path, status))
        assert all(status == 200 for _, status in seen), seen
    finally:
        attack.join(timeout=60)
    statuses = sorted(status for status, _ in answers)
    assert len(answers) == 20 and set(statuses) <= {410, 429, 504}, answers
    assert statuses.count(504) == 1 and 429 in statuses, statuses
    timed_out = next(body for status, body in answers if status == 504)
    assert re.search(
        rf"did not answer within {CALL_S:g} s, so this play session was closed", message(timed_out)
    )
    busy = next(body for status, body in answers if status == 429)
    assert re.search(r"still answering an earlier call|environment calls running", message(busy))
    # The session is over for good, and says why.
    status, body = call(srv, "POST", f"/api/v1/play/{sid}/step", {"action": "x"})
    assert status == 410 and re.search(r"did not answer within .* closed", message(body))
    status, body = call(srv, "GET", f"/api/v1/play/{sid}")
    assert status == 410
    # Its slot was given back: the server plays on.
    deadline = time.monotonic() + 10
    while srv.app.play.gate.in_flight and time.monotonic() < deadline:
        time.sleep(0.1)
    assert srv.app.play.gate.in_flight == 0
    other = start_session(srv, "NumberGuess")
    status, body = call(srv, "POST", f"/api/v1/play/{other}/hint", {})
    assert status == 200, body
    call(srv, "DELETE", f"/api/v1/play/{other}")


def test_a_client_over_its_cap_is_refused_at_once(srv):
    sids = [start_session(srv, "BlockStep") for _ in range(3)]  # the cap is 2 per client
    answers = fire(srv, [f"/api/v1/play/{sid}/step" for sid in sids])
    statuses = sorted(status for status, _ in answers)
    assert statuses == [429, 504, 504], answers
    refused = next(body for status, body in answers if status == 429)
    assert re.search(r"You have 2 environment calls running already", message(refused))
    for sid in sids:
        call(srv, "DELETE", f"/api/v1/play/{sid}")


def test_a_browser_is_told_its_session_was_closed(srv):
    browser = Client(srv.url)
    csrf = browser.csrf()
    status, _, text = browser.post(
        "/play", {"env": srv.app.registry.ids["BlockStep"], "csrf": csrf, "seed": "0"}
    )
    assert status == 200, text[:500]
    page = re.search(r'action="(/play/[^"]+)"', text).group(1)
    status, _, text = browser.post(page, {"op": "step", "action": "x", "csrf": csrf})
    assert status == 504
    assert re.search(r"did not answer within 2 s, so this play session was closed", text)
    status, _, text = browser.get(page)
    assert status == 410 and re.search(r"Start a new session", text)


def test_the_gate_counts_per_client_per_session_and_in_all():
    gate = PlayGate(PlayLimits(per_client=2, total=3))
    a1 = gate.acquire("a", "s1")
    with pytest.raises(PlayRefused, match="still answering an earlier call") as busy:
        gate.acquire("b", "s1")
    assert busy.value.refusal is Refusal.SESSION and busy.value.status == 429
    gate.acquire("a", "s2")
    with pytest.raises(PlayRefused, match="You have 2 environment calls") as mine:
        gate.acquire("a", "s3")
    assert mine.value.refusal is Refusal.CLIENT
    gate.acquire("b", None)
    with pytest.raises(PlayRefused, match="running 3 environment calls already") as full:
        gate.acquire("c", None)
    assert full.value.refusal is Refusal.TOTAL
    gate.release(a1)
    gate.release(a1)  # twice is once
    assert gate.in_flight == 2
    gate.acquire("c", "s1")


def test_play_limits_and_config_are_checked():
    from spade_envs.error import SpadeError

    with pytest.raises(SpadeError, match="per_client must be at least 1 and at most total"):
        PlayLimits(per_client=5, total=4)
    with pytest.raises(SpadeError, match="play_calls_per_client .* cannot exceed"):
        ServeConfig(play_calls_per_client=20, play_calls_total=4)
    with pytest.raises(SpadeError, match="play_call_s must be a positive number"):
        ServeConfig(play_call_s=0)


def test_a_client_cannot_queue_more_example_episodes_than_its_cap(srv):
    from spade_envs.web.examples import ExampleEpisodes

    registry = srv.app.registry
    examples = ExampleEpisodes(max_running=1, max_per_client=1, budget_s=5.0)
    try:
        first = registry.get(registry.ids["NumberGuess"])
        second = registry.get(registry.ids["Mastermind"])
        assert examples.get(first, wait_s=0, client="crawler") is None  # queued
        refused = examples.get(second, wait_s=0, client="crawler")
        assert refused is not None and refused.failure == "busy"
        assert re.search(r"You have 1 example episodes waiting", refused.message)
        assert examples.get(second, wait_s=0, client="someone else") is None  # queued
        assert examples.cached(second) is None  # the refusal was not kept for everyone
    finally:
        examples.close()
