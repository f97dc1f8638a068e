"""SuiteTask's episode rules, answer reading, seed replacement and stored-data checks."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spade_envs.suites.base import (
    ANSWER_FORMAT,
    Problem,
    SuiteGenerationError,
    SuiteGoldError,
    SuiteTask,
    derived_seed,
    literal_round_trip,
    read_answer,
)


class Toy(SuiteTask):
    """A suite adapter over a toy generator: the answer is the seed mod 7; seeds that are
    multiples of 5 fail to generate, like knight_swap at some seeds."""

    suite, task, level = "toy", "mod7", "0"
    failing = staticmethod(lambda seed: seed % 5 == 0)

    def _generate(self, seed: int) -> Problem:
        if self.failing(seed):
            raise ValueError(f"cannot build at {seed}")
        return Problem(f"What is {seed} mod 7?", state=seed)

    def _reference(self):
        if self.problem.state % 11 == 0:
            raise self._no_answer("no answer kept")
        if self.problem.state % 13 == 0:
            raise self._gold_fails("wrong", 0.25)
        return str(self.problem.state % 7)

    def _score(self, answer):
        if answer == "crash":
            raise TypeError("scorer bug")
        if answer == "half":
            return 0.5
        return float(answer == str(self.problem.state % 7))


def test_question_carries_one_answer_format_line_and_gold_wins():
    env = Toy()
    obs, info = env.reset(seed=3)
    assert obs == f"What is 3 mod 7?\n\n{ANSWER_FORMAT}"
    assert info["problem_seed"] == 3 and "replaced_seeds" not in info
    assert env.solution() == ["<answer>3</answer>"]
    _, reward, terminated, _, info = env.step("I think <answer>3</answer>")
    assert (reward, terminated, info["suite_score"]) == (1.0, True, 1.0)


def test_boxed_is_accepted_and_an_unmarked_reply_is_no_answer():
    env = Toy()
    env.reset(seed=3)
    assert env.step("\\boxed{3}")[1] == 1.0
    env.reset(seed=3)
    obs, reward, terminated, _, _ = env.step("3")
    assert reward == 0.0 and terminated and "No answer found" in obs


def test_more_attempts_say_try_again_and_never_the_answer():
    env = Toy(max_attempts=3)
    env.reset(seed=4)
    obs, reward, terminated, truncated, _ = env.step("<answer>0</answer>")
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert obs.startswith("Incorrect, try again.") and "4" not in obs.replace(
        "Attempts left: 2", ""
    )
    assert env.step("<answer>half</answer>")[1] == 0.0  # partial credit only on the last
    obs, reward, terminated, _, _ = env.step("<answer>half</answer>")
    assert (obs, reward, terminated) == ("Incorrect.", 0.5, True)
    assert env.episode_return == 0.5


def test_a_seed_that_fails_is_replaced_by_a_derived_one_and_info_says_so():
    env = Toy()
    _, info = env.reset(seed=10)
    assert info["problem_seed"] == derived_seed(10, 1) != 10
    assert info["replaced_seeds"] == [{"seed": 10, "error": "ValueError: cannot build at 10"}]
    again = Toy()
    assert again.reset(seed=10) == env.reset(seed=10)  # deterministic


def test_a_task_that_never_generates_says_which_seeds_and_why():
    class Never(Toy):
        failing = staticmethod(lambda seed: True)

    with pytest.raises(
        SuiteGenerationError,
        match=r"failed to generate a problem at seed 4 .*ValueError: cannot build at 4",
    ):
        Never().reset(seed=4)


def test_no_gold_answer_means_no_solution_with_the_reason():
    env = Toy()
    env.reset(seed=22)
    with pytest.raises(NotImplementedError, match="stores no answer to replay: no answer kept"):
        env.solution()


def test_a_gold_answer_its_scorer_fails_is_an_error_not_a_solution():
    env = Toy()
    env.reset(seed=26)
    with pytest.raises(
        SuiteGoldError, match=r"gold answer 'wrong' scores 0.25 under its own scorer"
    ):
        env.solution()


def test_a_scorer_that_breaks_scores_zero_and_says_so_in_info():
    env = Toy()
    env.reset(seed=3)
    _, reward, _, _, info = env.step("<answer>crash</answer>")
    assert reward == 0.0 and info["scorer_error"] == "TypeError: scorer bug"


def test_read_answer_prefers_the_answer_tag_then_boxed():
    assert read_answer("<answer> {1, 2} </answer> \\boxed{9}") == "{1, 2}"
    assert read_answer("so \\boxed{\\frac{1}{2}}") == "\\frac{1}{2}"
    assert read_answer("nothing marked") is None


_literals = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=8)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.integers() | st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(_literals)
def test_plain_data_survives_storage_with_its_types(value):
    assert literal_round_trip(value)


def test_what_does_not_survive_storage_is_refused():
    import datetime
    import enum

    class Colour(enum.Enum):
        RED = 1

    assert not literal_round_trip({"when": datetime.time(0, 0)})
    assert not literal_round_trip([Colour.RED])
    assert not literal_round_trip({"x": float("inf")})  # repr 'inf' is not a literal
    assert not literal_round_trip(range(3))


def test_importing_one_task_module_leaves_no_bare_parent_packages():
    code = (
        "import sys\n"
        "from spade_envs.suites.base import import_leaf\n"
        "m = import_leaf('reasoning_gym.arithmetic.chain_sum')\n"
        "assert hasattr(m, 'ChainSumDataset')\n"
        "assert 'reasoning_gym' not in sys.modules, 'a bare parent package stayed'\n"
        "import reasoning_gym\n"
        "assert hasattr(reasoning_gym, 'create_dataset')\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "ok", done.stderr


def test_only_a_pure_suite_declaration_goes_without_a_hint():
    from spade_envs.suites import plan
    from spade_envs.validation.budget import get_budget
    from spade_envs.validation.static import static_checks

    (spec,), _ = plan("rlve", ["CRT"], ["0"])
    _, info = static_checks(spec.source, get_budget("fast"), suite_import=True)
    assert info.has_hint is False  # only as `import --suite` brings it in
    _, info = static_checks(spec.source, get_budget("fast"))
    assert info.has_hint is True  # the same code registered by anyone else needs a hint
    behaviour = spec.source + "\n    def _score(self, answer):\n        return 1.0\n"
    aliased = spec.source.replace("import RlveTask", "import TextEnv as RlveTask")
    bound = spec.source + "\n    hint = print\n"
    for source in (behaviour, aliased, bound):
        checks, info = static_checks(source, get_budget("fast"), suite_import=True)
        assert info.has_hint is True
        assert any("is missing: hint" in c.reason for c in checks if not c.passed)


def test_adapters_hand_out_only_classes_of_their_suite():
    import importlib

    from spade_envs.suites.base import suite_class

    module = importlib.import_module("reasoning_gym.arithmetic.chain_sum")
    assert suite_class(module, "ChainSumDataset", "reasoning_gym").__name__ == "ChainSumDataset"
    for name in ("__builtins__", "random", "Any"):
        with pytest.raises(ValueError, match="is not a class of reasoning_gym"):
            suite_class(module, name, "reasoning_gym")
