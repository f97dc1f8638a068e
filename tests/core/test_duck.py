"""Duck-typed ``*Env`` classes in the SPADE code's style, adapted to the TextEnv protocol."""

from __future__ import annotations

import pytest

from spade_envs.core.loader import load_env_class
from spade_envs.error import EnvContractError

SPADE_STYLE = '''
import random


class ParityPuzzleEnv:
    """Say whether the sum of the shown numbers is even or odd."""

    def __init__(self, max_turns=3, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        if seed is not None:
            random.seed(seed)
        self.numbers = [random.randint(1, 99) for _ in range(5)]
        self._solution = "even" if sum(self.numbers) % 2 == 0 else "odd"
        self.turn_count = 0
        return f"Numbers: {self.numbers}. Is the sum even or odd? Answer in \\\\boxed{{}}.", {}

    def solution(self):
        return self._solution

    def step(self, action):
        import re

        self.turn_count += 1
        found = re.search(r"\\\\boxed\\{([^}]+)\\}", action)
        if found and found.group(1).strip() == self._solution:
            return "Correct!", 1.0, True, False, {}
        return "Wrong.", 0.0, False, self.turn_count >= self.max_turns, {}
'''


def test_a_bare_answer_from_solution_becomes_a_boxed_action_that_wins():
    env = load_env_class(SPADE_STYLE)()
    env.reset(seed=4)
    [action] = env.solution()
    assert action.startswith("\\boxed{") and action.endswith("}")
    assert env.step(action)[1:3] == (1.0, True)


def test_the_same_seed_gives_the_same_episode():
    env = load_env_class(SPADE_STYLE)()
    assert env.reset(seed=9)[0] == env.reset(seed=9)[0]


def test_lists_and_ready_actions_pass_through_and_a_missing_solution_is_named():
    def solution_of(source):
        env = load_env_class(source)()
        env.reset(seed=0)
        return env.solution()

    listed = SPADE_STYLE.replace("return self._solution", r"return ['\\boxed{x}', 'y']")
    assert solution_of(listed) == ["\\boxed{x}", "y"]
    boxed = SPADE_STYLE.replace("return self._solution", r"return '\\boxed{even}'")
    assert solution_of(boxed) == ["\\boxed{even}"]
    missing = SPADE_STYLE.replace("def solution(self)", "def answer(self)")
    with pytest.raises(EnvContractError, match="has no solution"):
        solution_of(missing)
