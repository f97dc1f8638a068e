"""Environment calls of the web play sessions, off the server's request path.

An environment is untrusted code: its ``step()`` may sleep or spin until the sandbox
kills it. Run on the request path (Starlette's shared thread pool, or the event loop),
a few dozen such calls held every thread the health check and the list pages need. So
the play routes are ``async`` and hand each environment call to :class:`PlayRunner`:

- a thread pool of its own (``total`` threads), separate from the one serving pages;
- at most ``per_client`` calls running per client (a browser's cookie, an API client's
  address) and one per session; a call over a cap is refused at once with 429
  (:class:`PlayRefused`), never queued, so a flood costs the server nothing;
- a deadline per call: past it the session is ended (:meth:`PlaySessions.end`: later
  calls get 410), its worker killed, and the call answers 504 (:class:`PlayTimedOut`).
  The sandbox's own call timeout is capped at the same deadline, so the thread left
  behind ends too; its slot is given back only then, so abandoned calls can never add
  up beyond the caps.
"""

from __future__ import annotations

import asyncio
import enum
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from ..error import SpadeError
from .params import HTTPError
from .play import PlaySession, PlaySessions

__all__ = [
    "PlayGate",
    "PlayLimits",
    "PlayRefused",
    "PlayRunner",
    "PlayTimedOut",
    "Refusal",
    "play_client",
]

T = TypeVar("T")


@dataclass(frozen=True)
class PlayLimits:
    """How much environment work the server runs at once, and for how long.

    Attributes:
        call_s: Seconds one call (reset, step, hint, solution) may take.
        start_s: Seconds opening a session (or restarting its worker) may take.
        per_client: Calls one client may have running at once.
        total: Calls running at once across all clients (the pool's threads).
    """

    call_s: float = 5.0
    start_s: float = 30.0
    per_client: int = 4
    total: int = 16

    def __post_init__(self) -> None:
        if not (self.call_s > 0 and self.start_s > 0):
            raise SpadeError("call_s and start_s must be positive seconds.")
        if not 1 <= self.per_client <= self.total:
            raise SpadeError("per_client must be at least 1 and at most total.")


class Refusal(enum.Enum):
    """Which cap refused a call."""

    CLIENT = "client"
    TOTAL = "total"
    SESSION = "session"


class PlayRefused(HTTPError):
    """429: a cap on environment calls in flight was reached (see :class:`Refusal`)."""

    def __init__(self, refusal: Refusal, message: str):
        super().__init__(429, message, {"Retry-After": "1"})
        self.refusal = refusal


class PlayTimedOut(HTTPError):
    """504: the environment did not answer within the deadline; the session was ended."""

    def __init__(self, message: str, seconds: float):
        super().__init__(504, message)
        self.seconds = seconds


def play_client(request: Any) -> str:
    """Who a play call counts against: the browser (its CSRF cookie, as the guard set
    ``request.state.owner``) for pages; the remote address for the API, whose sessions
    all share one owner."""
    owner = str(getattr(request.state, "owner", "") or "")
    if owner.startswith("browser:"):
        return owner
    peer = request.client.host if request.client is not None else "?"
    return f"address:{peer}"


@dataclass
class _Slot:
    client: str
    session: str | None
    released: bool = False


class PlayGate:
    """Counts calls in flight per client, per session and in all; refuses over a cap."""

    def __init__(self, limits: PlayLimits):
        self.limits = limits
        self._lock = threading.Lock()
        self._clients: dict[str, int] = {}
        self._sessions: set[str] = set()
        self._total = 0

    @property
    def in_flight(self) -> int:
        return self._total

    def acquire(self, client: str, session: str | None) -> _Slot:
        """A slot for one call, or :class:`PlayRefused` at once."""
        limits = self.limits
        with self._lock:
            if session is not None and session in self._sessions:
                raise PlayRefused(
                    Refusal.SESSION,
                    "This play session is still answering an earlier call; wait for its "
                    "answer before sending the next one.",
                )
            if self._clients.get(client, 0) >= limits.per_client:
                raise PlayRefused(
                    Refusal.CLIENT,
                    f"You have {limits.per_client} environment calls running already (the "
                    "most one client may); wait for their answers, then try again.",
                )
            if self._total >= limits.total:
                raise PlayRefused(
                    Refusal.TOTAL,
                    f"The server is running {limits.total} environment calls already (its "
                    "most); try again in a few seconds.",
                )
            self._clients[client] = self._clients.get(client, 0) + 1
            if session is not None:
                self._sessions.add(session)
            self._total += 1
            return _Slot(client, session)

    def release(self, slot: _Slot) -> None:
        with self._lock:
            if slot.released:
                return
            slot.released = True
            left = self._clients.get(slot.client, 0) - 1
            if left > 0:
                self._clients[slot.client] = left
            else:
                self._clients.pop(slot.client, None)
            if slot.session is not None:
                self._sessions.discard(slot.session)
            self._total -= 1


class _Ticket:
    """Who gets a call's result: the request, or (once it gave up) the clean-up."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state = ""

    def finish(self) -> bool:
        """The call is done; False when the request gave up on it already."""
        with self._lock:
            if self._state:
                return False
            self._state = "finished"
            return True

    def abandon(self) -> bool:
        """The request gives up; False when the call finished just before."""
        with self._lock:
            if self._state:
                return False
            self._state = "abandoned"
            return True


class PlayRunner:
    """Runs the environment calls of :class:`PlaySessions` for the async routes.

    Args:
        sessions: The server's play sessions.
        limits: Deadlines and caps.
    """

    def __init__(self, sessions: PlaySessions, limits: PlayLimits | None = None):
        self.sessions = sessions
        self.limits = limits or PlayLimits()
        self.gate = PlayGate(self.limits)
        self._executor = ThreadPoolExecutor(
            max_workers=self.limits.total, thread_name_prefix="spade-play"
        )

    # ----- the calls ------------------------------------------------------------------------
    async def start(
        self, client: str, env_id: str, owner: str, seed: int | None, opponent: str = "best"
    ) -> PlaySession:
        """Open ``env_id`` and reset it (:meth:`PlaySessions.start`) within ``start_s``."""
        ticket = _Ticket()
        sessions = self.sessions

        def job() -> PlaySession:
            session = sessions.start(env_id, owner, seed, opponent)
            if not ticket.finish():  # nobody will ever hear of this session: close it
                sessions.end(session, self._late_message())
            return session

        slot = self.gate.acquire(client, None)
        future = self._submit(slot, job)
        if not await self._wait(future, self.limits.start_s) and ticket.abandon():
            raise PlayTimedOut(
                f"{env_id} did not start within {self.limits.start_s:g} s (loading its "
                "code and the first reset); no session was opened. Try again later, or "
                "another environment.",
                self.limits.start_s,
            )
        # Done, or it finished as the deadline passed: its result (or its error) now.
        session = await asyncio.wrap_future(future)
        self._check_timed_out(session)
        return session

    async def step(self, client: str, session: PlaySession, action: str) -> None:
        """:meth:`PlaySessions.step` within ``call_s``."""
        await self._call(client, session, self.sessions.step, action)

    async def hint(self, client: str, session: PlaySession) -> None:
        """:meth:`PlaySessions.hint` within ``start_s``: the hint comes from a twin of the
        episode in a fresh worker (:mod:`spade_envs.runtime.door`), which has to start."""
        await self._call(client, session, self.sessions.hint, seconds=self.limits.start_s)

    async def solution(self, client: str, session: PlaySession) -> None:
        """:meth:`PlaySessions.solution` within ``call_s``."""
        await self._call(client, session, self.sessions.solution)

    async def reset(self, client: str, session: PlaySession) -> None:
        """:meth:`PlaySessions.reset` within ``call_s`` (``start_s`` when it restarts a
        worker that failed)."""
        restart = session.failed or bool(getattr(session.env, "broken", False))
        seconds = self.limits.start_s if restart else self.limits.call_s
        await self._call(client, session, self.sessions.reset, seconds=seconds)

    def close(self) -> None:
        """Refuse new calls; running ones end with their workers (closed by the sessions)."""
        self._executor.shutdown(wait=False, cancel_futures=True)

    # ----- machinery ------------------------------------------------------------------------
    async def _call(
        self,
        client: str,
        session: PlaySession,
        method: Callable[..., None],
        *args: Any,
        seconds: float | None = None,
    ) -> None:
        seconds = self.limits.call_s if seconds is None else seconds
        slot = self.gate.acquire(client, session.id)
        future = self._submit(slot, method, session, *args)
        if not await self._wait(future, seconds):
            self._end(session, seconds)
        future.result()  # done: raises what the call raised (400 once the episode is over)
        self._check_timed_out(session)

    def _submit(self, slot: _Slot, fn: Callable[..., T], *args: Any) -> Future[T]:
        try:
            future = self._executor.submit(fn, *args)
        except RuntimeError:  # shut down
            self.gate.release(slot)
            raise HTTPError(503, "The server is stopping; no environment calls now.") from None
        # The slot is given back when the call really ends, not when the request stops
        # waiting: a stuck call keeps counting against its client and the total.
        future.add_done_callback(lambda _: self.gate.release(slot))
        return future

    @staticmethod
    async def _wait(future: Future[Any], seconds: float) -> bool:
        """Whether ``future`` is done within ``seconds`` (the call itself is never
        cancelled here: a running call ends when its worker is killed)."""
        wrapped = asyncio.wrap_future(future)
        done, _ = await asyncio.wait({wrapped}, timeout=seconds)
        if not done:  # what the abandoned call raises later is nobody's to log
            wrapped.add_done_callback(lambda f: f.cancelled() or f.exception())
        return bool(done)

    def _check_timed_out(self, session: PlaySession) -> None:
        """The sandbox's own timeout (capped at the deadline) may fire first: the same end."""
        if session.timed_out:
            self._end(session, self.limits.call_s)

    def _end(self, session: PlaySession, seconds: float) -> None:
        message = (
            f"The environment did not answer within {seconds:g} s, so this play session was "
            "closed and its sandbox worker stopped. Start a new session from the "
            "environment's page."
        )
        self.sessions.end(session, message)
        raise PlayTimedOut(message, seconds)

    def _late_message(self) -> str:
        return (
            f"The environment did not start within {self.limits.start_s:g} s, so this play "
            "session was closed. Start a new one from the environment's page."
        )
