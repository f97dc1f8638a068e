"""RLVE (PyPI ``rlve-gym``, import name ``Gym``, MIT) tasks as suite environments.

A level ``d`` is the task's parameter controller after ``d`` calls of ``update()``; its
parameter list is written into the environment's source, and each seed picks one of
those parameter sets and generates the problem. RLVE's own ``generator()`` is not used:
it runs the generation in a thread that outlives its timeout, hides every error behind
a bare ``except`` and seeds the process's global RNGs. Here the generation runs in the
calling thread (the sandbox bounds its time and memory), its errors surface, and the
global ``random``/``numpy`` states are restored afterwards. RLVE imports torch only to
seed it; a stand-in takes its place while a task module is imported, so a sandbox
worker never loads torch.
"""

from __future__ import annotations

import contextlib
import copy
import random
import re
import sys
import types
from collections.abc import Iterator
from typing import Any, ClassVar

from .base import Problem, SuiteTask, import_leaf, suite_class

__all__ = ["RlveTask", "PACKAGE_MODULE"]

PACKAGE_MODULE = "Gym"
_TASKS_PACKAGE = "Gym.environments."


@contextlib.contextmanager
def _torch_stand_in() -> Iterator[None]:
    """A ``torch`` with the two seeding functions RLVE's base module calls, for the import."""
    if "torch" in sys.modules:
        yield
        return
    stand_in = types.ModuleType("torch")
    stand_in.manual_seed = lambda seed: None  # type: ignore[attr-defined]
    stand_in.cuda = types.SimpleNamespace(manual_seed_all=lambda seed: None)  # type: ignore[attr-defined]
    sys.modules["torch"] = stand_in
    try:
        yield
    finally:
        if sys.modules.get("torch") is stand_in:
            del sys.modules["torch"]


@contextlib.contextmanager
def _seeded_globals(seed: int) -> Iterator[None]:
    """Seed ``random`` and ``numpy.random`` as RLVE expects, then put their states back."""
    import numpy as np

    saved_random, saved_numpy = random.getstate(), np.random.get_state()
    random.seed(seed)
    np.random.seed(seed % 2**32)
    try:
        yield
    finally:
        random.setstate(saved_random)
        np.random.set_state(saved_numpy)


def _answer_forms(reference: Any) -> list[str]:
    """Ways to type a stored reference answer; the task's scorer picks the one it takes."""
    if isinstance(reference, str):
        return [reference]
    if isinstance(reference, (list, tuple)):
        if reference and all(isinstance(r, (list, tuple)) for r in reference):
            rows = [" ".join(map(str, r)) for r in reference]
            return ["\n".join(rows), " ".join(rows), str(list(reference))]
        flat = [str(r) for r in reference]
        return [
            " ".join(flat),
            ",".join(flat),
            "\n".join(flat),
            "".join(flat),
            str(list(reference)),
        ]
    return [str(reference)]


class RlveTask(SuiteTask):
    """An RLVE environment: its prompt, scored by its own ``scorer``; a win is RLVE's
    ``accuracy`` (score at its passing threshold); below that, the reward is the score
    clipped to [0, 1] (RLVE scores run from -1, a format error, to +1).

    Class attributes:
        module: The task's module (under ``Gym.environments.``).
        env_class: The environment class in that module.
        parameters: The controller's parameter list at this level (a seed picks one).
    """

    suite: ClassVar[str] = "rlve"
    licence: ClassVar[str] = "MIT"
    module: ClassVar[str] = ""
    env_class: ClassVar[str] = ""
    parameters: ClassVar[list[dict[str, Any]]] = []

    def _task_class(self) -> type:
        if not self.module.startswith(_TASKS_PACKAGE):
            raise ValueError(f"module must be inside {_TASKS_PACKAGE}, got {self.module!r}")
        with _torch_stand_in():
            loaded = import_leaf(self.module)
        return suite_class(loaded, self.env_class, PACKAGE_MODULE)

    def _generate(self, seed: int) -> Problem:
        if not self.parameters:
            raise ValueError("the task has no parameter sets at this level")
        env = self._task_class()()
        index = random.Random(seed).randrange(len(self.parameters))
        parameter = copy.deepcopy(self.parameters[index])
        with _seeded_globals(seed):
            env.seed, env.parameter = seed, parameter
            env._generate()
            if env.parameter is None:
                raise ValueError("the task's generator gave up at this seed (parameter None)")
            question = env.prompt_generator()
        return Problem(question, state=env, details={"parameter_index": index})

    def _reference(self) -> str:
        env = self.problem.state
        if "reference_answer" not in env.parameter:
            kept = sorted(k for k in env.parameter if "answer" in k or "gold" in k)
            what = f" (it keeps only {', '.join(kept)})" if kept else ""
            raise self._no_answer(f"RLVE stores no reference answer for this task{what}")
        reference = env.parameter["reference_answer"]
        best = -1.0
        for form in _answer_forms(reference):
            try:
                score = float(env.scorer(f"<answer>{form}</answer>"))
            except Exception:  # a form the scorer cannot parse
                continue
            if score >= env.passing_reward_threshold - 1e-6:
                return form
            best = max(best, score)
        raise self._gold_fails(str(reference), best)

    def _score(self, answer: str | None) -> float:
        env = self.problem.state
        output = "" if answer is None else f"<answer>{answer}</answer>"
        score = float(env.scorer(output))
        if score >= env.passing_reward_threshold - 1e-6:
            return 1.0
        return min(max(score, 0.0), 0.999999)


# ----- planning (the importing process) -----------------------------------------------------
def _package() -> tuple[dict[str, type], dict[str, type]]:
    with _torch_stand_in():
        import Gym.environments as environments
        import Gym.parameter_controllers as controllers
    return environments.identifier2environment, controllers.identifier2controller


def task_names() -> list[str]:
    """Every RLVE task identifier."""
    return sorted(_package()[0])


def resolve(task: str, level: int) -> dict[str, Any]:
    """The class attributes of ``task`` at level ``level``."""
    environments, controllers = _package()
    env_cls = environments[task]
    controller = controllers[task]()
    for _ in range(int(level)):
        controller.update()
    parameters = [dict(p) for p in controller.get_parameter_list()]
    return {
        "module": env_cls.__module__,
        "env_class": env_cls.__name__,
        "parameters": parameters,
        "summary": _summary(getattr(env_cls, "prompt_template", "")),
    }


def _summary(template: str) -> str:
    """The task's prompt template as a description: placeholders named, the output-format
    part left out (the environment adds its own answer-format line)."""
    text = re.split(r"\*\*Output Format", str(template), maxsplit=1)[0]
    text = re.sub(r"\{(\w+)\}", r"\1", text)
    text = " ".join(text.replace("**", "").split())
    return text if len(text) <= 240 else text[:239].rsplit(" ", 1)[0] + "…"


def package_version() -> str:
    from importlib.metadata import version

    return version("rlve-gym")
