"""The RLVE adapter against the real package: levels, gold answers, no torch, RNG hygiene."""

from __future__ import annotations

import subprocess
import sys
import types

import pytest

from spade_envs.suites import plan
from spade_envs.suites.rlve import resolve


def _env(spec):
    module = types.ModuleType(spec.name)
    exec(compile(spec.source, "<test>", "exec"), module.__dict__)
    return getattr(module, spec.name)()


def test_levels_are_the_controllers_parameter_lists():
    specs, _ = plan("rlve", ["CRT"], ["0", "3"])
    low, high = (_env(s) for s in specs)
    assert low.parameters == resolve("CRT", 0)["parameters"]
    assert high.parameters == resolve("CRT", 3)["parameters"] != low.parameters
    assert [s.name for s in specs] == ["RlveCRTL0", "RlveCRTL3"]
    _, info = high.reset(seed=4)
    assert info["parameter_index"] in range(len(high.parameters))


def test_gold_wins_wrong_loses_and_a_format_error_is_zero():
    (spec,), _ = plan("rlve", ["CRT"], ["3"])
    env = _env(spec)
    for seed in range(5):
        env.reset(seed=seed)
        assert env.step(env.solution()[0])[1] == 1.0
        env.reset(seed=seed)
        assert env.step("no tags at all")[1] == 0.0
        env.reset(seed=seed)
        reward = env.step("<answer>-5</answer>")[1]  # RLVE scores a negative x as -1
        assert reward == 0.0


def test_an_optimisation_task_without_a_reference_answer_is_unproven_with_the_reason():
    (spec,), _ = plan("rlve", ["Knapsack"], ["0"])
    env = _env(spec)
    env.reset(seed=1)
    with pytest.raises(NotImplementedError, match="no reference answer.*gold_answer"):
        env.solution()


def test_episodes_load_no_torch_and_leave_the_global_rngs_alone():
    (spec,), _ = plan("rlve", ["CRT"], ["0"])
    code = (
        "import random, sys, types\n"
        "import numpy as np\n"
        "random.seed(99); np.random.seed(99)\n"
        "before = (random.getstate(), np.random.get_state()[1].tolist())\n"
        f"src = {spec.source!r}\n"
        "m = types.ModuleType('m'); exec(src, m.__dict__)\n"
        f"env = m.{spec.name}(); env.reset(seed=3); env.step(env.solution()[0])\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "assert (random.getstate(), np.random.get_state()[1].tolist()) == before\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "ok", done.stderr


def test_a_task_module_outside_the_suite_is_refused():
    (spec,), _ = plan("rlve", ["CRT"], ["0"])
    source = spec.source.replace("Gym.environments.crt.environment", "os")
    module = types.ModuleType("m")
    exec(source, module.__dict__)
    env = getattr(module, spec.name)()
    with pytest.raises(Exception, match="failed to generate.*must be inside Gym.environments"):
        env.reset(seed=0)
