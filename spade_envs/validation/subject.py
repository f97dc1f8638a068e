"""The environment under validation, seen from the validating process.

Its code runs only in sandbox workers, which execute its methods and nothing else;
every call crosses the wire and comes back checked by the sandbox's proxies. A
:class:`Subject` hands the checks fresh instances in two workers:

- the *main* worker, where ``solution()`` and ``hint()`` may be called;
- the *clean* worker, where ``solution()`` is never called, so an environment that
  wins only after its own solution was computed in the same process (peeking) loses
  there, and one that draws a per-process salt at import differs there.

Time is measured here too: the CPU a call used is read from the worker's ``/proc``
entry (the environment cannot forge it), and every call has a wall-clock limit, so
a sleeping environment cannot stretch a check.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..core.wins import is_won
from ..error import SandboxError, SandboxTimeout
from ..sandbox import SandboxConfig, SandboxedEnv, SandboxedGame
from ..sandbox.process import Worker
from .budget import Budget

__all__ = ["CheckFailed", "Subject", "TooSlow"]


#: Load metadata every worker of one validation must agree on.
_SAME_IN_EVERY_WORKER = (
    "name", "kind", "max_turns", "reward_range", "win_rule", "knobs", "possible_agents",
)  # fmt: skip


class CheckFailed(Exception):
    """A check's verdict, raised from deep inside it."""


class TooSlow(CheckFailed):
    """A call ran past its wall-clock or CPU limit: the environment is rejected now."""


class Subject:
    """Sandboxed instances of one environment, opened on demand by the checks.

    Args:
        open_worker: Starts a worker with the module loaded, of a lineage none of the
            given workers has (see ``WorkerPool.acquire``); returns it and the load
            metadata (already checked by the sandbox).
        config: The sandbox configuration of those workers.
        budget: The validation budget (per-call CPU limit, per-check wall limit).
        is_game: The class is a ``TextGame`` (checks play seat 0 as a single agent).
        has_hint: The class defines ``hint()`` (SPADE-format classes may not).
    """

    def __init__(
        self,
        open_worker: Callable[[list[Worker]], tuple[Worker, dict[str, Any]]],
        config: SandboxConfig,
        budget: Budget,
        *,
        is_game: bool,
        has_hint: bool,
    ):
        self._open_worker = open_worker
        self.config = config
        self.budget = budget
        self.is_game = is_game
        self.has_hint = has_hint
        #: The class defines solution() (the validator sets this; without one, the
        #: checks that need it are skipped and the version is unproven).
        self.has_solution = True
        self.meta: dict[str, Any] = {}
        self._workers: dict[str, Worker] = {}
        self._deadline = float("inf")
        self._check = ""
        #: Set when a call never returned: every later check is skipped with this reason.
        self.fatal = ""
        #: The first episode whose ``info["success"]`` disagreed with its rewards.
        self.info_lie = ""
        # Workers whose loaded instance is still unused: the first env() there takes it as
        # it is, since a play (gym.make, a rollout) meets exactly that first instance.
        self._untouched: set[int] = set()

    # ----- lifecycle -------------------------------------------------------------------------
    def begin(self, check: str) -> None:
        """Start timing ``check`` against the budget's per-check wall-clock limit."""
        self._check = check
        self._deadline = time.monotonic() + self.budget.check_timeout

    @property
    def deadline(self) -> float:
        """``time.monotonic()`` at which the current check runs out of wall-clock time."""
        return self._deadline

    def close(self) -> None:
        for worker in self._workers.values():
            worker.close()
        self._workers.clear()

    def adopt(self, worker: Worker, meta: dict[str, Any]) -> None:
        """Use an already loaded worker as the main one."""
        self._workers["main"] = worker
        self._untouched.add(id(worker))
        self.meta = dict(meta)

    def _worker(self, role: str) -> Worker:
        worker = self._workers.get(role)
        if worker is None or not worker.alive:
            if worker is not None:
                worker.kill()
            # Another lineage than the main worker's (the clean and hinted ones are compared
            # with it): forked from one zygote, two workers could agree on id() values
            # where two processes would not. Two lineages suffice, so every role gets a
            # forked worker: no role may run in a process of another kind than the rest.
            pair = "clean" if role == "main" else "main"
            others = [self._workers[pair]] if pair in self._workers else []
            worker, meta = self._open_worker(others)
            self._workers[role] = worker
            self._untouched.add(id(worker))
            if not self.meta:
                self.meta = dict(meta)
            differs = [k for k in _SAME_IN_EVERY_WORKER if meta.get(k) != self.meta.get(k)]
            if differs:  # a salt drawn at import, showing in the class's own metadata
                del self._workers[role]  # never used: every later call reopens (and fails)
                worker.kill()
                raise CheckFailed(
                    f"two sandbox workers loaded the class with different {', '.join(differs)}; "
                    "class attributes must not depend on the process"
                )
        return worker

    # ----- instances -------------------------------------------------------------------------
    def env(self, *, role: str = "main", opponent: str = "best") -> Guarded:
        """A single-agent instance (games: seat 0 against ``opponent``) in ``role``'s worker.

        Roles: ``main`` (``solution()`` may be called), ``clean`` and ``hinted`` (it never
        is). The first instance a worker hands out is the one its load built, as a play
        (``gym.make``, a rollout) meets it; later ones are fresh instances. Every worker is
        loaded as a play loads it (games: seat 0 against the best opponent), and what
        the worker says while renewing is ignored: checks and wins are judged by the
        load's metadata, itself checked against the source.
        """
        worker = self._worker(role)
        if id(worker) in self._untouched and opponent == "best":
            self._untouched.discard(id(worker))
        else:
            self._untouched.discard(id(worker))
            self.call(worker, "renew", seat=0 if self.is_game else None, opponent=opponent)
        meta = {**self.meta, "kind": "text"} if self.is_game else self.meta
        try:
            proxy = SandboxedEnv(worker, meta, self.config)
        except SandboxError as exc:
            raise CheckFailed(str(exc)) from None
        return Guarded(proxy, self, worker, clean=role != "main")

    def game(self) -> SandboxedGame:
        """A fresh whole game (for PettingZoo's ``api_test``); calls are wall-limited only."""
        worker = self._worker("main")
        self._untouched.discard(id(worker))
        self.call(worker, "renew", seat=None, opponent="best")
        return SandboxedGame(worker, {**self.meta, "kind": "game"}, self.config)

    def claims(self, env: Guarded) -> dict[str, Any]:
        """The environment's self-report about its episode (used only to reject)."""
        answer = self.call(env.worker, "claims")
        return answer if isinstance(answer, dict) else {}

    # ----- timing ----------------------------------------------------------------------------
    def call(self, worker: Worker, op: str, **args: Any) -> Any:
        """One raw worker call under the call and check limits."""
        return self.timed(worker, op, lambda: worker.call(op, timeout=self.call_limit(), **args))

    def call_limit(self) -> float:
        """Wall seconds the next call may take: the per-call limit, within the check's."""
        left = self._deadline - time.monotonic()
        if left <= 0:
            self._fail_slow(self._check_over())
        return max(0.05, min(self.config.call_timeout, left))

    def _check_over(self) -> str:
        return (
            f"the {self._check} check did not finish within {self.budget.check_timeout:g} s of "
            "wall-clock time: calls are far too slow (or sleep)"
        )

    def note_failure(self, exc: BaseException) -> None:
        """Make a timeout anywhere in ``exc``'s chain fatal (a check may have wrapped it)."""
        seen = set()
        while exc is not None and id(exc) not in seen:
            seen.add(id(exc))
            if isinstance(exc, SandboxTimeout):
                self.fatal = self.fatal or (
                    f"a call in the {self._check} check did not return within "
                    f"{self.config.call_timeout:g} s of wall-clock time (it hangs, sleeps or "
                    f"waits): {exc}"
                )
                return
            exc = exc.__cause__ or exc.__context__

    def timed(self, worker: Worker, what: str, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` (one call to ``worker``), failing the check when it is too slow."""
        before = worker.cpu_seconds()
        try:
            result = fn()
        except SandboxTimeout:
            if time.monotonic() >= self._deadline - 0.05:
                self._fail_slow(self._check_over())
            self._fail_slow(
                f"{what}() did not return within {self.config.call_timeout:g} s of wall-clock "
                f"time (it hangs, sleeps or waits); keep every call under "
                f"{self.budget.call_seconds:g} s"
            )
        after = worker.cpu_seconds()
        if before is not None and after is not None and after - before > self.budget.call_seconds:
            raise TooSlow(
                f"{what}() took {after - before:.2f} s of CPU; keep every call under "
                f"{self.budget.call_seconds:g} s"
            )
        return result

    def episode_ended(self, episode_return: float, won: bool, info: dict[str, Any]) -> None:
        """Compare what ``info`` says of the episode with its rewards (every episode played):
        ``won`` is the verdict of the env's win rule on them."""
        claimed = info.get("success")
        if claimed is not None and bool(claimed) != won and not self.info_lie:
            self.info_lie = (
                f"an episode of the {self._check} check returned {episode_return:g} but its "
                f"info says success={claimed!r:.20}; wins are counted from rewards, so report "
                "success only when the return reaches the maximum (or leave it out)"
            )

    def _fail_slow(self, reason: str) -> None:
        self.fatal = self.fatal or reason
        raise TooSlow(reason)


class Guarded:
    """A sandboxed instance whose every call is timed by its :class:`Subject`.

    An instance in the clean worker refuses ``solution()``: the checks must not call it
    there, and this makes that a property of the code rather than of care.
    """

    def __init__(self, proxy: SandboxedEnv, subject: Subject, worker: Worker, *, clean: bool):
        self.proxy = proxy
        self.subject = subject
        self.worker = worker
        self.clean = clean
        self.max_turns = proxy.max_turns
        self.reward_range = proxy.reward_range
        self.win_rule = proxy.win_rule
        self.last_info: dict[str, Any] = {}
        self._return = 0.0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.proxy, name)

    def _limited(self, what: str, fn: Callable[[], Any]) -> Any:
        self.worker.call_timeout = self.subject.call_limit()
        return self.subject.timed(self.worker, what, fn)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        observation, info = self._limited(
            "reset", lambda: self.proxy.reset(seed=seed, options=options)
        )
        self.last_info, self._return = info, 0.0
        return observation, info

    def step(self, action: str) -> Any:
        result = self._limited("step", lambda: self.proxy.step(action))
        self.last_info = result[4]
        self._return += result[1]
        if result[2] or result[3]:
            won = is_won(
                self.proxy.win_rule,
                total=self._return,
                top=self.reward_range[1],
                last_reward=float(result[1]),
                terminated=bool(result[2]),
            )
            self.subject.episode_ended(self._return, won, result[4])
        return result

    def hint(self) -> str:
        if not self.subject.has_hint:
            raise CheckFailed("hint() was asked of an environment without one")
        return self._limited("hint", self.proxy.hint)

    def solution(self) -> list[str]:
        if self.clean:
            raise RuntimeError("the validator asked the clean worker for solution()")
        return self._limited("solution", self.proxy.solution)
