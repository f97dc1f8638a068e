"""The suites spade-envs hosts, and the plan of one import: which environment each task
at each level becomes (its name, generated source, metadata)."""

from __future__ import annotations

import importlib.util
import pprint
import re
from dataclasses import dataclass, field
from typing import Any

from ..core.metadata import EnvMetadata
from ..error import SpadeError, suggest
from .base import literal_round_trip

__all__ = [
    "SUITES",
    "SuiteInfo",
    "SuiteEnvSpec",
    "Unavailable",
    "SuiteNotInstalledError",
    "UnknownTaskError",
    "require_suite",
    "known_suite",
    "plan",
    "task_names",
    "parse_levels",
]


class SuiteNotInstalledError(SpadeError, ImportError):
    """A suite's package is not installed here."""


class UnknownTaskError(SpadeError, LookupError):
    """A task name that the suite does not have."""


@dataclass(frozen=True)
class SuiteInfo:
    """One external suite.

    Attributes:
        id: Our identifier (``--suite``, ``extra["suite"]``).
        distribution: The PyPI distribution.
        pin: The version spade-envs is tested with.
        module: Its import name.
        licence: SPDX licence of the suite's code and tasks.
        prefix: The prefix of its environment names.
        homepage: Where it lives.
    """

    id: str
    distribution: str
    pin: str
    module: str
    licence: str
    prefix: str
    homepage: str

    @property
    def install_line(self) -> str:
        return (
            f"pip install '{self.distribution}=={self.pin}'  (or: pip install 'spade-envs[suites]')"
        )


SUITES: dict[str, SuiteInfo] = {
    "reasoning-gym": SuiteInfo(
        "reasoning-gym",
        "reasoning-gym",
        "0.1.25",
        "reasoning_gym",
        "Apache-2.0",
        "Rg",
        "https://github.com/open-thought/reasoning-gym",
    ),
    "rlve": SuiteInfo(
        "rlve",
        "rlve-gym",
        "0.0.1",
        "Gym",
        "MIT",
        "Rlve",
        "https://github.com/Zhiyuan-Zeng/RLVE",
    ),
    "textarena": SuiteInfo(
        "textarena",
        "textarena",
        "0.7.4",
        "textarena",
        "MIT",
        "Ta",
        "https://github.com/LeonGuertler/TextArena",
    ),
}


def known_suite(suite: str) -> SuiteInfo:
    """The suite ``suite``, installed or not.

    Raises:
        UnknownTaskError: No such suite (close matches suggested).
    """
    if suite not in SUITES:
        raise UnknownTaskError(
            f"No suite named {suite!r}.{suggest(suite, SUITES)} The suites are: "
            f"{', '.join(SUITES)}."
        )
    return SUITES[suite]


def require_suite(suite: str) -> SuiteInfo:
    """The suite ``suite``, installed.

    Raises:
        UnknownTaskError: No such suite (close matches suggested).
        SuiteNotInstalledError: Its package is missing (the install line is given).
    """
    info = known_suite(suite)
    if importlib.util.find_spec(info.module) is None:
        raise SuiteNotInstalledError(
            f"The {suite} suite is not installed (its package {info.distribution} is "
            f"missing). Install it with: {info.install_line}"
        )
    return info


def _adapter(suite: str) -> Any:
    if suite == "reasoning-gym":
        from . import rg

        return rg
    if suite == "textarena":
        from . import textarena

        return textarena
    from . import rlve

    return rlve


def task_names(suite: str) -> list[str]:
    """Every task of an installed suite."""
    require_suite(suite)
    return _adapter(suite).task_names()


@dataclass(frozen=True)
class SuiteEnvSpec:
    """One environment an import registers: a suite's task at one level.

    Attributes:
        suite, task, level: What it is.
        name: Its environment (and class) name.
        source: The generated module the registry stores.
        meta: Its metadata (origin ``imported``).
        extra: What the registry keeps about its provenance (``extra["suite"]``).
    """

    suite: str
    task: str
    level: str
    name: str
    source: str
    meta: EnvMetadata
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Unavailable:
    """A requested task and level that cannot become an environment, and why."""

    suite: str
    task: str
    level: str
    reason: str


def parse_levels(text: str | None) -> list[str]:
    """``"0,3,hard"`` -> ``["0", "3", "hard"]`` (default: ``["0"]``)."""
    if text is None or not str(text).strip():
        return ["0"]
    levels = [part.strip() for part in str(text).split(",") if part.strip()]
    for level in levels:
        if level != "hard" and not level.isdigit():
            raise SpadeError(
                f"level {level!r} is not a level: use non-negative integers or 'hard' "
                "(e.g. --levels 0,3)."
            )
    return list(dict.fromkeys(levels))


def _camel(task: str) -> str:
    parts = [p for p in re.split(r"[^A-Za-z0-9]+", task) if p]
    return "".join(p[0].upper() + p[1:] for p in parts)


def env_name(suite: str, task: str, level: str) -> str:
    """``RgBasicArithmeticL3``, ``RgBasicArithmeticHard``, ``RlveCRTL0``; TextArena game IDs
    carry their variant and have no levels: ``TaTicTacToeV0``, ``TaSudokuV0Hard``."""
    suffix = "Hard" if level == "hard" else f"L{level}"
    if suite == "textarena":
        suffix = ""
    return f"{SUITES[suite].prefix}{_camel(task)}{suffix}"[:64]


_RLVE_MATH = re.compile(
    r"Counting|Expectation|Mod|Equation|Sum|Number|GCD|LCM|Prime|Divis|Fraction|Integral|"
    r"Polynomial|Matrix|Determinant|Combinat|Probability|Factor|Digit|Inversion",
)


def plan(
    suite: str, tasks: list[str] | None = None, levels: list[str] | None = None
) -> tuple[list[SuiteEnvSpec], list[Unavailable]]:
    """The environments an import of ``suite`` registers, and what cannot be imported.

    Args:
        tasks: Task names (default: all).
        levels: Levels (default ``["0"]``); ``"hard"`` is reasoning-gym's A.3 set;
            TextArena has level 0 only (its variants are game IDs of their own).

    Raises:
        UnknownTaskError: A task the suite does not have (close matches suggested).
    """
    info = require_suite(suite)
    adapter = _adapter(suite)
    known = adapter.task_names()
    chosen = list(dict.fromkeys(tasks)) if tasks else known
    for task in chosen:
        if task not in known:
            raise UnknownTaskError(
                f"{suite} has no task {task!r}.{suggest(task, known)} "
                f"`spade-envs import --suite {suite} --list-tasks` lists its {len(known)} tasks."
            )
    version = adapter.package_version()
    specs: list[SuiteEnvSpec] = []
    missing: list[Unavailable] = []
    for task in chosen:
        for level in levels or ["0"]:
            try:
                spec = _spec(info, adapter, version, task, level)
            except _NotAvailable as exc:
                missing.append(Unavailable(suite, task, level, str(exc)))
                continue
            specs.append(spec)
    return specs, missing


class _NotAvailable(Exception):
    pass


def _spec(info: SuiteInfo, adapter: Any, version: str, task: str, level: str) -> SuiteEnvSpec:
    # How the version is played: suite tasks answer once; TextArena games set their own.
    kind, players, max_turns, knobs = "text", 1, 1, {"max_attempts": 1}
    if info.id == "reasoning-gym":
        available = adapter.levels_of(task)
        if level not in available:
            raise _NotAvailable(f"{task} has levels {', '.join(available)}")
        try:
            attrs = adapter.resolve(task, level)
        except Exception as exc:
            raise _NotAvailable(f"its configuration fails: {type(exc).__name__}: {exc}") from exc
        base = "ReasoningGymTask"
        body = {k: attrs[k] for k in ("module", "dataset_class", "config_class", "config")}
        skill = attrs["skill"]
        category = adapter.hard_configs().get(task, {}).get("category", "")
        where = "the A.3 hard configuration" if level == "hard" else f"curriculum level {level}"
        description = (
            f"reasoning-gym task {task} ({attrs['family']}) at {where}. {attrs['summary']}"
        )
        details = {"family": attrs["family"], "category": category}
    elif info.id == "textarena":
        try:
            attrs = adapter.resolve(task, level)
        except adapter.TextArenaUnavailable as exc:  # a download, an import failure ...
            raise _NotAvailable(str(exc)) from exc
        except Exception as exc:
            raise _NotAvailable(f"its planning fails: {type(exc).__name__}: {exc}") from exc
        base = attrs["base"]
        body = {k: attrs[k] for k in ("module", "env_class", "config", "parameters")}
        skill, description = attrs["skill"], attrs["description"]
        players, max_turns, knobs = attrs["players"], attrs["parameters"]["max_turns"], {}
        kind = "game" if players == 2 else "text"
        details = {"game": attrs["game"], "players": players}
    else:
        if level == "hard":
            raise _NotAvailable("RLVE has numbered levels only")
        try:
            attrs = adapter.resolve(task, int(level))
        except Exception as exc:
            raise _NotAvailable(
                f"its controller fails at level {level}: {type(exc).__name__}: {exc}"
            ) from exc
        base = "RlveTask"
        body = {k: attrs[k] for k in ("module", "env_class", "parameters")}
        skill = "math" if _RLVE_MATH.search(task) else "logic"
        description = f"RLVE task {task} at difficulty level {level}. {attrs['summary']}"
        details = {}
    for key, value in body.items():
        if not literal_round_trip(value):
            raise _NotAvailable(
                f"its {key} is not plain data that survives storage: {value!r:.120}"
            )
    name = env_name(info.id, task, level)
    description = " ".join(description.split())[:600]
    source = _render(info, base, name, version, task, level, skill, description, body)
    meta = EnvMetadata(
        name=name,
        kind=kind,
        skill=skill,
        description=description,
        max_turns=max_turns,
        reward_range=(0.0, 1.0),
        knobs=knobs,
        origin="imported",
        players=players,
    )
    extra = {
        "suite": {
            "id": info.id,
            "task": task,
            "level": level,
            "version": version,
            "distribution": info.distribution,
            "licence": info.licence,
            "homepage": info.homepage,
            **details,
        }
    }
    return SuiteEnvSpec(info.id, task, level, name, source, meta, extra)


def _render(
    info: SuiteInfo,
    base: str,
    name: str,
    version: str,
    task: str,
    level: str,
    skill: str,
    description: str,
    body: dict[str, Any],
) -> str:
    lines = [
        f'"""{info.id} {version} task {task} at level {level}, imported by spade-envs.',
        "",
        f"{info.distribution} is {info.licence}-licensed: {info.homepage}",
        '"""',
        "",
        f"from spade_envs import {base}",
        "",
        "",
        f"class {name}({base}):",
        f"    skill = {skill!r}",
        f"    description = {description!r}",
        f"    suite_version = {version!r}",
        f"    task = {task!r}",
        f"    level = {level!r}",
    ]
    for key, value in body.items():
        text = pprint.pformat(value, width=88, sort_dicts=False)
        lines.append(f"    {key} = " + text.replace("\n", "\n" + " " * (len(key) + 7)))
    return "\n".join(lines) + "\n"
