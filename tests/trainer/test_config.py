"""SelfPlayConfig: presets, --set overrides, checks with clear messages, TOML round trip."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spade_envs.trainer.config import ConfigError, RewardSettings, SelfPlayConfig
from spade_envs.trainer.config_io import (
    apply_overrides,
    available_presets,
    config_from_dict,
    config_from_toml,
    config_to_toml,
    load_config,
    read_config,
    save_config,
)
from spade_envs.trainer.learner import GRPOConfig


def test_the_contract_presets_ship_and_load():
    assert {"cpu-tiny", "cpu-test", "gpu-8x", "multinode"} <= set(available_presets())
    for name in available_presets():
        config = load_config(name)
        assert isinstance(config.grpo, GRPOConfig)
    tiny = load_config("cpu-tiny")
    assert tiny.model.spec == "smollm2" and tiny.model.backend == "transformers"
    assert load_config("gpu-8x").model.backend == "vllm"
    assert load_config("multinode").designer.documents > load_config("gpu-8x").designer.documents


def test_overrides_take_toml_values_bare_words_and_comma_lists():
    config = load_config(
        "cpu-tiny",
        [
            "iterations=5",
            "mode=fixed-pool",
            "grpo.learning_rate=3e-5",
            "grpo.lora_targets=q_proj,k_proj",
            "model.spec=/tmp/some model",
            'eval.envs=["Nim", "Mastermind"]',
            "agent.train_hinted=true",
            "reward.timeout_penalty=1",
        ],
    )
    assert config.iterations == 5 and config.mode == "fixed-pool"
    assert config.grpo.learning_rate == 3e-5
    assert config.grpo.lora_targets == ("q_proj", "k_proj")
    assert config.model.spec == "/tmp/some model"
    assert config.eval.envs == ("Nim", "Mastermind")
    assert config.agent.train_hinted is True
    assert config.reward.timeout_penalty == 1.0 and isinstance(config.reward.timeout_penalty, float)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["designer.documens=2"], r"Unknown setting 'designer.documens'.*'designer.documents'"),
        (["iteration=2"], r"Unknown setting 'iteration'.*Did you mean 'iterations'"),
        (["iterations"], r"--set needs key=value"),
        (["iterations=0"], r"iterations must be at least 1, got 0"),
        (["mode=fixed"], r"mode must be one of .*Did you mean 'fixed-pool'"),
        (["agent.plays=two"], r"agent.plays must be an integer, got 'two'"),
        (["agent.plays=2.5"], r"agent.plays must be an integer"),
        (["agent.train_hinted=1"], r"agent.train_hinted must be true or false"),
        (["grpo.learning_rate=0"], r"grpo.learning_rate must be > 0.0, got 0.0"),
        (["reward.kind=regrets"], r"reward.kind must be one of .*Did you mean 'regret'"),
        (["reward.failed_parsed=-0.9"], r"failed_requested < failed_generated .* must increase"),
        (["eval.envs=NumberGues"], r"'NumberGues' is not a seed environment.*'NumberGuess'"),
        (["agent.pool_kinds=text,board"], r"agent.pool_kinds must be one of"),
        (["model.spec=openai:http://x"], r"cannot be an openai: server"),
        (["model.backend=vllm2"], r"model.backend must be one of .*'vllm'"),
        (["designer.skill=maths"], r"designer.skill must be one of .*'math'"),
        (["agent.fixed_pool=NumberGuess", "eval.envs=NumberGuess"], r"held-out"),
        (
            ["agent.isolation=none"],
            r"agent.isolation = 'none' runs environment code in the trainer's process.*"
            r"agent.trust_code = true",
        ),
        (
            ["agent.isolation=none", "agent.trust_code=true"],
            r"agent.isolation = 'none' is refused in selfplay mode, even with agent.trust_code",
        ),
        (
            ["mode=fixed-pool", "agent.isolation=none"],
            r"also set agent.trust_code = true",
        ),
        (["agent.trust_code=yes"], r"agent.trust_code must be true or false"),
        (["agent.temperature=0"], r"agent.temperature = 0 is greedy decoding.*> 0"),
        (["designer.temperature=0"], r"designer.temperature = 0 is greedy decoding.*> 0"),
        (["agent.temperature=-1"], r"agent.temperature must be a finite number >= 0"),
    ],
)
def test_bad_settings_are_refused_with_what_to_do(overrides, message):
    with pytest.raises(ConfigError, match=message):
        load_config("cpu-tiny", overrides)


def test_fixed_pool_isolation_none_runs_only_with_trust_code_named():
    config = load_config(
        "cpu-tiny", ["mode=fixed-pool", "agent.isolation=none", "agent.trust_code=true"]
    )
    assert config.agent.isolation == "none" and config.agent.trust_code is True
    assert load_config("cpu-tiny").agent.trust_code is False  # off unless named
    with pytest.raises(ConfigError, match="refused in selfplay mode"):
        dataclasses.replace(config, mode="selfplay")


def test_training_temperatures_must_sample_but_eval_may_be_greedy():
    # The designer is not run in fixed-pool mode: its temperature trains nothing there.
    config = load_config("cpu-tiny", ["mode=fixed-pool", "designer.temperature=0"])
    assert config.designer.temperature == 0.0
    assert load_config("cpu-tiny", ["eval.temperature=0"]).eval.temperature == 0.0
    with pytest.raises(ConfigError, match="agent.temperature = 0 is greedy decoding"):
        load_config("cpu-tiny", ["mode=fixed-pool", "agent.temperature=0"])


def test_unknown_presets_sections_and_files():
    with pytest.raises(ConfigError, match=r"No trainer preset named 'cpu-tinyy'.*'cpu-tiny'"):
        load_config("cpu-tinyy")
    with pytest.raises(ConfigError, match=r"Preset file .*missing.toml' does not exist"):
        load_config("/nonexistent/missing.toml")
    with pytest.raises(ConfigError, match=r"Unknown setting 'modle'.*'model'"):
        config_from_dict({"modle": {"spec": "smollm2"}})
    with pytest.raises(ConfigError, match=r"\[grpo\] must be a table"):
        config_from_dict({"grpo": 3})


def test_a_preset_file_with_bad_toml_names_the_file(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text("iterations = = 3\n")
    with pytest.raises(ConfigError, match=r"broken.toml is not valid TOML"):
        load_config(str(path))


def test_saved_config_reads_back_equal(tmp_path):
    config = load_config("gpu-8x", ["grpo.lora_targets=q_proj", "designer.corpus=/data/c.jsonl"])
    path = save_config(config, tmp_path / "run" / "config.toml")
    assert read_config(path) == config
    # The saved file is a complete preset of its own.
    assert load_config(str(path)) == config


@given(
    iterations=st.integers(1, 10_000),
    lr=st.floats(1e-8, 1.0, allow_nan=False),
    documents=st.integers(1, 64),
    description=st.text(max_size=20),
    delay=st.integers(0, 5),
    penalty=st.floats(0, 10, allow_nan=False),
)
def test_any_valid_config_survives_the_toml_round_trip(
    iterations, lr, documents, description, delay, penalty
):
    base = SelfPlayConfig()
    config = dataclasses.replace(
        base,
        iterations=iterations,
        registry_url=description,
        grpo=dataclasses.replace(base.grpo, learning_rate=lr),
        designer=dataclasses.replace(base.designer, documents=documents, delay=delay),
        reward=RewardSettings(timeout_penalty=penalty),
    )
    assert config_from_toml(config_to_toml(config)) == config


def test_overrides_leave_the_parsed_preset_alone():
    data = {"designer": {"documents": 2}}
    out = apply_overrides(data, ["designer.documents=4", "seed=7"])
    assert data == {"designer": {"documents": 2}}
    assert out == {"designer": {"documents": 4}, "seed": 7}
