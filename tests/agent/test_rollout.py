"""The rollout engine on real seed environments with a scripted, seeded model."""

from __future__ import annotations

import dataclasses

import pytest

from spade_envs.agent import (
    EnvTarget,
    Episode,
    FailureCounts,
    PlaySpec,
    RolloutConfig,
    RolloutEngine,
    load_jsonl,
    matched_specs,
    regret_rows,
    resolve_envs,
    rollout,
    save_jsonl,
    with_hint,
)
from spade_envs.error import EnvContractError, SpadeError, UntrustedCodeError
from spade_envs.llm.base import Completion
from spade_envs.make import make

from .conftest import (
    CRASHING_ENV,
    EXITING_ENV,
    HANGING_ENV,
    ScriptedModel,
    bad_reward_env,
    guess_reply,
    lying_env,
)

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
    engine = RolloutEngine(model, config)
    hang, crash, exits, guess0, guess1 = engine.run(specs, targets)
    assert hang.outcome == "timeout" and hang.penalty == 0.7 and "did not finish" in hang.error
    assert len(hang.turns) == 2 and hang.turns[-1].outcome == "timeout"
    assert hang.turns[0].outcome == "ok" and hang.turns[0].observation == "Go on."
    assert crash.outcome == "env_error" and "boom" in crash.error and crash.penalty == 0.7
    # A worker that dies is the sandbox crashing, told apart from the code raising.
    assert exits.outcome == "sandbox_crashed" and "died" in exits.error
    assert exits.turns[-1].outcome == "sandbox_crashed" and exits.penalty == 0.7
    assert crash.failed and exits.failed and hang.failed
    failures = engine.stats.failures
    assert failures.by_outcome() == {
        "env_error": 1,
        "timeout": 1,
        "sandbox_crashed": 1,
        "model_error": 0,
        "audit_divergence": 0,
        "audit_failed": 0,
    }
    assert failures.plays == 5 and failures.failed == 3 and not failures.all_failed
    assert failures.first_error.startswith("timeout in test/Hanging-v1: ")
    for episode in (guess0, guess1):  # the others played on to their end
        assert episode.outcome in ("terminated", "truncated") and not episode.failed
        assert episode.penalty == 0.0
    assert max(model.batches) == 5


def test_in_process_step_timeout_ends_a_hanging_trusted_env(registry):
    targets = [hang_crash_targets()[0], *resolve_envs(["NumberGuess"], registry)]
    specs = [PlaySpec(t.env_id, 0, 0) for t in targets]
    config = RolloutConfig(
        isolation="none", trust_code=True, step_timeout=0.5, seed=3, error_penalty=0.7
    )
    hang, guess = RolloutEngine(ScriptedModel(), config).run(specs, targets)
    assert hang.outcome == "timeout" and hang.penalty == 0.7
    assert "ran past its 0.5 s deadline" in hang.error
    assert hang.turns[0].outcome == "ok" and hang.turns[-1].outcome == "timeout"
    assert guess.outcome in ("terminated", "truncated") and not guess.failed


def test_in_process_play_of_code_that_is_not_a_seed_needs_trust_code(registry):
    targets = [hang_crash_targets()[1], *resolve_envs(["NumberGuess"], registry)]
    specs = [PlaySpec(t.env_id, 0, 0) for t in targets]
    model = ScriptedModel()
    untrusted = RolloutConfig(isolation="none", seed=3)
    with pytest.raises(UntrustedCodeError, match=r"test/Crashing-v1 is not a packaged seed"):
        RolloutEngine(model, untrusted).run(specs, targets)
    assert model.batches == []  # refused before anything was played
    # A seed's exact code runs in-process without it; a renamed copy does not.
    [seed] = RolloutEngine(model, untrusted).run(specs[1:], targets[1:])
    assert seed.outcome in ("terminated", "truncated")
    copy = EnvTarget("test/Copy-v1", targets[1].source + "\n# changed\n", "text")
    with pytest.raises(UntrustedCodeError, match="trust_code=True"):
        RolloutEngine(model, untrusted).run([PlaySpec(copy.env_id, 0, 0)], [copy])
    with pytest.raises(SpadeError, match="trust_code must be True or False"):
        RolloutConfig(trust_code="yes")
    crash, _ = RolloutEngine(model, dataclasses.replace(untrusted, trust_code=True)).run(
        specs, targets
    )
    assert crash.outcome == "env_error" and "boom" in crash.error


@pytest.mark.parametrize(
    ("reward", "shown"),
    [("float('nan')", "nan"), ("float('inf')", "inf"), ("10**4000", "inf"), ("'1'", "'1'")],
)
def test_a_reward_that_is_not_a_finite_number_ends_only_its_own_play(registry, reward, shown):
    bad = EnvTarget("test/BadReward-v1", bad_reward_env(reward), "text")
    targets = [bad, *resolve_envs(["NumberGuess"], registry)]
    specs = [PlaySpec(t.env_id, i, i, hint=h) for t in targets for i in (0, 1) for h in (0, 1)]
    config = RolloutConfig(isolation="none", trust_code=True, seed=3, error_penalty=0.4)
    engine = RolloutEngine(ScriptedModel(), config)
    episodes = engine.run(specs, targets)
    broken, fine = episodes[:4], episodes[4:]
    for episode in broken:
        assert episode.outcome == "env_error" and episode.penalty == 0.4
        assert "test/BadReward-v1 gave a reward" in episode.error and shown in episode.error
        assert episode.episode_return == 0.0 and not episode.won
    assert all(e.outcome in ("terminated", "truncated") for e in fine)
    assert engine.stats.failures.env_error == 4 and engine.stats.failures.plays == 8
    # Regret goes on for the other environment; the broken one has failures, no means.
    bad_row, good_row = regret_rows(episodes, "m")
    assert (bad_row.failed, bad_row.env_errors, bad_row.n_with_hint) == (4, 4, 0)
    assert bad_row.regret == pytest.approx(-0.5)  # the timeout penalty, every play failed
    assert (good_row.failed, good_row.n_with_hint, good_row.n_without_hint) == (0, 2, 2)


def test_a_reward_that_is_not_finite_from_a_sandboxed_env_ends_only_its_play(registry):
    bad = EnvTarget("test/BadReward-v1", bad_reward_env("float('nan')"), "text")
    targets = [bad, *resolve_envs(["NumberGuess"], registry)]
    specs = [PlaySpec(t.env_id, 0, 0) for t in targets]
    engine = RolloutEngine(ScriptedModel(), RolloutConfig(seed=3, max_concurrent=2))
    broken, fine = engine.run(specs, targets)
    assert broken.outcome == "env_error" and broken.failed
    assert fine.outcome in ("terminated", "truncated") and not fine.failed


@pytest.mark.parametrize("isolation", ["none", "sandbox"])
@pytest.mark.parametrize(("reward", "claim", "won"), [(0.0, True, False), (1.0, False, True)])
def test_a_win_is_scored_never_claimed_in_info(registry, isolation, reward, claim, won):
    target = EnvTarget("test/Lying-v1", lying_env(reward, claim), "text")
    # Every answer wins here, which an audit would void: scoring alone is what is tested.
    config = RolloutConfig(isolation=isolation, trust_code=True, seed=0, audit_share=None)
    [episode] = RolloutEngine(ScriptedModel(), config).run(
        [PlaySpec(target.env_id, 0, 0)], [target]
    )
    assert episode.outcome == "terminated" and episode.episode_return == reward
    assert episode.won is won
    [row] = regret_rows([episode], "m")
    assert row.win_rate == (1.0 if won else 0.0)


@pytest.mark.parametrize("top", ["0.0", "float('inf')", "'1'"])
def test_a_reward_range_that_would_make_every_play_a_win_ends_the_play(registry, top):
    source = lying_env(0.0, True).replace(
        "    max_turns = 1\n", f"    max_turns = 1\n    reward_range = (0.0, {top})\n"
    )
    target = EnvTarget("test/Empty-v1", source, "text")
    config = RolloutConfig(isolation="none", trust_code=True, seed=0)
    [episode] = RolloutEngine(ScriptedModel(), config).run(
        [PlaySpec(target.env_id, 0, 0)], [target]
    )
    assert episode.outcome == "env_error" and not episode.won
    assert "reward_range must be two" in episode.error


def test_failure_counts_add_up_and_keep_the_first_failure():
    def played(outcome, ret=0.0, error=""):
        return Episode("e", 0, 0, False, "", "", "text", "", "m", outcome, ret, error=error)

    counts = FailureCounts.of(
        [
            played("terminated", 1.0),
            played("model_error", error="server down"),
            played("terminated", float("nan")),  # a return that is not finite: env_error
            played("sandbox_crashed", error="worker died"),
        ]
    )
    assert counts.by_outcome() == {
        "env_error": 1,
        "timeout": 0,
        "sandbox_crashed": 1,
        "model_error": 1,
        "audit_divergence": 0,
        "audit_failed": 0,
    }
    assert counts.summary() == "1 env_error, 1 sandbox_crashed, 1 model_error"
    assert counts.first_error == "model_error in e: server down"
    assert (counts.plays, counts.failed, counts.all_failed) == (4, 3, False)
    total = FailureCounts() + counts + FailureCounts(plays=1, timeout=1, first_error="later")
    assert (total.plays, total.timeout, total.failed) == (5, 1, 4)
    assert total.first_error == counts.first_error
    assert FailureCounts.of([]).all_failed is False
    assert FailureCounts.of([played("timeout"), played("env_error")]).all_failed
    escaped = FailureCounts.of([played("env_error", error="\x1b[2Jgone\nnext")]).first_error
    assert "\x1b" not in escaped and "\n" not in escaped and "gone" in escaped


def test_exceptions_map_to_failure_outcomes():
    from spade_envs.agent import failure_outcome
    from spade_envs.error import (
        EnvCodeError,
        SandboxBroken,
        SandboxCrashed,
        SandboxProtocolError,
        SandboxTimeout,
        StepTimeout,
    )

    assert failure_outcome(SandboxTimeout("t")) == failure_outcome(StepTimeout("t")) == "timeout"
    for exc in (SandboxCrashed("c"), SandboxProtocolError("p"), SandboxBroken("b")):
        assert failure_outcome(exc) == "sandbox_crashed"
    for exc in (EnvCodeError("e"), EnvContractError("c"), RuntimeError("r")):
        assert failure_outcome(exc) == "env_error"


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
    class RaisingOnce(ScriptedModel):
        """Raises on its second call only: play 0's second turn (one play per call)."""

        def generate(self, conversations, params=None):
            if len(self.batches) == 1:
                self.batches.append(len(conversations))
                raise RuntimeError("CUDA fell over")
            return super().generate(conversations, params)

    # One play at a time, so each model call is one play's turn.
    config = dataclasses.replace(FAST, max_concurrent=1)
    raising = RaisingOnce()
    hit, *others = rollout(raising, ["NumberGuess"], plays=3, config=config)
    baseline = rollout(ScriptedModel(), ["NumberGuess"], plays=3, config=config)
    assert [e.play_index for e in (hit, *others)] == [0, 1, 2]
    # The raising call's turn fails and ends its play; the turn before it stands ...
    assert hit.outcome == "model_error" and "CUDA fell over" in hit.error
    assert [t.outcome for t in hit.turns] == ["ok", "model_error"]
    assert hit.turns[0].to_dict() == baseline[0].turns[0].to_dict()
    # ... and the plays after it play on, exactly as with a backend that never raised.
    assert len(raising.batches) > 2  # the rollout went on calling the model
    assert comparable(others) == comparable(baseline[1:])
    assert all(e.outcome in ("terminated", "truncated") for e in others)


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


def test_a_spade_tool_game_is_prompted_with_its_tools_and_won_as_spade_wins(registry):
    """A ToolUseBaseEnv game (SPADE's dialect) in a sandboxed rollout: the agent is told the
    tool-call format the game reads (ours is the same), and a right answer after a format
    penalty is a win, as SPADE counts it."""
    from pathlib import Path

    from spade_envs.core.loader import load_env_class

    source = (
        Path(__file__).parents[1] / "core" / "spade_fixtures" / "tool_use_prose.py"
    ).read_text(encoding="utf-8")
    target = EnvTarget("test/ArchiveReportEnv-v1", source, "text")
    reference = load_env_class(source)()

    def reply(conversation, _seed):
        # Play the game's own solution after one malformed reply (a format penalty).
        played = sum(m["role"] == "assistant" for m in conversation)
        if played == 0:
            return "let me think"
        reference.reset(seed=spec.env_seed)
        return reference.solution()[played - 1]

    spec = PlaySpec(target.env_id, 0, 0)
    config = RolloutConfig(isolation="sandbox", seed=3, audit_share=None)
    [episode] = RolloutEngine(ScriptedModel(reply), config).run([spec], [target])
    system = episode.messages[""][0]["content"]
    assert "<tool_call>" in system and '"name": "mkdir"' in system
    assert [t.outcome for t in episode.turns][:2] == ["no_answer", "ok"]
    assert episode.turns[0].reward == pytest.approx(-0.1)
    assert episode.outcome == "terminated" and episode.won
    assert episode.episode_return == pytest.approx(0.9)


def fresh_then_shared(registry, specs, targets, max_concurrent):
    """(episodes, stats) of the same plays with a fresh worker per play, then with up to 8
    episodes per worker."""
    runs = []
    for per_worker in (1, 8):
        config = RolloutConfig(
            max_concurrent=max_concurrent, seed=7, episodes_per_worker=per_worker
        )
        engine = RolloutEngine(ScriptedModel(), config, registry=registry)
        runs.append((engine.run(specs, targets), engine.stats))
    return runs


def test_plays_of_one_version_share_a_worker_and_give_the_same_trajectories(registry):
    """episodes_per_worker: a finished play's worker serves the next play of the same
    version and hint flag; the trajectories are those of a fresh worker per play."""
    targets = resolve_envs(["NumberGuess"], registry)
    specs = matched_specs([t.env_id for t in targets], 4)  # 4 unhinted, 4 hinted
    (fresh, fresh_stats), (shared, shared_stats) = fresh_then_shared(
        registry, specs, targets, max_concurrent=1
    )
    assert comparable(shared) == comparable(fresh)
    assert fresh_stats.reused_workers == 0
    # One worker for the unhinted plays and one for the hinted: never across the flag.
    assert shared_stats.reused_workers == len(specs) - 2


def test_plays_listed_by_version_open_so_that_workers_are_handed_on(registry):
    """An evaluation lists a version's episodes together; with as many plays live as there
    are versions, opening them in list order would run each version's plays side by side,
    each in a fresh worker. They open one per version at a time instead, and the results
    keep the list's order."""
    targets = resolve_envs(["NumberGuess", "Mastermind"], registry)
    specs = [PlaySpec(t.env_id, i, env_seed=i) for t in targets for i in range(4)]
    (fresh, fresh_stats), (shared, shared_stats) = fresh_then_shared(
        registry, specs, targets, max_concurrent=2
    )
    assert [(e.env_id, e.play_index) for e in shared] == [(s.env_id, s.play_index) for s in specs]
    assert comparable(shared) == comparable(fresh)
    assert fresh_stats.reused_workers == 0
    assert shared_stats.reused_workers == len(specs) - len(targets)


def test_a_failed_play_never_hands_its_worker_on(registry):
    targets = hang_crash_targets()
    specs = [PlaySpec(t.env_id, i, env_seed=i) for t in targets for i in range(3)]
    config = RolloutConfig(max_concurrent=1, seed=7, step_timeout=1.0, episodes_per_worker=8)
    engine = RolloutEngine(ScriptedModel(), config, registry=registry)
    episodes = engine.run(specs, targets)
    # Every play of these fails (the crashing one's worker stays alive: code that raised
    # is not a dead worker), and none hands its worker on.
    assert all(e.failed for e in episodes) and len(episodes) == 9
    assert engine.stats.reused_workers == 0


def test_episodes_per_worker_must_be_positive():
    with pytest.raises(SpadeError, match="episodes_per_worker must be a positive int"):
        RolloutConfig(episodes_per_worker=0)


#: Honest in a worker's first episode; from its second on, every answer wins: the state it
#: carries from one episode to the next lives in the process, outside the instance.
WARMS_UP_ENV = """
from spade_envs import TextEnv, answers_match, boxed

_episodes = [0]


class WarmsUp(TextEnv):
    skill = "math"
    description = "Guess the number from 1 to 1000 in \\\\boxed{}."
    max_turns = 2

    def _reset(self):
        _episodes[0] += 1
        self.secret = self.rng.randint(1, 1000)
        return "Guess the number from 1 to 1000 as \\\\boxed{n}."

    def _step(self, action):
        if _episodes[0] > 1 or answers_match(action, str(self.secret)):
            return "Right.", 1.0, True
        return "Wrong.", 0.0, False

    def solution(self):
        return [boxed(self.secret)]
"""


def test_state_carried_across_a_shared_workers_episodes_is_caught_by_the_audit(registry):
    """A shared worker's later episodes are replayed in fresh workers (every win is):
    winning because of an earlier episode diverges there, and the plays are voided."""
    target = EnvTarget("test/WarmsUp-v1", WARMS_UP_ENV, "text")
    specs = [PlaySpec(target.env_id, i, env_seed=i) for i in range(4)]
    config = RolloutConfig(max_concurrent=1, seed=7, episodes_per_worker=8, audit_share=0.0)
    engine = RolloutEngine(ScriptedModel(), config, registry=registry)
    episodes = engine.run(specs, [target])
    assert engine.stats.reused_workers == 3
    # The version's plays of the run are voided, the honest first one included.
    assert [e.outcome for e in episodes] == ["audit_divergence"] * 4
    assert target.env_id in engine.stats.quarantined


PAYS_ONCE_REUSED_ENV = """
from spade_envs import TextEnv

_episodes = [0]


class PaysOnceReused(TextEnv):
    skill = "math"
    description = "Guess the number from 1 to 1000 in \\\\boxed{}."
    max_turns = 2

    def _reset(self):
        _episodes[0] += 1
        return "Guess the number from 1 to 1000 as \\\\boxed{n}."

    def _step(self, action):
        # Never a win (0.9 < the top), so no win-triggered replay: only in a worker that
        # has played before does the step pay.
        return "Done.", (0.9 if _episodes[0] > 1 else 0.0), True

    def solution(self):
        return ["1"]
"""


def test_a_near_win_paid_only_in_a_reused_worker_is_caught_with_no_audit_share(registry):
    """From an attacker's review: audits replayed every win and a share of the rest, so an
    environment that paid 0.9 (not a win) only once its worker was reused kept those
    rewards with audit_share=0.0. Every play in a reused worker is replayed now."""
    target = EnvTarget("test/PaysOnceReused-v1", PAYS_ONCE_REUSED_ENV, "text")
    specs = [PlaySpec(target.env_id, i, env_seed=i) for i in range(4)]
    config = RolloutConfig(max_concurrent=1, seed=7, episodes_per_worker=8, audit_share=0.0)
    engine = RolloutEngine(ScriptedModel(), config, registry=registry)
    episodes = engine.run(specs, [target])
    assert engine.stats.reused_workers == 3 and engine.stats.audits >= 1
    assert [e.outcome for e in episodes] == ["audit_divergence"] * 4
    assert target.env_id in engine.stats.quarantined


def test_without_audits_every_play_gets_a_fresh_worker(registry):
    targets = resolve_envs(["NumberGuess"], registry)
    specs = [PlaySpec(targets[0].env_id, i, env_seed=i) for i in range(3)]
    config = RolloutConfig(max_concurrent=1, seed=7, episodes_per_worker=8, audit_share=None)
    engine = RolloutEngine(ScriptedModel(), config, registry=registry)
    engine.run(specs, targets)
    assert engine.stats.reused_workers == 0
