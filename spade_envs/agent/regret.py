"""Regret estimation: matched hinted and unhinted plays, rewards, registry play statistics.

```python
from spade_envs.agent import RegretConfig, RolloutConfig, estimate_regret
from spade_envs.llm import load_model

with load_model("smollm2") as model:
    report = estimate_regret(model, ["NumberGuess", "Nim"],
                             RegretConfig(plays=8, rollout=RolloutConfig(max_tokens=64)))
print(report.table())
```

Every environment is played ``plays`` times with the hint and ``plays`` times without,
all in one batched rollout, with matched plays (same reset seeds, same sampling seeds
per play index). The results go to the registry's play statistics under the policy
checkpoint's name, where the designer's memory (high-regret seeds, too easy / too hard)
and people browsing the corpus find them.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..error import SpadeError
from ..llm.base import ChatModel
from .config import RolloutConfig, RolloutStats
from .episode import Episode, matched_specs, resolve_envs
from .failures import FailureCounts, play_failure
from .rewards import blend, learnability, regret
from .rollout import Progress, RolloutEngine

__all__ = ["RegretConfig", "RegretReport", "RegretRow", "estimate_regret", "regret_rows"]


@dataclass(frozen=True)
class RegretConfig:
    """How regret is estimated.

    Attributes:
        plays: Plays per environment with the hint, and as many without.
        rollout: How the plays are run (sandbox, sampling, hint source, ...).
        timeout_penalty: See :func:`spade_envs.agent.rewards.regret`.
        checkpoint: Name the statistics are stored under (default: the model's name).
        record: Whether to write the statistics to the registry.
    """

    plays: int = 8
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    timeout_penalty: float = 0.5
    checkpoint: str | None = None
    record: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.plays, bool) or not isinstance(self.plays, int) or self.plays < 1:
            raise SpadeError(f"RegretConfig.plays must be a positive int, got {self.plays!r}.")
        if not isinstance(self.rollout, RolloutConfig):
            raise SpadeError("RegretConfig.rollout must be a RolloutConfig.")
        if not isinstance(self.timeout_penalty, (int, float)) or not (
            0 <= self.timeout_penalty < math.inf
        ):
            raise SpadeError(
                f"RegretConfig.timeout_penalty must be a finite number >= 0, "
                f"got {self.timeout_penalty!r}."
            )


@dataclass(frozen=True)
class RegretRow:
    """The regret of one environment for one checkpoint.

    Attributes:
        env_id: The environment version.
        checkpoint: The policy checkpoint (model name).
        mean_with_hint: Mean return of the hinted plays that finished.
        mean_without_hint: Mean return of the unhinted plays that finished.
        regret: The floored, penalised regret (the designer's regret reward).
        hint_gain: Mean with minus mean without, not floored (what the registry stores as
            ``PlayStats.hint_gain``).
        stderr: Standard error of ``hint_gain`` (NaN with fewer than 2 plays a side).
        n_with_hint: Hinted plays it rests on.
        n_without_hint: Unhinted plays it rests on.
        failed: Plays whose environment failed (``env_errors + timeouts +
            sandbox_crashes``); penalised, left out of the means.
        model_errors: Plays ended by a failed model request (left out of the estimate).
        win_rate: Share of the finished unhinted plays that were won (0 when none finished).
        blend: ``blend(regret, win_rate)``.
        learnability: ``learnability(win_rate)``.
        env_errors: Plays ended by the environment's code (or a return that is not finite).
        timeouts: Plays whose reset or step ran past its limit.
        sandbox_crashes: Plays whose sandbox worker died or did not start.
    """

    env_id: str
    checkpoint: str
    mean_with_hint: float
    mean_without_hint: float
    regret: float
    hint_gain: float
    stderr: float
    n_with_hint: int
    n_without_hint: int
    failed: int
    model_errors: int
    win_rate: float
    blend: float
    learnability: float
    env_errors: int = 0
    timeouts: int = 0
    sandbox_crashes: int = 0

    @property
    def failures(self) -> FailureCounts:
        """The row's failed plays by outcome (``plays`` counts every play of the row)."""
        return FailureCounts(
            plays=self.n_with_hint + self.n_without_hint + self.failed + self.model_errors,
            env_error=self.env_errors,
            timeout=self.timeouts,
            sandbox_crashed=self.sandbox_crashes,
            model_error=self.model_errors,
        )

    @property
    def raw_regret(self) -> float:
        """Deprecated name of :attr:`hint_gain`."""
        warnings.warn(
            "RegretRow.raw_regret is deprecated: use RegretRow.hint_gain (the unfloored "
            "return with the hint minus without it).",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.hint_gain

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def regret_rows(
    episodes: Sequence[Episode], checkpoint: str, *, timeout_penalty: float = 0.5
) -> list[RegretRow]:
    """Summarise episodes into one row per environment (in first-seen order).

    A play that failed (see :func:`~spade_envs.agent.failures.play_failure`, which also
    catches returns that are not finite) is counted by outcome and never averaged.
    """
    by_env: dict[str, list[Episode]] = {}
    for episode in episodes:
        by_env.setdefault(episode.env_id, []).append(episode)
    rows = []
    for env_id, plays in by_env.items():
        failures = FailureCounts.of(plays)
        # A failed model request says nothing about the env or the agent: left out.
        counted = [e for e in plays if play_failure(e) != "model_error"]
        with_hint = [None if play_failure(e) else e.episode_return for e in counted if e.hint]
        without = [None if play_failure(e) else e.episode_return for e in counted if not e.hint]
        estimate = regret(with_hint, without, timeout_penalty=timeout_penalty)
        finished = [e for e in counted if not e.hint and not play_failure(e)]
        win_rate = sum(bool(e.won) for e in finished) / len(finished) if finished else 0.0
        rows.append(
            RegretRow(
                env_id=env_id,
                checkpoint=checkpoint,
                mean_with_hint=estimate.mean_with_hint,
                mean_without_hint=estimate.mean_without_hint,
                regret=estimate.value,
                hint_gain=estimate.hint_gain,
                stderr=estimate.stderr,
                n_with_hint=estimate.n_with_hint,
                n_without_hint=estimate.n_without_hint,
                failed=estimate.failed,
                model_errors=failures.model_error,
                win_rate=win_rate,
                blend=blend(estimate.value, win_rate),
                learnability=learnability(win_rate),
                env_errors=failures.env_error,
                timeouts=failures.timeout,
                sandbox_crashes=failures.sandbox_crashed,
            )
        )
    return rows


@dataclass
class RegretReport:
    """What :func:`estimate_regret` found.

    Attributes:
        rows: One row per environment.
        episodes: Every play (save them with :func:`~spade_envs.agent.save_jsonl`).
        stats: Where the rollout's time went.
    """

    rows: list[RegretRow]
    episodes: list[Episode]
    stats: RolloutStats

    @property
    def failures(self) -> FailureCounts:
        """Every failed play of the report, by outcome (with the first failure's message)."""
        return FailureCounts.of(self.episodes)

    def table(self) -> str:
        """A text table: env, returns with/without hint, hint gain ± its standard error,
        regret (the gain floored at 0, less the failure penalty), win rate, blend, n, and
        the failed plays by outcome. A side with no finished play shows ``n/a``, not 0."""
        head = (
            f"{'env':<32} {'with hint':>9} {'without':>9} {'hint gain':>17} {'regret':>7} "
            f"{'win rate':>8} {'blend':>6} {'n':>7}"
        )
        lines = [head, "-" * len(head)]
        for r in self.rows:
            error = "n/a" if math.isnan(r.stderr) else f"{r.stderr:.3f}"
            with_hint = f"{r.mean_with_hint:.3f}" if r.n_with_hint else "n/a"
            without = f"{r.mean_without_hint:.3f}" if r.n_without_hint else "n/a"
            wins = f"{r.win_rate:.2f}" if r.n_without_hint else "n/a"
            listed = r.failures.summary()
            failed = f"  failed: {listed}" if listed else ""
            gain = f"{r.hint_gain:>+7.3f}" if r.n_with_hint and r.n_without_hint else "    n/a"
            lines.append(
                f"{r.env_id:<32} {with_hint:>9} {without:>9} "
                f"{gain} ± {error:>7} {r.regret:>7.3f} {wins:>8} {r.blend:>6.3f} "
                f"{r.n_with_hint:>3}/{r.n_without_hint:<3}{failed}"
            )
        total = self.failures
        if total.failed:
            lines.append(f"failed plays: {total.summary()} of {total.plays}")
        return "\n".join(lines)


def estimate_regret(
    model: ChatModel,
    env_ids: Sequence[str],
    config: RegretConfig | None = None,
    *,
    registry: Any = None,
    progress: Progress | None = None,
) -> RegretReport:
    """Play every environment with and without the hint, and estimate its regret.

    Args:
        model: The policy.
        env_ids: Gym IDs or bare names (seeds are registered on first use).
        config: How to estimate (default ``RegretConfig()``).
        registry: The registry to read environments from and write statistics to
            (default: the shared registry at ``SPADE_REGISTRY_URL``).
        progress: Called with each finished episode.

    Returns:
        The rows, the episodes and the rollout's timings.
    """
    from ..registry.shared import shared_registry

    config = config or RegretConfig()
    registry = registry if registry is not None else shared_registry()
    targets = resolve_envs(env_ids, registry)
    hintless = [t.env_id for t in targets if not t.has_hint]
    if hintless:
        raise SpadeError(
            f"{hintless[0]} has no hint (suite tasks offer none), so its regret cannot be "
            "measured; play it with `spade-envs rollout` or `spade-envs evaluate`."
        )
    specs = matched_specs(
        [t.env_id for t in targets], config.plays, hint=None, env_seed=config.rollout.env_seed
    )
    engine = RolloutEngine(model, config.rollout, registry=registry)
    episodes = engine.run(specs, targets, progress=progress)
    checkpoint = config.checkpoint or getattr(model, "name", "") or type(model).__name__
    rows = regret_rows(episodes, checkpoint, timeout_penalty=config.timeout_penalty)
    if config.record:
        for row in rows:
            if row.n_with_hint == 0 and row.n_without_hint == 0:
                continue  # nothing finished: no statistics to store
            registry.record_play_stats(
                row.env_id,
                checkpoint,
                plays_with_hint=row.n_with_hint,
                plays_without_hint=row.n_without_hint,
                mean_return_with_hint=row.mean_with_hint,
                mean_return_without_hint=row.mean_without_hint,
                win_rate=row.win_rate,
            )
    return RegretReport(rows=rows, episodes=episodes, stats=engine.stats)
