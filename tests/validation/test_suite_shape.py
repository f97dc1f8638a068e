"""The suite exemption: only the importer's exact shape, only with the importer's flag.

A suite task has no hint by design, so the validator skips every hint check for it.
That is only safe for the module the importer writes itself: anything else (the same
text registered with ``spade-envs register``, a statement after the class, a decorator,
a rebound adapter) is an ordinary environment whose hint() is checked.
"""

from __future__ import annotations

import pytest

from spade_envs.validation.budget import get_budget
from spade_envs.validation.static import static_checks

IMPORTED = '''"""reasoning-gym 0.1.25 task basic_arithmetic at level 0, imported by spade-envs.

reasoning-gym is Apache-2.0-licensed: https://github.com/open-thought/reasoning-gym
"""

from spade_envs import ReasoningGymTask


class RgBasicArithmeticL0(ReasoningGymTask):
    skill = 'math'
    description = 'reasoning-gym task basic_arithmetic (arithmetic) at curriculum level 0.'
    suite_version = '0.1.25'
    task = 'basic_arithmetic'
    level = '0'
    module = 'reasoning_gym.arithmetic.basic_arithmetic'
    dataset_class = 'BasicArithmeticDataset'
    config_class = 'BasicArithmeticDatasetConfig'
    config = {'max_terms': 2, 'max_digits': 1}
'''
RLVE = '''"""rlve 0.0.1 task CRT at level 0, imported by spade-envs."""

from spade_envs import RlveTask


class RlveCRTL0(RlveTask):
    skill = 'math'
    description = 'RLVE task CRT at difficulty level 0.'
    suite_version = '0.0.1'
    task = 'CRT'
    level = '0'
    module = 'rlve.crt'
    env_class = 'CRT'
    parameters = {'n': 2}
'''


def _env_class(source: str, *, suite_import: bool):
    results, info = static_checks(source, get_budget("fast"), suite_import=suite_import)
    return {r.name: r for r in results}["env_class"], info


@pytest.mark.parametrize("source", [IMPORTED, RLVE], ids=["reasoning-gym", "rlve"])
def test_the_importers_own_module_is_a_suite_task_without_a_hint(source):
    check, info = _env_class(source, suite_import=True)
    assert check.passed, check.reason
    assert not info.has_hint and info.suite_task
    assert check.details == {"suite_task": True, "origin": "suite importer"}


@pytest.mark.parametrize("source", [IMPORTED, RLVE], ids=["reasoning-gym", "rlve"])
def test_the_same_module_from_anywhere_else_is_refused(source):
    check, info = _env_class(source, suite_import=False)
    assert not check.passed and not info.suite_task
    assert "suite tasks are registered only by `spade-envs import --suite`" in check.reason


def _module_after(extra: str) -> str:
    return IMPORTED + "\n\n" + extra + "\n"


TAMPERED = {
    "an assignment to the class after it": _module_after(
        "RgBasicArithmeticL0.hint = lambda self: str(self.problem.state[1]['answer'])"
    ),
    "setattr after the class": _module_after(
        "setattr(RgBasicArithmeticL0, 'hint', lambda self: 'x')"
    ),
    "an assignment to the adapter": _module_after("ReasoningGymTask.hint = lambda self: 'x'"),
    "a function after the class": _module_after("def helper():\n    return 1"),
    "a bare expression after the class": _module_after("print('hello')"),
    "a decorator": IMPORTED.replace(
        "class RgBasicArithmeticL0",
        "def keep(cls):\n    return cls\n\n\n@keep\nclass RgBasicArithmeticL0",
    ),
    "a metaclass keyword": IMPORTED.replace(
        "(ReasoningGymTask)", "(ReasoningGymTask, metaclass=type(ReasoningGymTask))"
    ),
    "an annotated attribute": IMPORTED.replace("    level = '0'", "    level: str = '0'"),
    "an attribute the importer never writes": IMPORTED.replace(
        "    level = '0'", "    level = '0'\n    max_turns = 3"
    ),
    "a chained assignment": IMPORTED.replace("    level = '0'", "    level = task2 = '0'"),
    "an aliased import": IMPORTED.replace(
        "import ReasoningGymTask", "import ReasoningGymTask as ReasoningGymTask"
    ),
    "a second import": IMPORTED.replace(
        "from spade_envs import ReasoningGymTask",
        "from spade_envs import ReasoningGymTask\nfrom spade_envs import boxed",
    ),
    "a rebound adapter": IMPORTED.replace(
        "\n\nclass ", "\nReasoningGymTask = ReasoningGymTask\n\n\nclass "
    ),
}


@pytest.mark.parametrize("source", TAMPERED.values(), ids=list(TAMPERED))
def test_anything_but_the_exact_shape_is_an_ordinary_environment(source):
    """With the importer's flag, a module that is not exactly what it writes gets no
    exemption: it must define its own hint() (none here), so it is refused."""
    for suite_import in (True, False):
        check, info = _env_class(source, suite_import=suite_import)
        assert not check.passed, (suite_import, check)
        assert not info.suite_task


def test_a_suite_subclass_with_its_own_hint_is_checked_like_any_other():
    source = IMPORTED.replace(
        "    config = {'max_terms': 2, 'max_digits': 1}\n",
        "    config = {'max_terms': 2, 'max_digits': 1}\n\n"
        "    def hint(self):\n        return 'Add carefully.'\n",
    )
    for suite_import in (True, False):
        check, info = _env_class(source, suite_import=suite_import)
        assert check.passed, check.reason
        assert info.has_hint and not info.suite_task
