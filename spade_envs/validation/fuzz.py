"""Fuzzing an environment: a Hypothesis state machine over reset/step, and probe episodes.

The action strategy knows the grammar agents use: the environment's own solution
actions and mutations of them, ``\\boxed{}`` answers, ``<tool_call>`` calls with
wrong names, arguments and types, malformed markup, empty, huge and control-character
strings. Every transition is checked: no exception, the right types, a finite reward
inside ``reward_range``, a bounded observation, a call within the time budget, and an
episode that ends within ``max_turns``.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable
from typing import Any

from ..core.text_env import TRUNCATION_MARK
from .budget import Budget

__all__ = ["FuzzFailure", "ProbeFailure", "action_strategy", "fuzz_env", "probe_episodes"]

_ODD_ACTIONS = [
    "",
    " ",
    "\n\t",
    "\x00\x1b[2J",
    "\\boxed{",
    "\\boxed{}",
    "\\boxed{-1}",
    "\\boxed{1e309}",
    "<answer></answer>",
    "<tool_call>",
    '<tool_call>{"name": 3}</tool_call>',
    '<tool_call>{"name": "nope", "arguments": {"x": [1, 2]}}</tool_call>',
    "9" * 5000,
    "x" * 20000,
    "NaN",
    "None",
    "[]",
    "{}",
    "\u202e\u200b",
    "ünïcødé 漢字 😀",
]


# Hypothesis keeps per-run state in globals: one state machine at a time per process
# (validate_many runs validations in processes, not threads).
_HYPOTHESIS_LOCK = threading.Lock()


class FuzzFailure(Exception):
    """The environment misbehaved under generated actions."""


class ProbeFailure(FuzzFailure):
    """The environment misbehaved during a probe episode."""


class _ShrinkTimeSpent(BaseException):
    """Stops Hypothesis once a failure is found and the time for shrinking it is spent.

    A ``BaseException``: Hypothesis treats ``Exception`` as a test failure (and would shrink
    towards it) but lets other exceptions end the run.
    """


def _mutate(action: str, k: int) -> str:
    if not action:
        return "\\boxed{" + str(k % 100) + "}"
    i = k % len(action)
    op = k % 6
    if op == 0:
        return action[:i] + chr(33 + k % 90) + action[i:]
    if op == 1:
        return action[:i] + action[i + 1 :]
    if op == 2:
        return action.swapcase()
    if op == 3:
        return "".join(str((int(c) + 1) % 10) if c.isdigit() and c.isascii() else c for c in action)
    if op == 4:
        return action + action
    return action.upper() + " " + str(k)


def action_strategy(solution_actions: list[str], tool_names: list[str]) -> Any:
    """Hypothesis strategy of actions for an environment."""
    from hypothesis import strategies as st

    own = st.sampled_from(list(dict.fromkeys(solution_actions))[:60] or ["\\boxed{1}"])
    values = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(10**12), 10**12),
        st.floats(),
        st.text(max_size=30),
        st.lists(st.integers(-5, 5), max_size=3),
        st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
    )
    names = st.sampled_from(tool_names + ["nope", "", "tool_", "__init__", "reset"])
    tool_calls = st.builds(
        lambda name, args: (
            "<tool_call>"
            + json.dumps({"name": name, "arguments": args}, allow_nan=True)
            + "</tool_call>"
        ),
        names,
        st.dictionaries(st.text(max_size=10), values, max_size=4),
    )
    return st.one_of(
        own,
        own,
        st.builds(_mutate, own, st.integers(0, 10**6)),
        st.builds(lambda t: "\\boxed{" + t + "}", st.text(max_size=30)),
        tool_calls,
        st.sampled_from(_ODD_ACTIONS),
        st.text(alphabet=st.characters(categories=["Cc", "Cf", "Zs", "Co"]), max_size=30),
        st.text(max_size=200),
    )


class _Checker:
    """Checks one environment's calls and tracks its episode."""

    def __init__(self, env: Any, budget: Budget, fail: type[FuzzFailure]):
        self.env = env
        self.budget = budget
        self.fail = fail
        self.turn = 0
        self.ended = False
        self.low, self.high = (float(x) for x in env.reward_range)

    def _named_call(self, what: str, fn: Callable[[], Any]) -> Any:
        # The environment's calls are timed by the sandboxed instance (CPU read from the
        # worker's /proc entry, wall-clock limits); here their failures get a name.
        try:
            return fn()
        except Exception as exc:
            raise self.fail(f"{what} raised {type(exc).__name__}: {str(exc)[:200]}") from exc

    def _observation(self, observation: Any, what: str) -> None:
        if not isinstance(observation, str):
            raise self.fail(
                f"{what} returned a {type(observation).__name__} observation; "
                "observations must be str"
            )
        if observation.endswith(TRUNCATION_MARK):
            raise self.fail(
                f"{what} returned an observation so long that it was clipped; "
                f"keep observations under {self.budget.max_observation_chars} "
                "characters"
            )
        if len(observation) > self.budget.max_observation_chars:
            raise self.fail(
                f"{what} returned an observation of {len(observation)} characters; "
                f"keep observations under {self.budget.max_observation_chars}"
            )

    def reset(self, seed: int) -> None:
        result = self._named_call(f"reset(seed={seed})", lambda: self.env.reset(seed=seed))
        if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], dict)):
            raise self.fail(
                f"reset(seed={seed}) must return (observation, info dict), "
                f"got {type(result).__name__}"
            )
        self._observation(result[0], f"reset(seed={seed})")
        self.turn, self.ended = 0, False

    def step(self, action: str) -> None:
        what = f"step({action[:40]!r}{'...' if len(action) > 40 else ''}) on turn {self.turn + 1}"
        result = self._named_call(what, lambda: self.env.step(action))
        if not (isinstance(result, tuple) and len(result) == 5):
            raise self.fail(f"{what} must return (obs, reward, terminated, truncated, info)")
        observation, reward, terminated, truncated, info = result
        self._observation(observation, what)
        if isinstance(reward, bool) or not isinstance(reward, (int, float)):
            raise self.fail(f"{what} returned reward {reward!r:.40}; rewards must be numbers")
        if not math.isfinite(reward):
            raise self.fail(f"{what} returned reward {reward}; rewards must be finite")
        if not self.low - 1e-9 <= reward <= self.high + 1e-9:
            raise self.fail(
                f"{what} returned reward {reward:g}, outside reward_range "
                f"({self.low:g}, {self.high:g})"
            )
        if not isinstance(terminated, bool) or not isinstance(truncated, bool):
            raise self.fail(f"{what} returned terminated/truncated that are not bool")
        if not isinstance(info, dict):
            raise self.fail(f"{what} returned info of type {type(info).__name__}; use a dict")
        self.turn += 1
        self.ended = terminated or truncated
        if not self.ended and self.turn >= self.env.max_turns:
            raise self.fail(
                f"the episode is not over after max_turns={self.env.max_turns} "
                "steps; end it (terminated or truncated) by then"
            )


def probe_episodes(
    make_env: Callable[[], Any],
    budget: Budget,
    seeds: list[int] | None = None,
    *,
    use_solution: bool = True,
) -> dict[str, Any]:
    """Play whole episodes of odd actions mixed with solution actions on several seeds
    (odd actions alone when ``use_solution`` is False: the env defines no solution)."""
    steps = 0
    for seed in (seeds or list(range(budget.probe_episodes)))[: budget.probe_episodes]:
        env = make_env()
        checker = _Checker(env, budget, ProbeFailure)
        checker.reset(seed)
        solution = checker._named_call("solution()", env.solution) if use_solution else []
        plan = [a for pair in zip(_ODD_ACTIONS, (solution or []) * 40) for a in pair]
        plan = plan + _ODD_ACTIONS * (env.max_turns // len(_ODD_ACTIONS) + 2)
        for action in plan[(seed * 3) % 7 :]:
            checker.step(action)
            steps += 1
            if checker.ended:
                break
    return {"probe_steps": steps}


def fuzz_env(
    make_env: Callable[[], Any],
    budget: Budget,
    *,
    shrink_until: float | None = None,
    use_solution: bool = True,
) -> dict[str, Any]:
    """Run the Hypothesis state machine; raise :class:`FuzzFailure` with the minimal failure.

    Args:
        make_env: A fresh instance per state-machine run.
        budget: Examples and steps per run.
        shrink_until: A ``time.monotonic()`` value: once a failure is found, Hypothesis
            shrinks it only until then (and for at most ``budget.shrink_seconds``) and the
            smallest failure seen is reported. A failure found is the verdict; shrinking it
            must not outlast the check's wall clock and turn that verdict into "too slow"
            on a busy machine.
    """
    from hypothesis import HealthCheck, Verbosity, settings
    from hypothesis import strategies as st
    from hypothesis.stateful import (
        RuleBasedStateMachine,
        initialize,
        precondition,
        rule,
        run_state_machine_as_test,
    )

    probe = make_env()
    solution_actions: list[str] = []
    for seed in range(3 if use_solution else 0):
        try:
            probe.reset(seed=seed)
            solution_actions += [a for a in probe.solution() if isinstance(a, str)]
        except Exception:
            break  # the solution check reports this; fuzz with generic actions
    tools = []
    if hasattr(probe, "function_schemas"):
        try:
            tools = [s["function"]["name"] for s in probe.function_schemas()]
        except Exception:
            tools = []
    actions = action_strategy(solution_actions, tools)
    counter = {"steps": 0}
    found: list[FuzzFailure] = []  # in the order found: the last is the latest shrink
    stop_shrinking = shrink_until if shrink_until is not None else float("inf")

    def checked(call: Callable[[], None]) -> None:
        nonlocal stop_shrinking
        if found and time.monotonic() >= stop_shrinking:
            raise _ShrinkTimeSpent
        try:
            call()
        except FuzzFailure as exc:
            if not found:
                stop_shrinking = min(stop_shrinking, time.monotonic() + budget.shrink_seconds)
            found.append(exc)
            raise

    class EnvMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.checker = _Checker(make_env(), budget, FuzzFailure)

        @initialize(seed=st.integers(0, 2**31 - 1))
        def begin(self, seed: int) -> None:
            checked(lambda: self.checker.reset(seed))

        @rule(action=actions)
        def act(self, action: str) -> None:
            def play() -> None:
                if self.checker.ended:
                    self.checker.reset(counter["steps"])
                self.checker.step(action)
                counter["steps"] += 1

            checked(play)

        @precondition(lambda self: self.checker.turn > 0)
        @rule(seed=st.integers(0, 2**31 - 1))
        def restart(self, seed: int) -> None:
            checked(lambda: self.checker.reset(seed))

    run_settings = settings(
        max_examples=budget.fuzz_examples,
        stateful_step_count=budget.fuzz_steps,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
        print_blob=False,
        verbosity=Verbosity.quiet,  # the failure is reported as the check's reason
    )
    try:
        with _HYPOTHESIS_LOCK:
            run_state_machine_as_test(EnvMachine, settings=run_settings)
    except _ShrinkTimeSpent:
        raise found[-1] from None
    except FuzzFailure:
        raise
    except Exception as exc:
        if found:  # e.g. Flaky*: a slow or erratic environment failed differently on replay
            raise found[-1] from exc
        raise FuzzFailure(f"{type(exc).__name__}: {str(exc)[:200]}") from exc
    if found:  # a failure seen is the verdict, whatever Hypothesis made of its replays
        raise found[-1]
    return {"fuzz_examples": budget.fuzz_examples, "fuzz_steps": counter["steps"]}
