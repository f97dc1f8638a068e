"""Samples for both roles: one per agent turn, one per designer attempt, with groups."""

from __future__ import annotations

import pytest

from spade_envs.agent.episode import Episode
from spade_envs.agent.policy import Turn
from spade_envs.generator.pipeline import Attempt
from spade_envs.trainer.samples import Sample, SampleError, agent_samples, designer_samples


def _turn(index: int, tokens: list[int], outcome: str = "ok", seat: str = "") -> Turn:
    return Turn(
        index=index,
        seat=seat,
        action="x",
        outcome=outcome,
        prompt_token_ids=[1, 2, 3 + index],
        token_ids=tokens,
        logprobs=[-0.5] * len(tokens),
    )


def _episode(env_id: str = "spade/A-v1", *, hint: bool = False, ret: float = 1.0, **kw) -> Episode:
    defaults = dict(
        env_id=env_id,
        play_index=0,
        env_seed=7,
        hint=hint,
        hint_source="env" if hint else "",
        hint_text="",
        kind="text",
        opponent="",
        model="m",
        episode_return=ret,
        turns=[_turn(0, [10, 11]), _turn(1, [12], outcome="no_answer")],
    )
    defaults.update(kw)
    return Episode(**defaults)


def test_one_agent_sample_per_turn_with_the_play_return_and_tokens():
    samples = agent_samples([_episode(ret=0.75)])
    assert len(samples) == 2
    first, second = samples
    assert first.role == "agent" and first.reward == 0.75 and second.reward == 0.75
    assert first.prompt_ids == [1, 2, 3] and first.completion_ids == [10, 11]
    assert second.prompt_ids == [1, 2, 4] and second.completion_ids == [12]
    assert first.old_logprobs == [-0.5, -0.5]
    assert first.group == "spade/A-v1|nohint"


def test_hinted_plays_form_their_own_group_and_env_seed_splits_further():
    plain, hinted = _episode(), _episode(hint=True)
    groups = {s.group for s in agent_samples([plain, hinted])}
    assert groups == {"spade/A-v1|nohint", "spade/A-v1|hint"}
    other_seed = _episode(env_seed=8)
    by_seed = {s.group for s in agent_samples([plain, other_seed], group_by="env_seed")}
    assert len(by_seed) == 2
    assert {s.group for s in agent_samples([plain, hinted], group_by="batch")} == {"batch"}


def test_format_bonus_goes_only_to_well_formed_turns():
    first, second = agent_samples([_episode(ret=0.5)], format_bonus=0.1)
    assert first.reward == pytest.approx(0.6)  # outcome "ok"
    assert second.reward == pytest.approx(0.5)  # outcome "no_answer"


def test_failed_env_gives_minus_its_penalty_and_empty_turns_are_skipped():
    failed = _episode(outcome="env_error", penalty=1.0, ret=0.9)
    failed.turns.append(_turn(2, []))
    samples = agent_samples([failed])
    assert [s.reward for s in samples] == [-1.0, -1.0]
    assert len(samples) == 2


def test_game_turns_get_their_seats_return():
    game = _episode(
        kind="game",
        opponent="self",
        ret=1.0,
        seat_returns={"player_0": 1.0, "player_1": -1.0},
        turns=[_turn(0, [5], seat="player_0"), _turn(1, [6], seat="player_1")],
    )
    assert [s.reward for s in agent_samples([game])] == [1.0, -1.0]


def test_missing_or_misaligned_logprobs_are_left_to_the_learner():
    episode = _episode()
    episode.turns[0].logprobs = [-0.1]  # one value for two tokens
    episode.turns[1].logprobs = []
    assert [s.old_logprobs for s in agent_samples([episode])] == [None, None]


def test_unknown_group_by_names_the_choices():
    with pytest.raises(SampleError, match=r"Unknown agent group_by 'envs'.*Did you mean 'env'"):
        agent_samples([_episode()], group_by="envs")


def _attempt(index: int, doc: int | None, **kw) -> Attempt:
    return Attempt(
        index=index,
        mode="new",
        skill="s",
        document_id=doc,
        messages=[{"role": "user", "content": f"write env {index}"}],
        **kw,
    )


def test_designer_samples_use_recorded_tokens_and_fall_back_to_encode_and_tokenize():
    recorded = _attempt(
        0, 3, reply="abc", reply_token_ids=[7, 8], prompt_token_ids=[1, 2], reply_logprobs=[-1, -2]
    )
    text_only = _attempt(1, 3, reply="hello")
    encoded = []

    def encode(messages):
        encoded.append(messages)
        return [9, 9, 9]

    samples = designer_samples(
        [recorded, text_only], [0.3, 0.1], encode, lambda text: [ord(c) for c in text]
    )
    assert [s.role for s in samples] == ["designer", "designer"]
    assert samples[0].prompt_ids == [1, 2] and samples[0].completion_ids == [7, 8]
    assert samples[0].old_logprobs == [-1.0, -2.0]
    assert samples[1].prompt_ids == [9, 9, 9]
    assert samples[1].completion_ids == [ord(c) for c in "hello"]
    assert samples[1].old_logprobs is None
    assert encoded == [[{"role": "user", "content": "write env 1"}]]
    assert [s.reward for s in samples] == [0.3, 0.1]
    assert {s.group for s in samples} == {"doc:3"}


def test_designer_groups_by_document_and_skips_empty_replies():
    attempts = [_attempt(0, 1, reply="a"), _attempt(1, 2, reply="b"), _attempt(2, 1, reply="")]
    samples = designer_samples(attempts, [1.0, 0.0, 0.5], lambda m: [1], lambda t: [2])
    assert [s.group for s in samples] == ["doc:1", "doc:2"]
    batch = designer_samples(attempts, [1, 0, 0], lambda m: [1], lambda t: [2], group_by="batch")
    assert {s.group for s in batch} == {"batch"}


def test_designer_rewards_must_match_attempts():
    with pytest.raises(SampleError, match="2 designer rewards for 1 attempts"):
        designer_samples([_attempt(0, 1, reply="a")], [1.0, 2.0], lambda m: [1], lambda t: [2])


def test_sample_checks_its_fields():
    with pytest.raises(SampleError, match="Unknown sample role 'agnet'.*'agent'"):
        Sample("agnet", [1], [2], 0.0, "g")
    with pytest.raises(SampleError, match="at least one prompt token"):
        Sample("agent", [], [2], 0.0, "g")
    with pytest.raises(SampleError, match="at least one completion token"):
        Sample("agent", [1], [], 0.0, "g")
    with pytest.raises(SampleError, match="old_logprobs has 1 values for 2"):
        Sample("agent", [1], [2, 3], 0.0, "g", old_logprobs=[-1.0])
    with pytest.raises(SampleError, match="finite"):
        Sample("agent", [1], [2], float("nan"), "g")
    assert Sample("designer", [1], [2, 3], 1, "g").length == 3


def test_samples_carry_the_temperature_that_sampled_them():
    assert Sample("agent", [1], [2], 0.0, "g").temperature == 1.0
    assert Sample("agent", [1], [2], 0.0, "g", temperature=1).temperature == 1.0
    assert {s.temperature for s in agent_samples([_episode()], temperature=0.7)} == {0.7}
    attempts = [_attempt(0, 1, reply="a", reply_token_ids=[5], reply_logprobs=[-0.1])]
    (designed,) = designer_samples(attempts, [1.0], lambda m: [1], lambda t: [2], temperature=0.9)
    # The recorded (temperature 1) log-probs stay on the sample; the learner decides.
    assert designed.temperature == 0.9 and designed.old_logprobs == [-0.1]


def test_greedy_and_bad_temperatures_are_refused():
    with pytest.raises(SampleError, match=r"temperature is 0 \(greedy decoding\).*temperature > 0"):
        Sample("agent", [1], [2], 0.0, "g", temperature=0)
    with pytest.raises(SampleError, match=r"greedy decoding"):
        agent_samples([_episode()], temperature=0.0)
    with pytest.raises(SampleError, match=r"greedy decoding"):
        designer_samples([_attempt(0, 1, reply="a")], [1.0], lambda m: [1], lambda t: [2],
                         temperature=0)  # fmt: skip
    for bad in (-0.5, float("nan"), float("inf")):
        with pytest.raises(SampleError, match=r"temperature must be finite and > 0"):
            Sample("agent", [1], [2], 0.0, "g", temperature=bad)
    for bad in ("0.7", None, True):
        with pytest.raises(SampleError, match=r"temperature must be a number"):
            Sample("agent", [1], [2], 0.0, "g", temperature=bad)


def test_scaffold_attempts_are_grouped_by_their_parent():
    def scaffolded(index, parent):
        attempt = _attempt(index, None, reply="{}", parent_id=parent)
        attempt.mode = "scaffold"
        return attempt

    attempts = [
        scaffolded(0, "spade/A-v1"),
        scaffolded(1, "spade/B-v1"),
        scaffolded(2, "spade/A-v1"),
    ]
    samples = designer_samples(attempts, [1.0, 0.0, 0.5], lambda m: [1], lambda t: [2])
    assert [s.group for s in samples] == [
        "parent:spade/A-v1",
        "parent:spade/B-v1",
        "parent:spade/A-v1",
    ]
