"""The designer's scaffold mode with recorded replies: fillings registered, refused, repaired."""

from __future__ import annotations

import json

import pytest

from spade_envs import describe, seed_class
from spade_envs.generator import Designer, DesignerConfig
from spade_envs.generator.pipeline import resolve_mode
from spade_envs.generator.scaffold import NoHolesError
from spade_envs.memory import HashingEmbedder, Memory, MemoryConfig
from spade_envs.registry import Registry
from spade_envs.seeds import seed_source
from spade_envs.validation.static import static_metadata

from .test_pipeline import VALID, RecordedModel

PARENT = "spade/NumberGuess-v1"


@pytest.fixture
def setup(tmp_path, registry_url):
    from spade_envs.corpus import open_corpus

    docs = tmp_path / "docs.jsonl"
    docs.write_text(json.dumps({"text": "A document about guessing numbers. " * 6}) + "\n")
    registry = Registry(registry_url)
    registry.register_many(
        [(seed_source("NumberGuess"), describe(seed_class("NumberGuess")))], status="validated"
    )
    plain = "\n".join(line for line in VALID.splitlines() if "# hole" not in line) + "\n"
    registry.register(plain, static_metadata(plain, origin="imported"), status="validated")
    memory = Memory(registry, MemoryConfig(index="exact"), embedder=HashingEmbedder())
    yield registry, memory, open_corpus(docs, min_words=3)
    registry.close()


def run(setup, scripts, **config):
    registry, memory, corpus = setup
    model = RecordedModel(scripts, prompt_messages=4)  # system, worked example, task
    settings = dict(
        n=len(scripts), batch_size=2, mode="scaffold", parent=PARENT, budget="fast", seed=3
    )
    designer = Designer(model, registry, memory, corpus, DesignerConfig(**{**settings, **config}))
    return designer.run(), model


def test_a_filling_is_registered_as_a_child_with_its_lineage(setup):
    registry = setup[0]
    report, model = run(setup, [['```json\n{"knobs": {"upper": 40}, "max_turns": 6}\n```']])
    [attempt] = report.attempts
    assert attempt.stage == "registered", attempt.reason
    record = registry.get(attempt.env_id)
    assert record.name.startswith("NumberGuessX") and record.parents == (PARENT,)
    assert record.extra["mode"] == "scaffold"
    assert record.extra["scaffold"]["parent"] == PARENT
    assert record.extra["scaffold"]["filled"] == {"knobs": {"upper": 40}, "max_turns": 6}
    assert record.extra["scaffold"]["values"]["max_turns"] == 6
    assert "max_turns = 6" in record.source and "'upper': 40" in record.source
    system, *_, user = model.conversations[0]
    assert "JSON" in system["content"] and "# hole:" in user["content"]
    assert model.conversations[0][2]["role"] == "assistant"  # the worked example
    shown = user["content"]  # the focus hole's current value, as JSON
    assert '{"knobs": {"upper": 100}}' in shown or '{"max_turns": 8}' in shown


def test_bad_fillings_are_counted_and_repaired_with_the_reason(setup):
    scripts = [
        ["I think 50 is good.", '{"max_turns": 7, "knobs": {"upper": 64}}'],
        ['{"max_turns": "seven"}', '{"max_turn": 3}'],
    ]
    report, model = run(setup, scripts, repair_rounds=1)
    first, second = report.attempts
    assert first.stage == "registered" and first.repaired
    assert second.failure == "bad_filling" and "names no hole (it has 'max_turn')" in second.reason
    repairs = [c[-1]["content"] for c in model.conversations if len(c) > 2]
    assert any("no JSON object" in text for text in repairs)
    assert any("takes a number" in text for text in repairs)
    assert report.failures["bad_filling"] == 1


def test_identical_and_near_identical_fillings_are_not_new(setup):
    scripts = [
        ['{"knobs": {"upper": 100}}'],  # the parent's own value
        ['{"knobs": {"upper": 200}}'],
        ['{"knobs": {"upper": 204}}'],  # within 2% of the sibling just registered
    ]
    report, _ = run(setup, scripts, repair_rounds=0)
    stages = [(a.stage, a.failure) for a in report.attempts]
    assert stages == [("valid", "not_novel"), ("registered", None), ("valid", "not_novel")]
    assert f"filling distance 0.000 from {PARENT}" in report.attempts[0].reason
    assert report.attempts[1].env_id in report.attempts[2].reason


def test_a_filling_the_gate_rejects_carries_the_gates_reason(setup):
    # Four guesses cannot find a number in 1..5000 by binary search: solution() loses.
    report, _ = run(setup, [['{"knobs": {"upper": 5000}, "max_turns": 4}']], repair_rounds=0)
    [attempt] = report.attempts
    assert attempt.stage == "parsed" and attempt.failure == "invalid"
    assert attempt.reason.startswith("invalid: ")


def test_a_parent_without_holes_is_refused_by_name(setup):
    registry, memory, corpus = setup
    config = DesignerConfig(n=1, mode="scaffold", parent="spade/OrbitGuess-v1")
    with pytest.raises(NoHolesError, match="spade/OrbitGuess-v1 declares no holes"):
        Designer(RecordedModel([]), registry, memory, corpus, config)


def test_auto_mode_picks_scaffold_for_small_models_and_new_for_unknown_sizes():
    class Small:
        parameter_count = 135_000_000

    class Big:
        parameter_count = 7_000_000_000

    assert resolve_mode("auto", Small()) == "scaffold"
    assert resolve_mode("auto", Big()) == "new"
    assert resolve_mode("auto", object()) == "new"
    assert resolve_mode("edit", Small()) == "edit"


def test_rewording_only_the_description_is_not_new(setup):
    registry = setup[0]
    registry.register_seeds()
    report, _ = run(
        setup,
        [['{"description": "Guess the hidden code; feedback counts exact and partial hits."}']],
        parent="spade/Mastermind-v1",
        repair_rounds=0,
    )
    [attempt] = report.attempts
    assert attempt.failure == "not_novel", attempt.reason
    assert "filling distance 0.000 from spade/Mastermind-v1" in attempt.reason


def test_held_out_environments_and_their_children_are_never_parents(setup):
    registry, memory, corpus = setup
    child, _ = run(setup, [['{"knobs": {"upper": 60}}']], repair_rounds=0)  # NumberGuessX...
    assert child.attempts[0].stage == "registered"
    config = DesignerConfig(n=1, mode="scaffold", held_out=("NumberGuess",), budget="fast")
    report = Designer(
        RecordedModel([["{}"]], prompt_messages=4), registry, memory, corpus, config
    ).run()
    [attempt] = report.attempts
    # OrbitGuess declares no holes; NumberGuess and its child are held out: nothing to fill.
    assert attempt.failure == "prompt_error" and "declares holes" in attempt.reason


def test_a_grandchild_that_restores_the_grandparents_values_is_not_new(setup):
    report, _ = run(setup, [['{"knobs": {"upper": 60}}']], repair_rounds=0)
    child = report.attempts[0].env_id
    back, _ = run(setup, [['{"knobs": {"upper": 100}}']], parent=child, repair_rounds=0)
    [attempt] = back.attempts
    assert attempt.failure == "not_novel" and PARENT in attempt.reason


def test_a_reply_cut_at_max_tokens_is_truncated_not_a_bad_filling(setup):
    from spade_envs.llm.base import Completion

    cut = Completion('{"knobs": {"upper": 7', finish_reason="length")
    report, _ = run(setup, [[cut]], repair_rounds=0)
    [attempt] = report.attempts
    assert attempt.failure == "truncated" and attempt.stage == "generated"


def test_the_prompt_aims_by_the_parents_win_rate_and_names_what_misses_the_band(setup):
    registry = setup[0]
    registry.register_seeds()
    for env_id, win in ((PARENT, 0.95), ("spade/Mastermind-v1", 0.0)):
        registry.record_play_stats(
            env_id,
            "c",
            plays_with_hint=4,
            plays_without_hint=4,
            mean_return_with_hint=win,
            mean_return_without_hint=win,
            win_rate=win,
        )
    _, model = run(setup, [['{"knobs": {"upper": 300}}']], repair_rounds=0)
    prompt = model.conversations[0][-1]["content"]
    assert "Make it HARDER: the agent wins 95% of the time" in prompt
    assert "spade/NumberGuess-v1: too easy" in prompt
    assert "spade/Mastermind-v1: too hard" in prompt


def test_without_a_band_in_memory_the_parent_nearest_the_band_by_win_rate_is_drawn(setup):
    import random
    from types import SimpleNamespace

    from spade_envs.generator.ladders import register_rung
    from spade_envs.generator.parents import ScaffoldParents, band_distance

    registry, memory, _ = setup
    registry.register_seeds()
    rung = register_rung(registry, "NumberGuess@0")
    assert band_distance(None) == 0.25 and band_distance(SimpleNamespace(win_rate=0.5)) == 0.0
    assert band_distance(SimpleNamespace(win_rate=0.0)) == pytest.approx(0.15)
    # The agent never wins the seeds and wins the easy rung half of the time: the rung is
    # drawn whatever the seed (hint gain is 0 everywhere, so the memory's band is empty).
    for record in registry.list(status="validated", limit=500):
        if "# hole" in record.source:
            win = 0.5 if record.id == rung else 0.0
            registry.record_play_stats(
                record.id,
                "c",
                plays_with_hint=4,
                plays_without_hint=4,
                mean_return_with_hint=win,
                mean_return_without_hint=win,
                win_rate=win,
            )
    for seed in range(5):
        parents = ScaffoldParents(registry, memory, random.Random(seed))
        assert parents.choose(None).record.id == rung
