"""``spade-envs generate`` through the CLI runner, against a real OpenAI-compatible HTTP
server on 127.0.0.1 (the package's own server, serving a scripted model)."""

from __future__ import annotations

import re

from click.testing import CliRunner

from spade_envs.cli import main
from spade_envs.llm import serve
from spade_envs.llm.base import ChatModel, Completion
from spade_envs.registry import Registry

from .test_pipeline import FENCED, VALID


class Scripted(ChatModel):
    """Writes a valid module for designer prompts and a leak-free hint for hint prompts."""

    name = "scripted"

    def generate(self, conversations, params=None):
        out = []
        for messages in conversations:
            if "You write hints" in messages[-1]["content"]:
                out.append(Completion("Halve the remaining range with every guess."))
            elif "Write a NEW environment" in messages[-1]["content"]:
                out.append(Completion(FENCED.format(VALID)))
            else:
                out.append(Completion("No."))
        return out


def test_generate_through_an_http_server(tmp_path, monkeypatch):
    monkeypatch.setenv("SPADE_REGISTRY_URL", f"sqlite:///{tmp_path / 'gen.db'}")
    with serve(Scripted()) as server:
        result = CliRunner().invoke(
            main,
            [
                "generate",
                "--model",
                f"openai:{server.url}",
                "--n",
                "3",
                "--skill",
                "math",
                "--embedder",
                "hashing",
                "--hints",
                "--seed",
                "3",
            ],
        )
    assert result.exit_code == 0, result.output
    out = result.output
    assert "registered spade/OrbitGuess-v1" in out
    assert "hint for spade/OrbitGuess-v1: stored" in out
    # The same module three times: one registered, the other two are not novel.
    assert "not novel" in out and re.search(r"^\s+registered\s+1$", out, re.M)
    registry = Registry()
    record = registry.get("spade/OrbitGuess-v1")
    assert record.hint == "Halve the remaining range with every guess."
    assert record.model == "scripted"  # the name the server reports


def test_generate_with_an_unreachable_server_reports_and_exits_non_zero(tmp_path, monkeypatch):
    monkeypatch.setenv("SPADE_REGISTRY_URL", f"sqlite:///{tmp_path / 'gen.db'}")
    result = CliRunner().invoke(
        main,
        ["generate", "--model", "openai:http://127.0.0.1:9#m", "--n", "2", "--embedder", "hashing"],
    )
    # Nothing was designed at all: the table, then a non-zero exit saying why.
    assert result.exit_code == 1, result.output
    assert "model error" in result.output
    assert re.search(r"^\s+generated\s+0$", result.output, re.M)
    assert "failed attempts: 2 model_error of 2" in result.output
    assert "Error: Every one of the 2 attempts failed before any code could be judged" in (
        result.output
    )
