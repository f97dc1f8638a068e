"""Replay audits: a play is played again in a fresh worker, and must come out the same.

An environment can behave for the validator and cheat once played (a latency fuse, a
seed band, a first-episode trick, a date). Every play through the door records its seed,
actions and what came back (:class:`~spade_envs.sandbox.trace.EpisodeTrace`); an audit
replays a sample of them (every winning play, a share of the rest) in a fresh worker
under the virtual clock, where the same episode must give the same observations,
rewards and flags. A divergence is evidence that the version decides its rewards by
something other than its seed and actions: the caller quarantines it
(``Registry.quarantine``) and voids the plays it gave.

A replay shows only that the environment is consistent. A *counterfactual* replay of a
winning play checks that the win needed the answers: the episode is played again up to
its win in fresh workers with every action made wrong (random boxed numbers, random
text, and each reply with every place an answer can live replaced at once). If every
one of them wins too, the environment lets wrong answers win when played (a first-episode or
seed-band trick, a date fuse, a whole-game cheat): the version is quarantined like a
divergence. Random answers lose under the validator's probes, so an honest version that
passed the gate does not meet a win with all of them here.

A replay that could not be run (the worker timed out or died, the machine is loaded) is
not evidence: it is counted as an audit that failed, never as a divergence; the caller
does not count a win that could not be replayed.
"""

from __future__ import annotations

import dataclasses
import math
import random
import re
import string
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from ..core.wins import is_won
from ..error import EnvCodeError, SandboxError
from ..sandbox.trace import EpisodeTrace

__all__ = [
    "AuditPlan",
    "AuditResult",
    "Divergence",
    "choose_audits",
    "counterfactual",
    "replay",
]

_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Divergence:
    """Where a replay came out differently from the play.

    Attributes:
        step: 0 for the reset, k for the k-th step.
        field: ``reward``, ``terminated``, ``truncated``, ``observation`` or ``error``.
        played: What the play saw.
        replayed: What the replay saw.
    """

    step: int
    field: str
    played: str
    replayed: str

    def evidence(self, env_id: str, seed: int) -> Any:
        """As the registry stores it (:class:`~spade_envs.registry.QuarantineEvidence`)."""
        from ..registry.records import QuarantineEvidence

        where = "reset" if self.step == 0 else f"step {self.step}"
        if self.field == "counterfactual":
            detail = f"wrong answers in place of the winning one at {where} won as well"
        else:
            detail = f"a replay in a fresh worker diverged at {where}"
        return QuarantineEvidence(
            env_id=env_id,
            seed=seed,
            step=self.step,
            field=self.field,
            played=self.played[:500],
            replayed=self.replayed[:500],
            detail=detail,
            at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        )


@dataclass(frozen=True)
class AuditResult:
    """One replay's outcome.

    Attributes:
        divergence: Where it diverged; None when it matched (or could not be run).
        failed: Why the replay could not be run ("" when it ran).
        seconds: Wall time of the replay.
    """

    divergence: Divergence | None = None
    failed: str = ""
    seconds: float = 0.0


def _reward_text(value: float) -> str:
    return f"{value:.12g}"


def replay(trace: EpisodeTrace, opener: Callable[[], Any]) -> AuditResult:
    """Play ``trace`` again in the environment ``opener`` opens (a fresh worker).

    The replay's own trace (a sandboxed environment or game records one) is compared
    with the play's, step by step: the first observation (a game: its whole state), then
    each step's reward, flags and observation.

    Args:
        trace: The play's record.
        opener: Opens a fresh instance of the same version, knobs and seat.

    Returns:
        The audit's result: a divergence, a failure to replay, or a match.
    """
    started = time.perf_counter()

    def done(**kwargs: Any) -> AuditResult:
        return AuditResult(seconds=time.perf_counter() - started, **kwargs)

    try:
        env = opener()
    except SandboxError as exc:
        return done(failed=f"the replay's worker did not open: {type(exc).__name__}")
    step = 0
    try:
        env.reset(seed=trace.seed, options=trace.options)
        again = env.trace
        if again.observation != trace.observation:
            return done(
                divergence=Divergence(0, "observation", trace.observation, again.observation)
            )
        for step, played in enumerate(trace.steps, 1):
            env.step(played.action)
            now = again.steps[-1]
            checks = (
                ("reward", played.reward, now.reward),
                ("terminated", played.terminated, now.terminated),
                ("truncated", played.truncated, now.truncated),
                ("observation", played.observation, now.observation),
            )
            for name, was, is_now in checks:
                same = (
                    math.isclose(was, is_now, rel_tol=0.0, abs_tol=_TOLERANCE)
                    if name == "reward"
                    else was == is_now
                )
                if not same:
                    text = _reward_text if name == "reward" else str
                    return done(divergence=Divergence(step, name, text(was), text(is_now)))
    except EnvCodeError as exc:  # the play answered here; the replay's code raised
        return done(divergence=Divergence(step, "error", "an answer", str(exc)[:300]))
    except SandboxError as exc:  # a timeout or a dead worker is no evidence
        return done(failed=f"the replay did not finish: {type(exc).__name__}")
    finally:
        try:
            env.close()
        except Exception:
            pass
    return done()


_NUMBER = re.compile(r"\d+")
_BOXED = re.compile(r"(\\boxed\{)([^{}]*)(\})")
_TAGGED = re.compile(r"(<answer>)(.*?)(</answer>)", re.DOTALL)
_TOOL_CALL = re.compile(r"(<tool_call>)(.*?)(</tool_call>)", re.DOTALL)


def _wrong_forms(rng: random.Random) -> list[Callable[[str], str]]:
    """Ways to turn any action into a wrong one, cheapest to refute first: a random boxed
    number, random text, and the action with every place an answer can live replaced at
    once (its numbers by others of the same length, boxed and tagged answers, tool calls),
    its other wording kept."""

    def letters(n: int = 8) -> str:
        return "".join(rng.choice(string.ascii_lowercase) for _ in range(n))

    def number_like(match: re.Match[str]) -> str:
        digits = match.group(0)
        while True:  # another number of the same length: the same shape, another value
            other = "".join(rng.choice(string.digits) for _ in digits)
            if other != digits:
                return other

    def scrubbed(action: str) -> str:
        action = _NUMBER.sub(number_like, action)
        action = _BOXED.sub(lambda m: m.group(1) + letters() + m.group(3), action)
        action = _TAGGED.sub(lambda m: m.group(1) + letters() + m.group(3), action)
        call = '{"name": "' + letters() + '", "arguments": {}}'
        return _TOOL_CALL.sub(lambda m: m.group(1) + call + m.group(3), action)

    return [
        lambda _action: "\\boxed{" + str(rng.randrange(10**8, 10**9)) + "}",
        lambda _action: letters(12),
        scrubbed,
    ]


def counterfactual(
    trace: EpisodeTrace,
    opener: Callable[[], Any],
    rng: random.Random,
    top: float,
    seat: str = "",
    win_rule: str = "return",
) -> AuditResult:
    """Play ``trace`` again up to its win with every action made wrong
    (:func:`_wrong_forms`: each form in a fresh worker, at the same seed).

    Every action up to the winning step is replaced, not only the winning one: in an
    honest environment the answer may come earlier than the reward (answer, then
    confirm). For a whole game only ``seat``'s moves are replaced.

    Args:
        trace: A play whose return reached ``top``.
        opener: Opens a fresh instance of the same version, knobs and seat.
        rng: Draws the wrong answers.
        top: The top of the reward range (a win is a return reaching it).
        seat: For a whole game, the seat whose return is the play's (``player_0``).
        win_rule: The environment's win rule (:mod:`spade_envs.core.wins`).

    Returns:
        A divergence (field ``counterfactual``) when every wrong form won as well; a
        failure when a replay could not be run; otherwise a match. The random answers
        are played first, so an honest win usually costs one replay.
    """
    started = time.perf_counter()

    def done(**kwargs: Any) -> AuditResult:
        return AuditResult(seconds=time.perf_counter() - started, **kwargs)

    def won(total: float, record: Any) -> bool:
        return is_won(
            win_rule,
            total=total,
            top=top,
            last_reward=record.reward,
            terminated=bool(record.terminated),
        )

    total, winning = 0.0, None
    for index, step in enumerate(trace.steps):
        total += step.reward
        if won(total, step):
            winning = index
            break
    if winning is None:
        return done()
    steps = trace.steps[: winning + 1]
    tried: list[str] = []
    for wrong in _wrong_forms(rng):
        try:
            env = opener()
        except SandboxError as exc:
            return done(failed=f"a counterfactual's worker did not open: {type(exc).__name__}")
        played, total, wins = [], 0.0, False
        try:
            env.reset(seed=trace.seed, options=trace.options)
            for step in steps:
                action = step.action
                if action is not None and (not seat or step.agent == seat):
                    action = wrong(action)
                    played.append(action)
                env.step(action)
                record = env.trace.steps[-1]
                total += record.reward
                wins = won(total, record)
                if wins or record.terminated or record.truncated:
                    break
        except EnvCodeError:
            wins = False  # refusing a wrong answer loudly is losing
        except SandboxError as exc:
            return done(failed=f"a counterfactual did not finish: {type(exc).__name__}")
        finally:
            try:
                env.close()
            except Exception:
                pass
        if not wins or not played:
            return done()  # the answers mattered
        tried.append(" / ".join(a[:40] for a in played[:3]))
    return done(
        divergence=Divergence(
            winning + 1,
            "counterfactual",
            " / ".join(str(s.action)[:60] for s in steps[-3:]),
            " | ".join(tried),
        )
    )


@dataclass(frozen=True)
class AuditPlan:
    """Which plays are replayed.

    Attributes:
        share: Share of the plays that did not win that are replayed (every winning
            play is): 0 replays winning plays only, 1 replays everything.
        seed: Seeds the choice of that share and the counterfactuals' wrong answers
            (None: fresh randomness, so an environment cannot know which of its plays
            are replayed, nor what the wrong answers will be).
        counterfactuals: Whether winning plays also get counterfactual replays.
    """

    share: float = 0.1
    seed: int | None = None
    counterfactuals: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.share, (int, float)) or not 0.0 <= self.share <= 1.0:
            from ..error import SpadeError

            raise SpadeError(f"AuditPlan.share must be within [0, 1], got {self.share!r}.")


def choose_audits(must: list[bool], plan: AuditPlan) -> list[int]:
    """Indices of the plays to replay: every play that must be (a win, a play in a reused
    worker) and ``plan.share`` of the rest."""
    rng = random.Random(plan.seed) if plan.seed is not None else random.SystemRandom()
    return [i for i, m in enumerate(must) if m or rng.random() < plan.share]


@dataclass(frozen=True)
class Recorded:
    """What an audit needs of a finished play: its trace, a way to open the same version
    (code, knobs, seat) in a fresh worker, and the top of its reward range."""

    trace: EpisodeTrace
    reopen: Callable[[], Any]
    top: float
    seat: str = ""  # a whole game (self-play): the seat whose return is the play's
    win_rule: str = "return"  # the environment's (spade_envs.core.wins)
    # Played in a worker an earlier play had used: replayed whatever the share, since only
    # a fresh worker shows what the version does (an environment may pay a near-win only
    # once it is not its worker's first episode).
    reused: bool = False


@dataclass
class AuditReport:
    """What the audits of one batch of plays did.

    Attributes:
        audits: Plays replayed.
        failures: Replays that could not be run (no evidence either way; a win among
            them is voided as ``audit_failed``).
        seconds: Wall time of the replays.
        quarantined: Versions quarantined.
    """

    audits: int = 0
    failures: int = 0
    seconds: float = 0.0
    quarantined: list[str] = dataclasses.field(default_factory=list)


def audit_plays(
    episodes: list[Any],
    recorded: dict[int, Recorded],
    plan: AuditPlan,
    quarantine: Callable[[str, Any], None],
) -> tuple[list[Any], AuditReport]:
    """Audit a batch of finished plays (``Episode`` values of :mod:`spade_envs.agent`).

    Every winning play, every play in a reused worker and ``plan.share`` of the others
    that have a record are replayed in fresh workers; winning ones also get
    counterfactual replays. A version caught is
    quarantined (``quarantine(env_id, evidence)``) and every play it gave in the batch is
    voided (outcome ``audit_divergence``); a win whose replay could not be run is voided
    too (outcome ``audit_failed``: a win nobody could confirm does not count).

    Args:
        episodes: The plays, in order.
        recorded: ``id(episode)`` -> its :class:`Recorded` (plays without one, failed or
            in-process, are not audited).
        plan: Which plays, and whether counterfactuals run.
        quarantine: Stores the evidence (``Registry.quarantine``).

    Returns:
        The episodes (voided ones replaced) and the report.
    """
    started = time.perf_counter()
    report = AuditReport()
    rng = random.Random(plan.seed) if plan.seed is not None else random.Random()
    candidates = [i for i, e in enumerate(episodes) if id(e) in recorded]
    chosen = choose_audits(
        [episodes[i].won or recorded[id(episodes[i])].reused for i in candidates], plan
    )
    caught: dict[str, Divergence] = {}
    unconfirmed: dict[int, str] = {}
    for position in chosen:
        episode = episodes[candidates[position]]
        if episode.env_id in caught:
            continue
        record = recorded[id(episode)]
        result = replay(record.trace, record.reopen)
        confirmed = result.divergence is None and not result.failed
        if confirmed and episode.won and plan.counterfactuals:
            result = counterfactual(
                record.trace, record.reopen, rng, record.top, record.seat, record.win_rule
            )
        report.audits += 1
        if result.failed:
            report.failures += 1
            if episode.won:
                unconfirmed[id(episode)] = result.failed
        elif result.divergence is not None:
            caught[episode.env_id] = result.divergence
            quarantine(
                episode.env_id, result.divergence.evidence(episode.env_id, record.trace.seed)
            )
            report.quarantined.append(episode.env_id)
    report.seconds = time.perf_counter() - started
    out = []
    for episode in episodes:
        if episode.env_id in caught:
            episode = replace_outcome(episode, caught[episode.env_id])
        elif id(episode) in unconfirmed:
            episode = dataclasses.replace(
                episode,
                outcome="audit_failed",
                won=False,
                error=f"this win could not be confirmed by a replay ({unconfirmed[id(episode)]})",
            )
        out.append(episode)
    return out, report


def audit_win(
    env: Any, registry: Any, env_id: str, rng: random.Random, win_rule: str = "return"
) -> AuditResult:
    """Audit one winning play of an environment the door opened, before its reward
    counts: a replay in a fresh worker, then the counterfactual (the same play with its
    answers made wrong); a version caught is quarantined in ``registry``.

    For plays outside the rollout engine, one at a time (TRL's environment object,
    OpenEnv sessions); call it before ``env`` is closed.

    Returns:
        The result: a divergence (the version is now quarantined), a failure to replay
        (the win cannot be confirmed), or a match.
    """
    trace, reopen = getattr(env, "trace", None), getattr(env, "twin_opener", None)
    if trace is None or reopen is None:
        return AuditResult(failed="the play left no record to replay")
    result = replay(trace, reopen)
    if result.divergence is None and not result.failed:
        top = float(env.reward_range[1])
        result = counterfactual(trace, reopen, rng, top, "", win_rule)
    if result.divergence is not None:
        registry.quarantine(env_id, result.divergence.evidence(env_id, trace.seed))
    return result


def replace_outcome(episode: Any, divergence: Divergence) -> Any:
    """``episode`` voided by an audit (a dataclass copy with outcome ``audit_divergence``)."""
    where = "reset" if divergence.step == 0 else f"step {divergence.step}"
    if divergence.field == "counterfactual":
        what = f"wrong answers in place of the winning one at {where} won as well"
    else:
        what = (
            f"a replay of this version diverged at {where} ({divergence.field}: played "
            f"{divergence.played[:60]}, replayed {divergence.replayed[:60]})"
        )
    return dataclasses.replace(
        episode, outcome="audit_divergence", won=False, error=f"{what}; it is quarantined"
    )
