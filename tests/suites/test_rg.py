"""The reasoning-gym adapter against the real package: plans, sources, episodes."""

from __future__ import annotations

import types

import pytest

from spade_envs.suites import UnknownTaskError, plan
from spade_envs.suites.catalog import SuiteNotInstalledError, require_suite
from spade_envs.suites.rg import hard_configs, levels_of, resolve


def _env(spec, **knobs):
    module = types.ModuleType(spec.name)
    exec(compile(spec.source, "<test>", "exec"), module.__dict__)
    return getattr(module, spec.name)(**knobs)


def test_an_episode_is_the_suites_own_item_for_that_seed():
    import reasoning_gym

    (spec,), _ = plan("reasoning-gym", ["chain_sum"], ["2"])
    env = _env(spec)
    attrs = resolve("chain_sum", "2")
    for seed in (0, 5, 123456):
        entry = reasoning_gym.create_dataset("chain_sum", size=1, seed=seed, **attrs["config"])[0]
        obs, _ = env.reset(seed=seed)
        assert obs.startswith(entry["question"])
        assert env.solution() == [f"<answer>{entry['answer']}</answer>"]
        assert env.step(env.solution()[0])[1] == 1.0


def test_the_source_names_suite_task_level_version_and_round_trips_its_config():
    (spec,), _ = plan("reasoning-gym", ["basic_arithmetic"], ["hard"])
    env = _env(spec)
    assert (env.suite, env.task, env.level, env.licence) == (
        "reasoning-gym",
        "basic_arithmetic",
        "hard",
        "Apache-2.0",
    )
    assert env.config == resolve("basic_arithmetic", "hard")["config"]
    assert env.config["max_terms"] == hard_configs()["basic_arithmetic"]["config"]["max_terms"]
    assert spec.name == "RgBasicArithmeticHard"
    assert spec.meta.origin == "imported" and spec.extra["suite"]["category"] == "math"
    assert spec.extra["suite"]["version"] == env.suite_version


def test_stored_configuration_keeps_tuples_and_int_keys_through_the_registry(tmp_path):
    from spade_envs.core.metadata import describe
    from spade_envs.registry import Registry
    from spade_envs.suites.catalog import SUITES, _render

    config = {"operators": ("+", "-"), 3: {"pair": (1, 2.5)}, "none": None, "flag": True}
    source = _render(
        SUITES["reasoning-gym"],
        "ReasoningGymTask",
        "RgRoundTrip",
        "0.1.25",
        "chain_sum",
        "0",
        "math",
        "round trip",
        {"module": "reasoning_gym.arithmetic.chain_sum", "config": config},
    )
    module = types.ModuleType("m")
    exec(source, module.__dict__)
    registry = Registry(f"sqlite:///{tmp_path / 'r.db'}")
    record = registry.register(source, describe(module.RgRoundTrip, origin="imported"))
    stored = types.ModuleType("s")
    exec(registry.get(record.id).source, stored.__dict__)
    back = stored.RgRoundTrip.config
    assert back == config and list(back) == list(config)
    assert isinstance(back["operators"], tuple) and isinstance(back[3]["pair"], tuple)


def test_tasks_without_a_stored_answer_replay_a_checked_example_or_say_why():
    specs, _ = plan("reasoning-gym", ["graph_color", "rush_hour"], ["0"])
    graph, rush = (_env(s) for s in specs)
    graph.reset(seed=1)
    assert graph.step(graph.solution()[0])[1] == 1.0  # the example solution gets full marks
    rush.reset(seed=1)
    with pytest.raises(NotImplementedError, match="accepts any valid solution and stores none"):
        rush.solution()


def test_hard_set_is_the_a3_hundred_in_spades_four_categories():
    hard = hard_configs()
    assert len(hard) == 100
    assert {v["category"] for v in hard.values()} == {"math", "algorithmic", "cognition", "logic"}
    specs, missing = plan("reasoning-gym", None, ["hard"])
    assert len(specs) == 100 and all(m.reason.endswith(("3", "8", "12")) for m in missing)


def test_a_level_the_task_lacks_or_refuses_is_listed_not_skipped():
    specs, missing = plan("reasoning-gym", ["knight_swap", "boxnet"], ["0", "hard", "99"])
    reasons = {(m.task, m.level): m.reason for m in missing}
    assert "min_nodes must be >= 6" in reasons[("knight_swap", "0")]
    assert reasons[("boxnet", "hard")].startswith("boxnet has levels 0, 1")
    assert ("boxnet", "99") in reasons
    assert [(s.task, s.level) for s in specs] == [("knight_swap", "hard"), ("boxnet", "0")]
    assert "8" in levels_of("boxnet") and "hard" not in levels_of("boxnet")


def test_an_unknown_task_gets_close_matches_and_the_listing_command():
    with pytest.raises(
        UnknownTaskError, match=r"no task 'chain_sums'.*Did you mean 'chain_sum'.*--list-tasks"
    ):
        plan("reasoning-gym", ["chain_sums"])


def test_a_missing_suite_gives_the_exact_install_line(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "Gym" else real(name, *a)
    )
    with pytest.raises(SuiteNotInstalledError, match=r"pip install 'rlve-gym==0\.0\.1'"):
        require_suite("rlve")
    with pytest.raises(UnknownTaskError, match="Did you mean 'rlve'"):
        require_suite("rlv")
