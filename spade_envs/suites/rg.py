"""reasoning-gym (PyPI ``reasoning-gym``, Apache-2.0) tasks as suite environments.

Each task at a level is one environment: level ``"0"``, ``"1"``, ... is the task's own
curriculum at that global level (``set_global_level``), ``"hard"`` the configuration of
the reasoning-gym paper's appendix A.3 (the "RG hard" columns of SPADE's evaluation).
The resolved configuration is written into the environment's source, so an episode
depends only on the stored code, the package version and the seed:
``reset(seed=s)`` is item 0 of ``create_dataset(task, size=1, seed=s, **config)``.
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import json
from functools import lru_cache
from typing import Any, ClassVar

from .base import Problem, SuiteTask, import_leaf, suite_class

__all__ = ["ReasoningGymTask", "RG_SKILLS", "hard_configs", "PACKAGE_MODULE"]

#: The package's import name.
PACKAGE_MODULE = "reasoning_gym"
#: Our skill family for each reasoning-gym package (the task's module's parent).
RG_SKILLS = {
    "algebra": "math",
    "arithmetic": "math",
    "geometry": "math",
    "graphs": "math",
    "probability": "math",
    "algorithmic": "code",
    "code": "code",
    "arc": "pattern",
    "cognition": "pattern",
    "induction": "pattern",
    "games": "planning",
    "logic": "logic",
}


class ReasoningGymTask(SuiteTask):
    """A reasoning-gym task: the question of one generated item, scored by the dataset's
    own ``score_answer``. Subclasses set the class attributes below (the importer writes
    them); reasoning-gym offers no hint, so there is none.

    Class attributes:
        module: The dataset's module (under ``reasoning_gym.``).
        dataset_class: The dataset class in that module.
        config_class: Its configuration dataclass (same module).
        config: The configuration's fields that differ from their defaults (without
            ``seed`` and ``size``).
    """

    suite: ClassVar[str] = "reasoning-gym"
    licence: ClassVar[str] = "Apache-2.0"
    module: ClassVar[str] = ""
    dataset_class: ClassVar[str] = ""
    config_class: ClassVar[str] = ""
    config: ClassVar[dict[str, Any]] = {}

    def _classes(self) -> tuple[type, type]:
        if not self.module.startswith(PACKAGE_MODULE + "."):
            raise ValueError(f"module must be inside {PACKAGE_MODULE}, got {self.module!r}")
        loaded = import_leaf(self.module)
        return (
            suite_class(loaded, self.dataset_class, PACKAGE_MODULE),
            suite_class(loaded, self.config_class, PACKAGE_MODULE),
        )

    def _generate(self, seed: int) -> Problem:
        dataset_cls, config_cls = self._classes()
        config = config_cls(**self.config, seed=seed, size=1)
        if hasattr(config, "validate"):
            config.validate()
        dataset = dataset_cls(config=config)
        entry = dataset[0]
        return Problem(str(entry["question"]), state=(dataset, entry))

    def _reference(self) -> str:
        dataset, entry = self.problem.state
        answer = entry.get("answer")
        if answer is not None:
            answer = answer if isinstance(answer, str) else str(answer)
            score = float(dataset.score_answer(answer, entry))
            if score < 1.0 - 1e-9:
                raise self._gold_fails(answer, score)
            return answer
        example, reason = _example_solution(dataset, entry)
        if example is None:
            raise self._no_answer(reason)
        return example

    def _score(self, answer: str | None) -> float:
        dataset, entry = self.problem.state
        return float(dataset.score_answer(answer, entry))


#: Where tasks that accept any valid solution (and store no ``answer``) keep an example one.
EXAMPLE_ANSWER_KEYS = ("possible_answer", "example_answer", "example_correct_answer")


def _example_solution(dataset: Any, entry: dict[str, Any]) -> tuple[str | None, str]:
    """A task that accepts any valid solution stores no ``answer``, but may keep an example
    one in its metadata: it counts only if the task's own scorer gives it full marks.
    Returns the example, or None and why there is none."""
    metadata = entry.get("metadata") or {}
    examples = [metadata[k] for k in EXAMPLE_ANSWER_KEYS if k in metadata]
    for example in examples:
        forms = [example] if isinstance(example, str) else [json.dumps(example), str(example)]
        for form in forms:
            try:
                if float(dataset.score_answer(form, entry)) >= 1.0 - 1e-9:
                    return form, ""
            except Exception:
                continue
    if examples:
        return None, (
            "the task accepts any valid solution; its stored example solution does not get "
            "full marks from its own scorer"
        )
    return None, "the task accepts any valid solution and stores none (no reference solver here)"


# ----- planning (the importing process: the whole package is imported there) ----------------
def _package() -> Any:
    import reasoning_gym  # noqa: F401  (registers every dataset)
    from reasoning_gym import factory

    return factory


def task_names() -> list[str]:
    """Every reasoning-gym task (``composite`` combines others and is left out)."""
    return sorted(n for n in _package().DATASETS if n != "composite")


@lru_cache(maxsize=1)
def hard_configs() -> dict[str, dict[str, Any]]:
    """The appendix-A.3 hard configurations and their SPADE category, by task."""
    text = importlib.resources.files(__package__).joinpath("data/rg_hard.json").read_text()
    return json.loads(text)


def levels_of(task: str) -> list[str]:
    """The levels a task has: its curriculum's global levels, and ``hard`` when A.3 lists it."""
    factory = _package()
    levels = ["0"]
    if factory.has_curriculum(task):
        curriculum = factory.create_curriculum(task)
        top = max((len(a.levels) for a in curriculum.attributes.values()), default=1)
        levels = [str(i) for i in range(top)]
    if task in hard_configs():
        levels.append("hard")
    return levels


def resolve(task: str, level: str) -> dict[str, Any]:
    """The class attributes of ``task`` at ``level`` (module, classes, full config)."""
    factory = _package()
    dataset_cls, config_cls = factory.DATASETS[task]
    if level == "hard":
        config = config_cls(**hard_configs()[task]["config"])
    elif level == "0" and not factory.has_curriculum(task):
        config = config_cls()
    else:
        curriculum = factory.create_curriculum(task)
        curriculum.set_global_level(int(level))
        config = curriculum.generate_configuration()
    if hasattr(config, "validate"):
        config.validate()  # a curriculum level can give a configuration its task refuses
    # Only what differs from the dataclass defaults is stored: the defaults belong to the
    # package version (named in the source) and some are not plain data (enums, dates).
    values = {
        f.name: getattr(config, f.name)
        for f in dataclasses.fields(config)
        if f.name not in ("seed", "size") and getattr(config, f.name) != _default(f)
    }
    package = dataset_cls.__module__.split(".")[1]
    doc = (dataset_cls.__doc__ or "").strip().split("\n")[0].strip()
    return {
        "module": dataset_cls.__module__,
        "dataset_class": dataset_cls.__name__,
        "config_class": config_cls.__name__,
        "config": values,
        "skill": RG_SKILLS.get(package, "logic"),
        "family": package,
        "summary": doc,
    }


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def package_version() -> str:
    from importlib.metadata import version

    return version("reasoning-gym")
