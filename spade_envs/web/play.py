"""Play sessions: an environment played turn by turn from a browser tab, in the sandbox.

Each session holds one sandboxed environment (a worker process: bubblewrap, seccomp,
rlimits, per-call timeouts; see :mod:`spade_envs.sandbox`), its transcript and its
return. Sessions are bounded: at most ``max_sessions`` at once (the least recently used
idle one is closed to make room, else the start is refused with 503), closed after
``idle_s`` without a request and after ``max_age_s`` in all. A session belongs to the
browser that started it (its CSRF cookie); other browsers get 403.

The methods here are synchronous and call the environment on the caller's thread; the
server never calls them on a request thread but through
:class:`~spade_envs.web.play_runner.PlayRunner`, which runs them in a bounded executor
of its own with a deadline, and ends a session whose environment stops answering
(:meth:`PlaySessions.end`: later calls on it get 410).
"""

from __future__ import annotations

import collections
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..core.wins import is_won
from ..error import SandboxTimeout, SpadeError
from .params import HTTPError

__all__ = ["PlaySession", "PlaySessions", "Turn"]

#: Longest action accepted from the browser (characters).
MAX_ACTION_CHARS = 4000
#: Entries kept in a transcript (older ones are dropped, the count is kept).
MAX_TRANSCRIPT = 400
#: An idle session may be closed to make room for a new one after this many seconds.
EVICT_AFTER_S = 60.0
#: Sessions ended by a timeout whose IDs are remembered (to answer 410, not 404).
MAX_ENDED = 256


@dataclass
class Turn:
    """One transcript entry: ``observation``, ``action``, ``hint``, ``solution``, ``error``
    or ``end``; ``reward`` for steps."""

    kind: str
    text: str
    reward: float | None = None
    actions: tuple[str, ...] = ()


@dataclass
class PlaySession:
    """A live episode in one tab (see :class:`PlaySessions`)."""

    id: str
    owner: str
    env_id: str
    kind: str
    seed: int
    opponent: str
    env: Any
    reward_top: float
    max_turns: int
    created: float
    last_used: float
    tools: list[dict[str, Any]] = field(default_factory=list)
    registry_hint: str = ""
    transcript: list[Turn] = field(default_factory=list)
    dropped: int = 0
    turns: int = 0
    total: float = 0.0
    done: bool = False
    terminated: bool = False
    truncated: bool = False
    failed: bool = False
    #: The environment did not answer in time (the sandbox killed it); the server ends
    #: such a session rather than offer a restart of code that stalls.
    timed_out: bool = False
    solution: list[str] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    #: The environment's win rule and the last step's reward (see spade_envs.core.wins).
    win_rule: str = "return"
    last_reward: float | None = None

    @property
    def won(self) -> bool:
        return (
            self.done
            and not self.failed
            and is_won(
                self.win_rule,
                total=self.total,
                top=self.reward_top,
                last_reward=self.last_reward,
                terminated=self.terminated,
            )
        )

    def add(self, turn: Turn) -> None:
        self.transcript.append(turn)
        if len(self.transcript) > MAX_TRANSCRIPT:
            cut = len(self.transcript) - MAX_TRANSCRIPT
            self.dropped += cut
            del self.transcript[:cut]


def _sandbox_open(record: Any, opponent: str, pool: Any) -> Any:
    from ..runtime import open_record

    return open_record(record, opponent=opponent, pool=pool)


class PlaySessions:
    """Every live play session of one server.

    Args:
        registry: Where environments are read from.
        max_sessions: Most sessions open at once.
        idle_s: A session without requests for this long is closed.
        max_age_s: A session is closed this long after it started, whatever happens.
        sandbox: Limits of the sandbox workers (default: ``SandboxConfig()``).
        clock: Monotonic seconds (tests pass their own).
        opener: ``opener(record, opponent)`` returns an environment; the default opens it
            in a sandbox worker. Tests never replace it with an in-process opener.
        call_s: Most seconds one environment call may take: the sandbox's call timeout
            is capped at it (None: the sandbox's own).
        start_s: Most seconds loading the environment may take: the sandbox's load
            timeout is capped at it (None: the sandbox's own).
    """

    def __init__(
        self,
        registry: Any,
        *,
        max_sessions: int = 8,
        idle_s: float = 600.0,
        max_age_s: float = 3600.0,
        sandbox: Any = None,
        clock: Callable[[], float] = time.monotonic,
        opener: Callable[[Any, str], Any] | None = None,
        call_s: float | None = None,
        start_s: float | None = None,
    ):
        self.registry = registry
        self.max_sessions = max_sessions
        self.idle_s = idle_s
        self.max_age_s = max_age_s
        self.sandbox = sandbox
        self._clock = clock
        self._opener = opener
        self.call_s = call_s
        self.start_s = start_s
        self._pool: Any = None
        #: sid -> (owner, why it ended) of sessions ended by :meth:`end`.
        self._ended: collections.OrderedDict[str, tuple[str, str]] = collections.OrderedDict()
        self._sessions: dict[str, PlaySession] = {}
        self._lock = threading.Lock()
        self._pool_lock = threading.Lock()
        self._starting = 0

    def __len__(self) -> int:
        return len(self._sessions)

    def _open(self, record: Any, opponent: str) -> Any:
        # Request threads end after each request; the sandbox starts its workers from a
        # process-long thread, so a session's worker outlives the request that opened it.
        if self._opener is not None:
            return self._opener(record, opponent)
        with self._pool_lock:  # concurrent first opens must not make several pools
            if self._pool is None:
                self._pool = self._new_pool()
        return _sandbox_open(record, opponent, self._pool)

    def _new_pool(self) -> Any:
        """The sessions' worker pool, its timeouts capped at the server's deadlines."""
        import dataclasses

        from ..sandbox import SandboxConfig, WorkerPool

        config = self.sandbox or SandboxConfig()
        # The sandbox's own timeouts never outlast the server's deadlines, so a call
        # the server gave up on is also over in the worker.
        if self.call_s is not None:
            config = dataclasses.replace(config, call_timeout=min(config.call_timeout, self.call_s))
        if self.start_s is not None:
            config = dataclasses.replace(
                config, load_timeout=min(config.load_timeout, self.start_s)
            )
        # One warm worker: the next session starts in milliseconds, not a second.
        return WorkerPool(config, size=1)

    # ----- lifecycle --------------------------------------------------------------------
    def start(
        self, env_id: str, owner: str, seed: int | None, opponent: str = "best"
    ) -> PlaySession:
        """Open ``env_id`` in the sandbox and reset it (``seed`` None: a random seed)."""
        record = self.registry.get(env_id)
        self.reap()
        with self._lock:
            if len(self._sessions) + self._starting >= self.max_sessions and not self._evict():
                raise HTTPError(
                    503,
                    f"{self.max_sessions} play sessions are open, none idle for a minute; end "
                    f"one (its End button) or wait: idle sessions close after "
                    f"{self.idle_s / 60:g} minutes.",
                )
            self._starting += 1
        try:
            env = self._open(record, opponent)
        except SpadeError as exc:
            raise HTTPError(500, f"{env_id} could not be started in the sandbox: {exc}") from exc
        finally:
            with self._lock:
                self._starting -= 1
        now = self._clock()
        session = PlaySession(
            id=secrets.token_urlsafe(18),
            owner=owner,
            env_id=record.id,
            kind=record.kind,
            seed=secrets.randbelow(2**31) if seed is None else seed,
            opponent=opponent if record.kind == "game" else "",
            env=env,
            reward_top=float(env.reward_range[1]),
            win_rule=str(getattr(env, "win_rule", "return")),
            max_turns=int(getattr(env, "max_turns", record.max_turns)),
            created=now,
            last_used=now,
            tools=list(getattr(env, "tool_schemas", []) or []),
            registry_hint=record.hint,
        )
        with session.lock:
            self._reset(session)
        with self._lock:
            self._sessions[session.id] = session
        return session

    def _evict(self) -> bool:
        """Close the least recently used session idle for a minute (lock held)."""
        now = self._clock()
        idle = [s for s in self._sessions.values() if now - s.last_used >= EVICT_AFTER_S]
        if not idle:
            return False
        victim = min(idle, key=lambda s: s.last_used)
        self._sessions.pop(victim.id, None)
        # Not here: stopping a worker can take seconds (its close() may block), and this
        # runs under the lock every request's get() needs.
        _close_soon(victim)
        return True

    def get(self, sid: str, owner: str) -> PlaySession:
        """The session ``sid`` of this browser (404 when it ended, 403 for another browser)."""
        now = self._clock()
        expired = None
        with self._lock:
            session = self._sessions.get(sid)
            if session is not None and self._expired(session, now):
                expired, session = self._sessions.pop(sid), None
        if expired is not None:
            _close_soon(expired)  # never hold the caller (an event loop) for a worker
        if session is None:
            with self._lock:
                ended = self._ended.get(sid)
            if ended is not None and secrets.compare_digest(ended[0].encode(), owner.encode()):
                raise HTTPError(410, ended[1])
            raise HTTPError(
                404,
                "This play session has ended (closed, idle for more than "
                f"{self.idle_s / 60:g} minutes, or the server restarted); start a new one "
                "from the environment's page.",
            )
        if not secrets.compare_digest(session.owner.encode(), owner.encode()):
            raise HTTPError(403, "This play session belongs to another browser.")
        session.last_used = now
        return session

    def _expired(self, session: PlaySession, now: float) -> bool:
        return now - session.last_used >= self.idle_s or now - session.created >= self.max_age_s

    def close(self, sid: str, owner: str, *, wait: bool = True) -> PlaySession:
        """End the session ``sid`` and stop its worker.

        Args:
            sid: The session.
            owner: Who asks (403 for another browser).
            wait: Wait until the worker is stopped; False stops it in the background.
        """
        session = self.get(sid, owner)
        with self._lock:
            self._sessions.pop(sid, None)
        # Not under session.lock: a call stuck in the environment holds it, and stopping
        # the worker is what ends that call.
        if wait:
            _close_env(session)
        else:
            _close_soon(session)
        return session

    def end(self, session: PlaySession, message: str) -> None:
        """End ``session`` because its environment misbehaved (it did not answer in
        time): it is closed at once, its worker stopped in the background, and later
        calls on it get 410 with ``message``."""
        session.failed = session.done = True
        session.add(Turn("error", message))
        with self._lock:
            self._sessions.pop(session.id, None)
            self._ended[session.id] = (session.owner, message)
            while len(self._ended) > MAX_ENDED:
                self._ended.popitem(last=False)
        _close_soon(session)

    def reap(self) -> int:
        """Close sessions idle for ``idle_s`` or older than ``max_age_s``; how many closed."""
        now = self._clock()
        with self._lock:
            stale = [s for s in self._sessions.values() if self._expired(s, now)]
            for session in stale:
                self._sessions.pop(session.id, None)
        for session in stale:
            _close_env(session)
        return len(stale)

    def close_all(self) -> None:
        with self._lock:
            sessions = list(self._sessions.values())
            self._sessions.clear()
        for session in sessions:
            _close_env(session)
        if self._pool is not None:
            self._pool.close()

    # ----- turns ------------------------------------------------------------------------
    def _fail(self, session: PlaySession, what: str, exc: Exception) -> None:
        session.failed = True
        session.timed_out = session.timed_out or isinstance(exc, SandboxTimeout)
        session.done = True
        session.add(Turn("error", f"The environment failed during {what}: {exc}"))

    def _reset(self, session: PlaySession) -> None:
        session.transcript.clear()
        session.dropped = 0
        session.turns, session.total, session.last_reward = 0, 0.0, None
        session.done = session.failed = session.terminated = session.truncated = False
        session.timed_out = False
        session.solution = None
        try:
            observation, _info = session.env.reset(seed=session.seed)
        except SpadeError as exc:
            self._fail(session, "reset", exc)
            return
        session.add(Turn("observation", str(observation)))

    def reset(self, session: PlaySession) -> None:
        """Start the episode again with the same seed (a fresh worker if the old one died)."""
        with session.lock:
            if session.failed or getattr(session.env, "broken", False):
                _close_env(session)
                record = self.registry.get(session.env_id)
                try:
                    session.env = self._open(record, session.opponent or "best")
                except SpadeError as exc:
                    self._fail(session, "restart", exc)
                    return
            self._reset(session)

    def step(self, session: PlaySession, action: str) -> None:
        """Play ``action``; refused (400) once the episode is over."""
        with session.lock:
            if session.done:
                raise HTTPError(400, "The episode is over; press Restart to play again.")
            session.add(Turn("action", action))
            try:
                observation, reward, terminated, truncated, _ = session.env.step(action)
            except SpadeError as exc:
                self._fail(session, "step", exc)
                return
            session.turns += 1
            session.total += float(reward)
            session.last_reward = float(reward)
            session.add(Turn("observation", str(observation), float(reward)))
            if terminated or truncated or session.turns >= session.max_turns:
                session.done = True
                session.terminated = bool(terminated)
                session.truncated = not terminated
                why = "terminated" if terminated else "out of turns"
                verdict = "WON" if session.won else "not won"
                session.add(
                    Turn("end", f"Episode over ({why}): return {session.total:g}, {verdict}.")
                )

    def hint(self, session: PlaySession) -> None:
        """Add the environment's hint (else the registry's model-written one) to the transcript."""
        with session.lock:
            text = ""
            try:
                text = str(session.env.hint() or "")
            except (SpadeError, NotImplementedError, AttributeError) as exc:
                session.timed_out = session.timed_out or isinstance(exc, SandboxTimeout)
                text = ""
            if not text:
                text = session.registry_hint
            session.add(Turn("hint", text or "This environment offers no hint."))

    def solution(self, session: PlaySession) -> None:
        """Add the reference solution (actions that win from the start of this episode)."""
        with session.lock:
            try:
                actions = list(session.env.solution())
            except (SpadeError, NotImplementedError, AttributeError) as exc:
                session.timed_out = session.timed_out or isinstance(exc, SandboxTimeout)
                session.add(Turn("error", f"No solution is available: {exc}"))
                return
            session.solution = actions
            session.add(Turn("solution", "", actions=tuple(actions)))


def _close_env(session: PlaySession) -> None:
    try:
        session.env.close()
    except Exception:  # a dead worker is already gone: nothing left to close
        pass


def _close_soon(session: PlaySession) -> None:
    """Close the session's environment on a thread of its own: stopping a worker waits
    for the process (seconds when it is stuck), which no request should wait for. One
    thread per session ended, so their number is bounded by the sessions."""
    threading.Thread(
        target=_close_env, args=(session,), name="spade-play-close", daemon=True
    ).start()
