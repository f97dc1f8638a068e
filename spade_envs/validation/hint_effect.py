"""Asking for the hint must not change the game: the ``hint_effect`` check.

A hinted play is an unhinted play with ``hint()`` asked between the reset and the first
step; regret compares the two, so ``hint()`` may only *say* something. A ``hint()`` that
moves the secret and then names the new one, changes the rules (a password it reveals
now wins), or patches the class or module for every later instance in the process
passes the leak check (the answer it names is not the solution's) and turns hint gain
into whatever the designer wants.

The check plays a fixed set of action sequences three ways in a sandbox worker of its
own, on the same seeds, and compares whole trajectories (observations, rewards,
termination) here:

1. on a worker where ``hint()`` has never run (the reference);
2. the same, with ``hint()`` asked after each reset;
3. unhinted again, on a fresh instance of that worker once ``hint()`` has run there
   many times (a patched class or module shows here).

The action sequences are the reference solution (computed in the main worker), wrong
answers, and answers taken from the hint's own text (a password it names). Nothing
the environment returns decides the verdict but the trajectories it produced.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any

from ..core.answers import boxed
from .budget import Budget
from .subject import CheckFailed, Subject

__all__ = ["HINT_CHECKS", "check_hint_effect", "run_hint_check"]

#: The worker role of this check: one where ``hint()`` never ran before the reference plays.
ROLE = "hint-effect"
#: Seeds played (each with every action sequence); answers from the hint on the first.
SEEDS = 2
#: Most answers taken from one hint's text.
HINT_ANSWERS = 6
#: Steps played per episode at most: a changed rule shows within the first few turns,
#: and the check must stay within the budget's wall clock for 200-turn environments.
MAX_STEPS = 40
#: ``hint()`` calls made in the worker before the fresh instance plays: a patch that
#: waits for a few calls before it lands still shows.
HINT_CALLS = 24

_Policy = Callable[[str, int], str]


def _call(what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except CheckFailed:
        raise
    except Exception as exc:
        raise CheckFailed(f"{what} raised {type(exc).__name__}: {str(exc)[:200]}") from exc


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _hint_answers(hint: str) -> list[str]:
    """Answers a hint could hand over: what follows its last colon or "is", quoted text,
    and its words and numbers, longest and digit-bearing first (a password it names)."""
    text = " ".join(str(hint).split())[:2_000]
    found: list[str] = []
    tail = re.split(r":|\bis\b", text)[-1].strip(" .!?\"'`")
    found += [tail, *re.findall(r"[\"'`“‘]([^\"'`”’]{1,80})[\"'`”’]", text)]
    words = sorted(
        set(re.findall(r"[\w.+-]{2,40}", text)),
        key=lambda w: (not any(c.isdigit() for c in w), -len(w), w),
    )
    found += words
    unique = [a for a in dict.fromkeys(a.strip() for a in found) if a and len(a) <= 80]
    return unique[:HINT_ANSWERS]


def _policies(solution: list[str], hint: str, seed: int, with_hint_answers: bool) -> dict[str, Any]:
    """The action sequences played, by name (each a policy or a list of actions)."""
    rng = random.Random(seed)
    wrong = boxed(rng.randrange(10**8, 10**9))
    policies: dict[str, Any] = {
        "the reference solution": list(solution),
        "the solution with a wrong final answer": [*solution[:-1], wrong],
        "the empty action": lambda _o, _t: "",
        "a wrong boxed number": lambda _o, _t: wrong,
    }
    if with_hint_answers:
        for answer in _hint_answers(hint):
            action = boxed(answer)
            policies[f"the answer {_short(action, 50)} taken from the hint"] = (
                lambda _o, _t, action=action: action
            )
    return policies


def _play(env: Any, policy: Any, seed: int, *, hinted: bool, what: str) -> list[Any]:
    """One episode's trajectory: reset, ``hint()`` when ``hinted``, then the steps."""
    if not callable(policy):
        actions = list(policy)
        policy = lambda _o, turn: actions[turn] if turn < len(actions) else ""  # noqa: E731
    observation, _ = _call(f"reset() while {what}", env.reset, seed=seed)
    if hinted:
        _call("hint()", env.hint)
    trace: list[Any] = [observation]
    for turn in range(min(int(env.max_turns) + 1, MAX_STEPS)):
        action = policy(observation, turn)
        observation, reward, terminated, truncated, _ = _call(
            f"step() while {what}", env.step, action
        )
        trace.append((observation, reward, terminated, truncated))
        if terminated or truncated:
            break
    return trace


def _difference(reference: list[Any], other: list[Any]) -> str:
    """What first differs between two trajectories, in words ("" when they agree)."""
    for step, (mine, theirs) in enumerate(zip(reference, other)):
        if mine == theirs:
            continue
        if step == 0:
            return f"the first observation ({_short(theirs, 60)} instead of {_short(mine, 60)})"
        fields = ("observation", "reward", "terminated", "truncated")
        changed = [f for f, a, b in zip(fields, mine, theirs) if a != b]
        name = changed[0] if changed else "step"
        index = fields.index(name) if name in fields else 0
        return (
            f"the {name} at step {step} ({_short(theirs[index], 60)} instead of "
            f"{_short(mine[index], 60)})"
        )
    if len(reference) != len(other):
        return f"the episode's length ({len(other) - 1} steps instead of {len(reference) - 1})"
    return ""


def check_hint_effect(subject: Subject, budget: Budget, seeds: list[int]) -> dict[str, Any]:
    """Trajectories with ``hint()`` asked, and after it ran in the process, are the ones
    without it (see the module's docstring)."""
    if subject.is_game:
        return {"skipped": "games: the hint is advice about a position"}
    if not subject.has_hint:
        return {"skipped": "the environment defines no hint()"}
    planner = subject.env()  # the main worker: solution() and hint() texts come from here
    chosen = seeds[:SEEDS]
    plans: list[tuple[int, dict[str, Any]]] = []
    for index, seed in enumerate(chosen):
        _call("reset()", planner.reset, seed=seed)
        solution = _call("solution()", planner.solution)
        if not isinstance(solution, list) or not solution:
            raise CheckFailed(f"seed {seed}: solution() must return a non-empty list of actions")
        hint = str(_call("hint()", planner.hint))
        plans.append((seed, _policies(solution, hint, seed, with_hint_answers=index == 0)))

    player = subject.env(role=ROLE)  # hint() has never run in this worker
    reference = {
        (seed, name): _play(player, policy, seed, hinted=False, what=f"playing {name}")
        for seed, policies in plans
        for name, policy in policies.items()
    }
    for seed, policies in plans:
        for name, policy in policies.items():
            hinted = _play(player, policy, seed, hinted=True, what=f"playing {name} hinted")
            changed = _difference(reference[seed, name], hinted)
            if changed:
                raise CheckFailed(
                    f"seed {seed}: asking hint() after the reset changes the episode: "
                    f"playing {name} gives a different {changed.removeprefix('the ')} than "
                    "without the hint; hint() must only read the episode's state (never "
                    "move the secret, change the rules or draw random numbers)"
                )
    for _ in range(max(0, HINT_CALLS - len(reference))):
        _call("hint()", player.hint)
    fresh = subject.env(role=ROLE)  # a new instance in the same worker
    for seed, policies in plans:
        for name, policy in policies.items():
            again = _play(fresh, policy, seed, hinted=False, what=f"playing {name}")
            changed = _difference(reference[seed, name], again)
            if changed:
                raise CheckFailed(
                    f"seed {seed}: after hint() ran, a fresh instance in the same process "
                    f"plays differently: {name} gives a different "
                    f"{changed.removeprefix('the ')} than before any hint(); hint() must not "
                    "change the class, the module or anything else outside its episode"
                )
    return {"seeds": len(chosen), "episodes": 3 * len(reference)}


#: Checks of this module, run after :data:`~.checks.DYNAMIC_CHECKS`, in order.
HINT_CHECKS: dict[str, Callable[[Subject, Budget, list[int]], Any]] = {
    "hint_effect": check_hint_effect,
}


def run_hint_check(
    name: str, subject: Subject, budget: Budget, seeds: list[int]
) -> tuple[bool, str, dict[str, Any]]:
    """Run one check of :data:`HINT_CHECKS` as :func:`~.checks.run_check` runs the others:
    ``(passed, reason, details)``, never raising for environment faults."""
    from .checks import run_check

    return run_check(name, subject, budget, seeds, checks=HINT_CHECKS)
