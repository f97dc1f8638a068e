"""The validator's probes: seeds in every band plays use, wrong answers drawn from the
observation, and the small ranges the trivial check enumerates."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spade_envs.core.answers import extract_answer, parse_tool_call
from spade_envs.validation.checks import check_seeds
from spade_envs.validation.probes import (
    SEED_BANDS,
    band_seeds,
    enumeration_policies,
    matches_solution,
    stated_range,
    wrong_answers,
)


def _bands_met(seeds: list[int]) -> set[str]:
    return {name for name, low, high in SEED_BANDS for s in seeds if low <= s < high}


def test_the_bands_are_where_plays_reset():
    from spade_envs.trainer.config import EvalSettings

    bands = {name: (low, high) for name, low, high in SEED_BANDS}
    evaluation = EvalSettings()
    assert bands["evaluation"][0] == evaluation.env_seed
    assert bands["evaluation"][1] >= evaluation.env_seed + evaluation.plays
    assert bands["cli"][0] == 0  # gym.make users and the CLI reset with 0, 1, ...
    assert bands["training"][1] >= 1_000_000  # the loop's reset seeds are taken modulo 10**6


@settings(max_examples=200, deadline=None)
@given(count=st.integers(3, 40), seed=st.integers(0, 2**64))
def test_check_seeds_meet_every_band(count, seed):
    seeds = check_seeds(count, seed)
    assert len(seeds) == count == len(set(seeds))
    assert _bands_met(seeds) == {name for name, _, _ in SEED_BANDS}
    if count >= 6:  # the fresh-play check plays seeds[::2][:3]: one per band
        assert _bands_met(seeds[::2][:3]) == {name for name, _, _ in SEED_BANDS}


def test_check_seeds_are_reproducible_with_a_seed_and_fresh_without():
    assert check_seeds(10, 7) == check_seeds(10, 7)
    assert check_seeds(10, None) != check_seeds(10, None)
    # The band seeds are drawn, not fixed: many validations meet many evaluation seeds.
    evaluation = {s for k in range(200) for s in check_seeds(4, k) if 100_000 <= s < 100_064}
    assert len(evaluation) > 40


def test_band_seeds_are_in_their_bands_in_random_order():
    orders = set()
    for k in range(50):
        seeds = band_seeds(random.Random(k))
        assert _bands_met(seeds) == {"cli", "evaluation", "training"}
        orders.add(tuple(next(n for n, lo, hi in SEED_BANDS if lo <= s < hi) for s in seeds))
    assert len(orders) > 1


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("I am thinking of a whole number from 1 to 4. You have 30 guesses.", (1, 4)),
        ("Pick a number between 3 and 10.", (3, 10)),
        ("The code digit lies in 1..8, answer \\boxed{d}.", (1, 8)),
        ("x is in [1, 4] and y in [0, 100]", (1, 4)),
        ("A number from 1 to 100 is hidden.", None),  # 100 values: more than 64
        ("Between 5 and 5.", None),
        ("Turn 3 of 8: the answer is 42.", None),
    ],
)
def test_stated_ranges_are_read(text, found):
    assert stated_range(text) == found


def test_enumeration_is_planned_only_when_enough_turns_make_it_win():
    stated, policies = enumeration_policies("a number from 1 to 4; <answer>n</answer>", 30)
    assert stated == (1, 4)
    labels = [label for label, _ in policies]
    assert labels == ["<answer>N</answer>", "\\boxed{N}", "N"]
    assert policies[1][1] == ["\\boxed{1}", "\\boxed{2}", "\\boxed{3}", "\\boxed{4}"]
    assert enumeration_policies("a number from 1 to 60", 8) == ((1, 60), [])


def _draw(seed: int, observation: str, turns: int = 200, **kw) -> list[str]:
    policy = wrong_answers(seed, **kw)
    return [policy(observation, t) for t in range(turns)]


OBSERVATION = "Guess the four-digit code between 1000 and 9999. Answer with \\boxed{code}."


def test_wrong_answers_are_reproducible_per_seed_and_differ_across_seeds():
    assert _draw(5, OBSERVATION) == _draw(5, OBSERVATION)
    assert _draw(5, OBSERVATION) != _draw(6, OBSERVATION)


def test_wrong_answers_come_in_model_forms_with_values_from_the_observation():
    actions = _draw(1, OBSERVATION, turns=400)
    assert any(a.startswith("\\boxed{") for a in actions)
    assert any("<answer>" in a for a in actions)
    assert any(a.startswith("I think it is") for a in actions)
    answers = [extract_answer(a) for a in actions]
    in_range = [a for a in answers if a.isdigit() and 1000 <= int(a) <= 9999]
    assert len(in_range) > 50  # in-range values, not only the old 9-digit filler
    assert any(a in {"Guess", "four-digit", "code", "Answer"} for a in answers)
    assert len(set(actions)) > 300


def test_tool_environments_get_tool_calls_of_their_own_tools():
    schemas = [
        {
            "type": "function",
            "function": {
                "name": "set_temperature",
                "parameters": {"properties": {"celsius": {"type": "integer"}}},
            },
        }
    ]
    actions = _draw(2, "whole temperatures from 20 to 80", tool_schemas=schemas)
    calls = [parse_tool_call(a) for a in actions if "<tool_call>" in a]
    assert len(calls) > 50 and all(c.ok and c.name == "set_temperature" for c in calls)
    assert any(c.arguments["celsius"] in range(20, 81) for c in calls)


def test_excluded_answers_are_not_sent():
    solution = ["\\boxed{5000}", "\\boxed{2500}"]
    actions = _draw(
        3,
        "a number between 2490 and 2510",
        turns=300,
        exclude=lambda a: matches_solution(a, solution),
    )
    assert not any(matches_solution(a, solution) for a in actions)
    # A lenient parser reads 2500 out of the sentence: that is the right answer too.
    assert matches_solution("I think it is 2500.", ["\\boxed{2500}"]) is True
    assert matches_solution("I think it is 3500.", ["\\boxed{2500}"]) is False
    assert matches_solution("<answer>x5y</answer>", ["<answer>5</answer>"]) is True
    assert matches_solution("2500", ["\\boxed{2500}"]) is True
    assert matches_solution("<answer>2500.0</answer>", ["\\boxed{2500}"]) is True
