"""The gate: static checks, then dynamic checks computed here on sandboxed instances.

The environment's code runs only in sandbox workers, which execute its methods and
nothing else (the worker does not even import this package); every verdict is reached
in this process from what comes back over the wire. A check that finds a call that
never returns rejects the environment at once (the remaining checks are skipped),
so a hanging or sleeping environment is rejected within seconds; any other failure
is reported and the remaining checks go on, so one report names every problem the
designer must fix.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..core.terminal import terminal_safe
from ..error import (
    EnvCodeError,
    SandboxError,
    SandboxStartFailed,
    SandboxTimeout,
    SandboxUnavailable,
    SpadeError,
)
from ..sandbox import SandboxConfig, WorkerPool
from ..sandbox.env import checked_metadata
from ..sandbox.process import Worker
from .budget import Budget, get_budget
from .checks import DYNAMIC_CHECKS, check_seeds, run_check
from .hint_effect import HINT_CHECKS, run_hint_check
from .processes import run_in_processes
from .report import CheckResult, ValidationReport
from .static import StaticInfo, static_checks
from .subject import Subject

__all__ = ["Validator", "validate_source", "validate_file", "validate_many", "validation_config"]


def validation_config(
    base: SandboxConfig | None = None, budget: Budget | None = None
) -> SandboxConfig:
    """A sandbox configuration for validation workers.

    Calls get a wall-clock limit of four times the budget's CPU limit per call (at
    least 2 s): generous for a busy machine, short enough that a sleeping or hanging
    environment is rejected within seconds.
    """
    base = base or SandboxConfig()
    budget = budget or get_budget("default")
    return dataclasses.replace(
        base,
        # A module that takes more than a few seconds to import is rejected anyway.
        load_timeout=min(base.load_timeout, 10.0),
        call_timeout=max(2.0, 4 * budget.call_seconds),
    )


class Validator:
    """Validates environment sources; reusable, thread-safe, keeps a warm worker pool.

    Args:
        budget: ``"fast"``, ``"default"``, ``"thorough"`` or a :class:`Budget`.
        config: Sandbox limits for the workers.
        pool_size: Warm workers to keep ready (defaults to twice the number of cores:
            a validation uses two workers, one of which never runs ``solution()``).
        allowed_modules: Import allow-list (defaults to
            :data:`~spade_envs.validation.static.ALLOWED_MODULES`).
        seed: Seeds the checks' seeds. None (the default) draws new check seeds for
            every validation, so an environment cannot know them in advance; the seeds
            used are in the report's details.
        static_gate: Let the static import and ``input()`` checks reject (the default).
            False runs every source in the sandbox whatever it imports, for testing that
            the sandbox alone holds: those checks are then reported as skipped.
    """

    def __init__(
        self,
        budget: str | Budget = "default",
        *,
        config: SandboxConfig | None = None,
        pool_size: int | None = None,
        allowed_modules: Any = None,
        seed: int | None = None,
        static_gate: bool = True,
    ):
        self.budget = get_budget(budget)
        self.config = validation_config(config, self.budget)
        size = 2 * (os.cpu_count() or 1) if pool_size is None else pool_size
        self.pool = WorkerPool(self.config, size=size)
        self.allowed_modules = None if allowed_modules is None else frozenset(allowed_modules)
        self.seed = seed
        self.static_gate = static_gate

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> Validator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----- one source -----------------------------------------------------------------------
    def validate(
        self, source: str, *, filename: str = "<env>", suite_import: bool = False
    ) -> ValidationReport:
        """Validate one environment module and return the report (never raises for bad code).

        Args:
            source: The module.
            filename: Its name in tracebacks.
            suite_import: Only the suite importer passes True: a task in the exact shape
                it writes then has no hint by design (see
                :func:`~spade_envs.validation.static.static_checks`).

        Raises:
            SandboxStartFailed, SandboxUnavailable: No sandbox worker could start here;
                that says nothing about the environment, so there is no report.
        """
        started = time.perf_counter()
        budget = self.budget
        checks, info = static_checks(
            source, budget, allowed_modules=self.allowed_modules, suite_import=suite_import
        )
        if not self.static_gate:
            checks = [
                CheckResult(c.name, False, skipped=True, reason="skipped: static gate off")
                if c.name in _FILTER_CHECKS
                else c
                for c in checks
            ]
        timings = {"static": time.perf_counter() - started, "sandbox_start": 0.0}
        if any(not c.passed and not c.skipped for c in checks):
            checks += [
                CheckResult(
                    n, passed=False, skipped=True, reason="skipped: fix the static problems first"
                )
                for n in ("load", *DYNAMIC_CHECKS, *HINT_CHECKS)
            ]
        else:
            checks += self._dynamic(source, filename, info, timings)
        timings["total"] = time.perf_counter() - started
        timings["checks"] = timings["total"] - timings["static"] - timings["sandbox_start"]
        unproven = info.unproven
        return ValidationReport(
            passed=not unproven
            and all(
                c.passed or (not self.static_gate and c.name in _FILTER_CHECKS) for c in checks
            ),
            unproven=unproven,
            dialect=info.dialect,
            checks=checks,
            env_name=info.env_name,
            kind=info.kind,
            budget=budget.name,
            source_sha256=hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest(),
            timings={k: round(v, 6) for k, v in timings.items()},
        )

    def _open(
        self,
        source: str,
        filename: str,
        info: StaticInfo,
        timings: dict[str, float],
        distinct_from: list[Worker] | None = None,
    ) -> tuple[Worker, dict[str, Any]]:
        start = time.perf_counter()
        worker = self.pool.acquire(distinct_from=distinct_from or ())
        timings["sandbox_start"] += time.perf_counter() - start
        # What starting this worker cost, even when a warm pool paid it in the background.
        timings["worker_start"] = timings.get("worker_start", 0.0) + worker.start_seconds
        try:
            # Loaded as a play loads it (games: seat 0 against the best opponent), from
            # code compiled here: the worker gives nothing back but answers.
            meta = worker.call(
                "load",
                timeout=self.config.load_timeout,
                source=source,
                filename=filename,
                knobs={},
                seat=0 if info.kind == "game" else None,
                opponent="best",
                code=self.pool.compiled(source),
            )
            meta = checked_metadata(meta)
            _check_metadata(meta, info, self.budget)
        except SandboxError:
            worker.kill()
            raise
        return worker, meta

    def _dynamic(
        self, source: str, filename: str, info: StaticInfo, timings: dict[str, float]
    ) -> list[CheckResult]:
        results: list[CheckResult] = []
        start = time.perf_counter()

        def load_seconds() -> float:  # the load itself, not waiting for a worker
            return time.perf_counter() - start - timings["sandbox_start"]

        try:
            worker, meta = self._open(source, filename, info, timings)
            results.append(CheckResult("load", True, seconds=load_seconds()))
        except (SandboxStartFailed, SandboxUnavailable):
            raise  # no worker could start: the machine's fault, not the environment's
        except SandboxError as exc:
            results.append(
                CheckResult("load", False, reason=_load_reason(exc), seconds=load_seconds())
            )
            return results + [
                CheckResult(n, False, skipped=True, reason="skipped: the environment does not load")
                for n in (*DYNAMIC_CHECKS, *HINT_CHECKS)
            ]
        subject = Subject(
            lambda others: self._open(source, filename, info, timings, others),
            self.config,
            self.budget,
            is_game=info.kind == "game",
            has_hint=info.has_hint,
        )
        subject.adopt(worker, meta)
        seeds = check_seeds(self.budget.seeds, self.seed)
        subject.has_solution = info.has_solution
        unproven = "" if info.has_solution else NO_SOLUTION
        info.unproven = unproven
        probe_hint = not info.has_hint and info.kind == "duck"
        try:
            for name in (*DYNAMIC_CHECKS, *HINT_CHECKS):
                if probe_hint and name != "fresh_play" and not subject.fatal:
                    # A hint() the syntax tree does not show (an assigned attribute, a
                    # class rebound later) is served to hinted plays all the same: it is
                    # checked. Asked after fresh_play, whose first episodes stay first.
                    probe_hint = False
                    subject.has_hint = _answers_hint(subject, seeds[0])
                if subject.fatal:
                    results.append(
                        CheckResult(name, False, skipped=True, reason=f"skipped: {subject.fatal}")
                    )
                    continue
                if unproven and name in SOLUTION_CHECKS:
                    results.append(CheckResult(name, False, skipped=True, reason=_NEEDS_SOLUTION))
                    continue
                start = time.perf_counter()
                try:
                    run = run_hint_check if name in HINT_CHECKS else run_check
                    passed, reason, details = run(name, subject, self.budget, seeds)
                    if (
                        details.get("raised") == "UnprovenSolution"
                        and not subject.fatal
                        and info.kind == "duck"
                        and _solution_is_unproven(subject, seeds[0])
                    ):
                        # SPADE prose that names no calls: the checks go on without it.
                        unproven, subject.has_solution = reason, False
                        info.unproven = unproven
                        if name in SOLUTION_CHECKS:
                            results.append(
                                CheckResult(name, False, skipped=True, reason=_NEEDS_SOLUTION)
                            )
                            continue
                        passed, reason, details = run(name, subject, self.budget, seeds)
                except (SandboxStartFailed, SandboxUnavailable):
                    raise
                except SandboxError as exc:  # could not even open an instance
                    passed, reason, details = False, _crash_reason(name, exc), {}
                if name == "solution" and passed:
                    details["check_seeds"] = seeds
                results.append(
                    CheckResult(
                        name,
                        passed,
                        reason=reason[:600],
                        seconds=time.perf_counter() - start,
                        details=details,
                    )
                )
        finally:
            subject.close()
        return results


#: Checks that cannot run without the environment's solution: an environment without
#: one (SPADE's multi-turn contract asks for none) has them skipped and is unproven.
SOLUTION_CHECKS = ("fresh_play", "solution", "hint_leak", "hint_effect")
NO_SOLUTION = (
    "the game defines no solution() (SPADE's multi-turn contract asks for none), so no "
    "win could be shown possible; add solution() returning the winning actions to "
    "validate it"
)
# The reason of each check skipped for that (the report says why it is unproven).
_NEEDS_SOLUTION = "skipped: needs solution() (unproven)"

#: Static checks that only filter (the sandbox holds without them); see ``static_gate``.
_FILTER_CHECKS = ("imports", "no_input")


def _check_metadata(meta: dict[str, Any], info: StaticInfo, budget: Budget) -> None:
    """The loaded class must be the one the source declares (the worker reports it)."""
    name = meta.get("name")
    if info.env_name and name != info.env_name:
        raise EnvCodeError(
            f"load() reported the class {name!r:.60}, but the source defines {info.env_name!r}",
            exc_type="MetadataMismatch",
        )
    expected = {"duck": "text", "game": "text"}.get(info.kind, info.kind)  # games: seat 0
    if info.kind and meta.get("kind") != expected:
        raise EnvCodeError(
            f"load() reported kind {meta.get('kind')!r:.20}, but the source declares {expected!r}",
            exc_type="MetadataMismatch",
        )
    for key in ("name", "skill", "description"):
        text = str(meta.get(key, ""))
        if terminal_safe(text) != text:
            raise EnvCodeError(
                f"the {key} holds control or format characters ({terminal_safe(text)[:80]!r}); "
                "write plain text (they would rewrite the terminal of whoever lists it)",
                exc_type="MetadataMismatch",
            )
    rule = "final_reward" if info.kind == "duck" else "return"
    if info.kind and meta.get("win_rule", "return") != rule:
        raise EnvCodeError(
            f"load() reported win_rule {meta.get('win_rule')!r:.20}, but a {info.kind} class "
            f"counts wins by {rule!r} (SPADE's rule is for SPADE's *Env games only)",
            exc_type="MetadataMismatch",
        )
    turns = meta.get("max_turns")
    if info.max_turns is not None and turns != info.max_turns:
        raise EnvCodeError(
            f"load() reported max_turns={turns!r:.20}, but the source says {info.max_turns}",
            exc_type="MetadataMismatch",
        )
    if not isinstance(turns, int) or not 1 <= turns <= budget.max_turns_limit:
        raise EnvCodeError(
            f"max_turns is {turns!r:.20}; use 1 to {budget.max_turns_limit}",
            exc_type="MetadataMismatch",
        )


def _answers_hint(subject: Subject, seed: int) -> bool:
    """Whether the environment answers ``hint()`` after a reset (in the main worker)."""
    try:
        env = subject.env().proxy
        env.reset(seed=seed)
        return isinstance(env.hint(), str)
    except SandboxError:  # no hint (the adapter raises), or a crash the checks will meet
        return False


def _solution_is_unproven(subject: Subject, seed: int) -> bool:
    """Whether ``solution()`` itself (not a step, not a reset) raises ``UnprovenSolution``:
    prose outside SPADE's numbered-call form. Only then is the version unproven rather than
    failed (a SPADE game may omit solution() altogether, so raising it gains nothing)."""
    try:
        env = subject.env().proxy
        env.reset(seed=seed)
    except SandboxError:
        return False
    try:
        env.solution()
    except EnvCodeError as exc:
        return exc.exc_type == "UnprovenSolution"
    except SandboxError:
        return False
    return False


def _load_reason(exc: SandboxError) -> str:
    if isinstance(exc, SandboxTimeout):
        return (
            "loading the module or constructing the class did not finish in time; "
            "remove loops that never end from module level and __init__"
        )
    if isinstance(exc, EnvCodeError):
        return f"loading failed: {str(exc).removeprefix('load() raised ')[:300]}"
    return f"loading crashed the sandbox: {exc}"


def _crash_reason(name: str, exc: SandboxError) -> str:
    if isinstance(exc, EnvCodeError):
        return f"the {name} check could not open the environment: {exc}"
    return f"the environment crashed the sandbox during the {name} check: {exc}"


# ----- conveniences ---------------------------------------------------------------------------
_shared: dict[str, Validator] = {}
_shared_lock = threading.Lock()


def _validator(budget: str | Budget) -> Validator:
    key = budget if isinstance(budget, str) else repr(budget)
    with _shared_lock:
        if key not in _shared:
            _shared[key] = Validator(budget)
        return _shared[key]


def validate_source(
    source: str, *, budget: str | Budget = "default", filename: str = "<env>"
) -> ValidationReport:
    """Validate one environment module (a shared :class:`Validator` per budget)."""
    return _validator(budget).validate(source, filename=filename)


def validate_file(path: str | Path, *, budget: str | Budget = "default") -> ValidationReport:
    """Validate the environment module in ``path``."""
    path = Path(path)
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpadeError(f"Cannot read {path}: {exc}") from exc
    return validate_source(source, budget=budget, filename=str(path))


def validate_many(
    sources: list[str],
    *,
    budget: str | Budget = "default",
    workers: int | None = None,
    progress: Callable[[int, int, ValidationReport], None] | bool = True,
    seed: int | None = None,
    static_gate: bool = True,
    suite_import: bool = False,
) -> list[ValidationReport]:
    """Validate many sources in parallel, in input order.

    The checks run in the validating process (Hypothesis included), so parallel
    validations run in separate processes (``python -m spade_envs.validation.child``),
    one per core, each with its own sandbox workers; with one worker, validation runs
    here.

    Args:
        sources: Environment module sources.
        budget: The validation budget.
        workers: Parallel validations (default: number of cores).
        progress: A callback ``(done, total, report)``, True for a progress line on
            stderr, or False for silence.
        seed: Seeds the check seeds (see :class:`Validator`).
        static_gate: See :class:`Validator`.
        suite_import: The sources come from the suite importer (see
            :meth:`Validator.validate`); nothing else passes True.
    """
    reports: list[ValidationReport | None] = [None] * len(sources)
    if progress is True:
        progress = _print_progress
    finished = validate_iter(
        sources,
        budget=budget,
        workers=workers,
        seed=seed,
        static_gate=static_gate,
        suite_import=suite_import,
    )
    for done, (index, report) in enumerate(finished, 1):
        reports[index] = report
        if progress:
            progress(done, len(sources), report)
    return [r for r in reports if r is not None]


def validate_iter(
    sources: list[str],
    *,
    budget: str | Budget = "default",
    workers: int | None = None,
    seed: int | None = None,
    static_gate: bool = True,
    suite_import: bool = False,
) -> Iterator[tuple[int, ValidationReport]]:
    """Like :func:`validate_many`, but yields ``(index, report)`` as each validation ends,
    so a caller can store every report at once (an interrupted batch keeps what ended).
    ``workers`` defaults to ``SPADE_VALIDATION_WORKERS``, else the number of cores."""
    if not sources:
        return
    workers = workers or int(os.environ.get("SPADE_VALIDATION_WORKERS") or 0) or os.cpu_count()
    workers = max(1, min(workers or 1, len(sources)))
    settings = (get_budget(budget), seed, static_gate)
    if workers == 1:
        _start_process_validator(*settings)
        for index, source in enumerate(sources):
            yield index, _validate_in_process(source, f"<env {index}>", suite_import)
        return
    yield from run_in_processes(
        sources,
        budget=settings[0],
        processes=workers,
        seed=seed,
        static_gate=static_gate,
        suite_import=suite_import,
    )


_process_validator: Validator | None = None


def _start_process_validator(budget: Budget, seed: int | None, static_gate: bool) -> None:
    """In a validation process: one Validator, closed when the process ends."""
    global _process_validator
    if _process_validator is not None:
        _process_validator.close()
    _process_validator = Validator(budget, pool_size=2, seed=seed, static_gate=static_gate)


def _validate_in_process(
    source: str, filename: str, suite_import: bool = False
) -> ValidationReport:
    if _process_validator is None:
        raise SpadeError("no validator in this process; call _start_process_validator first")
    return _process_validator.validate(source, filename=filename, suite_import=suite_import)


def _print_progress(done: int, total: int, report: ValidationReport) -> None:
    verdict = "ok" if report.passed else "rejected"
    end = "\n" if done == total else ""
    sys.stderr.write(
        f"\rvalidated {done}/{total} ({report.env_name or '?'}: {verdict})".ljust(70) + end
    )
    sys.stderr.flush()
