"""The dynamic checks. They run *inside* a sandbox worker, on the environment class it loaded.

Each check takes a factory of fresh environments and a budget, and returns a
``CheckResult`` as a dict (it crosses the pipe as JSON). A check never lets the
environment's exception escape: it becomes the check's reason.
"""

from __future__ import annotations

import math
import os
import re
import time
import warnings
from collections.abc import Callable
from typing import Any

from ..core.answers import leaks_answer, marked_answer
from ..core.episodes import Episode, play_episode, random_text, repeated, scripted
from ..core.game_env import GameSeatEnv
from ..core.text_game import TextGame
from .budget import Budget
from .fuzz import FuzzFailure, ProbeFailure, fuzz_env, probe_episodes

__all__ = ["DYNAMIC_CHECKS", "run_check"]


def _use_prepared_hypothesis_cache() -> None:
    """In a validation worker: read Hypothesis's Unicode tables from the parent's cache,
    and load them now, before the worker drops privileges (see validation_config)."""
    home = os.environ.get("SPADE_HYPOTHESIS_HOME")
    if not home:
        return
    from hypothesis.configuration import set_hypothesis_home_dir
    from hypothesis.internal import charmap

    set_hypothesis_home_dir(home)
    charmap.charmap()
    charmap.intervals_from_codec("utf-8")


_use_prepared_hypothesis_cache()

Factory = Callable[[], Any]


_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # gymnasium colours its warnings


class _Fail(Exception):
    """A check's verdict, raised from deep inside it."""


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _call(what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except _Fail:
        raise
    except Exception as exc:
        raise _Fail(f"{what} raised {type(exc).__name__}: {str(exc)[:200]}") from exc


class _Timed:
    """Forwards to an env, failing the check as soon as one call is too slow.

    Without it a slow ``step`` would make every check crawl until its wall-clock limit.
    """

    def __init__(self, env: Any, limit: float):
        self._env = env
        self._limit = limit

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)

    def _timed(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        # CPU time, not wall time: a busy machine must not fail a fast environment.
        start = time.process_time()
        result = fn(*args, **kwargs)
        elapsed = time.process_time() - start
        if elapsed > self._limit:
            raise _Fail(
                f"{what} took {elapsed:.2f} s of CPU; keep every call under {self._limit:g} s"
            )
        return result

    def reset(self, **kwargs: Any) -> Any:
        return self._timed("reset()", self._env.reset, **kwargs)

    def step(self, action: str) -> Any:
        return self._timed("step()", self._env.step, action)

    def hint(self) -> Any:
        return self._timed("hint()", self._env.hint)

    def solution(self) -> Any:
        return self._timed("solution()", self._env.solution)


def _seat(factory: Factory, opponent: str = "best") -> Any:
    """A fresh single-agent env (games: seat 0 against ``opponent``)."""
    env = factory()
    return GameSeatEnv(env, seat=0, opponent=opponent) if isinstance(env, TextGame) else env


def _single(factory: Factory, budget: Budget, opponent: str = "best") -> Any:
    """:func:`_seat`, with every call held to the budget's per-call CPU limit."""
    return _Timed(_seat(factory, opponent), budget.call_seconds)


def _top(env: Any) -> float:
    return float(env.reward_range[1])


# ----- check_env / api_test --------------------------------------------------------------------
def check_gym_api(factory: Factory, budget: Budget) -> None:
    env = factory()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if isinstance(env, TextGame):
                from pettingzoo.test import api_test

                api_test(env, num_cycles=min(200, 20 * budget.seeds))
            else:
                from gymnasium.utils.env_checker import check_env

                check_env(env, skip_render_check=True)
        except Exception as exc:
            raise _Fail(
                f"{'api_test' if isinstance(env, TextGame) else 'check_env'} failed: "
                f"{type(exc).__name__}: {str(exc)[:240]}"
            ) from exc
    if isinstance(env, TextGame):
        return  # api_test warns about text observations by design
    messages = [_ANSI.sub("", str(w.message)).strip() for w in caught]
    serious = [m for m in messages if "render" not in m.lower()]
    if serious:
        raise _Fail(f"check_env warned: {serious[0][:240]}")


# ----- fuzz ---------------------------------------------------------------------------------
def check_fuzz(factory: Factory, budget: Budget) -> dict[str, Any]:
    try:
        stats = probe_episodes(lambda: _seat(factory), budget)
        stats.update(fuzz_env(lambda: _seat(factory), budget))
    except (FuzzFailure, ProbeFailure) as exc:
        raise _Fail(str(exc)) from exc
    return stats


# ----- determinism --------------------------------------------------------------------------
def _mixed_actions(env: Any, seed: int) -> list[str]:
    _call("reset()", env.reset, seed=seed)
    solution = _call("solution()", env.solution)
    junk = ["", "??", "\\boxed{7}", "hello world"]
    actions = [a for i, s in enumerate(solution or []) for a in (junk[i % 4], s)]
    return (actions + junk * env.max_turns)[: env.max_turns + 1]


def _trace(env: Any, seed: int, actions: list[str]) -> list[Any]:
    episode = _call("an episode", play_episode, env, scripted(actions), seed=seed)
    _call("reset()", env.reset, seed=seed)
    extra = [_call("hint()", env.hint)]
    return [*episode.trace(), *extra]


def check_determinism(factory: Factory, budget: Budget) -> dict[str, Any]:
    first, second = _single(factory, budget), _single(factory, budget)
    for seed in range(budget.determinism_episodes):
        actions = _mixed_actions(first, seed)
        a = _trace(first, seed, actions)
        b = _trace(first, seed, actions)
        c = _trace(second, seed, actions)
        for label, other in (("the same instance", b), ("a fresh instance", c)):
            if other != a:
                where = next(
                    (i for i, (x, y) in enumerate(zip(a, other)) if x != y), min(len(a), len(other))
                )
                mine = a[where] if where < len(a) else None
                theirs = other[where] if where < len(other) else None
                raise _Fail(
                    f"seed {seed}: replaying the same actions on {label} gave a different "
                    f"trajectory at step {where} ({_short(mine, 60)} vs {_short(theirs, 60)}); "
                    "draw all randomness from self.rng (or self.np_random) and avoid the clock, "
                    "id() and set order"
                )
    return {"episodes": budget.determinism_episodes}


# ----- feasibility ----------------------------------------------------------------------------
def _solution_of(env: Any, seed: int) -> list[str]:
    _call("reset()", env.reset, seed=seed)
    solution = _call("solution()", env.solution)
    if (
        not isinstance(solution, list)
        or not solution
        or not all(isinstance(a, str) for a in solution)
    ):
        raise _Fail(
            f"seed {seed}: solution() must return a non-empty list of action strings, "
            f"got {_short(solution)}"
        )
    if len(solution) > env.max_turns:
        raise _Fail(
            f"seed {seed}: solution() has {len(solution)} actions but max_turns is {env.max_turns}"
        )
    return solution


def check_solution(factory: Factory, budget: Budget) -> dict[str, Any]:
    opponents = ["best", "random"] if isinstance(factory(), TextGame) else ["best"]
    for opponent in opponents:
        env = _single(factory, budget, opponent)
        for seed in range(budget.seeds):
            solution = _solution_of(env, seed)
            episode: Episode = _call("playing the solution", play_episode, env, solution, seed=seed)
            if episode.total_reward < _top(env) - 1e-6:
                against = f" against a {opponent} opponent" if len(opponents) > 1 else ""
                raise _Fail(
                    f"seed {seed}: playing solution() {_short(solution, 100)}{against} returned "
                    f"{episode.total_reward:g}, not the maximum {_top(env):g}; make solution() "
                    "produce the actions that win from the state after reset"
                )
    return {"seeds": budget.seeds, "opponents": opponents}


def check_trivial(factory: Factory, budget: Budget) -> dict[str, Any]:
    env = _single(factory, budget)
    for seed in range(budget.seeds):
        solution = _solution_of(env, seed)
        hint = _call("hint()", env.hint)
        policies = {
            "the empty action": repeated(""),
            "random text": random_text(seed),
            "the hint text as the action": repeated(str(hint)),
        }
        if len(set(solution)) > 1:
            policies["repeating the first solution action"] = repeated(solution[0])
        for label, policy in policies.items():
            episode = _call(f"playing {label}", play_episode, env, policy, seed=seed)
            if episode.total_reward >= _top(env) - 1e-6:
                raise _Fail(
                    f"seed {seed}: {label} reaches the maximum reward {_top(env):g}; the task "
                    "must require the right actions (check the answer strictly)"
                )
    return {"seeds": budget.seeds}


def check_solved_at_reset(factory: Factory, budget: Budget) -> None:
    env = _single(factory, budget)
    for seed in range(budget.seeds):
        _, info = _call("reset()", env.reset, seed=seed)
        if getattr(env, "won", False) or (isinstance(info, dict) and info.get("success")):
            raise _Fail(f"seed {seed}: the episode is already won right after reset")
        if getattr(env, "_ended", None) is not None:
            raise _Fail(f"seed {seed}: the episode is already over right after reset")


def check_hint_leak(factory: Factory, budget: Budget) -> dict[str, Any]:
    if isinstance(factory(), TextGame):
        return {"skipped": "games: the hint is advice about a position, not an answer"}
    env = _single(factory, budget)
    for seed in range(budget.seeds):
        solution = _solution_of(env, seed)
        hint = _call("hint()", env.hint)
        if not isinstance(hint, str) or not hint.strip():
            raise _Fail(f"seed {seed}: hint() must return a non-empty string, got {_short(hint)}")
        # Only a marked answer (\boxed{} or <answer>) can leak; a final command such as
        # "done" or "move north" is not a secret.
        final = marked_answer(solution[-1])
        if leaks_answer(hint, final):
            raise _Fail(
                f"seed {seed}: the hint {_short(hint, 100)} contains the final answer "
                f"{final!r}; give help that still leaves the last step to the agent"
            )
    return {"seeds": budget.seeds}


DYNAMIC_CHECKS: dict[str, Callable[[Factory, Budget], Any]] = {
    "check_env": check_gym_api,
    "fuzz": check_fuzz,
    "determinism": check_determinism,
    "solution": check_solution,
    "trivial": check_trivial,
    "solved_at_reset": check_solved_at_reset,
    "hint_leak": check_hint_leak,
}


def run_check(name: str, factory: Factory, budget: dict[str, Any] | Budget) -> dict[str, Any]:
    """Run one dynamic check and return its ``CheckResult`` fields as a dict."""
    if not isinstance(budget, Budget):
        budget = Budget(**budget)
    start = time.perf_counter()
    try:
        details = DYNAMIC_CHECKS[name](factory, budget) or {}
        passed, reason = True, ""
    except _Fail as exc:
        passed, reason, details = False, str(exc), {}
    except Exception as exc:  # an env that broke the check harness itself
        passed, reason, details = False, f"{type(exc).__name__}: {str(exc)[:240]}", {}
    seconds = time.perf_counter() - start
    details = {k: v for k, v in details.items() if isinstance(v, (int, float, str, list, bool))}
    if not math.isfinite(seconds):
        seconds = 0.0
    return {
        "name": name,
        "passed": passed,
        "reason": reason,
        "seconds": seconds,
        "details": details,
    }
