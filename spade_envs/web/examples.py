"""The example episode of an environment card: its reference solution played from seed 0.

The environment's code is untrusted (a designer's, an import's), so the episode runs
where play sessions run: in a sandbox worker (:func:`spade_envs.runtime.open_record`, a
:class:`~spade_envs.sandbox.WorkerPool` of this server's sandbox limits), never in this
process. Everything the worker answers is checked by the sandbox's proxy; whether the
episode was *won* is decided here, from the rewards that crossed the wire and the
declared reward range.

An episode has a bounded time (:data:`BUDGET_S` by default: opening, reset, the
solution and every step together; each call gets what is left of it) and a bounded
transcript. :class:`ExampleEpisodes` plays them in background threads and keeps the
results per version (a version never changes), least recently used first out; it plays
each version at most once at a time and at most ``max_running`` versions at once, and a
page waits for a new episode only briefly (:data:`WAIT_S`), then says it is being
played and reloads itself. One client (a browser's cookie, an API client's address)
may have at most ``max_per_client`` episodes waiting or playing; beyond, its card says
``busy`` at once, so one crawler of hostile cards cannot fill the queue for everyone.
A watchdog kills an episode's worker when the budget is spent (plus
:data:`KILL_GRACE_S`), whether or not the sandbox's own timeout fired. A failure is a
result too (its kind, the phase it happened in, the message), so a card never shows a
silent blank; failures of the machine rather than of the code (the sandbox could not
start, too busy) are kept only briefly.
"""

from __future__ import annotations

import collections
import dataclasses
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ..error import (
    EnvCodeError,
    SandboxCrashed,
    SandboxError,
    SandboxStartFailed,
    SandboxTimeout,
    SandboxUnavailable,
    SpadeError,
)

__all__ = ["BUDGET_S", "WAIT_S", "Example", "ExampleEpisodes", "ExampleStep", "examples_of"]

#: Wall-clock seconds one example episode may take in all.
BUDGET_S = 10.0
#: Seconds a page waits for an example it had to start (then it shows it is playing and
#: reloads): short, so that a first view stays within the pages' 100 ms target.
WAIT_S = 0.02
#: Steps of an example kept in its transcript (the return counts every step).
MAX_STEPS_SHOWN = 200
#: Characters of one observation or action kept in a transcript.
MAX_TEXT_CHARS = 4000
#: Seconds a machine failure (no sandbox, too busy) is remembered before a retry.
TRANSIENT_S = 30.0
#: Seconds past the budget after which the watchdog kills the episode's worker (the
#: sandbox's own call timeout, capped at what is left of the budget, normally fires first).
KILL_GRACE_S = 1.0
#: Failure kinds that say something about the machine, not the environment.
TRANSIENT_KINDS = ("sandbox unavailable", "busy")


@dataclass(frozen=True)
class ExampleStep:
    """One turn of an example: the action played, what came back and its reward."""

    turn: int
    action: str
    observation: str
    reward: float


@dataclass(frozen=True)
class Example:
    """An example episode of one version, or why there is none.

    Attributes:
        env_id: The version played.
        seed: The seed of the reset (0).
        opening: The observation after ``reset``.
        steps: The turns shown (at most :data:`MAX_STEPS_SHOWN`).
        hidden_steps: Turns played but not shown.
        total: The episode's return (every step's reward).
        won: The return reached the top of the reward range, the episode ended, and
            nothing failed.
        ending: How the episode ended: ``terminated``, ``truncated``, ``out of turns``,
            ``solution exhausted`` (the solution ran out of actions first) or ``""``.
        reward_range: The declared (low, high) return.
        knobs: Difficulty knobs and their defaults, as the sandboxed class declares them
            (None when it could not be loaded).
        tools: Tool names a tool environment offers.
        failure: ``""``, or the kind of failure: ``timeout``, ``error`` (the code
            raised), ``crash`` (the worker died), ``invalid`` (a malformed answer),
            ``no solution``, ``lost``, ``sandbox unavailable`` or ``busy``.
        phase: Where it failed: ``load``, ``reset``, ``solution``, ``step N``.
        message: What went wrong (the environment's own words, shown escaped).
        seconds: Wall-clock time of the episode.
        isolation: The sandbox layers the worker ran with.
        at: When it was played (``time.time()``).
    """

    env_id: str
    seed: int = 0
    opening: str = ""
    steps: tuple[ExampleStep, ...] = ()
    hidden_steps: int = 0
    total: float = 0.0
    won: bool = False
    ending: str = ""
    reward_range: tuple[float, float] = (0.0, 1.0)
    knobs: dict[str, Any] | None = None
    tools: tuple[str, ...] = ()
    failure: str = ""
    phase: str = ""
    message: str = ""
    seconds: float = 0.0
    isolation: dict[str, Any] = field(default_factory=dict)
    at: float = field(default_factory=time.time)

    @property
    def transient(self) -> bool:
        """A failure of the machine, worth another try soon."""
        return self.failure in TRANSIENT_KINDS


def _cut(text: Any) -> str:
    text = str(text)
    if len(text) <= MAX_TEXT_CHARS:
        return text
    return text[:MAX_TEXT_CHARS] + f"\n… ({len(text) - MAX_TEXT_CHARS:,} more characters)"


def _failure_of(exc: BaseException) -> str:
    if isinstance(exc, SandboxTimeout):
        return "timeout"
    if isinstance(exc, (SandboxUnavailable, SandboxStartFailed)):
        return "sandbox unavailable"
    if isinstance(exc, SandboxCrashed):
        return "crash"
    if isinstance(exc, EnvCodeError):
        if exc.exc_type in ("NotImplementedError", "AttributeError") and "solution" in str(exc):
            return "no solution"
        if exc.exc_type.startswith("Return"):
            return "invalid"
        return "error"
    if isinstance(exc, SandboxError):
        return "invalid"
    return "error"


class _Episode:
    """One run of the solution in a sandbox worker (see :func:`play_example`)."""

    def __init__(self, record: Any, pool: Any, budget_s: float):
        self.record = record
        self.pool = pool
        self.deadline = time.monotonic() + budget_s
        self.budget_s = budget_s
        self.env: Any = None
        self.killed = False
        self.phase = "load"
        self.fields: dict[str, Any] = {"env_id": record.id}

    def _remaining(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise SandboxTimeout(
                f"the example episode did not finish within {self.budget_s:g} s ({self.phase})"
            )
        worker = getattr(self.env, "_worker", None)
        if worker is not None:
            worker.call_timeout = left  # the next call gets what is left of the budget
        return left

    def play(self) -> dict[str, Any]:
        from ..runtime import open_record

        record = self.record
        self.env = open_record(record, opponent="best", pool=self.pool)
        if self.killed:  # the watchdog fired while the code was loading
            self.close()
        env = self.env
        low, high = (float(x) for x in env.reward_range)
        self.fields.update(
            reward_range=(low, high),
            knobs=dict(env.knobs),
            tools=tuple(
                str(s.get("function", {}).get("name", "?"))
                for s in getattr(env, "tool_schemas", []) or []
                if isinstance(s, dict) and isinstance(s.get("function"), dict)
            ),
            isolation=dict(getattr(env, "isolation", {}) or {}),
        )
        max_turns = int(getattr(env, "max_turns", record.max_turns))
        self.phase = "reset"
        self._remaining()
        observation, _info = env.reset(seed=0)
        self.fields["opening"] = _cut(observation)
        self.phase = "solution"
        self._remaining()
        actions = list(env.solution())
        if not actions:
            raise _NoSolution("solution() returned no actions")
        steps: list[ExampleStep] = []
        total, turns, ending = 0.0, 0, ""
        for action in actions:
            self.phase = f"step {turns + 1}"
            self._remaining()
            observation, reward, terminated, truncated, _ = env.step(action)
            turns += 1
            total += float(reward)
            if len(steps) < MAX_STEPS_SHOWN:
                steps.append(ExampleStep(turns, _cut(action), _cut(observation), float(reward)))
            self.fields.update(steps=tuple(steps), hidden_steps=turns - len(steps), total=total)
            if terminated or truncated or turns >= max_turns:
                ending = (
                    "terminated" if terminated else ("truncated" if truncated else "out of turns")
                )
                break
        else:
            ending = "solution exhausted"
        won = ending in ("terminated", "truncated", "out of turns") and total >= high - 1e-9
        self.fields.update(ending=ending, won=won)
        if not won:
            self.fields.update(
                failure="lost",
                phase="",
                message=(
                    f"The reference solution played {turns} action(s) and got a return of "
                    f"{total:g}, short of the top of the reward range ({high:g})"
                    + ("; the episode had not ended." if ending == "solution exhausted" else ".")
                ),
            )
        return self.fields

    def kill(self) -> None:
        """The watchdog: the budget is spent; stop the worker whatever it is doing."""
        self.killed = True
        self.close()

    def close(self) -> None:
        if self.env is not None:
            try:
                self.env.close()
            except Exception:  # a killed worker is already gone
                pass


class _NoSolution(SpadeError):
    pass


def play_example(record: Any, pool: Any, budget_s: float = BUDGET_S) -> Example:
    """Play ``record``'s reference solution from seed 0 in a worker of ``pool``.

    Never raises for anything the environment does: the failure is in the result.
    """
    started = time.monotonic()
    episode = _Episode(record, pool, budget_s)
    watchdog = threading.Timer(budget_s + KILL_GRACE_S, episode.kill)
    watchdog.daemon = True
    watchdog.start()
    try:
        fields = episode.play()
    except _NoSolution as exc:
        fields = {**episode.fields, "failure": "no solution", "phase": "solution",
                  "message": str(exc)}  # fmt: skip
    except SpadeError as exc:
        failure = "timeout" if episode.killed else _failure_of(exc)
        message = str(exc)
        if failure == "timeout":
            message += f" (an example episode may take {budget_s:g} s in all)"
        fields = {**episode.fields, "failure": failure, "phase": episode.phase,
                  "message": message}  # fmt: skip
    finally:
        watchdog.cancel()
        episode.close()
    return Example(**fields, seconds=time.monotonic() - started)


class ExampleEpisodes:
    """Example episodes of one server, played in the background and kept per version.

    :meth:`get` answers at once from what is kept; a version not played yet is queued
    for one of ``max_running`` player threads and waited for ``wait_s`` seconds (a warm
    sandbox worker plays a seed's episode in a few tens of milliseconds), after which the
    page shows that it is being played and reloads itself. So a card never holds a
    request for the whole episode, and a crawler cannot start more sandbox workers than
    ``max_running``.

    Args:
        sandbox: Limits of the sandbox workers (default ``SandboxConfig()``); the load
            and call timeouts are capped at ``budget_s``.
        budget_s: Wall-clock seconds one episode may take in all.
        wait_s: How long :meth:`get` waits for an episode it had to start.
        max_entries: Versions kept (least recently used go first).
        max_running: Episodes played at once.
        max_queued: Versions waiting for a player; beyond, :meth:`get` answers ``busy``.
        max_per_client: Episodes one client may have waiting or playing; beyond,
            :meth:`get` answers ``busy`` for that client only.
    """

    def __init__(
        self,
        sandbox: Any = None,
        *,
        budget_s: float = BUDGET_S,
        wait_s: float = WAIT_S,
        max_entries: int = 512,
        max_running: int = 2,
        max_queued: int = 64,
        max_per_client: int = 8,
    ):
        if (
            budget_s <= 0
            or wait_s < 0
            or min(max_entries, max_running, max_queued, max_per_client) < 1
        ):
            raise SpadeError(
                "budget_s must be positive, wait_s at least 0, and max_entries, max_running, "
                "max_queued and max_per_client at least 1."
            )
        self.sandbox = sandbox
        self.budget_s = budget_s
        self.wait_s = wait_s
        self.max_entries = max_entries
        self.max_running = max_running
        self.max_per_client = max_per_client
        #: Episodes waiting or playing per client, and whose each pending one is.
        self._by_client: dict[str, int] = {}
        self._owner_of: dict[tuple[int, str], str] = {}
        self._cache: collections.OrderedDict[tuple[int, str], Example] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._pending: dict[tuple[int, str], threading.Event] = {}
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=max_queued)
        self._players: list[threading.Thread] = []
        self._pool: Any = None
        self._closed = False
        #: Episodes played so far (the tests check that a cached card plays none).
        self.played = 0

    def __len__(self) -> int:
        return len(self._cache)

    def cached(self, record: Any) -> Example | None:
        """The kept example of ``record``, if any (never plays)."""
        key = (record.key, record.sha256)
        with self._lock:
            found = self._cache.get(key)
            if found is not None and found.transient and time.time() - found.at > TRANSIENT_S:
                del self._cache[key]
                return None
            if found is not None:
                self._cache.move_to_end(key)
            return found

    def get(
        self, record: Any, wait_s: float | None = None, client: str | None = None
    ) -> Example | None:
        """The example of ``record``; None while it is still being played.

        Args:
            record: The version.
            wait_s: How long to wait for an episode not played yet (default ``wait_s``).
            client: Who asks (see :func:`~spade_envs.web.play_runner.play_client`); None
                counts against no client's cap.
        """
        found = self.cached(record)
        if found is not None:
            return found
        key = (record.key, record.sha256)
        with self._lock:
            event = self._pending.get(key)
            if event is None:
                if self._closed:
                    return Example(record.id, failure="busy", message="The server is stopping.")
                if client is not None and self._by_client.get(client, 0) >= self.max_per_client:
                    return Example(
                        record.id,
                        failure="busy",
                        message=f"You have {self.max_per_client} example episodes waiting or "
                        "playing already; reload this page once they are done.",
                    )
                event = threading.Event()
                try:
                    self._queue.put_nowait((key, record, event))
                except queue.Full:
                    return Example(
                        record.id,
                        failure="busy",
                        message="Too many example episodes are waiting to be played; reload "
                        "in a little while.",
                    )
                self._pending[key] = event
                if client is not None:
                    self._by_client[client] = self._by_client.get(client, 0) + 1
                    self._owner_of[key] = client
                if len(self._players) < self.max_running:
                    player = threading.Thread(
                        target=self._player, name="spade-web-examples", daemon=True
                    )
                    self._players.append(player)
                    player.start()
        event.wait(self.wait_s if wait_s is None else wait_s)
        return self.cached(record)

    def _player(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            key, record, event = item
            try:
                example = play_example(record, self._worker_pool(), self.budget_s)
            except Exception as exc:  # a bug of ours: still an answer, never a hang
                example = Example(
                    record.id, failure="error", message=f"{type(exc).__name__}: {exc}"
                )
            with self._lock:
                self.played += 1
                self._cache[key] = example
                self._cache.move_to_end(key)
                while len(self._cache) > self.max_entries:
                    self._cache.popitem(last=False)
                self._pending.pop(key, None)
                self._uncount(key)
            event.set()

    def _uncount(self, key: tuple[int, str]) -> None:
        """The episode ``key`` no longer counts against its client (lock held)."""
        client = self._owner_of.pop(key, None)
        if client is not None:
            left = self._by_client.get(client, 0) - 1
            if left > 0:
                self._by_client[client] = left
            else:
                self._by_client.pop(client, None)

    def _worker_pool(self) -> Any:
        with self._lock:
            if self._pool is None:
                from ..sandbox import SandboxConfig, WorkerPool

                base = self.sandbox or SandboxConfig()
                config = dataclasses.replace(
                    base,
                    load_timeout=min(base.load_timeout, self.budget_s),
                    call_timeout=min(base.call_timeout, self.budget_s),
                )
                # One warm worker: a card's first view waits for the episode, not for
                # Python to start in a sandbox.
                self._pool = WorkerPool(config, size=1)
            return self._pool

    def close(self) -> None:
        """Stop the players (after the episodes they are playing) and the warm worker;
        the kept examples stay readable."""
        with self._lock:
            self._closed = True
            players, self._players = self._players, []
            while True:  # what waits is not played; its pages get "being played" no more
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    self._pending.pop(item[0], None)
                    self._uncount(item[0])
                    item[2].set()
        for _ in players:
            self._queue.put(None)
        for player in players:
            player.join(timeout=self.budget_s + 5)
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()


def examples_of(app: Any) -> ExampleEpisodes:
    """The :class:`ExampleEpisodes` the app owns (``app.examples``)."""
    return app.examples
