"""The OpenAI-compatible client against a real ``vllm serve`` (the generation pool's, on
127.0.0.1, serving the packaged SmolLM2): the designer and the agent through the CLI runner."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from spade_envs.cli import main
from spade_envs.llm import OpenAIChatModel, SamplingParams

from ..vllm_support import VLLM_MARKS

pytestmark = VLLM_MARKS


@pytest.fixture
def server(vllm_pool):
    """vLLM's OpenAI server on 127.0.0.1: the generation pool's ``vllm serve`` (see
    ``vllm_pool``), asked for its base model."""
    return vllm_pool


def test_the_client_gets_text_and_finish_reasons_from_vllm_serve(server):
    model = OpenAIChatModel(server, model="smollm2")
    replies = model.generate(
        [[{"role": "user", "content": "What is the capital of France?"}]] * 2,
        SamplingParams(temperature=0.0, max_tokens=12),
    )
    assert all(r.ok for r in replies), [r.error for r in replies]
    assert replies[0].text == replies[1].text and "Paris" in replies[0].text
    assert replies[0].finish_reason in ("stop", "length")


def test_the_agent_plays_through_vllm_serve(server, tmp_path, monkeypatch):
    monkeypatch.setenv("SPADE_REGISTRY_URL", f"sqlite:///{tmp_path / 'reg.db'}")
    out = tmp_path / "plays.jsonl"
    result = CliRunner().invoke(
        main,
        [
            "rollout", "NumberGuess", "--model", f"openai:{server}#smollm2", "--plays", "2",
            "--max-tokens", "24", "--max-turns", "2", "--out", str(out),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    plays = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(plays) == 2
    assert not [p for p in plays if p.get("outcome") == "model_error"]
    replies = [t["action"] for p in plays for t in p["turns"]]
    assert replies and all(isinstance(r, str) for r in replies) and any(r.strip() for r in replies)


def test_the_designer_writes_through_vllm_serve(server, tmp_path, monkeypatch):
    monkeypatch.setenv("SPADE_REGISTRY_URL", f"sqlite:///{tmp_path / 'reg.db'}")
    result = CliRunner().invoke(
        main,
        [
            "generate", "--model", f"openai:{server}#smollm2", "--mode", "scaffold",
            "--parent", "spade/NumberGuess-v1", "--n", "2", "--embedder", "hashing",
            "--seed", "1",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "mode scaffold" in result.output
    # Every attempt got a reply: none stopped at the request (a model or HTTP error).
    assert "model error" not in result.output, result.output
