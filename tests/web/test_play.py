"""Play sessions: real environments in real sandbox workers, bounded in number and time."""

from __future__ import annotations

import os

import pytest

from spade_envs.core.metadata import EnvMetadata
from spade_envs.web.params import HTTPError
from spade_envs.web.play import PlaySessions

BROKEN = """from spade_envs import TextEnv, boxed


class BrokenStep(TextEnv):
    skill = "logic"
    description = "Raises on the first step."
    max_turns = 2

    def _reset(self) -> str:
        return "Say anything."

    def _step(self, action: str):
        raise ValueError("model-written bug")

    def solution(self) -> list[str]:
        return [boxed("x")]
"""


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def registry(web_registry):
    if not any(r.name == "BrokenStep" for r in web_registry.list(limit=100)):
        meta = EnvMetadata(
            "BrokenStep",
            "text",
            "logic",
            "Raises on the first step.",
            2,
            (0.0, 1.0),
            origin="designer",
        )
        web_registry.register(BROKEN, meta, status="candidate")
    return web_registry


@pytest.fixture
def sessions(registry):
    clock = Clock()
    manager = PlaySessions(registry, max_sessions=2, idle_s=600, max_age_s=3600, clock=clock)
    manager.clock = clock
    yield manager
    manager.close_all()


def test_a_solution_wins_in_the_sandbox(sessions, registry):
    session = sessions.start(registry.ids["CodeTrace"], "owner-a", seed=3)
    assert session.env.isolation.get("bubblewrap") in (True, False)  # a sandbox proxy
    assert type(session.env).__name__ == "SandboxedEnv"
    assert session.env._worker.pid != os.getpid()
    sessions.solution(session)
    actions = session.solution
    assert actions and session.transcript[-1].kind == "solution"
    for action in actions:
        sessions.step(session, action)
    assert session.done and session.won and session.total == 1.0
    assert session.transcript[-1].kind == "end" and "WON" in session.transcript[-1].text
    with pytest.raises(HTTPError, match="The episode is over; press Restart"):
        sessions.step(session, "again")
    sessions.reset(session)
    assert not session.done and session.turns == 0 and session.transcript[0].kind == "observation"


def test_a_game_is_played_from_seat_zero_against_the_reference(sessions, registry):
    session = sessions.start(registry.ids["Nim"], "owner-a", seed=1, opponent="best")
    sessions.hint(session)
    assert session.transcript[-1].kind == "hint" and session.transcript[-1].text
    sessions.solution(session)
    for action in session.solution:
        sessions.step(session, action)
    assert session.won


def test_a_wrong_action_loses_and_the_same_seed_gives_the_same_episode(sessions, registry):
    first = sessions.start(registry.ids["CodeTrace"], "owner-a", seed=5)
    start_text = first.transcript[0].text
    for _ in range(first.max_turns):
        if not first.done:
            sessions.step(first, "\\boxed{123456789}")
    assert first.done and not first.won
    sessions.reset(first)
    assert first.transcript[0].text == start_text


def test_sessions_are_bounded_and_idle_ones_make_room(sessions, registry):
    env = registry.ids["CodeTrace"]
    a = sessions.start(env, "owner-a", seed=1)
    sessions.clock.now += 30
    b = sessions.start(env, "owner-b", seed=2)
    with pytest.raises(HTTPError, match="2 play sessions are open, none idle for a minute") as busy:
        sessions.start(env, "owner-c", seed=3)
    assert busy.value.status == 503
    sessions.clock.now += 45  # a: idle 75 s; b: idle 45 s
    c = sessions.start(env, "owner-c", seed=3)
    with pytest.raises(HTTPError, match="This play session has ended"):
        sessions.get(a.id, "owner-a")
    assert sessions.get(b.id, "owner-b") is b and sessions.get(c.id, "owner-c") is c
    assert len(sessions) == 2


def test_idle_and_old_sessions_are_closed(sessions, registry):
    env = registry.ids["CodeTrace"]
    a = sessions.start(env, "owner-a", seed=1)
    worker = a.env._worker
    sessions.clock.now += 599
    assert sessions.reap() == 0
    sessions.clock.now += 2
    assert sessions.reap() == 1 and len(sessions) == 0
    assert not worker.alive  # its sandbox worker was stopped
    b = sessions.start(env, "owner-a", seed=1)
    for _ in range(7):  # used every 500 s, but an hour is the most a session lives
        sessions.clock.now += 500
        sessions.get(b.id, "owner-a")
    sessions.clock.now += 200
    with pytest.raises(HTTPError, match="has ended"):
        sessions.get(b.id, "owner-a")
    assert len(sessions) == 0


def test_sessions_belong_to_the_browser_that_started_them(sessions, registry):
    session = sessions.start(registry.ids["CodeTrace"], "owner-a", seed=1)
    with pytest.raises(HTTPError, match="belongs to another browser") as other:
        sessions.get(session.id, "owner-b")
    assert other.value.status == 403
    sessions.close(session.id, "owner-a")
    with pytest.raises(HTTPError, match="has ended") as gone:
        sessions.get(session.id, "owner-a")
    assert gone.value.status == 404


def test_an_environment_that_fails_ends_the_episode_with_its_error(sessions, registry):
    session = sessions.start("spade/BrokenStep-v1", "owner-a", seed=0)
    sessions.step(session, "anything")
    assert session.failed and session.done and not session.won
    assert session.transcript[-1].kind == "error"
    assert "model-written bug" in session.transcript[-1].text
    sessions.reset(session)  # a fresh worker, a fresh episode
    assert not session.failed and session.transcript[-1].text == "Say anything."


def test_unknown_environments_are_refused(sessions):
    with pytest.raises(Exception, match="NumberGues"):
        sessions.start("spade/NumberGues-v1", "owner-a", seed=0)
    assert len(sessions) == 0
