"""The dynamic checks, computed in the validating process on what crosses the wire.

Each check drives sandboxed instances handed out by a :class:`~.subject.Subject` and
returns evidence (or raises :class:`~.subject.CheckFailed` with a reason the designer
can act on). Nothing the environment executes runs in this process, so nothing it
does can change a check's outcome: it can only answer calls, and every answer is
checked here. Self-reports of the environment (``info["success"]``, a ``won``
attribute) are used only to reject, never to accept; wins are derived from rewards.
"""

from __future__ import annotations

import contextlib
import io
import math
import random
import re
import secrets
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from ..core.answers import leaked_encoding, secret_parts, visible_text
from ..core.episodes import (
    Episode,
    Transition,
    play_episode,
    random_text,
    repeated,
    scripted,
)
from ..error import EnvCodeError, SandboxStartFailed, SandboxUnavailable
from .budget import Budget
from .fuzz import FuzzFailure, ProbeFailure, fuzz_env, probe_episodes
from .probes import (
    ENUMERATION_SEEDS,
    ENUMERATION_WIN_SHARE,
    SEED_BANDS,
    band_seeds,
    enumeration_policies,
    matches_solution,
    wrong_answers,
)
from .subject import CheckFailed, Subject

__all__ = ["DYNAMIC_CHECKS", "check_seeds", "run_check"]

_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # gymnasium colours its warnings


#: Reset seeds plays use: the CLI's (0, 1, ...), evaluation's (100000 + i) and the
#: trainer's (below 10**6 + plays). Half the check seeds come from this range.
PLAY_SEED_RANGE = 1_200_000


def check_seeds(count: int, seed: int | None = None) -> list[int]:
    """Seeds the checks play: one in each band plays reset with (the CLI's small seeds,
    the trainer's evaluation seeds, training seeds; see
    :data:`~.probes.SEED_BANDS`), at the even positions first (the seeds the fresh-play
    check uses), then alternately uniform over the range plays reset with and
    log-uniform over every magnitude up to 2**31.

    An environment cannot tell a validation seed from a play seed by its size, and one
    that behaves differently on the seeds plays use is met there; with ``seed=None`` the
    seeds are drawn afresh for every validation, so it cannot know them either.
    """
    rng = random.Random(secrets.randbits(64) if seed is None else seed)
    count = max(1, count)
    bands = band_seeds(rng)
    seeds: list[int] = []
    while len(seeds) < count:
        if bands and (len(seeds) % 2 == 0 or count - len(seeds) <= len(bands)):
            value = bands.pop(0)
            while value in seeds:  # a small log-uniform seed took it: another of its band
                value = next(rng.randrange(lo, hi) for _, lo, hi in SEED_BANDS if lo <= value < hi)
        elif len(seeds) % 2 == 0:
            value = rng.randrange(PLAY_SEED_RANGE)
        else:
            value = int(math.exp(rng.uniform(0.0, math.log(2**31)))) - 1
        if value not in seeds:
            seeds.append(value)
    return seeds


def _wrong_answers(
    subject: Subject, seed: int, solution: list[str] | None = None, *, reasoned: bool = False
) -> Any:
    """Wrong answers drawn from what the environment shows (see :mod:`.probes`); with a
    known ``solution``, never its actions or its answer."""
    exclude = None if solution is None else (lambda action: matches_solution(action, solution))
    tools = subject.meta.get("tool_schemas") or ()
    return wrong_answers(seed, exclude=exclude, tool_schemas=tools, reasoned=reasoned)


def _won_by_wrong_answers(env: Any, episode: Episode, seed: int, *, game: bool = False) -> str:
    """The action of a won wrong-answer episode that is no answer of the solution ("" when
    the episode was lost, or won by hitting the solution's own answer: luck, not a cheat).
    The solution is computed after the episode, so the episode stays the worker's first."""
    if not _won(episode, env):
        return ""
    solution = _solution_of(env, seed)
    actions = [t.action for t in episode.transitions]
    if any(matches_solution(action, solution) for action in actions):
        return ""
    if game and _won(_play(env, scripted(actions), seed, "replaying a first play"), env):
        return ""  # a game is won along many paths: only a win that does not replay counts
    return actions[-1] if actions else "<none>"


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _call(what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except CheckFailed:
        raise
    except Exception as exc:
        raise CheckFailed(f"{what} raised {type(exc).__name__}: {str(exc)[:200]}") from exc


def _top(env: Any) -> float:
    return float(env.reward_range[1])


def _won(episode: Episode, env: Any) -> bool:
    # The episode carries the env's win rule (play_episode copies it from the env).
    return episode.won


def _play(env: Any, policy: Any, seed: int, what: str) -> Episode:
    return _call(what, play_episode, env, policy, seed=seed)


# ----- plays as production opens them --------------------------------------------------------
def check_fresh_play(subject: Subject, budget: Budget, seeds: list[int]) -> dict[str, Any]:
    """Each worker's first episode on the instance its load built, call for call as
    ``gym.make`` or a rollout plays it (load, reset, ``hint()`` when hinted, steps): wrong
    answers lose, and the solution computed elsewhere wins. An environment that behaves
    one way under the validator's later calls and another in a fresh process fails here."""
    play_seeds = seeds[::2]  # drawn from the range plays reset with
    trivial_seed, solution_seed = play_seeds[0], play_seeds[1 % len(play_seeds)]
    planner = subject.env()  # the main worker's first episode
    first = _play(planner, _wrong_answers(subject, trivial_seed), trivial_seed, "a first play")
    winner = _won_by_wrong_answers(planner, first, trivial_seed, game=subject.is_game)
    if winner:
        raise CheckFailed(
            f"seed {trivial_seed}: wrong answers (the last: {_short(winner, 60)}) win the first "
            "episode of a fresh sandbox worker; the task must require the right actions"
        )
    solution = _solution_of(planner, solution_seed)
    player = subject.env(role="clean")  # never asked for solution()
    episode = _play(player, solution, solution_seed, "playing the solution in a fresh worker")
    if not _won(episode, player):
        raise CheckFailed(
            f"seed {solution_seed}: solution() {_short(solution, 100)} returned "
            f"{episode.total_reward:g}, not the maximum {_top(player):g}, when played as the "
            "first episode of a fresh sandbox worker (where solution() never ran)"
        )
    if subject.has_hint:
        hinted = subject.env(role="hinted")
        hinted_seed = play_seeds[2 % len(play_seeds)]  # an int, as rollouts reset them
        policy = _wrong_answers(subject, hinted_seed)
        episode = _play_after_hint(hinted, policy, hinted_seed, "a first hinted play")
        won = _won(episode, hinted)
        if won and _won_by_wrong_answers(planner, episode, hinted_seed, game=subject.is_game):
            raise CheckFailed(
                "wrong answers win a hinted first episode of a fresh sandbox worker (reset, "
                "hint(), then the steps); the hint must not make the task easier to fake"
            )
    return {"seeds": [trivial_seed, solution_seed]}


# ----- check_env / api_test --------------------------------------------------------------------
def check_gym_api(subject: Subject, budget: Budget, seeds: list[int]) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if subject.is_game:
                from pettingzoo.test import api_test

                with contextlib.redirect_stdout(io.StringIO()):  # it prints its progress
                    api_test(subject.game(), num_cycles=min(200, 20 * budget.seeds))
            else:
                from gymnasium.utils.env_checker import check_env

                check_env(subject.env().proxy, skip_render_check=True)
        except CheckFailed:
            raise
        except Exception as exc:
            raise CheckFailed(
                f"{'api_test' if subject.is_game else 'check_env'} failed: "
                f"{type(exc).__name__}: {str(exc)[:240]}"
            ) from exc
    if subject.is_game:
        return  # api_test warns about text observations by design
    messages = [_ANSI.sub("", str(w.message)).strip() for w in caught]
    serious = [m for m in messages if "render" not in m.lower()]
    if serious:
        raise CheckFailed(f"check_env warned: {serious[0][:240]}")


# ----- fuzz ---------------------------------------------------------------------------------
def check_fuzz(subject: Subject, budget: Budget, seeds: list[int]) -> dict[str, Any]:
    try:
        stats = probe_episodes(subject.env, budget, seeds, use_solution=subject.has_solution)
        # Shrinking a failure found may use the check's time only until a third is left.
        shrink_until = subject.deadline - budget.check_timeout / 3
        stats.update(
            fuzz_env(
                subject.env,
                budget,
                shrink_until=shrink_until,
                use_solution=subject.has_solution,
            )
        )
    except (FuzzFailure, ProbeFailure) as exc:
        raise CheckFailed(str(exc)) from exc
    return stats


# ----- determinism --------------------------------------------------------------------------
def _mixed_actions(env: Any, seed: int, has_solution: bool = True) -> list[str]:
    _call("reset()", env.reset, seed=seed)
    solution = _call("solution()", env.solution) if has_solution else []
    junk = ["", "??", "\\boxed{7}", "hello world"]
    actions = [a for i, s in enumerate(solution or []) for a in (junk[i % 4], s)]
    return (actions + junk * env.max_turns)[: env.max_turns + 1]


def _trace(env: Any, seed: int, actions: list[str], with_hint: bool) -> list[Any]:
    episode = _play(env, scripted(actions), seed, "an episode")
    extra = []
    if with_hint:
        _call("reset()", env.reset, seed=seed)
        extra = [_call("hint()", env.hint)]
    return [*episode.trace(), *extra]


def check_determinism(subject: Subject, budget: Budget, seeds: list[int]) -> dict[str, Any]:
    first = subject.env()
    for seed in seeds[: budget.determinism_episodes]:
        actions = _mixed_actions(first, seed, subject.has_solution)
        a = _trace(first, seed, actions, subject.has_hint)
        others = {
            "the same instance": lambda: first,
            "a fresh instance": subject.env,
            "a fresh sandbox worker": lambda: subject.env(role="clean"),
        }
        for label, make in others.items():
            other = _trace(make(), seed, actions, subject.has_hint)
            if other != a:
                where = next(
                    (i for i, (x, y) in enumerate(zip(a, other)) if x != y), min(len(a), len(other))
                )
                mine = a[where] if where < len(a) else None
                theirs = other[where] if where < len(other) else None
                raise CheckFailed(
                    f"seed {seed}: replaying the same actions on {label} gave a different "
                    f"trajectory at step {where} ({_short(mine, 60)} vs {_short(theirs, 60)}); "
                    "draw all randomness from self.rng (or self.np_random) and avoid the clock, "
                    "id(), set order and state kept outside the instance"
                )
    return {"episodes": min(len(seeds), budget.determinism_episodes)}


# ----- feasibility ----------------------------------------------------------------------------
def _solution_of(env: Any, seed: int) -> list[str]:
    _call("reset()", env.reset, seed=seed)
    solution = _call("solution()", env.solution)
    if not solution:
        raise CheckFailed(
            f"seed {seed}: solution() must return a non-empty list of action strings, "
            f"got {_short(solution)}"
        )
    if len(solution) > env.max_turns:
        raise CheckFailed(
            f"seed {seed}: solution() has {len(solution)} actions but max_turns is {env.max_turns}"
        )
    return solution


def check_solution(subject: Subject, budget: Budget, seeds: list[int]) -> dict[str, Any]:
    """The solution, computed in the main worker, wins when played in the clean worker
    (which never ran ``solution()``), on every seed and against every opponent."""
    opponents = ["best", "random"] if subject.is_game else ["best"]
    for opponent in opponents:
        planner = subject.env(opponent=opponent)
        player = subject.env(role="clean", opponent=opponent)
        for seed in seeds:
            solution = _solution_of(planner, seed)
            episode = _play(player, solution, seed, "playing the solution")
            if not _won(episode, player):
                against = f" against a {opponent} opponent" if len(opponents) > 1 else ""
                raise CheckFailed(
                    f"seed {seed}: playing solution() {_short(solution, 100)}{against} returned "
                    f"{episode.total_reward:g}, not the maximum {_top(player):g}; make "
                    "solution() produce the actions that win from the state after reset (it "
                    "is played in a fresh process where solution() was never called)"
                )
    return {"seeds": seeds, "opponents": opponents}


def check_trivial(subject: Subject, budget: Budget, seeds: list[int]) -> dict[str, Any]:
    env = subject.env()
    observations = _trivial_against_best(subject, env, seeds)
    enumerated = _enumeration(env, observations)
    if subject.is_game:
        _no_moves_against_random(subject, subject.env(opponent="random"), seeds)
    return {"seeds": len(seeds), **({"enumerated": enumerated} if enumerated else {})}


def _enumeration(env: Any, observations: dict[int, str]) -> str:
    """Guessing every value of a small range the observation states, in order, must not
    win most episodes: a task won by enumeration teaches nothing. Returns the range tried
    ("" when none was stated, or too few turns make enumeration hopeless)."""
    plans = {s: enumeration_policies(o, env.max_turns) for s, o in observations.items()}
    plans = {s: p for s, p in list(plans.items())[:ENUMERATION_SEEDS] if p[1]}
    if not plans:
        return ""
    needed = math.ceil(ENUMERATION_WIN_SHARE * len(plans))
    low, high = next(iter(plans.values()))[0] or (0, 0)
    tried = f"{low}..{high}"
    for form in range(max(len(p[1]) for p in plans.values())):
        wins, label = 0, ""
        for played, (seed, (_, policies)) in enumerate(plans.items()):
            if form >= len(policies) or played - wins > len(plans) - needed:
                break  # this form already lost too often to win most episodes
            label, actions = policies[form]
            wins += _won(_play(env, scripted(actions), seed, f"guessing {label} in turn"), env)
        if wins >= needed:
            raise CheckFailed(
                f"guessing every value {tried} in turn (as {label}) wins {wins}/{len(plans)} "
                "episodes: the task is won by enumeration; state a larger range or allow "
                "fewer turns"
            )
    return tried


def _win_words(env: Any) -> str:
    if getattr(env, "win_rule", "return") == "final_reward":
        return "wins (ends the episode with a positive reward)"
    return f"reaches the maximum reward {_top(env):g}"


def _trivial_against_best(subject: Subject, env: Any, seeds: list[int]) -> dict[int, str]:
    """Trivial policies lose on every seed; returns each seed's first observation.

    Without a solution (an unproven SPADE game) the empty action and random text still
    must not win. Under SPADE's win rule (a final reward above zero) a trivial policy must
    also not earn as much as the win pays (the solution's final reward, or without one
    SPADE's full success 1.0): rewards paid along the way are the trainer's reward too, and
    a game that pays for wrong answers without ever ending them would otherwise pass (a
    solution padded with paid wrong guesses earns more than any farmer, so its return is
    no bound)."""
    observations: dict[int, str] = {}
    farm = getattr(env, "win_rule", "return") == "final_reward"
    for seed in seeds:
        solution = _solution_of(env, seed) if subject.has_solution else None
        earned = 1.0  # what a win pays: the solution's final reward, else SPADE's 1.0
        if farm and solution is not None:
            won = _play(env, solution, seed, "playing the solution").transitions
            earned = won[-1].reward if won else 1.0
        policies = {"the empty action": repeated(""), "random text": random_text(seed)}
        if solution is not None and not subject.is_game:
            # A game is won along many paths (random moves may find one); without a
            # solution, wrong answers drawn from the observation may hit the right one.
            policies["wrong answers drawn from the observation"] = _wrong_answers(
                subject, seed, solution
            )
            policies["wrong answers in a model's reasoned reply"] = _wrong_answers(
                subject, seed + 1, solution, reasoned=True
            )
        if subject.has_hint:
            _call("reset()", env.reset, seed=seed)
            policies["the hint text as the action"] = repeated(str(_call("hint()", env.hint)))
        if solution is not None and len(set(solution)) > 1:
            policies["repeating the first solution action"] = repeated(solution[0])
        for label, policy in policies.items():
            episodes = [_play(env, policy, seed, f"playing {label}")]
            observations.setdefault(seed, episodes[0].first_observation)
            if subject.has_hint:  # as a hinted play runs: reset, hint(), then the steps
                episodes.append(_play_after_hint(env, policy, seed, f"playing {label}"))
            if any(_won(episode, env) for episode in episodes):
                if label == "random text" and not _random_text_wins_again(subject, env, seed):
                    continue  # a lucky string (the secret among random digits), not a task
                after = " after hint() was asked" if not _won(episodes[0], env) else ""
                raise CheckFailed(
                    f"seed {seed}: {label} {_win_words(env)}{after}; "
                    "the task must require the right actions (check the answer strictly)"
                )
            most = max(e.total_reward for e in episodes)
            if farm and most >= earned - 1e-6 and most > 0:
                than = "the solution's win" if solution is not None else "SPADE's full success"
                raise CheckFailed(
                    f"seed {seed}: {label} earns a return of {most:g} without winning, as much "
                    f"as {than} pays ({earned:g}); rewards along the way must not pay for "
                    "wrong actions (SPADE's contract: 0 until the win)"
                )
    return observations


#: Other random-text streams played where random text won: a task that any text wins is
#: won by them too, while a lucky string once named a valid NumberGuess's secret among its
#: random digits (seed 620038) and the trivial check rejected a sound environment.
RANDOM_TEXT_CONFIRMATIONS = 4
_CONFIRMATION_STRIDE = 1_000_003


def _random_text_wins_again(subject: Subject, env: Any, seed: int) -> bool:
    """Whether another random-text stream wins at ``seed`` too (played as the first was)."""
    for k in range(1, RANDOM_TEXT_CONFIRMATIONS + 1):
        stream = seed + k * _CONFIRMATION_STRIDE
        label = f"playing random text (stream {k})"
        if _won(_play(env, random_text(stream), seed, label), env):
            return True
        if subject.has_hint and _won(_play_after_hint(env, random_text(stream), seed, label), env):
            return True
    return False


def _no_moves_against_random(subject: Subject, env: Any, seeds: list[int]) -> None:
    """Games against a random opponent (which draws from the game's own ``legal_moves()``,
    unlike the best one): making no move at all may win now and then, when the opponent
    blunders, but not on most seeds."""
    wins = [seed for seed in seeds if _won(_play(env, repeated(""), seed, "passing"), env)]
    if len(wins) > len(seeds) // 2:
        raise CheckFailed(
            f"making no move at all beats the random opponent on {len(wins)} of {len(seeds)} "
            f"seeds (e.g. seed {wins[0]}); its legal_moves() must be real moves of the game"
        )


def _play_after_hint(env: Any, policy: Any, seed: int | None, what: str) -> Episode:
    """An episode played the way a hinted rollout plays it: ``hint()`` between the reset
    and the first step (an environment must not get easier because its hint was asked)."""
    observation, _ = _call("reset()", env.reset, seed=seed)
    _call("hint()", env.hint)
    episode = Episode(
        seed=seed,
        first_observation=observation,
        reward_range=env.reward_range,
        win_rule=str(getattr(env, "win_rule", "return")),
    )
    for turn in range(env.max_turns + 1):
        action = policy(observation, turn)
        observation, reward, terminated, truncated, _ = _call(what, env.step, action)
        episode.transitions.append(Transition(action, observation, reward, terminated, truncated))
        if terminated or truncated:
            break
    return episode


def check_solved_at_reset(subject: Subject, budget: Budget, seeds: list[int]) -> None:
    env = subject.env()
    for seed in seeds:
        _, info = _call("reset()", env.reset, seed=seed)
        claims = subject.claims(env)
        if claims.get("won") is True or info.get("success") is True:
            raise CheckFailed(f"seed {seed}: the episode is already won right after reset")
        if claims.get("ended") is True:
            raise CheckFailed(f"seed {seed}: the episode is already over right after reset")


def check_info(subject: Subject, budget: Budget, seeds: list[int]) -> dict[str, Any]:
    """``info["success"]`` agrees with the rewards on every episode the checks played (and
    on the solution and empty-action episodes played here): wins are counted from
    rewards, and an environment whose info says otherwise is lying to whoever reads it."""
    env = subject.env()
    for seed in seeds[:3]:
        if subject.has_solution:
            solution = _solution_of(env, seed)
            _play(env, solution, seed, "playing solution()")
        _play(env, repeated(""), seed, "playing the empty action")
    if subject.info_lie:
        raise CheckFailed(subject.info_lie)
    return {}


def check_hint_leak(subject: Subject, budget: Budget, seeds: list[int]) -> dict[str, Any]:
    if subject.is_game:
        return {"skipped": "games: the hint is advice about a position, not an answer"}
    if not subject.has_hint:
        return {"skipped": "the environment defines no hint()"}
    env = subject.env()
    for seed in seeds:
        solution = _solution_of(env, seed)
        hint = _call("hint()", env.hint)
        if not hint.strip():
            raise CheckFailed(f"seed {seed}: hint() must return a non-empty string, got {hint!r}")
        # What the play showed before the final action is no secret: replay up to it.
        episode = _call(
            "playing the solution",
            play_episode,
            env,
            solution[:-1],
            seed=seed,
            max_steps=len(solution) - 1,
        )
        seen = " ".join(
            [episode.first_observation, *(t.observation for t in episode.transitions)]
        ).lower()
        visible = visible_text(hint)
        for final in secret_parts(solution[-1], seen):
            how = leaked_encoding(hint, final, visible=visible)
            if how:
                raise CheckFailed(
                    f"seed {seed}: the hint {_short(hint, 100)} contains the final answer "
                    f"{final!r} ({how}); give help that still leaves the last step to the agent"
                )
            subject.call_limit()  # parent work counts against the check's wall clock
    return {"seeds": len(seeds)}


DYNAMIC_CHECKS: dict[str, Callable[[Subject, Budget, list[int]], Any]] = {
    "fresh_play": check_fresh_play,
    "check_env": check_gym_api,
    "fuzz": check_fuzz,
    "determinism": check_determinism,
    "solution": check_solution,
    "trivial": check_trivial,
    "solved_at_reset": check_solved_at_reset,
    "info": check_info,
    "hint_leak": check_hint_leak,
}


def run_check(
    name: str,
    subject: Subject,
    budget: Budget,
    seeds: list[int],
    checks: Mapping[str, Callable[..., Any]] | None = None,
) -> tuple[bool, str, dict[str, Any]]:
    """Run one dynamic check (of ``checks``, default :data:`DYNAMIC_CHECKS`):
    ``(passed, reason, details)``; never raises for env faults."""
    subject.begin(name)
    try:
        details = (DYNAMIC_CHECKS if checks is None else checks)[name](subject, budget, seeds) or {}
        passed, reason = True, ""
    except CheckFailed as exc:
        subject.note_failure(exc)
        passed, reason, details = False, str(exc), {}
        if isinstance(exc.__cause__, EnvCodeError) and exc.__cause__.exc_type:
            # What the environment's code raised, for tools that sort rejections.
            details = {"raised": exc.__cause__.exc_type}
    except (SandboxStartFailed, SandboxUnavailable):
        raise  # the machine's fault: no verdict on the environment
    except Exception as exc:  # a failure of the environment the check did not foresee
        subject.note_failure(exc)
        passed, reason, details = False, f"{type(exc).__name__}: {str(exc)[:240]}", {}
    if subject.fatal:
        passed, reason = False, subject.fatal
    details = {k: v for k, v in details.items() if isinstance(v, (int, float, str, list, bool))}
    details = {
        k: v for k, v in details.items() if not (isinstance(v, float) and not math.isfinite(v))
    }
    return passed, reason, details
