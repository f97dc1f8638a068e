"""Importing a suite: plan, validate every new environment with the gate, register.

Each environment is registered in one transaction with its validation report, as soon
as its validation ends: an interrupted import leaves only complete versions, and the
same command continues it (identical code is never validated or stored twice).
"""

from __future__ import annotations

import hashlib
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..validation.budget import Budget, get_budget
from .catalog import SuiteEnvSpec, Unavailable, plan

__all__ = [
    "ImportedEnv",
    "SuiteImportResult",
    "SUITE_CALL_SECONDS",
    "import_suite",
    "suite_budget",
]

#: CPU seconds one reset (a problem's generation) or step (its scoring) may take during
#: validation. The gate's 0.5 s is for model-written code; a suite's generator is slower at
#: high levels, and a call above this is rejected as too slow to train on.
SUITE_CALL_SECONDS = 4.0
#: Longest observation: suite questions at hard levels exceed the gate's 8,192 characters
#: (:attr:`SuiteTask.max_observation_length` is the same).
SUITE_OBSERVATION_CHARS = 16_384
#: Wall-clock limit of one whole check for suite environments (several resets each).
SUITE_CHECK_TIMEOUT = 60.0


def suite_budget(budget: str | Budget) -> Budget:
    """``budget`` with the per-call and per-check limits suite generators need."""
    base = get_budget(budget)
    return get_budget(
        base,
        call_seconds=max(base.call_seconds, SUITE_CALL_SECONDS),
        max_observation_chars=max(base.max_observation_chars, SUITE_OBSERVATION_CHARS),
        check_timeout=max(base.check_timeout, SUITE_CHECK_TIMEOUT),
    )


@dataclass(frozen=True)
class ImportedEnv:
    """What the import did with one environment.

    Attributes:
        env_id: Its registry ID.
        task, level: Which task and level.
        status: ``validated``, ``rejected`` or ``unvalidated`` (unproven: the suite
            stores no answer to replay).
        reason: Why it is not validated (empty when it is).
        new: False when identical code was already registered (nothing was done).
    """

    env_id: str
    task: str
    level: str
    status: str
    reason: str = ""
    category: str = ""
    new: bool = True


@dataclass
class SuiteImportResult:
    """The outcome of :func:`import_suite`."""

    suite: str
    planned: int = 0
    unavailable: list[Unavailable] = field(default_factory=list)
    envs: list[ImportedEnv] = field(default_factory=list)
    seconds: float = 0.0
    interrupted: bool = False

    def counts(self) -> dict[str, int]:
        """generated, validated, rejected, unproven, already registered, unavailable."""
        statuses = Counter(e.status for e in self.envs if e.new)
        return {
            "generated": self.planned,
            "validated": statuses["validated"],
            "rejected": statuses["rejected"],
            "unproven": statuses["unvalidated"],
            "already_registered": sum(not e.new for e in self.envs),
            "not_done": self.planned - len(self.envs),
            "unavailable": len(self.unavailable),
        }

    def rejected_by_reason(self) -> dict[str, int]:
        """How many new versions were rejected, by the first check they failed."""
        return dict(
            Counter(e.category for e in self.envs if e.new and e.status == "rejected").most_common()
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "seconds": round(self.seconds, 1),
            "interrupted": self.interrupted,
            "counts": self.counts(),
            "rejected_by_reason": self.rejected_by_reason(),
            "envs": [e.__dict__ for e in self.envs],
            "unavailable": [u.__dict__ for u in self.unavailable],
        }

    def summary(self) -> str:
        """Counts, rejections by reason, and every rejected or unproven environment."""
        c = self.counts()
        lines = [
            f"{self.suite}: {c['generated']} environments planned in {self.seconds:.0f} s: "
            f"{c['validated']} validated, {c['rejected']} rejected, {c['unproven']} unproven "
            f"(stored unvalidated), {c['already_registered']} already registered"
            + (f", {c['not_done']} not done (interrupted)" if c["not_done"] else "")
            + f"; {c['unavailable']} task levels unavailable"
        ]
        reasons = self.rejected_by_reason()
        if reasons:
            lines.append("rejected by reason: " + ", ".join(f"{k} {v}" for k, v in reasons.items()))
        for env in self.envs:
            if env.new and env.status != "validated":
                label = "unproven" if env.status == "unvalidated" else "rejected"
                lines.append(f"  {label}: {env.env_id}: {env.reason}")
        for missing in self.unavailable:
            lines.append(f"  unavailable: {missing.task} level {missing.level}: {missing.reason}")
        return "\n".join(lines)


def _sha256(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def _verdict(report: Any) -> tuple[str, str, str]:
    """``(status, category, reason)`` of a validation report."""
    if report.passed:
        return "validated", "", ""
    failed = [c for c in report.checks if not c.passed and not c.skipped]
    for check in failed:
        raised = check.details.get("raised")
        if raised == "NotImplementedError":
            return "unvalidated", "unproven", check.reason
        if raised == "SuiteGoldError":
            return "rejected", "gold_fails_scorer", check.reason
    first = failed[0] if failed else None
    if first is None:
        return "rejected", "unknown", "rejected without a failed check"
    return "rejected", first.name, f"{first.name}: {first.reason[:300]}"


def import_suite(
    registry: Any,
    suite: str,
    *,
    tasks: list[str] | None = None,
    levels: list[str] | None = None,
    budget: str | Budget = "fast",
    workers: int | None = None,
    seed: int | None = None,
    progress: Callable[[int, int, ImportedEnv], None] | bool = True,
) -> SuiteImportResult:
    """Validate and register a suite's tasks at the given levels.

    Every environment goes through the validator (:func:`suite_budget` of ``budget``):
    the suite's gold answer must win on every tested seed in a worker that never ran
    ``solution()``, trivial answers must lose, episodes must be deterministic. Passed
    versions are stored ``validated``, failed ones ``rejected`` with the report; tasks
    whose suite stores no answer to replay cannot prove feasibility and are stored
    ``unvalidated`` with that reason (never as validated).

    Args:
        registry: The :class:`~spade_envs.registry.Registry` to write.
        suite: ``"reasoning-gym"`` or ``"rlve"``.
        tasks: Task names (default: all the suite has).
        levels: Levels (default ``["0"]``; reasoning-gym also has ``"hard"``).
        budget: Validation budget name or :class:`Budget`.
        workers: Parallel validations (default: one per core).
        seed: Seeds the validator's check seeds (default: fresh ones).
        progress: A callback ``(done, total, env)``, True for a line on stderr.

    Raises:
        SuiteNotInstalledError, UnknownTaskError: Before anything is written.
    """
    from ..validation import validate_iter

    started = time.perf_counter()
    specs, unavailable = plan(suite, tasks, levels)
    result = SuiteImportResult(suite, planned=len(specs), unavailable=unavailable)
    if progress is True:
        progress = _print_progress
    known = registry.by_sha256(_sha256(s.source) for s in specs)
    fresh: list[SuiteEnvSpec] = []
    for spec in specs:
        record = known.get(_sha256(spec.source))
        if record is not None:
            result.envs.append(
                ImportedEnv(record.id, spec.task, spec.level, record.status, new=False)
            )
        else:
            fresh.append(spec)
    total = len(specs)
    # The importer wrote these sources itself: it alone may say so (suite tasks offer no
    # hint, so the hint checks do not apply to the exact shape it writes).
    finished = validate_iter(
        [s.source for s in fresh],
        budget=suite_budget(budget),
        workers=workers,
        seed=seed,
        suite_import=True,
    )
    try:
        for index, report in finished:
            spec = fresh[index]
            status, category, reason = _verdict(report)
            extra = {"suite": dict(spec.extra["suite"])}
            if reason:
                extra["suite"]["unproven" if status == "unvalidated" else "rejected"] = reason
            record = registry.register(
                spec.source, spec.meta, status=status, extra=extra, report=report, suite=suite
            )
            env = ImportedEnv(record.id, spec.task, spec.level, status, reason, category)
            result.envs.append(env)
            if progress:
                progress(len(result.envs), total, env)
    except KeyboardInterrupt:
        result.interrupted = True
    finally:
        finished.close()  # stops the validation processes now, not when collected
    result.seconds = time.perf_counter() - started
    return result


def _print_progress(done: int, total: int, env: ImportedEnv) -> None:
    end = "\n" if done == total else ""
    sys.stderr.write(f"\rimported {done}/{total} ({env.env_id}: {env.status})".ljust(90) + end)
    sys.stderr.flush()
