"""The rollout engine on real seed environments with a scripted, seeded model."""

from __future__ import annotations

import dataclasses

import pytest

from spade_envs.agent import (
    EnvTarget,
    Episode,
    PlaySpec,
    RolloutConfig,
    RolloutEngine,
    load_jsonl,
    matched_specs,
    resolve_envs,
    rollout,
    save_jsonl,
    with_hint,
)
from spade_envs.error import SpadeError
from spade_envs.llm.base import Completion
from spade_envs.make import make

from .conftest import CRASHING_ENV, EXITING_ENV, HANGING_ENV, ScriptedModel, guess_reply

SEEDS = ["NumberGuess", "SupplierLookup", "Nim"]
FAST = RolloutConfig(isolation="none", max_concurrent=16, seed=7)


def comparable(episodes: list[Episode]) -> list[dict]:
    return [e.to_dict() for e in episodes]


def test_batched_and_one_at_a_time_rollouts_give_the_same_trajectories(registry):
    targets = resolve_envs(SEEDS, registry)
    specs = matched_specs([t.env_id for t in targets], 3)
    batched_model, single_model = ScriptedModel(), ScriptedModel()
    batched = RolloutEngine(batched_model, FAST, registry=registry).run(specs, targets)
    single_config = RolloutConfig(isolation="none", max_concurrent=1, seed=7)
    single = RolloutEngine(single_model, single_config, registry=registry).run(specs, targets)
    assert comparable(batched) == comparable(single)
    assert len(batched) == len(specs) == 18
    # One model call per turn across all live plays, not one per play.
    assert max(batched_model.batches) == 16 and set(single_model.batches) == {1}
    assert len(batched_model.batches) < len(single_model.batches) / 3
    assert (
        sum(batched_model.batches)
        == sum(single_model.batches)
        == sum(len(e.turns) for e in batched)
    )
    # ... and a different run seed gives different replies.
    other = RolloutEngine(ScriptedModel(), RolloutConfig(isolation="none", seed=8)).run(
        specs, targets
    )
    assert comparable(other) != comparable(batched)


def test_sandboxed_rollout_matches_the_trusted_one(registry):
    targets = resolve_envs(["NumberGuess", "SupplierLookup"], registry)
    specs = matched_specs([t.env_id for t in targets], 2)
    trusted = RolloutEngine(ScriptedModel(), FAST).run(specs, targets)
    sandboxed = RolloutEngine(
        ScriptedModel(), RolloutConfig(isolation="sandbox", max_concurrent=8, seed=7)
    ).run(specs, targets)
    assert comparable(sandboxed) == comparable(trusted)


def test_episode_records_tokens_mask_and_outcomes(registry, tmp_path):
    episodes = rollout(ScriptedModel(), ["NumberGuess"], plays=2, config=FAST, registry=registry)
    episode = episodes[0]
    assert episode.env_id == "spade/NumberGuess-v1" and episode.kind == "text"
    assert episode.outcome in ("terminated", "truncated")
    assert 1 <= len(episode.turns) <= 8
    turn = episode.turns[0]
    assert turn.outcome == "ok" and "\\boxed{" in turn.action
    assert turn.token_ids and len(turn.logprobs) == len(turn.token_ids)
    assert turn.tokens == turn.prompt_token_ids + turn.token_ids
    assert turn.mask == [0] * len(turn.prompt_token_ids) + [1] * len(turn.token_ids)
    assert turn.observation  # the env's answer
    chat = episode.messages[""]
    assert chat[0]["role"] == "system" and "\\boxed" in chat[0]["content"]
    assert [m["role"] for m in chat[1:4]] == ["user", "assistant", "user"][: len(chat[1:4])]
    assert episode.episode_return == pytest.approx(sum(t.reward for t in episode.turns))
    path = tmp_path / "traj.jsonl"
    assert save_jsonl(episodes, path) == 2
    assert comparable(load_jsonl(path)) == comparable(episodes)


def test_tool_env_prompt_lists_the_tools(registry):
    [episode] = rollout(
        ScriptedModel(), ["SupplierLookup"], plays=1, config=FAST, registry=registry
    )
    system = episode.messages[""][0]["content"]
    assert "<tool_call>" in system and '"name": "select"' in system and "<answer>" in system
    assert episode.turns[0].outcome == "ok"
    assert "Error" not in episode.turns[0].observation  # the select call ran


def test_game_against_a_fixed_opponent_and_in_self_play(registry):
    fixed = rollout(ScriptedModel(), ["Nim"], plays=2, config=FAST, registry=registry)
    assert all(set(e.messages) == {""} and e.opponent == "best" for e in fixed)
    selfplay_config = RolloutConfig(isolation="none", opponent="self", max_turns=6, seed=1)
    selfplay = rollout(ScriptedModel(), ["Nim"], plays=2, config=selfplay_config)
    for episode in selfplay:
        assert set(episode.messages) == {"player_0", "player_1"}
        assert set(episode.seat_returns) == {"player_0", "player_1"}
        assert [t.seat for t in episode.turns[:2]] == ["player_0", "player_1"]
        assert "You are player_1" in episode.messages["player_1"][0]["content"]
        assert len(episode.turns) <= 6
    # The sandboxed game (a PettingZoo proxy) plays the same self-play episodes.
    sandboxed = dataclasses.replace(selfplay_config, isolation="sandbox")
    assert comparable(rollout(ScriptedModel(), ["Nim"], plays=2, config=sandboxed)) == comparable(
        selfplay
    )


def test_hint_is_added_to_the_first_observation(registry):
    episodes = rollout(ScriptedModel(), ["NumberGuess"], plays=2, hint=True, config=FAST)
    for episode in episodes:
        env = make("NumberGuess")
        observation, _ = env.reset(seed=episode.env_seed)
        assert episode.hint and episode.hint_source == "env"
        assert episode.hint_text == env.hint()
        assert episode.messages[""][1]["content"] == with_hint(observation, env.hint())
        assert episode.messages[""][1]["content"].endswith(f"\n\nHINT: {env.hint()}")


def test_written_hint_comes_from_the_registry(registry):
    [target] = resolve_envs(["NumberGuess"], registry)
    config = RolloutConfig(isolation="none", hint_source="written")
    with pytest.raises(SpadeError, match="No model-written hint"):
        rollout(ScriptedModel(), ["NumberGuess"], hint=True, config=config, registry=registry)
    registry.set_hint(target.env_id, "Halve the interval every guess.")
    [episode] = rollout(
        ScriptedModel(), ["NumberGuess"], hint=True, config=config, registry=registry
    )
    assert episode.hint_source == "written"
    assert episode.messages[""][1]["content"].endswith("\n\nHINT: Halve the interval every guess.")


def test_hinted_and_unhinted_plays_are_matched(registry):
    episodes = rollout(ScriptedModel(), ["NumberGuess", "Nim"], plays=3, hint=None, config=FAST)
    pairs: dict = {}
    for e in episodes:
        pairs.setdefault((e.env_id, e.play_index), {})[e.hint] = e
    assert len(pairs) == 6
    for (_, index), pair in pairs.items():
        hinted, plain = pair[True], pair[False]
        assert hinted.env_seed == plain.env_seed == index
        shared = min(len(hinted.turns), len(plain.turns))
        assert [t.sampling_seed for t in hinted.turns[:shared]] == [
            t.sampling_seed for t in plain.turns[:shared]
        ]
        # Same reset seed: the same task, only the hint differs.
        assert hinted.messages[""][1]["content"].startswith(plain.messages[""][1]["content"])
    seeds_per_play = {e.play_index: e.turns[0].sampling_seed for e in episodes}
    assert len(set(seeds_per_play.values())) == 3


def hang_crash_targets():
    return [
        EnvTarget("test/Hanging-v1", HANGING_ENV, "text"),
        EnvTarget("test/Crashing-v1", CRASHING_ENV, "text"),
        EnvTarget("test/Exiting-v1", EXITING_ENV, "text"),
    ]


def test_hanging_and_crashing_envs_end_only_their_own_episode(registry):
    targets = [*hang_crash_targets(), *resolve_envs(["NumberGuess"], registry)]
    specs = [PlaySpec(t.env_id, 0, 0) for t in targets] + [PlaySpec("spade/NumberGuess-v1", 1, 1)]
    config = RolloutConfig(step_timeout=1.0, max_concurrent=8, seed=3, error_penalty=0.7)
    model = ScriptedModel()
    hang, crash, exits, guess0, guess1 = RolloutEngine(model, config).run(specs, targets)
    assert hang.outcome == "timeout" and hang.penalty == 0.7 and "did not finish" in hang.error
    assert len(hang.turns) == 2 and hang.turns[-1].outcome == "timeout"
    assert hang.turns[0].outcome == "ok" and hang.turns[0].observation == "Go on."
    assert crash.outcome == "env_error" and "boom" in crash.error and crash.penalty == 0.7
    assert exits.outcome == "env_error" and "died" in exits.error
    assert crash.failed and exits.failed and hang.failed
    for episode in (guess0, guess1):  # the others played on to their end
        assert episode.outcome in ("terminated", "truncated") and not episode.failed
        assert episode.penalty == 0.0
    assert max(model.batches) == 5


def test_in_process_step_timeout_ends_a_hanging_trusted_env(registry):
    targets = [hang_crash_targets()[0], *resolve_envs(["NumberGuess"], registry)]
    specs = [PlaySpec(t.env_id, 0, 0) for t in targets]
    config = RolloutConfig(isolation="none", step_timeout=0.5, seed=3, error_penalty=0.7)
    hang, guess = RolloutEngine(ScriptedModel(), config).run(specs, targets)
    assert hang.outcome == "timeout" and hang.penalty == 0.7
    assert "ran past its 0.5 s deadline" in hang.error
    assert hang.turns[0].outcome == "ok" and hang.turns[-1].outcome == "timeout"
    assert guess.outcome in ("terminated", "truncated") and not guess.failed


def test_model_errors_and_odd_replies_are_recorded_and_the_batch_goes_on(registry):
    def reply(conversation, seed):
        first = conversation[1]["content"]
        if "HINT:" in first:
            return Completion.failed("server dropped the connection")
        turn = (len(conversation) - 2) // 2
        return ["", "\\boxed{1} or \\boxed{2}", "no answer here", "x" * 50, "\\boxed{50}"][turn % 5]

    config = RolloutConfig(isolation="none", max_action_chars=30, seed=0)
    episodes = rollout(ScriptedModel(reply), ["NumberGuess"], plays=2, hint=None, config=config)
    plain = [e for e in episodes if not e.hint]
    hinted = [e for e in episodes if e.hint]
    for episode in hinted:
        assert episode.outcome == "model_error" and "dropped" in episode.error
        assert [t.outcome for t in episode.turns] == ["model_error"]
        assert episode.penalty == 0.0 and not episode.failed
    for episode in plain:
        outcomes = [t.outcome for t in episode.turns]
        assert outcomes[:5] == ["empty", "several_answers", "no_answer", "too_long", "ok"]
        assert len(episode.turns[3].action) == 30
        assert episode.outcome in ("terminated", "truncated")


def test_a_backend_that_raises_fails_only_that_turn(registry):
    class Raising(ScriptedModel):
        def generate(self, conversations, params=None):
            raise RuntimeError("CUDA fell over")

    [episode] = rollout(Raising(), ["NumberGuess"], config=FAST)
    assert episode.outcome == "model_error" and "CUDA fell over" in episode.error


def test_progress_and_bad_config():
    seen = []
    rollout(ScriptedModel(), ["NumberGuess"], plays=3, config=FAST, progress=seen.append)
    assert sorted(e.play_index for e in seen) == [0, 1, 2]
    for bad in (
        {"isolation": "docker"},
        {"max_concurrent": 0},
        {"step_timeout": 0},
        {"temperature": -1},
        {"opponent": "human"},
        {"hint_source": "oracle"},
    ):
        with pytest.raises(SpadeError):
            RolloutConfig(**bad)
    with pytest.raises(SpadeError, match="plays"):
        matched_specs(["x"], 0)


def test_unknown_environment_suggests_close_names(registry):
    resolve_envs(["NumberGuess"], registry)
    with pytest.raises(SpadeError, match="NumberGuess"):
        rollout(ScriptedModel(), ["NumberGues"], config=FAST, registry=registry)


def test_scripted_reply_is_deterministic():
    conversation = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    assert guess_reply(conversation, 1) == guess_reply(conversation, 1)
