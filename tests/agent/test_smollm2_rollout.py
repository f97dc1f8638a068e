"""Batched and one-at-a-time rollouts of the real SmolLM2-135M-Instruct agree (slow)."""

from __future__ import annotations

import pytest

from spade_envs.agent import RolloutConfig, RolloutEngine, matched_specs, resolve_envs

from ..model_support import SMOLLM2_MARKS, model_cache, torch_threads

pytestmark = SMOLLM2_MARKS


@pytest.fixture(scope="module")
def model():
    from spade_envs.llm import load_model

    with torch_threads(1):
        loaded = load_model("smollm2", cache_dir=model_cache(), batch_size=4)
        yield loaded
        loaded.close()


def test_batched_and_sequential_smollm2_rollouts_are_the_same(model, registry):
    # Short prompts and replies keep this test cheap on a 2-core CPU; the hinted and
    # unhinted prompts differ in length, so the batch is left-padded.
    targets = resolve_envs(["NumberGuess", "Nim"], registry)
    specs = matched_specs([t.env_id for t in targets], 1, hint=None)
    runs = {}
    for concurrent in (4, 1):
        config = RolloutConfig(
            isolation="none", max_concurrent=concurrent, max_turns=2, max_tokens=10, seed=11
        )
        engine = RolloutEngine(model, config, registry=registry)
        runs[concurrent] = (engine.run(specs, targets), engine.stats)
    (batched, batched_stats), (single, single_stats) = runs[4], runs[1]
    assert batched_stats.model_calls < single_stats.model_calls
    assert len(batched) == len(single) == 4
    for a, b in zip(batched, single):
        assert [t.action for t in a.turns] == [t.action for t in b.turns]
        assert [t.token_ids for t in a.turns] == [t.token_ids for t in b.turns]
        assert a.episode_return == b.episode_return and a.outcome == b.outcome
        for turn in a.turns:
            assert turn.outcome != "model_error", turn.error
            assert turn.token_ids and len(turn.logprobs) == len(turn.token_ids)
            assert all(lp <= 0.0 for lp in turn.logprobs)
            assert turn.prompt_token_ids and sum(turn.mask) == len(turn.token_ids)
        assert [pytest.approx(t.logprobs, abs=1e-3) for t in a.turns] == [
            t.logprobs for t in b.turns
        ]
