"""The base class of suite environments: one task of an external suite at one level.

A suite environment is a :class:`~spade_envs.TextEnv` whose episode is one problem of
the suite's generator, answered in ``<answer>...</answer>`` (or ``\\boxed{}``) and scored
by the suite's own scorer. The registry stores a small generated subclass naming the
suite module, the task and its exact configuration; the suite's code runs wherever the
environment runs (a sandbox worker, by default), imported there on first use.

Nothing here imports a suite at module import time, so ``import spade_envs`` stays light.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import math
import sys
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..core.answers import extract_boxed, extract_tag
from ..core.pyparse import literal_value
from ..core.text_env import TextEnv
from ..error import EnvContractError, SpadeError

__all__ = [
    "ANSWER_FORMAT",
    "Problem",
    "SuiteGenerationError",
    "SuiteGoldError",
    "SuiteTask",
    "derived_seed",
    "import_leaf",
    "literal_round_trip",
    "read_answer",
    "suite_class",
]

#: The one answer-format line added under every suite question.
ANSWER_FORMAT = (
    "Put your final answer inside <answer> and </answer> (\\boxed{...} is accepted too)."
)
#: Attempts at generating a problem: the requested seed, then derived seeds.
GENERATION_ATTEMPTS = 4


class SuiteGenerationError(SpadeError):
    """The suite could not generate a problem at a seed (nor at the seeds derived from it)."""


class SuiteGoldError(SpadeError):
    """The suite's own gold answer does not get full marks from the suite's own scorer."""


@dataclass
class Problem:
    """One generated problem.

    Attributes:
        question: The suite's question text.
        state: Whatever the adapter's scorer needs (the suite's entry or env object).
        details: What else the adapter records (e.g. which parameter set was drawn).
    """

    question: str
    state: Any = None
    details: dict[str, Any] = field(default_factory=dict)


def derived_seed(seed: int, attempt: int) -> int:
    """The seed tried after ``attempt`` failed generations at ``seed`` (deterministic)."""
    if attempt == 0:
        return int(seed)
    digest = hashlib.sha256(f"spade-suite-retry:{seed}:{attempt}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def read_answer(action: str) -> str | None:
    """The marked answer of an action: the last ``<answer>``, else the last ``\\boxed{}``."""
    found = extract_tag(action, "answer")
    if found is None:
        found = extract_boxed(action)
    return None if found is None else found.strip()


def import_leaf(module: str) -> Any:
    """Import ``module`` without running its parent packages' ``__init__`` files.

    Both suites' top-level packages import every task (and matplotlib, torch) on import,
    1-3 s per sandbox worker; one task module needs ~50 ms. Parents not yet imported are
    put in place as bare packages for the import and removed afterwards, so a later
    ``import reasoning_gym`` elsewhere gets the real package.
    """
    if module in sys.modules:
        return sys.modules[module]
    try:
        return _import_without_parents(module)
    except ImportError:
        # A few task modules reach back into their package's __init__ (reasoning-gym's
        # gsm_symbolic imports create_dataset from the package): import it whole.
        importlib.import_module(module.split(".")[0])
        return importlib.import_module(module)


def _import_without_parents(module: str) -> Any:
    parts = module.split(".")
    placed: list[str] = []
    try:
        for depth in range(1, len(parts)):
            package = ".".join(parts[:depth])
            if package in sys.modules:
                continue
            spec = importlib.util.find_spec(package)
            if spec is None or spec.submodule_search_locations is None:
                raise ModuleNotFoundError(f"No module named {package!r}")
            bare = importlib.util.module_from_spec(spec)
            sys.modules[package] = bare
            placed.append(package)
            if depth > 1:
                setattr(sys.modules[".".join(parts[: depth - 1])], parts[depth - 1], bare)
        return importlib.import_module(module)
    finally:
        for package in placed:
            sys.modules.pop(package, None)


def suite_class(module: Any, name: str, package: str) -> type:
    """The class ``name`` of a suite module, refusing anything else: a designer's subclass
    sets these names, and ``getattr`` would as gladly hand it ``__builtins__`` or ``sys``."""
    found = getattr(module, name, None) if not name.startswith("_") else None
    if not (isinstance(found, type) and found.__module__.startswith(package + ".")):
        raise ValueError(f"{name!r} is not a class of {package} in {module.__name__}")
    return found


def literal_round_trip(value: Any) -> bool:
    """Whether ``repr(value)`` reads back as the same value with the same types, deeply
    (tuples stay tuples, int keys stay ints): what a stored configuration must survive."""
    try:
        back = literal_value(repr(value))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return False
    return _same(value, back)


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(
            _same(k, kb) and _same(a[k], b[kb]) for k, kb in zip(a, b)
        )
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


class SuiteTask(TextEnv):
    """One task of an external suite at one difficulty level (abstract).

    Subclasses (one per suite) implement :meth:`_generate` and :meth:`_score`; the
    registry stores a generated subclass per task and level that only sets class
    attributes. ``reset(seed=s)`` generates the suite's problem for seed ``s`` (a seed
    that fails to generate is replaced by a derived one, and ``info`` says so).

    Class attributes:
        suite: The suite's identifier (``"reasoning-gym"``, ``"rlve"``).
        suite_version: The suite package version the task was imported from.
        task: The suite's own task name.
        level: The difficulty level (``"0"``, ``"3"``, ``"hard"``).
        licence: The suite's licence (SPDX).

    Knobs:
        max_attempts: Answers the agent may give; a wrong one before the last gets
            "Incorrect, try again." (never the answer).
    """

    suite: ClassVar[str] = ""
    suite_version: ClassVar[str] = ""
    task: ClassVar[str] = ""
    level: ClassVar[str] = ""
    licence: ClassVar[str] = ""
    knobs: ClassVar[dict[str, Any]] = {"max_attempts": 1}
    max_turns: ClassVar[int] = 1
    #: Questions of hard levels run long (the importer's validation budget allows this).
    max_observation_length: ClassVar[int] = 16_384

    def __init__(self, render_mode: str | None = None, **knobs: Any):
        super().__init__(render_mode=render_mode, **knobs)
        if self.max_attempts < 1:
            raise EnvContractError(f"max_attempts must be at least 1, got {self.max_attempts}.")
        # More attempts than the class's max_turns would truncate the episode early.
        self.max_turns = max(type(self).max_turns, int(self.max_attempts))
        self.problem: Problem | None = None
        self.attempts = 0
        self._requested_seed: int | None = None
        self._generation: dict[str, Any] = {}

    # ----- what each suite adapter provides --------------------------------------------------
    def _generate(self, seed: int) -> Problem:
        """Generate the suite's problem for ``seed`` (raise on failure)."""
        raise NotImplementedError

    def _score(self, answer: str | None) -> float:
        """The suite's score of ``answer`` (None: no marked answer), in [0, 1]."""
        raise NotImplementedError

    def _reference(self) -> str:
        """The suite's reference answer for the current problem, checked by its scorer
        (computed only when asked for: plays never need it).

        Raises:
            NotImplementedError: The suite stores no answer to replay (use
                :meth:`_no_answer` for the message).
            SuiteGoldError: The stored answer does not get full marks.
        """
        raise NotImplementedError

    def _no_answer(self, reason: str) -> NotImplementedError:
        return NotImplementedError(
            f"{self.suite} task {self.task!r} stores no answer to replay: {reason}"
        )

    def _gold_fails(self, answer: str, score: float) -> SuiteGoldError:
        return SuiteGoldError(
            f"{self.suite} task {self.task!r}: its own gold answer {answer[:80]!r} scores "
            f"{score:.3g} under its own scorer, not 1"
        )

    # ----- the TextEnv hooks -----------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        self._requested_seed = seed
        return super().reset(seed=seed, options=options)

    def _reset(self) -> str:
        base = self._requested_seed
        if base is None:
            base = self.rng.getrandbits(31)
        base = int(base) & 0x7FFFFFFF
        failures: list[dict[str, Any]] = []
        for attempt in range(GENERATION_ATTEMPTS):
            problem_seed = derived_seed(base, attempt)
            try:
                problem = self._generate(problem_seed)
            except Exception as exc:  # the suite's own generator failed at this seed
                failures.append({"seed": problem_seed, "error": f"{type(exc).__name__}: {exc}"})
                continue
            break
        else:
            tried = "; ".join(f"seed {f['seed']}: {f['error'][:200]}" for f in failures)
            raise SuiteGenerationError(
                f"{self.suite} task {self.task!r} (level {self.level}) failed to generate a "
                f"problem at seed {base} and at {GENERATION_ATTEMPTS - 1} derived seeds: {tried}"
            )
        self.problem = problem
        self.attempts = 0
        self._generation = {"problem_seed": problem_seed, **problem.details}
        if failures:
            self._generation["replaced_seeds"] = failures
        return f"{problem.question.rstrip()}\n\n{ANSWER_FORMAT}"

    def _reset_info(self) -> dict[str, Any]:
        return {"turn": 0, **self._generation}

    def _step(self, action: str) -> tuple[str, float, bool, dict[str, Any]]:
        if self.problem is None:
            raise EnvContractError(f"{type(self).__name__}: call reset() before step().")
        self.attempts += 1
        answer = read_answer(action)
        # An answer the reader found was understood, right or wrong (the agent's metric).
        info: dict[str, Any] = {"attempt": self.attempts, "action_parsed": answer is not None}
        try:
            score = float(self._score(answer))
        except Exception as exc:  # a suite scorer that breaks on this answer
            score = 0.0
            info["scorer_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        if not math.isfinite(score):
            info["scorer_error"] = f"the suite's scorer returned {score!r}"
            score = 0.0
        score = min(1.0, max(0.0, score))
        info["suite_score"] = score
        if score >= 1.0 - 1e-9:
            return "Correct.", 1.0, True, info
        last = self.attempts >= self.max_attempts
        missing = (
            " No answer found: put it inside <answer> and </answer>." if answer is None else ""
        )
        if last:
            return f"Incorrect.{missing}", score, True, info
        left = self.max_attempts - self.attempts
        return f"Incorrect, try again.{missing} Attempts left: {left}.", 0.0, False, info

    def solution(self) -> list[str]:
        """The suite's gold answer as the one winning action (where the suite has one).

        Raises:
            NotImplementedError: The suite stores no answer to replay.
            SuiteGoldError: The suite's answer fails its own scorer.
        """
        if self.problem is None:
            raise EnvContractError(f"{type(self).__name__}: call reset() before solution().")
        return [f"<answer>{self._reference()}</answer>"]
