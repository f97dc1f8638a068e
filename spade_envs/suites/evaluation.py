"""Held-out evaluation on suite environments, by category.

The evaluation sets:

- ``rg-hard``: reasoning-gym's A.3 hard configurations, grouped as SPADE reports them
  (Math, Algorithmic, Cognition, Logic); import them first with
  ``spade-envs import --suite reasoning-gym --levels hard``;
- ``rlve`` / ``rlve:<level>``: every imported RLVE task at that level (default 0), by skill;
- ``reasoning-gym:<level>``: every imported reasoning-gym task at that level, by family;
- ``seeds``: the seed corpus, by skill.

Rejected versions are never evaluated (the table says how many were left out); versions
stored unproven (no answer to replay) are, since the suite's scorer still judges them.
Each play is unhinted. A win rate's standard error is the binomial one over the plays
that finished; failed plays are counted by kind and never scored as losses.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..error import SpadeError

__all__ = [
    "EVAL_SETS",
    "SUITE_ANSWERS",
    "EvalSet",
    "EvalTask",
    "CategoryScore",
    "EvalResult",
    "eval_set",
    "evaluate",
    "suite_pool",
]

#: The named sets ``--suite`` accepts (``rlve`` and ``reasoning-gym`` also take ``:<level>``;
#: ``textarena`` has level 0 only: its variants are game IDs of their own).
EVAL_SETS = ("rg-hard", "rlve", "reasoning-gym", "textarena", "seeds")
#: Answers a suite task allows when an evaluation plays every environment to its own turn
#: limit (``max_turns=None``; ``spade-envs evaluate --max-turns 0``): as many as the
#: command's default ``--max-turns 2`` allows.
SUITE_ANSWERS = 2
#: The suites whose tasks take a ``max_attempts`` knob (one answer per turn); TextArena
#: games are played turn by turn under the turn cap instead.
_ANSWER_SUITES = ("reasoning-gym", "rlve")
#: More versions than any suite import registers (a bound for the registry query).
_MAX_SUITE_VERSIONS = 1_000_000
#: SPADE's four reasoning-gym categories, in its column order.
RG_CATEGORIES = ("math", "algorithmic", "cognition", "logic")


@dataclass(frozen=True)
class EvalTask:
    """One environment of an evaluation set and the category it counts under."""

    env_id: str
    category: str
    task: str


@dataclass
class EvalSet:
    """What an evaluation plays.

    Attributes:
        name: The set's name as given (``rg-hard``, ``rlve:3``, ``seeds``).
        tasks: The environments played.
        left_out: ``(env_id, reason)`` of registered versions not played.
        categories: The category order of the table.
    """

    name: str
    tasks: list[EvalTask]
    left_out: list[tuple[str, str]] = field(default_factory=list)
    categories: tuple[str, ...] = ()

    def only(self, tasks: list[str]) -> EvalSet:
        """The same set with only these tasks (suite task names).

        Raises:
            SpadeError: A task the set does not have (close matches suggested).
        """
        from ..error import suggest

        have = [t.task for t in self.tasks]
        for task in tasks:
            if task not in have:
                raise SpadeError(f"{self.name} has no task {task!r}.{suggest(task, have)}")
        kept = [t for t in self.tasks if t.task in set(tasks)]
        present = {t.category for t in kept}
        categories = tuple(c for c in self.categories if c in present)
        return EvalSet(self.name, kept, list(self.left_out), categories)


def _suite_records(
    registry: Any, suite: str, level: str, playable_statuses: tuple[str, ...]
) -> tuple[list[Any], list[Any]]:
    """Newest version per task of ``suite`` at ``level``: (playable, left out)."""
    newest: dict[str, Any] = {}
    # The registry filters by suite (indexed); a training run's view also hides the
    # versions of later iterations.
    for record in registry.list(
        suite=suite, sort="name", limit=_MAX_SUITE_VERSIONS, include_retired=True
    ):
        info = record.extra.get("suite")
        if not isinstance(info, dict) or str(info.get("level")) != level:
            continue
        if record.status == "retired":
            continue
        task = str(info.get("task"))
        if task not in newest or record.version > newest[task].version:
            newest[task] = record
    playable = [r for r in newest.values() if r.status in playable_statuses]
    rejected = [r for r in newest.values() if r.status not in playable_statuses]
    return sorted(playable, key=lambda r: r.name), sorted(rejected, key=lambda r: r.name)


def suite_pool(name: str, registry: Any) -> list[str]:
    """The validated environment IDs of a set (``rlve``, ``rlve:3``, ``reasoning-gym``,
    ``rg-hard``, ``textarena``): a fixed pool for the fixed-pool baseline
    (``suite:<name>``). Unproven versions are left out of training pools."""
    return [t.env_id for t in eval_set(name, registry, validated_only=True).tasks]


def _why(info: dict[str, Any]) -> str:
    return str(info.get("rejected") or info.get("unproven") or "")


def _quarantined_seeds(registry: Any) -> dict[str, tuple[str, Any]]:
    """Seeds whose packaged code is registered and quarantined: ``{name: (id, record)}``
    (a seed name means that exact code, so its stored version's status is the seed's)."""
    from ..registry.writes import source_digest
    from ..seeds import seed_names, seed_source

    digests = {source_digest(seed_source(n)): n for n in seed_names()}
    found = registry.by_sha256(digests)
    return {digests[d]: (r.id, r) for d, r in found.items() if r.status == "quarantined"}


def _left_out_why(record: Any) -> str:
    if record.status == "quarantined":  # its newest version diverged on replay: not played
        return f"a replay audit diverged (spade-envs show {record.id})"
    return _why(record.extra["suite"])


def eval_set(name: str, registry: Any, *, validated_only: bool = False) -> EvalSet:
    """The evaluation set ``name`` over what ``registry`` holds.

    Raises:
        SpadeError: An unknown set, or a suite set with nothing imported (the import
            command to run is given).
    """
    from ..error import suggest

    base, _, level = str(name).partition(":")
    if base not in EVAL_SETS:
        raise SpadeError(
            f"No evaluation set {name!r}.{suggest(base, EVAL_SETS)} The sets are: rg-hard, "
            "rlve[:level], reasoning-gym[:level], textarena, seeds."
        )
    if base == "seeds":
        from ..seeds import seed_classes

        quarantined = _quarantined_seeds(registry)
        tasks = [
            EvalTask(n, str(getattr(c, "skill", "general")), n)
            for n, c in sorted(seed_classes().items())
            if n not in quarantined
        ]
        left_out = [(i, f"quarantined: {_left_out_why(r)}") for i, r in quarantined.values()]
        categories = tuple(sorted({t.category for t in tasks}))
        return EvalSet(name, tasks, sorted(left_out), categories=categories)
    suite = {"rg-hard": "reasoning-gym", "reasoning-gym": "reasoning-gym"}.get(base, base)
    if base == "rg-hard":
        if level:
            raise SpadeError("rg-hard takes no level (it is the A.3 hard set).")
        level = "hard"
    level = level or "0"
    statuses = ("validated",) if validated_only else ("validated", "unvalidated")
    playable, rejected = _suite_records(registry, suite, level, statuses)
    if not playable:
        flag = "hard" if level == "hard" else level
        raise SpadeError(
            f"The registry holds no {suite} environments at level {level} to evaluate on. "
            f"Import them first: spade-envs import --suite {suite} --levels {flag}"
        )
    tasks = []
    for record in playable:
        info = record.extra["suite"]
        if base == "rg-hard":
            category = str(info.get("category") or "other")
        elif suite == "reasoning-gym":
            category = str(info.get("family") or record.skill)
        else:
            category = record.skill
        tasks.append(EvalTask(record.id, category, str(info.get("task"))))
    left_out = [(r.id, f"{r.status}: {_left_out_why(r)}") for r in rejected]
    present = {t.category for t in tasks}
    order = RG_CATEGORIES if base == "rg-hard" else tuple(sorted(present))
    return EvalSet(name, tasks, left_out, tuple(c for c in order if c in present))


@dataclass
class CategoryScore:
    """Win rate of one category (or ``overall``).

    Attributes:
        category: Its name.
        tasks: Environments in it.
        plays: Plays that finished.
        wins: Of those, how many won.
        win_rate: ``wins / plays`` (None when nothing finished).
        stderr: Binomial standard error of the win rate.
        mean_return: Mean episode return of the finished plays.
        failed: Plays that did not finish (an environment error, timeout, crash).
    """

    category: str
    tasks: int
    plays: int
    wins: int
    win_rate: float | None
    stderr: float | None
    mean_return: float | None
    failed: int

    @classmethod
    def of(cls, category: str, tasks: int, episodes: list[Any]) -> CategoryScore:
        from ..agent.failures import play_failure
        from ..agent.rewards import binomial_standard_error

        finished = [e for e in episodes if play_failure(e) is None]
        n = len(finished)
        wins = sum(bool(e.won) for e in finished)
        rate = wins / n if n else None
        stderr = binomial_standard_error(rate, n) if n else None
        mean = sum(e.episode_return for e in finished) / n if n else None
        return cls(category, tasks, n, wins, rate, stderr, mean, len(episodes) - n)


@dataclass
class EvalResult:
    """An evaluation's scores, settings, failures and timing."""

    set_name: str
    model: str
    settings: dict[str, Any]
    categories: list[CategoryScore]
    overall: CategoryScore
    per_task: dict[str, CategoryScore]
    left_out: list[tuple[str, str]]
    failures: Any
    seconds: float
    env_seconds: float
    model_seconds: float
    replaced_seeds: int = 0
    scorer_errors: int = 0
    reused_workers: int = 0

    @property
    def env_share(self) -> float:
        """Environment time as a share of the evaluation's wall time."""
        return self.env_seconds / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "set": self.set_name,
            "model": self.model,
            "settings": self.settings,
            "categories": [c.__dict__ for c in self.categories],
            "overall": self.overall.__dict__,
            "per_task": {k: v.__dict__ for k, v in self.per_task.items()},
            "left_out": [list(x) for x in self.left_out],
            "failed_plays": self.failures.failed,
            "failures": self.failures.summary() if self.failures.failed else "",
            "seconds": round(self.seconds, 2),
            "env_seconds": round(self.env_seconds, 3),
            "model_seconds": round(self.model_seconds, 2),
            "env_share": round(self.env_share, 5),
            "replaced_seeds": self.replaced_seeds,
            "scorer_errors": self.scorer_errors,
            "reused_workers": self.reused_workers,
        }

    def table(self) -> str:
        """The category table, as text."""
        s = self.settings
        lines = [
            f"{self.set_name}: {self.model}, {s['episodes']} episodes per task, "
            + (
                f"at most {s['max_turns']} turns"
                if s["max_turns"]
                else f"each to its own turn limit ({SUITE_ANSWERS} answers per suite task)"
            )
            + f", temperature {s['temperature']}",
            f"{'category':<14} {'tasks':>5} {'plays':>6} {'win rate':>17} {'return':>7} "
            f"{'failed':>6}",
        ]
        for score in [*self.categories, self.overall]:
            rate = "n/a" if score.win_rate is None else f"{score.win_rate:.3f} ± {score.stderr:.3f}"
            mean = "n/a" if score.mean_return is None else f"{score.mean_return:.3f}"
            lines.append(
                f"{score.category.title():<14} {score.tasks:>5} {score.plays:>6} {rate:>17} "
                f"{mean:>7} {score.failed:>6}"
            )
        if self.failures.failed:
            lines.append(
                f"failed plays: {self.failures.summary()}; first: {self.failures.first_error}"
            )
        if self.left_out:
            lines.append(f"left out (not validated): {len(self.left_out)} version(s)")
        if self.replaced_seeds:
            lines.append(f"problems generated at a derived seed: {self.replaced_seeds}")
        if self.scorer_errors:
            lines.append(f"answers the suite's scorer failed on (scored 0): {self.scorer_errors}")
        lines.append(
            f"{self.seconds:.1f} s: model {self.model_seconds:.1f} s, environments "
            f"{self.env_seconds:.2f} s ({100 * self.env_share:.2f}% of the wall time; "
            f"{self.reused_workers} plays took over an earlier play's sandbox worker)"
        )
        return "\n".join(lines)


def evaluate(
    model: Any,
    evaluation: EvalSet,
    *,
    registry: Any = None,
    episodes: int = 8,
    max_turns: int | None = 2,
    temperature: float = 0.6,
    max_tokens: int = 512,
    seed: int = 0,
    env_seed: int = 0,
    rollout: dict[str, Any] | None = None,
    progress: Callable[[], None] | None = None,
) -> EvalResult:
    """Play every environment of ``evaluation`` ``episodes`` times, unhinted.

    Args:
        model: An LLM backend (see :mod:`spade_envs.llm`).
        registry: Where the environments are registered (default: the shared one).
        episodes: Plays per environment (reset seeds ``env_seed`` ... ``+ episodes - 1``).
        max_turns: Turns per play; a suite task then allows this many answers. ``None``:
            every environment plays to its own turn limit (a seed's reference solution
            always fits) and a suite task allows :data:`SUITE_ANSWERS` answers.
        temperature: Sampling temperature (0: greedy).
        rollout: Further :class:`~spade_envs.agent.RolloutConfig` fields.

    Raises:
        SpadeError: Every play failed (the first failure says why).
    """
    from dataclasses import replace

    from ..agent import RolloutConfig, resolve_envs
    from ..agent.failures import FailureCounts
    from ..agent.rollout import RolloutEngine, matched_specs
    from ..registry.shared import shared_registry

    if episodes < 1 or (max_turns is not None and max_turns < 1):
        raise SpadeError(f"episodes and max_turns must be at least 1, got {episodes}, {max_turns}.")
    registry = registry if registry is not None else shared_registry()
    started = time.perf_counter()
    targets = resolve_envs([t.env_id for t in evaluation.tasks], registry)
    # Suite tasks allow as many answers as the evaluation allows turns.
    answers = max_turns or SUITE_ANSWERS
    targets = [
        replace(t, knobs={"max_attempts": answers}) if t.suite in _ANSWER_SUITES else t
        for t in targets
    ]
    ids = list(dict.fromkeys(t.env_id for t in targets))
    config = RolloutConfig(
        temperature=temperature,
        top_p=1.0,
        max_turns=max_turns,
        max_tokens=max_tokens,
        seed=seed,
        env_seed=env_seed,
        **(rollout or {}),
    )
    specs = matched_specs(ids, episodes, hint=False, env_seed=env_seed)
    engine = RolloutEngine(model, config, registry=registry)
    played = engine.run(specs, targets, progress=progress)
    failures = FailureCounts.of(played)
    if played and failures.failed == len(played):
        raise SpadeError(
            f"every one of the {len(played)} evaluation plays failed "
            f"({failures.summary()}); first: {failures.first_error}"
        )
    # resolve_envs turns names into IDs: map the set's entries onto what was played.
    resolved = dict(zip([t.env_id for t in evaluation.tasks], [t.env_id for t in targets]))
    category = {resolved[t.env_id]: t.category for t in evaluation.tasks}
    by_env: dict[str, list[Any]] = {}
    for episode in played:
        by_env.setdefault(episode.env_id, []).append(episode)
    per_task = {
        env_id: CategoryScore.of(category[env_id], 1, by_env.get(env_id, [])) for env_id in category
    }
    categories = []
    for name in evaluation.categories:
        members = [e for e, c in category.items() if c == name]
        group = [ep for e in members for ep in by_env.get(e, [])]
        categories.append(CategoryScore.of(name, len(members), group))
    overall = CategoryScore.of("overall", len(category), played)
    replaced = sum(e.noted.count("replaced_seeds") for e in played)
    scorer_errors = sum(e.noted.count("scorer_error") for e in played)
    stats = engine.stats
    return EvalResult(
        set_name=evaluation.name,
        model=getattr(model, "name", type(model).__name__),
        settings={
            "episodes": episodes,
            "max_turns": max_turns,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "seed": seed,
            "env_seed": env_seed,
        },
        categories=categories,
        overall=overall,
        per_task=per_task,
        left_out=list(evaluation.left_out),
        failures=failures,
        seconds=time.perf_counter() - started,
        env_seconds=stats.env_seconds,
        model_seconds=stats.model_seconds,
        replaced_seeds=replaced,
        scorer_errors=scorer_errors,
        reused_workers=stats.reused_workers,
    )
