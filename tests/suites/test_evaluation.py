"""Evaluation sets and scores over a real import, with a scripted model that knows the
answers (so the expected table is known), and the bad-input messages."""

from __future__ import annotations

import types

import pytest

from spade_envs.error import SpadeError
from spade_envs.llm.base import ChatModel, Completion
from spade_envs.suites.evaluation import eval_set, evaluate


class Oracle(ChatModel):
    """Answers from a question -> gold table; ``wrong_first`` answers wrongly once."""

    name = "oracle"

    def __init__(self, answers, wrong_first=False):
        self.answers, self.wrong_first = answers, wrong_first

    def generate(self, conversations, params=None):
        out = []
        for conversation in conversations:
            question = conversation[1]["content"]
            gold = next((a for q, a in self.answers.items() if q in question), "?")
            first = sum(m["role"] == "assistant" for m in conversation) == 0
            text = "<answer>nope</answer>" if self.wrong_first and first else gold
            out.append(Completion(text=text, token_ids=(1, 2), logprobs=(-0.1, -0.1)))
        return out


def _answers(registry, evaluation, episodes):
    """What each (question) of the set's first ``episodes`` seeds should be answered."""
    table = {}
    for task in evaluation.tasks:
        record = registry.get(task.env_id)
        module = types.ModuleType(record.name)
        exec(record.source, module.__dict__)
        env = getattr(module, record.name)()
        for seed in range(episodes):
            obs, _ = env.reset(seed=seed)
            try:
                table[obs.split("\n\nPut your final answer")[0]] = env.solution()[0]
            except NotImplementedError:
                pass
    return table


def test_rg_hard_is_grouped_in_spades_categories(registry):
    chosen = eval_set("rg-hard", registry)
    assert {t.task: t.category for t in chosen.tasks} == {
        "basic_arithmetic": "math",
        "chain_sum": "math",
        "graph_color": "algorithmic",
        "rush_hour": "cognition",
    }
    assert chosen.categories == ("math", "algorithmic", "cognition")


def test_a_set_narrowed_to_some_tasks_keeps_their_categories(registry):
    chosen = eval_set("rg-hard", registry).only(["chain_sum", "rush_hour"])
    assert [t.task for t in chosen.tasks] == ["chain_sum", "rush_hour"]
    assert chosen.categories == ("math", "cognition")
    with pytest.raises(
        SpadeError, match=r"rg-hard has no task 'chainsum'.*Did you mean 'chain_sum'"
    ):
        eval_set("rg-hard", registry).only(["chainsum"])


def test_an_oracle_wins_where_there_is_gold_and_the_table_says_so(registry):
    chosen = eval_set("rg-hard", registry)
    result = evaluate(
        Oracle(_answers(registry, chosen, 2)),
        chosen,
        registry=registry,
        episodes=2,
        max_turns=1,
        temperature=0.0,
    )
    rates = {c.category: c.win_rate for c in result.categories}
    assert rates == {"math": 1.0, "algorithmic": 1.0, "cognition": 0.0}
    assert result.overall.plays == 8 and result.overall.wins == 6
    assert result.overall.stderr == pytest.approx((0.75 * 0.25 / 8) ** 0.5)
    table = result.table()
    assert "Math" in table and "0.750 ± 0.153" in table and "% of the wall time" in table
    assert result.to_dict()["overall"]["wins"] == 6


def test_max_turns_gives_suite_tasks_a_second_answer(registry):
    chosen = eval_set("rlve", registry)
    answers = _answers(registry, chosen, 2)
    one = evaluate(
        Oracle(answers, wrong_first=True),
        chosen,
        registry=registry,
        episodes=2,
        max_turns=1,
        temperature=0.0,
    )
    two = evaluate(
        Oracle(answers, wrong_first=True),
        chosen,
        registry=registry,
        episodes=2,
        max_turns=2,
        temperature=0.0,
    )
    crt = next(k for k in one.per_task if "CRT" in k)
    assert one.per_task[crt].win_rate == 0.0 and two.per_task[crt].win_rate == 1.0


def test_seeds_set_and_unknown_or_empty_sets(registry, tmp_path):
    from spade_envs.registry import Registry

    assert len(eval_set("seeds", registry).tasks) >= 30
    with pytest.raises(SpadeError, match=r"No evaluation set 'rg-hrad'.*Did you mean 'rg-hard'"):
        eval_set("rg-hrad", registry)
    empty = Registry(f"sqlite:///{tmp_path / 'empty.db'}")
    with pytest.raises(SpadeError, match=r"spade-envs import --suite rlve --levels 3"):
        eval_set("rlve:3", empty)


def test_every_play_failing_stops_with_the_reason(registry):
    class Broken(ChatModel):
        name = "broken"

        def generate(self, conversations, params=None):
            raise RuntimeError("model server down")

    chosen = eval_set("rlve", registry)
    with pytest.raises(SpadeError, match="every one of the 4 evaluation plays failed"):
        evaluate(Broken(), chosen, registry=registry, episodes=2)


def test_a_quarantined_seed_leaves_the_seeds_set(tmp_path):
    from spade_envs import describe, seed_class
    from spade_envs.registry import QuarantineEvidence, Registry
    from spade_envs.seeds import seed_source

    registry = Registry(f"sqlite:///{tmp_path / 'r.db'}")
    nim = registry.register(seed_source("Nim"), describe(seed_class("Nim")), status="validated")
    before = eval_set("seeds", registry)
    assert "Nim" in [t.env_id for t in before.tasks] and before.left_out == []
    registry.quarantine(nim.id, QuarantineEvidence(nim.id, 3, 1, "reward", "1.0", "0.0"))
    after = eval_set("seeds", registry)
    assert [t.env_id for t in after.tasks] == [t.env_id for t in before.tasks if t.env_id != "Nim"]
    assert after.left_out == [
        ("spade/Nim-v1", "quarantined: a replay audit diverged (spade-envs show spade/Nim-v1)")
    ]
    registry.close()


class Counter(ChatModel):
    """Guesses the same thing every turn; remembers the longest conversation it saw."""

    name = "counter"

    def __init__(self):
        self.most_turns = 0

    def generate(self, conversations, params=None):
        for conversation in conversations:
            turns = 1 + sum(m["role"] == "assistant" for m in conversation)
            self.most_turns = max(self.most_turns, turns)
        return [Completion(text="\\boxed{0}", token_ids=(1,)) for _ in conversations]


def test_without_max_turns_each_environment_plays_to_its_own_limit(registry):
    from spade_envs.seeds import seed_class
    from spade_envs.suites.evaluation import SUITE_ANSWERS, EvalSet, EvalTask

    own = seed_class("NumberGuess").max_turns
    assert own > 2
    chosen = EvalSet("one seed", [EvalTask("NumberGuess", "logic", "NumberGuess")], [], ("logic",))
    capped, free = Counter(), Counter()
    evaluate(capped, chosen, registry=registry, episodes=1, max_turns=2, temperature=0.0)
    result = evaluate(free, chosen, registry=registry, episodes=1, max_turns=None, temperature=0.0)
    assert capped.most_turns == 2 and free.most_turns == own
    assert "each to its own turn limit" in result.table()
    # Suite tasks then allow SUITE_ANSWERS answers: a second answer still wins.
    rlve = eval_set("rlve", registry)
    two = evaluate(
        Oracle(_answers(registry, rlve, 2), wrong_first=True),
        rlve,
        registry=registry,
        episodes=2,
        max_turns=None,
        temperature=0.0,
    )
    crt = next(k for k in two.per_task if "CRT" in k)
    assert SUITE_ANSWERS == 2 and two.per_task[crt].win_rate == 1.0
