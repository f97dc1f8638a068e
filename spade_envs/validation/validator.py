"""The gate: static checks in this process, every dynamic check inside the sandbox.

Each dynamic check runs as one sandboxed call with its own wall-clock limit. A check
that hangs or crashes the worker fails with that reason, and the remaining checks go
on in a fresh worker, so one report names every problem the designer must fix.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import hashlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..error import EnvCodeError, SandboxCrashed, SandboxError, SandboxTimeout, SpadeError
from ..sandbox import SandboxConfig, WorkerPool
from ..sandbox.process import Worker
from .budget import Budget, get_budget
from .checks import DYNAMIC_CHECKS
from .report import CheckResult, ValidationReport
from .static import static_checks

__all__ = ["Validator", "validate_source", "validate_file", "validate_many"]

#: What validation workers import before dropping privileges (Hypothesis, the checkers).
VALIDATION_PRELOAD = (
    "spade_envs.validation.checks",
    "hypothesis",
    "hypothesis.stateful",
    "gymnasium.utils.env_checker",
    "pettingzoo.test",
)


def hypothesis_cache() -> str:
    """A directory with Hypothesis's Unicode tables, built once in this (trusted) process.

    Building them takes over a second; a fresh worker would otherwise pay that on
    every validation. Workers read the directory read-only.
    """
    import hypothesis
    from hypothesis.configuration import set_hypothesis_home_dir
    from hypothesis.internal import charmap

    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    directory = root / "spade-envs" / f"hypothesis-{hypothesis.__version__}"
    marker = directory / ".complete"
    if not marker.exists():
        try:
            directory.mkdir(parents=True, exist_ok=True)
            set_hypothesis_home_dir(directory)
            charmap.charmap()
            charmap.intervals_from_codec("utf-8")
            marker.touch()
        except OSError:
            return ""  # unwritable cache location: workers build the tables themselves
        finally:
            set_hypothesis_home_dir(None)
    return str(directory)


def validation_config(base: SandboxConfig | None = None) -> SandboxConfig:
    """A sandbox configuration for validation workers."""
    base = base or SandboxConfig()
    cache = hypothesis_cache()
    return dataclasses.replace(
        base,
        # A module that takes more than a few seconds to import is rejected anyway.
        load_timeout=min(base.load_timeout, 10.0),
        preload=tuple(dict.fromkeys(base.preload + VALIDATION_PRELOAD)),
        read_only_paths=(*base.read_only_paths, *([cache] if cache else [])),
        extra_env={**base.extra_env, **({"SPADE_HYPOTHESIS_HOME": cache} if cache else {})},
    )


class Validator:
    """Validates environment sources; reusable, thread-safe, keeps a warm worker pool.

    Args:
        budget: ``"fast"``, ``"default"``, ``"thorough"`` or a :class:`Budget`.
        config: Sandbox limits for the workers (validation preloads are added).
        pool_size: Warm workers to keep ready (defaults to the number of cores).
        allowed_modules: Import allow-list (defaults to
            :data:`~spade_envs.validation.static.ALLOWED_MODULES`).
    """

    def __init__(
        self,
        budget: str | Budget = "default",
        *,
        config: SandboxConfig | None = None,
        pool_size: int | None = None,
        allowed_modules: Iterable[str] | None = None,
    ):
        self.budget = get_budget(budget)
        self.config = validation_config(config)
        size = (os.cpu_count() or 1) if pool_size is None else pool_size
        self.pool = WorkerPool(self.config, size=size)
        self.allowed_modules = None if allowed_modules is None else frozenset(allowed_modules)

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> Validator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----- one source -----------------------------------------------------------------------
    def validate(self, source: str, *, filename: str = "<env>") -> ValidationReport:
        """Validate one environment module and return the report (never raises for bad code)."""
        started = time.perf_counter()
        budget = self.budget
        checks, info = static_checks(source, budget, allowed_modules=self.allowed_modules)
        timings = {"static": time.perf_counter() - started, "sandbox_start": 0.0}
        blocked = any(not c.passed and not c.skipped for c in checks)
        if blocked:
            checks += [
                CheckResult(
                    n, passed=False, skipped=True, reason="skipped: fix the static problems first"
                )
                for n in ("load", *DYNAMIC_CHECKS)
            ]
        else:
            checks += self._dynamic(source, filename, timings)
        timings["total"] = time.perf_counter() - started
        timings["checks"] = timings["total"] - timings["static"] - timings["sandbox_start"]
        return ValidationReport(
            passed=all(c.passed for c in checks),
            checks=checks,
            env_name=info.env_name,
            kind=info.kind,
            budget=budget.name,
            source_sha256=hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest(),
            timings={k: round(v, 6) for k, v in timings.items()},
        )

    def _open(self, source: str, filename: str, timings: dict[str, float]) -> Worker:
        start = time.perf_counter()
        worker = self.pool.acquire()
        timings["sandbox_start"] += time.perf_counter() - start
        # What starting this worker cost, even when a warm pool paid it in the background.
        timings["worker_start"] = timings.get("worker_start", 0.0) + worker.start_seconds
        worker.call(
            "load",
            timeout=self.config.load_timeout,
            source=source,
            filename=filename,
            knobs={},
            seat=None,
            opponent="best",
        )
        return worker

    def _dynamic(self, source: str, filename: str, timings: dict[str, float]) -> list[CheckResult]:
        results: list[CheckResult] = []
        start = time.perf_counter()

        def load_seconds() -> float:  # the load itself, not waiting for a worker
            return time.perf_counter() - start - timings["sandbox_start"]

        try:
            worker: Worker | None = self._open(source, filename, timings)
            results.append(CheckResult("load", True, seconds=load_seconds()))
        except SandboxError as exc:
            results.append(
                CheckResult("load", False, reason=_load_reason(exc), seconds=load_seconds())
            )
            return results + [
                CheckResult(n, False, skipped=True, reason="skipped: the environment does not load")
                for n in DYNAMIC_CHECKS
            ]
        budget = dataclasses.asdict(self.budget)
        for name in DYNAMIC_CHECKS:
            start = time.perf_counter()
            try:
                if worker is None:
                    worker = self._open(source, filename, timings)
                answer = worker.call(
                    "run_check", timeout=self.budget.check_timeout, name=name, budget=budget
                )
                result = _result_from(answer, name, time.perf_counter() - start)
            except SandboxError as exc:
                worker = None  # the worker was killed; the next check gets a fresh one
                result = CheckResult(
                    name,
                    False,
                    reason=_crash_reason(name, exc, self.budget),
                    seconds=time.perf_counter() - start,
                )
            results.append(result)
        if worker is not None:
            worker.close()
        return results


def _result_from(answer: Any, name: str, seconds: float) -> CheckResult:
    if not isinstance(answer, dict) or answer.get("name") != name:
        return CheckResult(
            name, False, reason="the check returned a malformed result", seconds=seconds
        )
    details = answer.get("details") if isinstance(answer.get("details"), dict) else {}
    return CheckResult(
        name,
        bool(answer.get("passed")),
        reason=str(answer.get("reason", ""))[:600],
        seconds=seconds,
        details=details,
    )


def _load_reason(exc: SandboxError) -> str:
    if isinstance(exc, SandboxTimeout):
        return (
            "loading the module or constructing the class did not finish in time; "
            "remove loops that never end from module level and __init__"
        )
    if isinstance(exc, EnvCodeError):
        return f"loading failed: {str(exc).removeprefix('load() raised ')[:300]}"
    return f"loading crashed the sandbox: {exc}"


def _crash_reason(name: str, exc: SandboxError, budget: Budget) -> str:
    if isinstance(exc, SandboxTimeout):
        return (
            f"the {name} check did not finish within {budget.check_timeout:g} s: some call "
            "never returns or is far too slow; keep every call under "
            f"{budget.call_seconds:g} s"
        )
    if isinstance(exc, SandboxCrashed):
        return f"the environment crashed the sandbox during the {name} check: {exc}"
    return f"the {name} check failed in the sandbox: {exc}"


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
) -> list[ValidationReport]:
    """Validate many sources in parallel, one sandbox worker per core, in input order.

    Args:
        sources: Environment module sources.
        budget: The validation budget.
        workers: Parallel validations (default: number of cores).
        progress: A callback ``(done, total, report)``, True for a progress line on
            stderr, or False for silence.
    """
    workers = workers or os.cpu_count() or 1
    reports: list[ValidationReport | None] = [None] * len(sources)
    if progress is True:
        progress = _print_progress
    with (
        Validator(budget, pool_size=workers) as validator,
        concurrent.futures.ThreadPoolExecutor(max_workers=workers) as executor,
    ):
        futures = {
            executor.submit(validator.validate, s, filename=f"<env {i}>"): i
            for i, s in enumerate(sources)
        }
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            index = futures[future]
            reports[index] = future.result()
            if progress:
                progress(done, len(sources), reports[index])
    return [r for r in reports if r is not None]


def _print_progress(done: int, total: int, report: ValidationReport) -> None:
    verdict = "ok" if report.passed else "rejected"
    end = "\n" if done == total else ""
    sys.stderr.write(
        f"\rvalidated {done}/{total} ({report.env_name or '?'}: {verdict})".ljust(70) + end
    )
    sys.stderr.flush()
