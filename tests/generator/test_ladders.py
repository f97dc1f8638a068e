"""Difficulty ladders: rungs are seeds with easier hole values, registered as versions."""

from __future__ import annotations

import pytest

from spade_envs.core.loader import load_env_class
from spade_envs.generator.ladders import (
    LadderError,
    is_rung_label,
    parse_rung,
    register_rung,
    resolve_labels,
    rung_labels,
    rung_source,
)
from spade_envs.generator.scaffold import base_name
from spade_envs.registry import Registry
from spade_envs.seeds import seed_class


@pytest.mark.parametrize("label", rung_labels())
def test_every_rung_is_easier_and_its_solution_wins_within_its_turns(label):
    rung = parse_rung(label)
    cls = load_env_class(rung_source(label)[0])
    seed = seed_class(rung.seed)
    assert base_name(cls.__name__) == rung.seed  # held out with its seed, by base name
    assert cls.max_turns <= seed.max_turns
    for seed_value in range(100_000, 100_012):  # the evaluation's reset seeds
        env = cls()
        env.reset(seed=seed_value)
        actions = env.solution()
        assert len(actions) <= cls.max_turns, (label, seed_value, actions)
        for action in actions:
            _, _, terminated, truncated, info = env.step(action)
            assert info.get("action_parsed", True) is True
            if terminated or truncated:
                break
        assert env.won, (label, seed_value)


def test_the_easiest_number_guess_rung_is_the_issues_example():
    cls = load_env_class(rung_source("NumberGuess@0")[0])
    assert (cls.knobs["upper"], cls.max_turns) == (8, 4)
    easiest, harder = (load_env_class(rung_source(f"NumberGuess@{k}")[0]) for k in (0, 1))
    assert easiest.knobs["upper"] < harder.knobs["upper"]  # each ladder runs easiest first
    assert rung_labels(["NumberGuess", "Nim"]) == ["NumberGuess@0", "NumberGuess@1"]


def test_labels_are_checked_with_what_exists():
    assert is_rung_label("NumberGuess@0") and not is_rung_label("spade/NumberGuess-v1")
    with pytest.raises(LadderError, match=r"'NumberGues' has no difficulty ladder.*NumberGuess"):
        parse_rung("NumberGues@0")
    with pytest.raises(LadderError, match=r"levels 0 to 1 .*'NumberGuess', is the top"):
        parse_rung("NumberGuess@2")
    with pytest.raises(LadderError, match="levels 0 to 1"):
        parse_rung("NumberGuess@easy")


def test_a_rung_is_registered_once_as_a_validated_child_of_its_seed(tmp_path):
    registry = Registry(f"sqlite:///{tmp_path / 'r.db'}")
    try:
        env_id = register_rung(registry, "CounterfeitCoin@0")
        assert register_rung(registry, "CounterfeitCoin@0") == env_id  # identical source
        record = registry.get(env_id)
        assert record.status == "validated" and record.origin == "seed"
        assert tuple(record.parents) == ("spade/CounterfeitCoin-v1",)
        assert record.extra["ladder"] == {
            "seed": "CounterfeitCoin",
            "level": 0,
            "filling": {"max_turns": 4, "knobs": {"coins": 3}},
        }
        assert record.max_turns == 4
        assert resolve_labels(registry, ["CounterfeitCoin@0", "Nim"]) == [env_id, "Nim"]
    finally:
        registry.close()
