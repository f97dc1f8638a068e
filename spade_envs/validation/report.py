"""The validation report: every check, its outcome, and a reason a model can act on."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from ..core.terminal import terminal_safe
from ..error import SpadeError

__all__ = ["VALIDATOR_VERSION", "CheckResult", "ValidationReport"]

#: Bumped whenever a check changes meaning, so stored reports say which rules they applied.
VALIDATOR_VERSION = "1.0"


@dataclass
class CheckResult:
    """One check's outcome.

    Attributes:
        name: The check (``syntax``, ``imports``, ``fuzz``, ``solution``, ...).
        passed: Whether the environment passed it.
        reason: One line saying what was wrong and how to fix it (empty when passed);
            it is fed back to the designer model for repair.
        seconds: Wall-clock time the check took.
        skipped: True when an earlier failure made the check impossible to run.
        details: Evidence (seeds, actions, values) for people and tools.
    """

    name: str
    passed: bool
    reason: str = ""
    seconds: float = 0.0
    skipped: bool = False
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Reasons quote environment output (exception messages, observations): escape
        # control sequences once, here, so every printer and store gets safe text.
        self.reason = terminal_safe(str(self.reason))


@dataclass
class ValidationReport:
    """The verdict on one environment source.

    Attributes:
        passed: True when every check passed.
        checks: Every check in the order it ran.
        env_name: The environment class, when one was found.
        kind: ``text``, ``tool``, ``game`` or ``duck`` (a duck-typed class).
        budget: The budget the checks ran under.
        source_sha256: Identity of the source that was checked.
        validator_version: :data:`VALIDATOR_VERSION` at validation time.
        timings: Seconds spent per phase (``static``, ``sandbox_start``, ``checks``, ``total``).
        unproven: Why no win could be shown possible, when every check that ran passed but
            those that need a solution could not run (a SPADE-dialect game without
            ``solution()``, or with prose not in SPADE's numbered-call form); then
            ``passed`` is False, nothing failed, and the version is stored
            ``unvalidated`` (see :meth:`verdict`).
        dialect: The dialect the source was read as (``native`` or ``spade``).
    """

    passed: bool
    checks: list[CheckResult]
    env_name: str = ""
    kind: str = ""
    budget: str = "default"
    source_sha256: str = ""
    validator_version: str = VALIDATOR_VERSION
    timings: dict[str, float] = field(default_factory=dict)
    unproven: str = ""
    dialect: str = "native"

    @property
    def failures(self) -> list[CheckResult]:
        return [c for c in self.checks if not c.passed and not c.skipped]

    def check(self, name: str) -> CheckResult:
        """The result of the check called ``name``."""
        for result in self.checks:
            if result.name == name:
                return result
        raise SpadeError(
            f"This report has no check {name!r}; it has: {', '.join(c.name for c in self.checks)}."
        )

    def verdict(self) -> str:
        """The status a version with this report gets: ``validated``, ``rejected``, or
        ``unvalidated`` when it is unproven and nothing failed."""
        if self.passed:
            return "validated"
        if self.unproven and not self.failures:
            return "unvalidated"
        return "rejected"

    def feedback(self) -> str:
        """The failures as short lines, for a repair prompt."""
        if self.passed:
            return "All checks passed."
        return "\n".join(f"- {c.name}: {c.reason}" for c in self.failures)

    def summary(self) -> str:
        """A human-readable table of every check."""
        verdict = {"validated": "VALID", "unvalidated": "UNPROVEN"}.get(self.verdict(), "REJECTED")
        dialect = "" if self.dialect == "native" else f" dialect={self.dialect}"
        # Without a class name the first failure says why (a syntax error, no class).
        syntax = next((c for c in self.failures if c.name == "syntax"), None)
        name = self.env_name or (
            f"(syntax error: {syntax.reason})" if syntax else "(no environment class)"
        )
        lines = [f"{verdict}: {name} [{self.kind or '?'}] budget={self.budget}{dialect}"]
        if self.unproven and not self.failures:
            lines.append(f"  unproven: {self.unproven}")
        for c in self.checks:
            mark = "skip" if c.skipped else ("ok" if c.passed else "FAIL")
            reason = f"  {c.reason}" if c.reason else ""
            lines.append(f"  {mark:<4} {c.name:<16} {c.seconds * 1000:8.1f} ms{reason}")
            if c.details.get("notice"):
                lines.append(f"       note: {c.details['notice']}")
        total = self.timings.get("total")
        if total is not None:
            waited = self.timings.get("sandbox_start", 0.0)
            lines.append(f"  total {total:.2f} s (waiting for a sandbox worker {waited:.2f} s)")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, default=str)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ValidationReport:
        checks = [CheckResult(**c) for c in data.get("checks", [])]
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in {**data, "checks": checks}.items() if k in known})

    @classmethod
    def from_json(cls, text: str) -> ValidationReport:
        return cls.from_dict(json.loads(text))
