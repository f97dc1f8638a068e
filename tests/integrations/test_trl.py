"""TRL's environment_factory over registry versions (trl from PyPI, real sandbox).

The environment object TRL drives: the same episode as the door for the same seed, the
row's pinned hash enforced, failures counted by kind (a failed play scores None, never
0), the hint option; the dataset's rows; SmolLM2's tokenizer made tool-calling; and
(slow) ``examples/trl_grpo.py`` training for a step with TRL's GRPOTrainer.

Bounds (hostile environments): one sandbox worker at a time, the sandbox's default
limits; the crashing environment raises at once.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

from spade_envs.core.metadata import EnvMetadata
from spade_envs.error import SpadeError
from spade_envs.integrations.trl import environment_factory, registry_dataset
from spade_envs.runtime import register_seed

from ..play_support import door_episode, reference_solution

ROOT = Path(__file__).resolve().parents[2]

CRASH_STEP = """from spade_envs import TextEnv, boxed


class CrashStep(TextEnv):
    skill = "logic"
    description = "Its step raises."
    max_turns = 3

    def _reset(self) -> str:
        return "Say anything."

    def _step(self, action: str):
        raise RuntimeError("boom")

    def solution(self) -> list[str]:
        return [boxed("x")]
"""


@pytest.fixture
def registry(tmp_path, monkeypatch):
    from spade_envs.registry import Registry

    url = f"sqlite:///{tmp_path / 'registry.db'}"
    monkeypatch.setenv("SPADE_REGISTRY_URL", url)
    reg = Registry(url)
    reg.ids = {name: register_seed(reg, name) for name in ("NumberGuess", "ModularEquation")}
    meta = EnvMetadata("CrashStep", "text", "logic", "raises", 3, (0.0, 1.0), origin="designer")
    reg.ids["CrashStep"] = reg.register(CRASH_STEP, meta, status="validated").id
    yield reg
    reg.close()


def test_the_environment_plays_the_doors_episode_for_the_same_seed(registry):
    env_id = registry.ids["NumberGuess"]
    actions = [r"\boxed{50}", r"\boxed{20}", r"\boxed{80}"]
    first, rewards = door_episode(registry, env_id, 5, actions)
    factory = environment_factory([env_id], registry=registry)
    env = factory()
    text = env.reset(env_id=env_id, seed=5, sha256=registry.get(env_id).sha256, prompt=[])
    assert first in text and "act" in text
    for action in actions[: len(rewards)]:
        env.act(action)
    assert env.rewards == rewards
    assert env.get_reward() == pytest.approx(sum(rewards))
    assert factory.counts.plays == 1 and not factory.counts.failed


def test_the_reference_solution_wins_and_the_episode_then_refuses_moves(registry):
    env_id = registry.ids["ModularEquation"]
    solution = reference_solution(registry, env_id, 2)
    factory = environment_factory([env_id], registry=registry)
    env = factory()
    env.reset(env_id=env_id, seed=2)
    for action in solution:
        env.act(action)
        if env.done:
            break
    assert env.won
    with pytest.raises(ValueError, match="episode is over"):
        env.act(solution[-1])
    assert env.get_reward() > 0 and factory.counts.wins == 1


def test_a_row_from_another_registry_is_refused(registry):
    env_id = registry.ids["NumberGuess"]
    env = environment_factory([env_id], registry=registry)()
    with pytest.raises(SpadeError, match="built against another registry"):
        env.reset(env_id=env_id, seed=0, sha256="0" * 64)
    with pytest.raises(SpadeError, match="not one of this factory's environments"):
        env.reset(env_id="spade/Nim-v1", seed=0)


def test_a_failed_play_scores_none_and_is_counted_by_kind(registry):
    env_id = registry.ids["CrashStep"]
    factory = environment_factory([env_id], registry=registry)
    env = factory()
    env.reset(env_id=env_id, seed=0)
    with pytest.raises(ValueError, match="environment failed"):
        env.act("anything")
    assert env.get_reward() is None
    metrics = factory.counts.metrics()
    assert metrics["spade/plays"] == 1 and metrics["spade/failed_env_error"] == 1


def test_every_play_failing_stops_training_with_the_reason(registry):
    from spade_envs.integrations.trl import play_counts_callback

    env_id = registry.ids["CrashStep"]
    factory = environment_factory([env_id], registry=registry)
    env = factory()
    env.reset(env_id=env_id, seed=0)
    with pytest.raises(ValueError):
        env.act("x")
    env.get_reward()
    callback = play_counts_callback(factory)
    logs: dict = {}
    with pytest.raises(SpadeError, match="Every one of 1 plays failed"):
        callback.on_log(None, None, None, logs=logs)
    assert logs["spade/failed"] == 1


def test_hint_option_adds_the_environments_hint(registry):
    env_id = registry.ids["NumberGuess"]
    plain = environment_factory([env_id], registry=registry)().reset(env_id=env_id, seed=4)
    hinted = environment_factory([env_id], hint=True, registry=registry)().reset(
        env_id=env_id, seed=4
    )
    assert "HINT:" in hinted and "HINT:" not in plain


def test_a_bare_name_resolves_and_the_dataset_pins_it(registry, capsys):
    factory = environment_factory(["NumberGuess", "ModularEquation"], registry=registry)
    assert "NumberGuess resolved to spade/NumberGuess-v1" in capsys.readouterr().out
    data = registry_dataset(factory, range(3))
    assert len(data) == 6 and set(data.column_names) == {"prompt", "env_id", "sha256", "seed"}
    row = data[0]
    assert row["env_id"] == registry.ids["NumberGuess"]
    assert row["sha256"] == registry.get(row["env_id"]).sha256
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    with pytest.raises(SpadeError, match="names no environment"):
        environment_factory(["spade/not an id"], registry=registry)


@pytest.mark.slow
def test_smollm2s_tokenizer_is_made_tool_calling():
    from transformers import AutoTokenizer
    from trl.chat_template_utils import supports_tool_calling

    from spade_envs.integrations.trl import tool_calling_tokenizer
    from spade_envs.llm import smollm2_hf_dir

    tokenizer = AutoTokenizer.from_pretrained(str(smollm2_hf_dir()))
    assert not supports_tool_calling(tokenizer)
    tokenizer = tool_calling_tokenizer(tokenizer)
    assert supports_tool_calling(tokenizer)
    parsed = tokenizer.parse_response(
        '<tool_call>\n{"name": "act", "arguments": {"action": "\\\\boxed{4}"}}\n</tool_call><|im_end|>',
        prefix="",
    )
    assert parsed["tool_calls"][0]["function"]["name"] == "act"


@pytest.mark.slow
def test_the_example_trains_smollm2_with_trls_grpo_trainer(registry, tmp_path):
    example = runpy.run_path(str(ROOT / "examples" / "trl_grpo.py"))
    summary = example["main"](
        [
            "--envs",
            registry.ids["NumberGuess"],
            registry.ids["ModularEquation"],
            "--steps",
            "1",
            "--seeds",
            "1",
            "--out",
            str(tmp_path / "out"),
            "--generations",
            "2",
            "--max-completion-length",
            "40",
        ]
    )
    assert summary["spade/plays"] == 2  # one GRPO group of 2 plays
    assert summary["spade/failed"] == 0
    assert set(summary["pins"]) == {registry.ids["NumberGuess"], registry.ids["ModularEquation"]}
    logged = summary["log"][0]
    assert "loss" in logged and logged["spade/plays"] == 2


def test_a_version_that_is_not_validated_is_refused_unless_asked_for(registry):
    meta = EnvMetadata("CandidateOne", "text", "logic", "new", 3, (0.0, 1.0), origin="designer")
    env_id = registry.register(
        CRASH_STEP.replace("CrashStep", "CandidateOne"), meta, status="candidate"
    ).id
    with pytest.raises(SpadeError, match="is candidate, not validated"):
        environment_factory([env_id], registry=registry)
    factory = environment_factory([env_id], registry=registry, allow_unvalidated=True)
    assert list(factory.pins) == [env_id]


def test_a_missing_trl_names_the_extra(registry, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "trl", None)
    with pytest.raises(
        SpadeError, match=r"needs trl, which is not installed: pip install -e '\.\[trl\]'"
    ):
        environment_factory([registry.ids["NumberGuess"]], registry=registry)


def test_an_untested_trl_release_is_named(registry, monkeypatch):
    import trl

    monkeypatch.setattr(trl, "__version__", "0.9.6")
    with pytest.warns(UserWarning, match=r"trl 0\.9\.6 is installed; .* tested with trl 1\.16\.x"):
        environment_factory([registry.ids["NumberGuess"]], registry=registry)


def test_environment_time_is_counted(registry):
    env_id = registry.ids["NumberGuess"]
    factory = environment_factory([env_id], registry=registry)
    env = factory()
    env.reset(env_id=env_id, seed=1)
    env.act(r"\boxed{1}")
    env.get_reward()
    assert factory.counts.metrics()["spade/env_seconds"] > 0


def test_only_act_is_offered_to_the_model_as_a_tool(registry):
    import inspect

    from spade_envs.integrations.trl import RegistryEnvironment

    public = {
        name
        for name, _ in inspect.getmembers(RegistryEnvironment, inspect.isfunction)
        if not name.startswith("_")
    }
    assert public == {"reset", "act", "get_reward"}  # TRL: reset and get_reward are not tools


def test_a_lone_surrogate_is_a_wrong_answer_not_a_crash(registry):
    env_id = registry.ids["NumberGuess"]
    factory = environment_factory([env_id], registry=registry)
    env = factory()
    env.reset(env_id=env_id, seed=0)
    env.act("\\boxed{\ud800}")
    assert env.rewards == [0.0] and env.failure is None


@pytest.mark.parametrize(
    "row, message",
    [
        ({"seed": -1}, "seed must be a whole number"),
        ({"seed": "3"}, "seed must be a whole number"),
        ({"env_id": ["x"]}, "env_id must be a string"),
        ({"sha256": 7}, "sha256 must be a hex string"),
    ],
)
def test_a_bad_row_is_the_datasets_fault(registry, row, message):
    factory = environment_factory([registry.ids["NumberGuess"]], registry=registry)
    with pytest.raises(SpadeError, match=message):
        factory().reset(**row)
    assert factory.counts.plays == 0 and not factory.counts.failed


def test_a_version_rejected_after_the_factory_was_built_is_not_played(registry):
    env_id = registry.ids["ModularEquation"]
    factory = environment_factory([env_id], registry=registry)
    registry.set_status(env_id, "rejected")
    with pytest.raises(SpadeError, match="no longer validated"):
        factory().reset(env_id=env_id, seed=0)


def test_a_registry_query_selects_the_versions(registry):
    from spade_envs.integrations.trl import Query

    factory = environment_factory(Query(skill="math"), registry=registry)
    assert sorted(factory.pins) == sorted(
        [registry.ids["NumberGuess"], registry.ids["ModularEquation"]]
    )
    dataset = registry_dataset(Query(skill="math", limit=1), seeds=[0, 1], registry=registry)
    assert set(dataset["env_id"]) == {registry.ids["ModularEquation"]} and len(dataset) == 2
    with pytest.raises(SpadeError, match="No stored version matches"):
        environment_factory(Query(skill="logic", kind="game"), registry=registry)
    with pytest.raises(SpadeError, match="kind must be one of text, tool, game"):
        environment_factory(Query(kind="board"), registry=registry)
